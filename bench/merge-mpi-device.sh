#!/bin/bash
# merge-mpi-device.sh - on the GPU machine (as run.sh of bench/merge-mpi-bundle.sh's folder):
# mpirun -np 2 hostname first (a failed carry costs seconds), then bench-merge
# of the new and the old build at 1, 2, 4, 8 ranks on NODES (REP rounds) and
# NODES2 (one round) synthetic node profiles; the log goes to $OUT.
D=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
export LD_LIBRARY_PATH=$D/lib OPAL_PREFIX=$D/ompi PMIX_INSTALL_PREFIX=$D/pmix2 PATH=$D/ompi/bin:$PATH
export OMPI_MCA_mca_base_component_path=$D/ompi/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
export OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1 OMPI_MCA_mca_base_component_show_load_errors=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_orte_default_hostfile=$D/ompi/etc/openmpi-default-hostfile
export PMIX_MCA_pcompress_base_silence_warning=1
L=$OUT/device-bench-merge.txt
{ date -u; nproc; grep -m1 'model name' /proc/cpuinfo; free -g | head -2; uptime; } >$L 2>&1
echo "== mpirun -np 2 hostname" >>$L
timeout 60 mpirun --allow-run-as-root -np 2 hostname >>$L 2>&1 || { echo "mpirun FAILED rc=$?" >>$L; cat $L; exit 1; }
M="mpirun -x LD_LIBRARY_PATH"
NODES=${NODES:-16}; REP=${REP:-3}
for v in new old; do
  echo "== $v: bench-merge --nodes $NODES --ranks 2,4,8 --repeat $REP" >>$L
  $D/bench-merge --gpuprof $D/$v/gpuprof --mpirun "$M" --dir /tmp/gpd-bench --nodes $NODES --ranks 2,4,8 --repeat $REP >>$L 2>&1
  uptime >>$L
done
if [ -n "${NODES2:-}" ]; then
  for v in new old; do
    echo "== $v: bench-merge --nodes $NODES2 --ranks 2,4,8 --repeat 1" >>$L
    $D/bench-merge --gpuprof $D/$v/gpuprof --mpirun "$M" --dir /tmp/gpd-bench --nodes $NODES2 --ranks 2,4,8 --repeat 1 >>$L 2>&1
  done
fi
date -u >>$L
cat $L

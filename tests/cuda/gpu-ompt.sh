#!/usr/bin/env bash
# gpu-ompt.sh - on the GPU machine, from bundle/ (tests/cuda/bundle-ompt.sh):
# omp-known built for sm_90 under `gpuprof record` with LLVM 19's CUDA
# offload plugin.  Checks (check.py cuda): every kernel counted once (CUPTI
# has the device time and the entry's name, OMPT the context: the kernels
# lie below `<omp target>` below region_one / region_two), region_two's
# transfers exact; prints the whole table.  Then the host-plugin build
# (the CI case) and the chained tool on the GPU build.
# Usage: bash bundle/ompt/gpu-ompt.sh   (exits 77 without a CUDA GPU)
set -uo pipefail
O=$(cd "$(dirname "$0")" && pwd)
B=$(cd "$O/.." && pwd)
source "$B/env.sh"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
# libomptarget opens "libcuda.so" by name; a driver install may only have
# libcuda.so.1 in the loader cache
mkdir -p "$T/lib"
cuda1=$(ldconfig -p | awk '/libcuda\.so\.1 /{print $NF; exit}')
[ -n "$cuda1" ] || { echo "SKIP: no libcuda.so.1"; exit 77; }
ldconfig -p | grep -q 'libcuda\.so ' || ln -s "$cuda1" "$T/lib/libcuda.so"
# libomptarget opens "libomp.so" by name too: a link to the same file (a
# copy would load a second runtime)
ln -s "$O/lib/libomp.so.5" "$T/lib/libomp.so"
# libLLVM and the rest (tests/cuda/bundle-ompt.sh): unpacked once into build-ompt-llvm/lib
L=$(cd "$B/.." && pwd)/build-ompt-llvm
if [ ! -e "$L/lib/libLLVM.so.19.1" ]; then
  [ -e "$L/llvm-libs.tar.xz" ] || { echo "FAIL: no $L/llvm-libs.tar.xz (carry build-ompt-llvm first)"; exit 1; }
  python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$L/llvm-libs.tar.xz" "$L" ||
    { echo "FAIL: unpacking $L/llvm-libs.tar.xz"; exit 1; }
fi
export LD_LIBRARY_PATH=$O/lib:$L/lib:$T/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export OMP_TARGET_OFFLOAD=MANDATORY
LOOP=7
source "$O/lines.sh" # L1, L2
rc=0
# OMPT_BIN: the sm_90 build (ptxas cubin) or omp-known-jit (LLVM IR, JIT
# at run time); the first is tried and its exact error printed
echo "== the sm_90 image's ELF header (made here by CUDA 13's ptxas)"
grep -E 'OS/ABI|ABI Version|Machine|Flags' "$O/sm90-elf-header.txt"
echo "== bare (sm_90 cubin)"
if "$O/bin/omp-known-sm90" $LOOP; then BIN=${OMPT_BIN:-omp-known-sm90}; else
  echo "(the sm_90 cubin build does not run: rc $?)"
  echo "== bare (omp-known-jit: the device code as LLVM IR, JIT at run time)"
  "$O/bin/omp-known-jit" $LOOP; echo "(rc $?)"
  echo "== the same sm_90 cubin with an ELF ABI version 7 header (ompt-cubin-abi7.py)"
  BIN=${OMPT_BIN:-omp-known-sm90abi7}
fi
echo "== bare ($BIN)"; "$O/bin/$BIN" $LOOP || { echo "FAIL: bare run of $BIN"; exit 1; }
echo "== record ($BIN, CUPTI + OMPT)"
gpuprof record -o "$T/g.gpdb" -- "$O/bin/$BIN" $LOOP || { echo "FAIL: record"; exit 1; }
gpuprof report "$T/g.gpdb" | head -60
python3 "$O/check.py" "$T/g.gpdb" $LOOP "$L1" "$L2" cuda || rc=1
echo "== record (host plugin, OMPT only)"
gpuprof record -o "$T/h.gpdb" -- "$O/bin/omp-known-host" $LOOP || { echo "FAIL: record host"; exit 1; }
python3 "$O/check.py" "$T/h.gpdb" $LOOP "$L1" "$L2" || rc=1
echo "== chained tool ($BIN)"
own=$(OMP_TOOL_LIBRARIES=$O/lib/omp-tool.so "$O/bin/$BIN" $LOOP | grep '^tool:')
got=$(OMP_TOOL_LIBRARIES=$O/lib/omp-tool.so gpuprof record -o "$T/c.gpdb" -- "$O/bin/$BIN" $LOOP | grep '^tool:')
echo "alone: $own"; echo "under gpuprof: $got"
[ -n "$own" ] && [ "$own" = "$got" ] || { echo "FAIL: the chained tool's counts differ"; rc=1; }
[ $rc -eq 0 ] && echo "PASS gpu-ompt" || echo "FAIL gpu-ompt"
exit $rc

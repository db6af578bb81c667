#!/bin/sh
# merge-mpi-bundle.sh - a folder for the GPU machine's CPUs (which have no
# MPI): gpuprof + gpuprof-merge-mpi of two builds (new, old: an A/B in one
# call), bench-merge, Debian 12's Open MPI 4.1 (mpirun, libraries, plugins,
# help files) relocated under ompi/ (OPAL_PREFIX) and PMIx under pmix2/
# (PMIX_INSTALL_PREFIX), every non-glibc library they load, and
# merge-mpi-device.sh.  docs/PERFORMANCE.md "Cluster merge".
#   bench/merge-mpi-bundle.sh NEW_BUILD OLD_BUILD [OUT=.device/mpi8]
# then: run (carry [".device/mpi8"]) NODES=16 REP=2 NODES2=64 bash .device/mpi8/run.sh
set -eu
new=$1 old=$2
D=${3:-$(cd "$(dirname "$0")/.." && pwd)/.device/mpi8}
rm -rf "$D"
mkdir -p "$D/new" "$D/old" "$D/lib" "$D/ompi/bin" "$D/ompi/lib/x86_64-linux-gnu/openmpi/lib" "$D/ompi/share" \
  "$D/ompi/etc" "$D/pmix2"
cp "$new/bin/gpuprof" "$new/bin/gpuprof-merge-mpi" "$D/new/"
cp "$old/bin/gpuprof" "$old/bin/gpuprof-merge-mpi" "$D/old/"
cp "$new/bin/bench-merge" "$D/"
strip "$D"/new/* "$D"/old/* "$D/bench-merge"
cp "$(dirname "$0")/merge-mpi-device.sh" "$D/run.sh"
cp -L /usr/bin/orterun "$D/ompi/bin/mpirun"
cp -a /usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3 "$D/ompi/lib/x86_64-linux-gnu/openmpi/lib/"
cp -a /usr/share/openmpi "$D/ompi/share/"
cp /etc/openmpi/openmpi-mca-params.conf /etc/openmpi/openmpi-default-hostfile "$D/ompi/etc/"
(cd /usr/lib/x86_64-linux-gnu/pmix2 && tar cf - --exclude='*.a' --exclude='*.la' .) | (cd "$D/pmix2" && tar xf -)
sys='^(linux-vdso|ld-linux|libc\.so|libm\.so|libpthread|libdl\.so|librt\.so|libresolv|libutil|libstdc\+\+|libgcc_s)'
for f in "$D"/new/* "$D"/old/* "$D/bench-merge" "$D/ompi/bin/mpirun" "$D"/ompi/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/*.so \
  "$D"/pmix2/lib/*.so* "$D"/pmix2/lib/pmix/*.so; do
  ldd "$f" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}'
done | sort -u | while read -r name path; do
  echo "$name" | grep -Eq "$sys" && continue
  [ -e "$D/lib/$name" ] || cp -L "$path" "$D/lib/$name"
done
du -sh "$D"

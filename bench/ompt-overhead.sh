#!/usr/bin/env bash
# ompt-overhead.sh - cost of the shim's OMPT tool on an offload loop of
# small target regions (bench/omp-loop.c, the host offload plugin: each
# region is 2 transfers, 1 alloc, 1 delete and 1 kernel submit of a few ns
# of work).  Modes, interleaved, ROUNDS rounds each, median ns per region:
#   bare     no shim, no tool (the baseline, measured in the same run)
#   shim     the shim preloaded with its OMPT tool off (GPUPROF_OMPT=0)
#   record   `gpuprof record` (embedded daemon, full tracing): the tool on
# Usage: bench/ompt-overhead.sh BUILD_DIR [N] [ROUNDS]   (docs/PERFORMANCE.md)
set -euo pipefail
B=$(cd "${1:?BUILD_DIR}" && pwd)
N=${2:-20000}
ROUNDS=${3:-5}
LLVM=
for v in 19 18 17; do [ -e /usr/lib/llvm-$v/lib/libomptarget.so ] && { LLVM=/usr/lib/llvm-$v; break; }; done
[ -n "$LLVM" ] || { echo "no LLVM OpenMP offload runtime (scripts/deps)"; exit 77; }
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
"$LLVM/bin/clang" -fopenmp -fopenmp-targets=x86_64-pc-linux-gnu -O2 -g -fno-omit-frame-pointer \
  "$(dirname "$0")/omp-loop.c" -o "$T/omp-loop"
export LD_LIBRARY_PATH=$LLVM/lib OMP_TARGET_OFFLOAD=MANDATORY
run() {
  case $1 in
  bare) "$T/omp-loop" "$N" ;;
  shim) GPUPROF_OMPT=0 LD_PRELOAD="$B/lib/libgpuprof.so" GPUPROF_SOCKET="$T/none.sock" "$T/omp-loop" "$N" 2>/dev/null ;;
  record) "$B/bin/gpuprof" record -o "$T/r.gpdb" -- "$T/omp-loop" "$N" 2>/dev/null; rm -f "$T/r.gpdb" ;;
  esac | sed -n 's/^ns_per_region \([0-9]*\).*/\1/p'
}
declare -A all
for r in $(seq "$ROUNDS"); do
  for m in bare shim record; do all[$m]+="$(run $m) "; done
done
median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
base=$(echo "${all[bare]}" | median)
echo "omp-loop: $N regions of map(tofrom: 16 doubles), host offload plugin, $ROUNDS rounds, median"
printf '| %-7s | %12s | %7s | %16s | %s\n' mode ns/region ratio "+ns per region" "rounds (ns/region)"
for m in bare shim record; do
  med=$(echo "${all[$m]}" | median)
  printf '| %-7s | %12s | %7s | %16s | %s\n' "$m" "$med" "$(awk -v a="$med" -v b="$base" 'BEGIN{printf "%.2fx", a/b}')" \
    "$((med - base))" "${all[$m]}"
done

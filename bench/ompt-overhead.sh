#!/usr/bin/env bash
# ompt-overhead.sh - cost of the shim's OMPT tool on an offload loop of
# small target regions (bench/omp-loop.c, the host offload plugin: each
# region is 2 transfers, 1 alloc, 1 delete and 1 kernel submit of a few ns
# of work).  Modes, interleaved, ROUNDS rounds each, median ns per region of
# the loop's wall time and of the process's CPU time (all its threads: the
# shim's included; the daemon's not), the latter steadier on a loaded host:
#   bare     no shim, no tool (the baseline, measured in the same run)
#   notool   `gpuprof record` with the shim's OMPT tool off (GPUPROF_OMPT=0):
#            the shim and its daemon present, nothing of the regions recorded
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
  notool) GPUPROF_OMPT=0 "$B/bin/gpuprof" record -o "$T/r.gpdb" -- "$T/omp-loop" "$N" 2>/dev/null; rm -f "$T/r.gpdb" ;;
  record) "$B/bin/gpuprof" record -o "$T/r.gpdb" -- "$T/omp-loop" "$N" 2>/dev/null; rm -f "$T/r.gpdb" ;;
  esac | sed -n 's/^ns_per_region \([0-9]*\) cpu_ns_per_region \([0-9]*\).*/\1 \2/p'
}
declare -A all cpu
for r in $(seq "$ROUNDS"); do
  for m in bare notool record; do
    read -r w c < <(run $m)
    all[$m]+="$w " cpu[$m]+="$c "
  done
done
median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
base=$(echo "${all[bare]}" | median) cbase=$(echo "${cpu[bare]}" | median)
echo "omp-loop: $N regions of map(tofrom: 16 doubles), host offload plugin, $ROUNDS rounds, median; load $(cut -d' ' -f1 /proc/loadavg)"
printf '| %-7s | %9s | %6s | %8s | %9s | %6s | %8s | %s\n' mode "wall ns" ratio "+wall ns" "CPU ns" ratio "+CPU ns" \
  "rounds (wall / CPU ns per region)"
for m in bare notool record; do
  med=$(echo "${all[$m]}" | median) cmed=$(echo "${cpu[$m]}" | median)
  printf '| %-7s | %9s | %6s | %8s | %9s | %6s | %8s | %s / %s\n' "$m" "$med" \
    "$(awk -v a="$med" -v b="$base" 'BEGIN{printf "%.2fx", a/b}')" "$((med - base))" "$cmed" \
    "$(awk -v a="$cmed" -v b="$cbase" 'BEGIN{printf "%.2fx", a/b}')" "$((cmed - cbase))" "${all[$m]}" "${cpu[$m]}"
done

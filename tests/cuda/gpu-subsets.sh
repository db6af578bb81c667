#!/bin/bash
# gpu-subsets.sh - do operation subsets under duty cycling still kill the
# traced process?  GPU machine only (docs/CUDA.md, "Operation subsets and
# finalize").  Run from a bundle made by tests/cuda/bundle-torchcost.sh
# with bench/cuda/step-phase.py copied in:
#   cd BUNDLE && bash gpu-subsets.sh [ROUNDS] [SECONDS]
# One gpuprofd (fresh folder); per round, one GPT-2 training per
# configuration below, all at once on the one GPU, each SECONDS (40) of
# timed steps (step-phase.py: GPT-2 from a transformers config, random
# weights), attached as the prolog attaches (LD_PRELOAD + GPUPROF_SOCKET)
# with GPUPROF_CUDA_TRACE set:
#   duty:100/2,coarse           the subset that crashed 3 of 4 runs before
#   duty:100/2,kernel           crashed 1 of 2 before
#   duty:100/2,coarse,finalize  an explicit finalize beside a subset
#   duty:100/2                  every class (finalizes between windows)
# Prints per process: exit status, the number of steps, heap or CUPTI
# errors on stderr, and the shim's finalize/keep decision line; then a
# table and "subsets: N of M runs ended with status 0".  Exit 0 only when
# every run did.
set -u
B=$(cd "$(dirname "$0")" && pwd)
rounds=${1:-2}
secs=${2:-40}
O=${OUT:-/tmp/out}/subsets
rm -rf "$O"
mkdir -p "$O/state"
export PYTHONUNBUFFERED=1
date -u
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
GPUPROF_LOG=info "$B/bin/gpuprofd" --foreground --socket "$O/s" --db "$O/node.gpdb" \
  --state-dir "$O/state" >"$O/daemon.log" 2>&1 &
dpid=$!
. "$B/gpu-wait.sh"
wait_until 60 "gpuprofd's socket $O/s" test -S "$O/s" || { tail "$O/daemon.log"; exit 1; }
cfgs="duty:100/2,coarse duty:100/2,kernel duty:100/2,coarse,finalize duty:100/2"
ok=0 all=0
for r in $(seq "$rounds"); do
  pids=() names=()
  i=0
  for c in $cfgs; do
    i=$((i + 1))
    n="r$r-$i"
    LD_PRELOAD="$B/lib/libgpuprof.so" GPUPROF_SOCKET="$O/s" GPUPROF_CUDA_TRACE="$c" \
      GPUPROF_LOG=info python3 "$B/step-phase.py" 2 "$secs" "$c" >"$O/$n.out" 2>"$O/$n.err" &
    pids+=($!) names+=("$n $c")
  done
  for k in "${!pids[@]}"; do
    wait "${pids[$k]}"
    st=$?
    set -- ${names[$k]}
    steps=$(sed -n 's/^phase .*: \([0-9]*\) steps in .*/\1/p' "$O/$1.out")
    heap=$(grep -Eci 'corrupt|double free|free\(\)|malloc\(\)|Segmentation|Aborted|CUPTI_ERROR' "$O/$1.err")
    decide=$(grep -Ei 'finaliz|keep|duty-cycled' "$O/$1.err" | head -n 2 | tr '\n' ' ' | cut -c1-200)
    printf 'subset %-28s %-6s status %3d steps %5s errors %s  %s\n' "$2" "$1" "$st" "${steps:-0}" "$heap" "$decide"
    all=$((all + 1))
    [ "$st" = 0 ] && [ -n "$steps" ] && ok=$((ok + 1))
    [ "$st" = 0 ] || tail -n 5 "$O/$1.err" | sed 's/^/    /'
  done
done
GPUPROF_SOCKET="$O/s" "$B/bin/gpuprof" ps --all 2>&1 | head -n 20
kill -TERM $dpid
wait $dpid
echo "subsets: $ok of $all runs ended with status 0"
tar czf "${OUT:-/tmp/out}/subsets.tgz" -C "$O/.." --exclude='*.gpdb*' --exclude='gpubins' subsets 2>/dev/null
[ "$ok" = "$all" ]

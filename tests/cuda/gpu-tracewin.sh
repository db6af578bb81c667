#!/bin/bash
# gpu-tracewin.sh - issue 24's live-window check on the GPU machine (repo
# root, bundle/ from scripts/bundle-gpu).  Writes under ${OUT:-/tmp/out}:
# tracewin.log, w1.pftrace, w2.pftrace, w1.json.
#  - a node gpuprofd, torch_train.py (a training loop) preloaded with the
#    shim, CUDA tracing detached (windows attach CUPTI);
#  - two live windows of ${WIN:-60s} in a row on it, Perfetto then Chrome:
#    every kernel launched in a window present (trace-decode: launch
#    instants == kernel slices == flows), every interned id resolved;
#    the Perfetto file also decoded with Perfetto's own merged schema when
#    $PERFETTO_PROTO names it (check-pftrace.py);
#  - bytes per GPU event of each file; the daemon's peak RSS (VmHWM).
# Issue 24's rate check (a 60 s window at >= 20 000 kernels/s):
#   APP="tests/cuda/torch_launchloop.py 150" NWIN=1 bash tests/cuda/gpu-tracewin.sh
# (torch_launchloop.py's block lines give the kernel rate).
set -u
B=$PWD/${BUNDLE:-bundle}; O=${OUT:-/tmp/out}; mkdir -p "$O"
source "$B/env.sh"
S=/tmp/gpd-tw.sock; DB=/tmp/gpd-tw.gpdb; rm -f "$S" "$DB"
# wait_until SECONDS CMD...: run CMD every 0.1 s until it succeeds; 1 after
# the deadline
wait_until() {
  local end=$(($(date +%s) + $1)); shift
  until "$@"; do
    [ "$(date +%s)" -lt "$end" ] || return 1
    sleep 0.1
  done
}
{
  date -u; nvidia-smi -L
  gpuprofd --foreground --socket "$S" --db "$DB" --state-dir /tmp/gpd-tw-state 2>/tmp/gpd-tw.log &
  D=$!
  wait_until 10 test -S "$S" || { echo "FAIL: no daemon socket after 10 s"; cat /tmp/gpd-tw.log; exit 1; }
  GPUPROF_CUDA_TRACE=detached LD_PRELOAD=$B/lib/libgpuprof.so GPUPROF_SOCKET=$S TORCH_BLOCK=${BLOCK:-50} \
    python3 ${APP:-tests/cuda/torch_train.py 100000 10} >/tmp/tw-app.out 2>&1 &
  A=$!
  # the model loaded and stepping: its first timed block printed
  wait_until 180 grep -q '^block ' /tmp/tw-app.out ||
    { echo "FAIL: the training printed no step block in 180 s"; cat /tmp/tw-app.out; exit 1; }
  for w in $(seq "${NWIN:-2}"); do
    /usr/bin/time -v gpuprof --socket "$S" trace --pid "$A" --duration "${WIN:-60s}" -o "$O/w$w.pftrace" \
      2>"$O/w$w.err"; echo "window $w rc=$?"; grep -v "^\s" "$O/w$w.err" | head -5
    trace-decode "$O/w$w.pftrace" >"$O/w$w.txt"; echo "decode rc=$?"
    la=$(grep -P "^instants CPU thread \d+\tlaunch <gpu kernel>\t" "$O/w$w.txt" | awk -F'\t' '{s += $3} END {print s + 0}')
    ka=$(grep -P '^slices GPU \d+ stream \d+\t[^<]' "$O/w$w.txt" | awk -F'\t' '{s += $3} END {print s + 0}')
    echo "window $w: launches $la kernels $ka $(grep -E '^(flows|interned|resolved|ok)' "$O/w$w.txt" | tr '\n' ' ')"
    n=$(grep -o '[0-9]* GPU events' "$O/w$w.err" | cut -d' ' -f1)
    echo "window $w: $(stat -c %s "$O/w$w.pftrace") bytes, $n GPU events, $(( $(stat -c %s "$O/w$w.pftrace") / (n > 0 ? n : 1) )) B/event"
    grep VmHWM /proc/$D/status
    if [ -n "${PERFETTO_PROTO:-}" ]; then
      protoc --decode="$(sed -n 's/^package \(.*\);/\1/p' "$PERFETTO_PROTO").Trace" -I "$(dirname "$PERFETTO_PROTO")" "$PERFETTO_PROTO" <"$O/w$w.pftrace" >"$O/w$w.decoded"
      echo "perfetto schema decode rc=$?"
    fi
  done
  gpuprof --socket "$S" trace --pid "$A" --duration 10s -o "$O/w1.json"; echo "chrome window rc=$?"
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sf=d["stackFrames"]; x=[e for e in d["traceEvents"] if e["ph"]=="X"]; assert all(str(e["sf"]) in sf for e in x if "sf" in e); print("chrome:", len(x), "X events,", len(sf), "frames, all sf resolve")' "$O/w1.json"
  kill $A; wait $A; kill $D; wait $D
} 2>&1 | tee "$O/tracewin.log"

# gpu-wait.sh - sourced by the GPU-machine scripts (tests/devices/
# gpu-devices*.sh, tests/gpuanalysis/gpu-{counts,sample}.sh): waits for a
# condition with a deadline instead of a fixed sleep.  The only fixed sleeps
# left in those scripts are measured windows: a CPU cost per wall second
# over a set interval, where there is no condition to wait for.
# wait_until SECONDS WHAT CMD...: run CMD every 0.1 s until it succeeds;
# after SECONDS say WHAT did not happen and return 1.
wait_until() {
  local secs=$1 end=$((SECONDS + $1)) what=$2
  shift 2
  until "$@" >/dev/null 2>&1; do
    [ "$SECONDS" -lt "$end" ] || { echo "gave up: $what (after ${secs} s)" >&2; return 1; }
    sleep 0.1
  done
}
# daemon_up SOCK: the daemon answers ps
daemon_up() { gpuprof --socket "$1" ps; }
# phase_started FILE: devload.py printed its first phase (CUDA is up, the
# load runs)
phase_started() { grep -q '^phase ' "$1"; }
# sampled SOCK N: the device monitor has taken at least N rounds
sampled() {
  local n
  n=$(gpuprof --socket "$1" devices 2>/dev/null | sed -n 's/^gpuprofd device monitoring: [a-z]*, \([0-9]*\) samples$/\1/p')
  [ -n "$n" ] && [ "$n" -ge "$2" ]
}
# proc_listed SOCK PID: the daemon lists PID (it registered)
proc_listed() { gpuprof --socket "$1" ps 2>/dev/null | awk -v p="$2" '$1 == p { f = 1 } END { exit !f }'; }
# tree_metric_ge SOCK PID METRIC N: PID's live tree holds at least N of METRIC
tree_metric_ge() {
  gpuprof --socket "$1" tree --pid "$2" --json 2>/dev/null | python3 -c '
import json, sys
m = json.load(sys.stdin)["tree"]["metrics"]
sys.exit(0 if m.get(sys.argv[1], {}).get("incl", 0) >= float(sys.argv[2]) else 1)' "$3" "$4"
}
# steps_after FILE T N: FILE (pcsamp-known --steps output, "step K end
# TIME ms D" with TIME on CLOCK_REALTIME) shows at least N steps that
# ended after T (seconds since the epoch, as `date +%s.%N`)
steps_after() {
  awk -v t="$2" -v n="$3" '$1 == "step" && $3 == "end" && $4 + 0 > t + 0 { c++ } END { exit !(c >= n) }' "$1"
}
# not_alive PID
not_alive() { ! kill -0 "$1" 2>/dev/null; }
# stop_proc PID SECONDS: TERM, wait up to SECONDS for it to end, then KILL
# (TERM, not INT: a script's background job ignores SIGINT)
stop_proc() {
  kill -TERM "$1" 2>/dev/null
  wait_until "$2" "pid $1 ending after TERM" not_alive "$1" || kill -KILL "$1" 2>/dev/null
  wait "$1" 2>/dev/null
}

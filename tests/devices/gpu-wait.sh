# gpu-wait.sh - sourced by the GPU-machine scripts gpu-devices.sh and
# gpu-devices-cost.sh: waits for a condition with a deadline instead of a
# fixed sleep (the measured windows themselves stay fixed-length sleeps).
# wait_until SECONDS WHAT CMD...: run CMD every 0.1 s until it succeeds;
# after SECONDS say WHAT did not happen and exit 1.
wait_until() {
  local secs=$1 end=$((SECONDS + $1)) what=$2
  shift 2
  until "$@" >/dev/null 2>&1; do
    [ "$SECONDS" -lt "$end" ] || { echo "gave up: $what (after ${secs} s)" >&2; exit 1; }
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

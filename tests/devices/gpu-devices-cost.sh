#!/bin/bash
# gpu-devices-cost.sh - CPU cost of gpuprofd's device monitoring at 10 Hz
# on the GPU machine (docs/VALIDATION.md): the sampler thread's own CPU
# time (/proc/PID/task/TID/schedstat of "gpd-devices") over 30 s while a
# profiled PyTorch load runs, then the whole daemon's CPU time (all
# threads) idle for 20 s with monitoring on and with it off.  $B: bundle
# folder; results in $OUT/cost.txt.
set -u
B=${B:?bundle folder}; O=${OUT:-/tmp/out}; W=/tmp/gdc
rm -rf "$W"; mkdir -p "$W/st" "$O"
export PATH=$B/bin:$PATH PYTHONUNBUFFERED=1
if ! ldconfig -p | grep -q 'libcupti\.so\.13 ' && [ ! -e /usr/local/cuda/lib64/libcupti.so.13 ] &&
  [ -e "$B/lib/cupti/libcupti.so.13" ]; then
  export GPUPROF_CUPTI_PATH=$B/lib/cupti/libcupti.so.13
fi
R=$O/cost.txt
. "$(dirname "$0")/gpu-wait.sh"
: > "$R"
proc_ns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{s+=$1} END {print s+0}'; }
sampler_ns() {
  local t
  for t in /proc/"$1"/task/*; do
    [ "$(cat "$t/comm" 2>/dev/null)" = gpd-devices ] && { awk '{print $1}' "$t/schedstat"; return; }
  done
  echo 0
}
start() { # NAME INTERVAL_MS
  printf '[daemon]\nlog_level = info\n[devices]\ninterval_ms = %s\npapi_events = perf::TASK-CLOCK\n' "$2" > "$W/$1.conf"
  gpuprofd --foreground --socket "$W/$1.sock" --db "$W/$1.gpdb" --state-dir "$W/st" --config "$W/$1.conf" \
    > "$W/$1.log" 2>&1 &
  D=$!
  wait_until 10 "gpuprofd $1 answering" daemon_up "$W/$1.sock" || exit 1
}
measure() { # LABEL SECONDS (D set)
  local s0 p0 s1 p1 t0 t1
  s0=$(sampler_ns $D); p0=$(proc_ns $D); t0=$(date +%s%N)
  sleep "$2" # the measured window
  s1=$(sampler_ns $D); p1=$(proc_ns $D); t1=$(date +%s%N)
  awk -v l="$1" -v s=$((s1 - s0)) -v p=$((p1 - p0)) -v w=$((t1 - t0)) 'BEGIN {
    printf "%-28s wall %.2f s  sampler thread %.4f s = %.3f %% of a core  whole daemon %.4f s = %.3f %%\n",
      l, w / 1e9, s / 1e9, 100 * s / w, p / 1e9, 100 * p / w }' >> "$R"
}
{ date -u; nvidia-smi -L; } >> "$R"
# 1. 10 Hz with a profiled PyTorch process on the GPU
start load 100
LD_PRELOAD=$B/lib/libgpuprof.so GPUPROF_SOCKET=$W/load.sock GPUPROF_JOB_ID=job-cost \
  python3 "$B/devload.py" 36 > "$W/load.out" 2>&1 &
P=$!
wait_until 60 "the PyTorch load starting" phase_started "$W/load.out" || exit 1
measure "10 Hz, PyTorch load" 30
nvidia-smi pmon -c 1 >> "$R" 2>&1
gpuprof --socket "$W/load.sock" devices | sed -n '1,12p' >> "$R"
wait $P
kill -TERM $D; wait $D
grep -E "devices:|papi|PAPI" "$W/load.log" | head -5 >> "$R"
# 2. idle daemon, 10 Hz vs off
start idle 100
wait_until 10 "a first device sample" sampled "$W/idle.sock" 1 || exit 1
measure "10 Hz, idle" 20
kill -TERM $D; wait $D
start off 0
measure "off (interval_ms 0), idle" 20
kill -TERM $D; wait $D
cat "$R"

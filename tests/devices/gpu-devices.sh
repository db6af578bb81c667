#!/bin/bash
# gpu-devices.sh - device monitoring on the GPU machine (docs/VALIDATION.md):
# gpuprofd with the real NVML at 10 Hz during a PyTorch load
# (devload.py), next to `nvidia-smi --query-gpu=... -lms 200`; then the
# same load with monitoring off.  The daemon's CPU time (utime+stime of
# /proc/PID/stat, and the sum of its threads' schedstat ns) is taken over
# the same 30 s of each run.  Run from the repo root with the bundle
# folder as $B (bin/gpuprofd, bin/gpuprof, lib/libgpuprof.so + libraries);
# everything lands in $OUT/gdv.tgz.
set -u
B=${B:?bundle folder}; O=${OUT:-/tmp/out}; W=/tmp/gdv
rm -rf "$W"; mkdir -p "$W/st" "$W/res" "$O"
export PATH=$B/bin:$PATH PYTHONUNBUFFERED=1
# the shim's CUPTI: the machine's own, else the bundle's copy (as bundle-gpu's env.sh)
if ! ldconfig -p | grep -q 'libcupti\.so\.13 ' && [ ! -e /usr/local/cuda/lib64/libcupti.so.13 ] &&
  [ -e "$B/lib/cupti/libcupti.so.13" ]; then
  export GPUPROF_CUPTI_PATH=$B/lib/cupti/libcupti.so.13
fi
R=$W/res
. "$(dirname "$0")/gpu-wait.sh"
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=driver_version,name --format=csv; nproc; uname -r
  cat /proc/sys/kernel/perf_event_paranoid; } > "$R/env.txt" 2>&1
python3 -c 'import time; print("%.6f %d" % (time.time(), time.clock_gettime_ns(time.CLOCK_MONOTONIC_RAW)))' > "$R/clocks.txt"
ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }
sched_ns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{s+=$1} END {print s}'; }
phase() { # NAME INTERVAL_MS
  local name=$1 iv=$2 D S=0 P c0 c1 n0 n1 t0 t1
  printf '[devices]\ninterval_ms = %s\npapi_events = perf::TASK-CLOCK,perf::CONTEXT-SWITCHES\n' "$iv" > "$W/$name.conf"
  gpuprofd --foreground --socket "$W/$name.sock" --db "$W/$name.gpdb" --state-dir "$W/st" \
    --config "$W/$name.conf" > "$R/$name.daemon.log" 2>&1 &
  D=$!
  wait_until 10 "gpuprofd $name answering" daemon_up "$W/$name.sock" || exit 1
  if [ "$name" = on ]; then
    nvidia-smi --query-gpu=timestamp,utilization.gpu,utilization.memory,memory.used,memory.total,power.draw,temperature.gpu,clocks.sm \
      --format=csv,nounits -lms 200 > "$R/smi.csv" 2>&1 &
    S=$!
  fi
  LD_PRELOAD=$B/lib/libgpuprof.so GPUPROF_SOCKET=$W/$name.sock GPUPROF_JOB_ID=job-$name \
    python3 "$B/devload.py" 36 > "$R/$name.load.txt" 2>&1 &
  P=$!
  wait_until 60 "the PyTorch load starting" phase_started "$R/$name.load.txt" || exit 1
  c0=$(ticks $D); n0=$(sched_ns $D); t0=$(date +%s.%N)
  for k in 1 2 3; do
    sleep 9 # part of the measured window
    gpuprof --socket "$W/$name.sock" devices > "$R/$name.devices.$k.txt" 2>&1
  done
  sleep 3 # the end of the measured window
  c1=$(ticks $D); n1=$(sched_ns $D); t1=$(date +%s.%N)
  echo "$name interval_ms $iv ticks $c0 $c1 sched_ns $n0 $n1 wall $t0 $t1 clk_tck $(getconf CLK_TCK)" >> "$R/cpu.txt"
  gpuprof --socket "$W/$name.sock" devices --prometheus > "$R/$name.prom.txt" 2>&1
  gpuprof --socket "$W/$name.sock" top > "$R/$name.top.txt" 2>&1
  wait $P
  [ "$S" != 0 ] && kill $S
  kill -TERM $D
  wait $D
  echo "$name daemon exit $?" >> "$R/cpu.txt"
}
phase on 100
phase off 0
cp "$W"/on.gpdb* "$R/" 2>/dev/null
tar czf "$O/gdv.tgz" -C "$W" res
cat "$R/cpu.txt" "$R/on.devices.2.txt"
head -5 "$R/smi.csv"

#!/bin/bash
# gpu-torchcost.sh - gpuprof's own cost per GPU operation on the PyTorch
# loop, on the GPU machine (repo root; BUNDLE = the folder made by
# tests/cuda/bundle-torchcost.sh).  Writes $OUT/torchcost.log.
# Configurations (CFGS, run in turn, R interleaved rounds):
#   bare          no tool
#   cupti         minimal CUPTI tracer (bench/cuda/min-tracer.c), same
#                 callbacks and activity kinds as gpuprof
#   gpuprof       gpuprof record, full tracing
#   daemon        full tracing under a node daemon this script starts
#                 (LD_PRELOAD of the shim, GPUPROF_SOCKET: the node-service
#                 shape; its log and `gpuprof ps` printed at the end)
#   stats         gpuprof record, GPUPROF_SHIM_STATS=1 (per-phase counters)
#   outer         gpuprof record, GPUPROF_SHIM_STATS=outer (the callbacks
#                 only: the whole cost per call with two clock reads)
#   outer_nopy    outer with GPUPROF_PYTHON=0 (native frames only)
#   floor         gpuprof record, GPUPROF_SHIM_STATS=floor: outer, with the
#                 call path captured once per thread and reused (a wrong
#                 profile; the cost of all but the call path)
#   old, outer_old, stats_old   gpuprof, outer, stats with the shim of
#                 OLD_SHIM (bundle-torchcost.sh: $B/old/lib/libgpuprof.so)
#   nopy          gpuprof record, GPUPROF_PYTHON=0 (native frames only)
#   duty          gpuprof record, GPUPROF_CUDA_TRACE=$DUTY (default duty:10/0.2)
#   duty2         the same with $DUTY2 (default duty:10/1)
#   dutyk, duty2k the same as duty, duty2 with ",keep" (CUPTI stays loaded
#                 between windows; the default finalizes, docs/CUDA.md;
#                 the logs of 2026-11-24 duty12 runs 1-2 predate that
#                 default: their duty/duty2 are dutyk/duty2k, their
#                 dutyf/duty2f the ",finalize" that is now the default)
#   dutystats     duty2 with GPUPROF_SHIM_STATS=1 (CUPTI's timestamp
#                 callbacks while detached, among the shim's counters)
#   detached      gpuprof record, GPUPROF_CUDA_TRACE=detached
#   kineto        torch.profiler (Kineto), CPU + CUDA activities
# Each prints torch_steps_s (wall s of the timed steps).  Then, if set:
#   LONG=STEPS    full vs $LDUTY on a longer loop, per-context GPU time
#                 compared by check-duty.py (report --json of both)
#   ATTACH=A:D    detached, attached A ms after start for D ms
#                 (GPUPROF_CUDA_ATTACH), the on-demand shape; with
#                 ATTACH_BLOCK=N the loop prints its block times
#                 (TORCH_BLOCK) and ATTACH_MODES (default "detached")
#                 lists the modes run (e.g. "detached,keep detached")
#   COUNTS=STEPS  full tracing with GPUPROF_CUPTI_SELFTEST=1: CUPTI's
#                 runtime-API launches against the cudart launch counters
#   ONCE=CFGS     configurations run once after the rounds (e.g. stats)
#   DROPS=STEPS   full tracing on a long loop under each daemon of DROPV
#                 (default "new": bin/gpuprofd; "main": bin/gpuprofd-main,
#                 "main-notrace": gpuprofd-main with [trace] threads = 0):
#                 records dropped, the shim's buffer/push counters and the
#                 daemon's writer and tracing-thread timings from its log
#   TRACE=STEPS   gpuprof trace of a STEPS-step run: $OUT/torch.pftrace.gz,
#                 torch.json.gz (Chrome) and the profile torch.gpdb
#   LIVE=STEPS    on-demand tracing: a detached STEPS-step run under a node
#                 daemon, `gpuprof trace --pid --duration 2s` once it runs
#                 (block times before, during and after the window;
#                 $OUT/live.pftrace.gz)
#   BENCH=STEPS   bench-torchloop on this machine's CPU (old and new shim,
#                 interleaved rounds, warm and cold caches: BENCH_EVICT KB)
#   TURNS=CFGS    the steady-state cost resolved to ~1 %: torch-turns.py
#                 (its docstring): TURN_PROCS (2) processes per
#                 configuration of CFGS (bare detached duty:10/1 ...) take
#                 turns of TURN_STEPS (400) steps on the GPU for
#                 TURN_BUDGET s (300); per-round ratios to bare with 95 %
#                 intervals, start-up apart; $OUT/turns.tsv.  Then
#                 TURN_LONG_ROUNDS rounds of one TURN_LONG-step run per
#                 process, each step timed: the cost of bursts (duty
#                 windows) over a running median; $OUT/longs.tsv.gz.
#                 TURN_OPTS: more options (--parallel-start).  CFGS=""
#                 skips the rounds above.
#   EXTRA=CMD     run at the end
set -u
B=$(cd "${BUNDLE:-.device/torchcost}" && pwd); O=${OUT:-/tmp/out}; mkdir -p "$O"
source "$B/env.sh"
source "$B/gpu-wait.sh"
export PYTHONUNBUFFERED=1
MT=$B/lib/libgpd-min-tracer.so
R=${R:-3}; ARGS=${TORCH_ARGS:-"300 10"}; DUTY=${DUTY:-duty:10/0.2}; DUTY2=${DUTY2:-duty:10/1}; LDUTY=${LDUTY:-$DUTY}
PY="python3 $B/torch_train.py $ARGS"
rec() { # ENV... -- record the loop, keep the stderr summary
  local n=$1; shift
  rm -f /tmp/o.gpdb*
  env "$@" timeout 300 gpuprof record -o /tmp/o.gpdb -- $PY 2>/tmp/rec.err
  grep -E "gpuprof-stats|dropped|duty|gpuprof-cupti" /tmp/rec.err | sed "s/^/    [$n] /"
  [ -n "${KEEP:-}" ] && cp /tmp/o.gpdb "$O/$n.gpdb" 2>/dev/null
}
run_cfg() {
  case $1 in
    bare) $PY ;;
    cupti) CUDA_INJECTION64_PATH=$MT $PY ;;
    gpuprof) rec gpuprof GPUPROF_X=1 ;;
    daemon)
      env LD_PRELOAD="$GPUPROF_SHIM" GPUPROF_SOCKET="$NODE/s" GPUPROF_CUPTI_SELFTEST=1 $PY 2>/tmp/dmn.err
      grep -E "pushfail" /tmp/dmn.err | sed -n 's/.*\(dropped=.*pushfail=[0-9]*\).*/    [daemon] \1/p' ;;
    stats) rec stats GPUPROF_SHIM_STATS=1 ;;
    outer) rec outer GPUPROF_SHIM_STATS=outer ;;
    outer_nopy) rec outer_nopy GPUPROF_SHIM_STATS=outer GPUPROF_PYTHON=0 ;;
    floor) rec floor GPUPROF_SHIM_STATS=floor ;;
    old) rec old GPUPROF_SHIM="$B/old/lib/libgpuprof.so" ;;
    outer_old) rec outer_old GPUPROF_SHIM_STATS=outer GPUPROF_SHIM="$B/old/lib/libgpuprof.so" ;;
    stats_old) rec stats_old GPUPROF_SHIM_STATS=1 GPUPROF_SHIM="$B/old/lib/libgpuprof.so" ;;
    nopy) rec nopy GPUPROF_PYTHON=0 ;;
    duty) rec duty GPUPROF_CUDA_TRACE=$DUTY GPUPROF_CUPTI_SELFTEST=1 ;;
    duty2) rec duty2 GPUPROF_CUDA_TRACE=$DUTY2 GPUPROF_CUPTI_SELFTEST=1 ;;
    dutyk) rec dutyk GPUPROF_CUDA_TRACE=$DUTY,keep GPUPROF_CUPTI_SELFTEST=1 ;;
    duty2k) rec duty2k GPUPROF_CUDA_TRACE=$DUTY2,keep GPUPROF_CUPTI_SELFTEST=1 ;;
    dutystats) rec dutystats GPUPROF_CUDA_TRACE=$DUTY2 GPUPROF_SHIM_STATS=1 GPUPROF_CUPTI_SELFTEST=1 ;;
    detached) rec detached GPUPROF_CUDA_TRACE=detached GPUPROF_CUPTI_SELFTEST=1 ;;
    kineto) python3 "$B/torch_kineto.py" $ARGS ;;
  esac
}
# selftest_rec TAG DB STEPS WARMUP PATTERN: gpuprof record of torch_train.py
# with the back end's counters (GPUPROF_CUPTI_SELFTEST), lines matching
# PATTERN of its stderr printed as "    [TAG] ..."
selftest_rec() {
  rm -f "$2"*
  GPUPROF_CUPTI_SELFTEST=1 timeout 300 gpuprof record -o "$2" -- python3 "$B/torch_train.py" "$3" "$4" \
    2>"/tmp/$1.err" | grep torch_steps_s
  grep -E "$5" "/tmp/$1.err" | sed "s/^/    [$1] /"
}
CFGS=${CFGS-"bare cupti gpuprof stats nopy"}
NODE=/tmp/node
# daemon CONF LOG ARGS...: start gpuprofd (REAL, default bin/gpuprofd) in
# the foreground with its log at info level in LOG
logged_daemon() {
  local conf=$1 log=$2; shift 2
  GPUPROF_LOG=info "${REAL:-$B/bin/gpuprofd}" --foreground ${conf:+--config "$conf"} "$@" >>"$log" 2>&1 &
}
{
  date -u; nvidia-smi -L; python3 -c 'import sys, torch; print(sys.version.split()[0], torch.__version__)'
  echo "clocksource: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)"
  echo "perf: $(command -v perf || echo none)"
  case " $CFGS " in *" daemon "*)
    rm -rf "$NODE"; mkdir -p "$NODE/state"
    logged_daemon "" "$NODE/log" --socket "$NODE/s" --db "$NODE/node.gpdb" --state-dir "$NODE/state"
    NODE_PID=$!
    wait_until 60 "node daemon answering" daemon_up "$NODE/s" || exit 1 ;;
  esac
  echo "== torch_train.py $ARGS, wall s (torch_steps_s)"
  for r in $(seq "$R"); do for c in $CFGS; do
    printf '%-9s r%d: ' "$c" "$r"; run_cfg "$c" 2>&1 | grep -E "torch_steps_s|^    \[|Error|error" | head -40
  done; done
  for c in ${ONCE:-}; do
    printf '%-9s once: ' "$c"; run_cfg "$c" 2>&1 | grep -E "torch_steps_s|^    \[|Error|error" | head -40
  done
  # medians, spread (min-max) and the median of the per-round ratios to
  # the same round's bare run, from the lines above
  python3 - "$O/torchcost.log" <<'PY'
import re, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    m = re.match(r"(\S+)\s+r(\d+): torch_steps_s ([0-9.]+)", line)
    if m:
        rows.setdefault(m.group(1), {})[int(m.group(2))] = float(m.group(3))
bare = rows.get("bare", {})
print("== summary: config, rounds, median s, min-max s, median of per-round ratio to bare (min-max)")
for c, r in rows.items():
    v = list(r.values())
    rat = [r[k] / bare[k] for k in r if k in bare]
    print("%-9s %d  %.4f  %.4f-%.4f  %s" % (c, len(v), statistics.median(v), min(v), max(v),
          "%.4f (%.4f-%.4f)" % (statistics.median(rat), min(rat), max(rat)) if rat else "-"))
PY
  if [ -n "${NODE_PID:-}" ]; then
    echo "== node daemon: gpuprof ps, then its log (stopped with TERM)"
    gpuprof --socket "$NODE/s" ps
    stop_proc "$NODE_PID" 30
    grep -vE "registered|hello" "$NODE/log" | tail -20
  fi
  if [ -n "${DROPS:-}" ]; then
    # Full tracing on a long loop: did records get lost to full rings?
    echo "== full tracing, torch_train.py $DROPS 10: dropped records per daemon"
    printf '[trace]\nthreads = 0\n' >/tmp/notrace.conf
    cat >/tmp/gpuprofd-logged <<'W'
#!/bin/sh
# gpuprof record's private daemon, its log kept: $GPD_REAL, $GPD_CONF, $GPD_LOG
exec env GPUPROF_LOG=info "$GPD_REAL" ${GPD_CONF:+--config "$GPD_CONF"} "$@" 2>>"$GPD_LOG"
W
    chmod +x /tmp/gpuprofd-logged
    for v in ${DROPV:-new}; do
      case $v in
        new) real=$B/bin/gpuprofd conf= ;;
        main) real=$B/bin/gpuprofd-main conf= ;;
        main-notrace) real=$B/bin/gpuprofd-main conf=/tmp/notrace.conf ;;
        new-notrace) real=$B/bin/gpuprofd conf=/tmp/notrace.conf ;;
      esac
      rm -f /tmp/drops.gpdb* /tmp/drops.$v.log
      printf '%-13s ' "$v"
      GPUPROF_DAEMON=/tmp/gpuprofd-logged GPD_REAL=$real GPD_CONF=$conf GPD_LOG=/tmp/drops.$v.log \
        GPUPROF_SHIM_STATS=1 GPUPROF_CUPTI_SELFTEST=1 timeout 300 gpuprof record -o /tmp/drops.gpdb -- \
        python3 "$B/torch_train.py" "$DROPS" 10 2>/tmp/drops.err | grep torch_steps_s
      grep -E "pushfail|buffer completed|translate \+ push|GPU ops" /tmp/drops.err | sed "s/^/    [$v] /"
      { grep -E "store:|trace thread|ended:" /tmp/drops.$v.log; tail -2 /tmp/drops.$v.log; } | sed "s/^/    [$v log] /"
    done
  fi
  if [ -n "${LONG:-}" ]; then
    # Per-context GPU time, duty-cycled vs full, on a longer steady loop.
    echo "== per-context GPU time: torch_train.py $LONG 10, full vs $LDUTY"
    for c in full duty; do
      rm -f /tmp/$c.gpdb*
      if [ $c = full ]; then e=GPUPROF_X=1; else e=GPUPROF_CUDA_TRACE=$LDUTY; fi
      env $e GPUPROF_CUPTI_SELFTEST=1 timeout 300 gpuprof record -o /tmp/$c.gpdb -- \
        python3 "$B/torch_train.py" $LONG 10 2>/tmp/$c.err | grep torch_steps_s
      grep -E "dropped|fraction" /tmp/$c.err | sed "s/^/    [$c] /"
      gpuprof report --json /tmp/$c.gpdb >"$O/$c.json" 2>/dev/null || echo "report $c failed"
    done
    f=$(sed -n 's/.*fraction f = \([0-9.]*\).*/\1/p' /tmp/duty.err | head -1)
    fl=$(sed -n 's/.*f_launch = \([0-9.]*\).*/\1/p' /tmp/duty.err | head -1)
    echo "-- with the time fraction f = $f"
    python3 "$B/check-duty.py" "$O/full.json" "$O/duty.json" "${f:-0}"
    echo "-- with the launch fraction f_launch = $fl (cudart launch counters)"
    python3 "$B/check-duty.py" "$O/full.json" "$O/duty.json" "${fl:-0}"
  fi
  if [ -n "${ATTACH:-}" ]; then
    # Detached, attached for a window (the on-demand shape without a
    # daemon request: GPUPROF_CUDA_ATTACH=AFTER_MS:DURATION_MS).
    for am in ${ATTACH_MODES:-detached}; do
      echo "== $am, attach window $ATTACH: torch_train.py $LONG 10 (TORCH_BLOCK=${ATTACH_BLOCK:-0})"
      rm -f /tmp/att.gpdb*
      GPUPROF_CUDA_TRACE=$am GPUPROF_CUDA_ATTACH=$ATTACH GPUPROF_CUPTI_SELFTEST=1 TORCH_BLOCK=${ATTACH_BLOCK:-0} \
        timeout 300 gpuprof record -o /tmp/att.gpdb -- python3 "$B/torch_train.py" $LONG 10 2>/tmp/att.err |
        grep -E "torch_steps_s|^block"
      grep -E "dropped|fraction|gpuprof-cupti: state|rror" /tmp/att.err | sed "s/^/    [attach] /"
    done
  fi
  if [ -n "${TRACE:-}" ]; then
    # A trace of a real CUDA run, written both ways and brought back.
    echo "== gpuprof trace of torch_train.py $TRACE 5"
    selftest_rec trace /tmp/t.gpdb "$TRACE" 5 "pushfail|GPU ops"
    gpuprof trace -o "$O/torch.pftrace" /tmp/t.gpdb; echo "trace perfetto rc=$?"
    gpuprof trace --format chrome -o "$O/torch.json" /tmp/t.gpdb; echo "trace chrome rc=$?"
    python3 - /tmp/t.gpdb <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
print("trace_event per (device, stream, op):",
      db.execute("SELECT device, stream, op, COUNT(*) FROM trace_event GROUP BY 1, 2, 3").fetchall())
print("trace_launch per (tid, op):", db.execute("SELECT tid, op, COUNT(*) FROM trace_launch GROUP BY 1, 2").fetchall())
print("trace_stat:", db.execute("SELECT * FROM trace_stat").fetchall())
PY
    cp /tmp/t.gpdb "$O/torch.gpdb"
    gzip -f "$O/torch.pftrace" "$O/torch.json"   # 38 MB each at 50 steps: call paths as arguments
    gpuprof report /tmp/t.gpdb | grep -A8 "idleness blame"
    ls -l "$O"
  fi
  if [ -n "${LIVE:-}" ]; then
    # Detached under the node service, traced on request for 2 s.
    echo "== live trace: detached torch_train.py $LIVE 10 under a node daemon, a 2 s window"
    L=/tmp/live; rm -rf "$L"; mkdir -p "$L/state"
    logged_daemon "" "$L/log" --socket "$L/s" --db "$L/node.gpdb" --state-dir "$L/state"
    LPID=$!
    wait_until 60 "live daemon answering" daemon_up "$L/s" || exit 1
    env LD_PRELOAD="$GPUPROF_SHIM" GPUPROF_SOCKET="$L/s" GPUPROF_CUDA_TRACE=detached GPUPROF_CUPTI_SELFTEST=1 \
      TORCH_BLOCK=200 python3 "$B/torch_train.py" "$LIVE" 10 >"$L/app.out" 2>"$L/app.err" &
    APP=$!
    wait_until 120 "first timed block" grep -q '^block' "$L/app.out" &&
      wait_until 30 "second timed block" sh -c "[ \$(grep -c '^block' $L/app.out) -ge 2 ]" &&
      wait_until 30 "pid $APP registered" proc_listed "$L/s" "$APP"
    echo "window asked at $(date +%s.%N)"
    gpuprof --socket "$L/s" trace --pid "$APP" --duration 2s -o "$O/live.pftrace"; echo "live trace rc=$?"
    gzip -f "$O/live.pftrace"
    echo "trace written at $(date +%s.%N)"
    wait "$APP"; echo "app rc=$?"
    cat "$L/app.out"
    grep -E "gpuprof-cupti|rror" "$L/app.err" | sed "s/^/    [live] /"
    gpuprof --socket "$L/s" ps
    stop_proc "$LPID" 30
    python3 - "$L/node.gpdb" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
print("node store trace_event per (profile, op):",
      db.execute("SELECT profile_id, op, COUNT(*), MIN(start_ns), MAX(end_ns) FROM trace_event GROUP BY 1, 2").fetchall())
print("trace_launch per (profile, op):", db.execute("SELECT profile_id, op, COUNT(*) FROM trace_launch GROUP BY 1, 2").fetchall())
PY
    grep -E "store:|trace thread|control|TRACE" "$L/log" | sed "s/^/    [live log] /"
  fi
  if [ -n "${BENCH:-}" ]; then
    echo "== bench-torchloop $BENCH steps on this CPU ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2))"
    python3 "$B/bench-torchloop.py" "$B/lib/libbench-torchloop.so" "$BENCH" --rounds "${BENCH_R:-3}" \
      --evict "${BENCH_EVICT:-0,2048}" --lib old="$B/old/lib" --lib new="$B/lib" --stats 2>&1 | grep -v WARN
  fi
  if [ -n "${COUNTS:-}" ]; then
    # The cudart launch counters against CUPTI's runtime-API callbacks:
    # full tracing sees every runtime launch; those that follow a counted
    # call on their thread ("after a counted call") must equal the count.
    echo "== launch counters: full tracing, torch_train.py $COUNTS 10"
    selftest_rec counts /tmp/cnt.gpdb "$COUNTS" 10 "gpuprof-cupti"
  fi
  if [ -n "${TURNS:-}" ]; then
    echo "== turns: $TURNS, ${TURN_PROCS:-2} processes each, ${TURN_STEPS:-400} steps per turn, ${TURN_BUDGET:-300} s"
    python3 "$B/torch-turns.py" --bundle "$B" --out /tmp/turns --steps "${TURN_STEPS:-400}" \
      --warmup "${TURN_WARMUP:-50}" --procs "${TURN_PROCS:-2}" --budget "${TURN_BUDGET:-300}" \
      --long "${TURN_LONG:-0}" --long-rounds "${TURN_LONG_ROUNDS:-0}" ${TURN_OPTS:-} $TURNS |
      grep -v "round"
    cp /tmp/turns/turns.tsv "$O/turns.tsv"
    [ -e /tmp/turns/longs.tsv ] && gzip -c /tmp/turns/longs.tsv >"$O/longs.tsv.gz"
  fi
  [ -n "${EXTRA:-}" ] && eval "$EXTRA"
} 2>&1 | tee "$O/torchcost.log"

#!/usr/bin/env bash
# CPU-time sampling end to end (docs/SHIM.md "CPU sampling"):
#   ratio    `gpuprof record --cpu-sampling 1000` of 4 x (burn_a 150 ms, burn_b 50 ms) at 1000 Hz:
#            CPUTIME in the ratio of the burns' own CPU times (3:1 nominal) within the sampling error, the total close to the
#            process's own CPU time (getrusage), one trace row per sample
#   threads  a private gpuprofd, two threads: each thread's samples carry
#            its tid and lie under its own burner; `gpuprof trace --format
#            chrome` puts each thread's samples on its own track
#   signals  the program takes SIGALRM and SIGPROF every ms itself: its
#            output is unchanged and the samples are still 3:1
#   nested   samples that arrive inside a capture of the same thread are
#            declined (counted) and the capture's answer is unchanged
#   workers  `gpuprof record --cpu-sampling 1000` of three threads that never
#            call the shim (the interposed pthread_create samples them from
#            their start): each one's samples carry its tid and lie under its
#            own burner, its CPUTIME equals what the shim pushed on its thread
#            (within 5 ms) and lies within a band of its CPU time; the shim
#            holds 4 timers while they live, 1 after they were joined
#   fork     the same threads started in a fork child of the recorded
#            program: the child's timers (4 while they live, 1 after) and
#            samples are its own
#   live     the same threads under a private gpuprofd, asked live: the
#            daemon's tree (`gpuprof tree --pid --json`) has each burner's
#            CPUTIME in the band while the process still runs
#   off      no GPUPROF_CPU_SAMPLING: no CPUTIME, no trace rows
#   takeover sampling on SIGPROF, which the program then takes for its own
#            handler: the shim notices, stops sampling (one log line) and
#            the program's output is unchanged
source "$(dirname "$0")/../integration/lib.sh" "$1"
MODE=$2
APP=$(app cpusamp-app)
CHECK="$PY $(dirname "$0")/check.py"
HZ=1000

ARG=${MODE/off/ratio}
ARG=${ARG/takeover/signals}
ARG=${ARG/live/workers}
ARG=${ARG/fork/forkworkers}
bare=$("$APP" "$ARG" | grep '^sum=') || die "the program fails without the shim"
# check_timers OUT: the shim held a timer per live thread (main + 3
# workers) and deleted each worker's at its exit (the kernel's own list
# says the same where it has /proc/self/timers)
check_timers() {
  grep -qx 'timers_live=4 proc_timers_live=\(4\|-1\)' "$1" || die "not 4 timers while the workers lived: $(grep timers "$1")"
  grep -qx 'timers_after=1 proc_timers_after=\(1\|-1\)' "$1" || die "worker timers left after their exit: $(grep timers "$1")"
}

case $MODE in
nested)
  export GPUPROF_CPU_SAMPLING=$HZ
  "$GPUPROF" record -o "$T/c.gpdb" -- "$APP" nested >"$T/app.out" 2>"$T/rec.err" ||
    { cat "$T/app.out" "$T/rec.err"; die "nested run failed"; }
  cat "$T/app.out"
  grep -q "same 1" "$T/app.out" || die "no nested check ran"
  echo "PASS cpusamp.$MODE"
  exit 0
  ;;
ratio|signals|off|takeover)
  opt=()
  case $MODE in
  ratio) opt=(--cpu-sampling $HZ) ;; # the option sets the variable
  off) ;;
  *) export GPUPROF_CPU_SAMPLING=$HZ ;;
  esac
  [ "$MODE" != takeover ] || export GPUPROF_CPU_SAMPLING_SIGNAL=PROF
  out=$("$GPUPROF" record "${opt[@]}" -o "$T/c.gpdb" -- "$APP" "$ARG" 2>"$T/rec.err") ||
    { cat "$T/rec.err"; die "record failed"; }
  cat "$T/rec.err"
  echo "$out"
  grep -qxF "$bare" <<<"$out" || die "program output changed under the shim: '$out' vs '$bare'"
  cpu=$(echo "$out" | sed -n 's/^cpu_ns=//p')
  main_cpu=$(echo "$out" | sed -n 's/^main_cpu_ns=//p')
  if [ "$MODE" = off ]; then
    $CHECK "$T/c.gpdb" off
  elif [ "$MODE" = takeover ]; then
    grep -q "own handler for signal $(kill -l PROF); sampling stops" "$T/rec.err" ||
      die "the shim did not say it stopped sampling"
  else
    # the expected split: the burns' own CPU times (3:1 nominal; a burn
    # runs on until the kernel's late signals came, cpusamp-app's spin())
    r=$(echo "$out" | awk '/^burn_cpu_ns=/ { split($1, a, "="); printf "%.6f", a[2] / $2 }')
    [ -n "$r" ] || die "no burn_cpu_ns line"
    $CHECK "$T/c.gpdb" ratio burn_a burn_b "$r" "$cpu" $HZ "$main_cpu"
  fi
  ;;
workers|fork)
  "$GPUPROF" record --cpu-sampling $HZ -o "$T/c.gpdb" -- "$APP" "$ARG" >"$T/app.out" 2>"$T/rec.err" ||
    { cat "$T/app.out" "$T/rec.err"; die "record failed"; }
  cat "$T/app.out" "$T/rec.err"
  grep -qxF "$bare" "$T/app.out" || die "program output changed under the shim"
  check_timers "$T/app.out"
  $CHECK "$T/c.gpdb" workers "$T/app.out"
  ;;
live)
  export GPUPROF_CPU_SAMPLING=$HZ
  start_daemon "$T/c.sock" "$T/c.gpdb"
  preload_bg "$T/c.sock" "$T/app.out" "$APP" workers "$T/go"
  # (done burning, or ended early: then its error is shown below)
  wait_for "$WAIT" "the workers burnt" eval "grep -q '^sum=' '$T/app.out' || not_alive $APID"
  grep -q '^sum=' "$T/app.out" || { cat "$T/app.out.err"; die "cpusamp-app workers ended early"; }
  cat "$T/app.out"
  check_timers "$T/app.out"
  live_band() {
    "$GPUPROF" --socket "$T/c.sock" tree --pid "$APID" --json >"$T/live.json" &&
      $CHECK "$T/live.json" live "$T/app.out"
  }
  # the samples reach the daemon's tree (ingest) some time after the burns
  wait_for "$WAIT" "the live tree's CPUTIME of each burner within its band" live_band
  cat "$T/wait.out"
  touch "$T/go"
  wait_exit "$APID" "cpusamp-app workers"
  [ "$RC" -eq 0 ] || { cat "$T/app.out.err"; die "app exited $RC"; }
  stop_daemon
  $CHECK "$T/c.gpdb" workers "$T/app.out"
  ;;
threads)
  export GPUPROF_CPU_SAMPLING=$HZ
  start_daemon "$T/c.sock" "$T/c.gpdb"
  preload_bg "$T/c.sock" "$T/app.out" "$APP" threads
  wait_exit "$APID" "cpusamp-app threads"
  [ "$RC" -eq 0 ] || { cat "$T/app.out.err"; die "app exited $RC"; }
  cat "$T/app.out"
  stop_daemon
  tm=$(sed -n 's/.*tid_main=\([0-9]*\).*/\1/p' "$T/app.out")
  tw=$(sed -n 's/.*tid_worker=\([0-9]*\).*/\1/p' "$T/app.out")
  $CHECK "$T/c.gpdb" threads burn_a "$tm" burn_b "$tw" $HZ
  # the trace exporter reads the table: one CPU sample track per thread
  "$GPUPROF" trace --format chrome -o "$T/t.json" "$T/c.gpdb" 2>"$T/trace.err" || { cat "$T/trace.err"; die "trace failed"; }
  $CHECK "$T/c.gpdb" chrome "$T/t.json" burn_a "$tm" burn_b "$tw"
  ;;
*) die "unknown mode $MODE" ;;
esac
"$GPUPROF" report --metric CPUTIME "$T/c.gpdb" >"$T/report.txt" || die "report failed"
if [ "$MODE" != off ] && [ "$MODE" != takeover ]; then
  grep -q "CPUTIME" "$T/report.txt" || { cat "$T/report.txt"; die "report has no CPUTIME column"; }
  f=burn_a
  [ "$ARG" != workers ] && [ "$ARG" != forkworkers ] || f=burn_w1
  grep -q "$f" "$T/report.txt" || { cat "$T/report.txt"; die "report does not show $f"; }
fi
echo "PASS cpusamp.$MODE"

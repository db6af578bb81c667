#!/usr/bin/env bash
# Live traces (`gpuprof trace (--pid N | --job J) --duration D`): ocl-gap
# under a node daemon, waiting in cpu_think on a gate file.
#  - access: another uid (nobody) asking for this root-owned pid is denied
#    with a clear message and writes no file; an unknown pid is "no
#    profiled process", an unknown job "no running process of job";
#  - a window with no events (the program spins in cpu_think): the TRACE
#    control is acked by the OpenCL back end ("always traced"), exit 0,
#    a note on stderr and a valid trace without slices;
#  - two windows on a launch loop (ocl-loop), the second in pages of
#    1 000 rows: every kernel launched in the window written, with its flow;
#  - the window of job J opened before the gate: exactly the second burst
#    (6 ka, 4 kb, 11 flows, decoded with the schema), read and written in
#    pages of 3 rows, fewer rows held at once than the window has;
#  - gpuprofd killed mid-window (the program waits on a second gate):
#    a clear error at once, exit 1, no file (nor a temporary one); the
#    program carries on without its daemon.
source "$(dirname "$0")/../integration/lib.sh" "$1"
have_opencl
APP=$(app ocl-gap)
DEC=$(app trace-decode)
chmod 0755 "$T"
mkdir -m 0777 "$T/sock"
S=$T/sock/gpd.sock
start_daemon "$S" "$T/node.gpdb"
preload_bg "$S" "$T/app.out" env OCL_GAP_GATE="$T/gate" OCL_GAP_GATE2="$T/gate2" \
  GPUPROF_JOB_ID=tj12 "$APP" 6 4 0
APP_PID=$APID
wait_for "$WAIT" "ocl-gap in cpu_think" grep -q thinking "$T/app.out"
wait_for "$WAIT" "ocl-gap registered" ps_is "$S" "$APP_PID" running

# another user: denied, clearly, and no file
set +e
setpriv --reuid=65534 --regid=65534 --clear-groups env HOME=/ \
  "$GPUPROF" --socket "$S" trace --pid "$APP_PID" --duration 1ms -o "$T/sock/other.pftrace" \
  >"$T/other.out" 2>"$T/other.err"
rc=$?
"$GPUPROF" --socket "$S" trace --pid 999999999 --duration 1ms -o "$T/none.pftrace" 2>"$T/none.err"
rc2=$?
"$GPUPROF" --socket "$S" trace --job nosuchjob --duration 1ms -o "$T/nojob.pftrace" 2>"$T/nojob.err"
rc3=$?
set -e
[ $rc = 1 ] || die "another uid's trace request: exit $rc ($(cat "$T/other.err"))"
grep -qx "gpuprof: no profiled process $APP_PID" "$T/other.err" ||
  die "another uid's pid not answered as no such pid: $(cat "$T/other.err")"
[ ! -e "$T/sock/other.pftrace" ] || die "a denied request wrote a file"
[ $rc2 = 1 ] && grep -q "no profiled process 999999999" "$T/none.err" ||
  die "unknown pid: exit $rc2 ($(cat "$T/none.err"))"
[ $rc3 = 1 ] && grep -q "no running process of job nosuchjob" "$T/nojob.err" ||
  die "unknown job: exit $rc3 ($(cat "$T/nojob.err"))"
[ ! -e "$T/none.pftrace" ] && [ ! -e "$T/nojob.pftrace" ] || die "a refused request wrote a file"

# a window with no events: acked, a note, a valid empty trace
"$GPUPROF" --socket "$S" trace --pid "$APP_PID" --duration 300ms -o "$T/empty.pftrace" \
  2>"$T/empty.err" || die "empty window: exit $? ($(cat "$T/empty.err"))"
grep -q "^pid $APP_PID: tracing on for 0.3 s: opencl: always traced" "$T/empty.err" ||
  die "no ack of the TRACE control: $(cat "$T/empty.err")"
grep -q "no trace events in the window" "$T/empty.err" || die "no note: $(cat "$T/empty.err")"
"$DEC" "$T/empty.pftrace" >"$T/empty.txt" || die "the empty window's trace does not decode"
! grep -q '^slices' "$T/empty.txt" || die "the empty window has slices: $(cat "$T/empty.txt")"

# PC sampling asked of an OpenCL process: refused, saying it is CUDA-only
set +e
"$GPUPROF" --socket "$S" sample --pid "$APP_PID" --duration 200ms >"$T/pcs.out" 2>&1
rc=$?
set -e
[ $rc = 1 ] && grep -q "^pid $APP_PID: .*PC sampling is CUDA-only" "$T/pcs.out" && ! grep -q "control kind" "$T/pcs.out" ||
  die "sample --pid on an OpenCL process: exit $rc ($(cat "$T/pcs.out"))"

# the window of the job: opened now, the second burst runs inside it
# in pages of 3 rows (the window is asked for in time slices, halved
# while a page is full): the same exact counts
GPUPROF_TRACE_PAGE_ROWS=3 "$GPUPROF" --socket "$S" trace --job tj12 --duration 2s -o "$T/live.pftrace" 2>"$T/live.err" &
TR_PID=$!
wait_for "$WAIT" "the live trace started" grep -q "tracing job tj12" "$T/live.err"
touch "$T/gate"
wait_for "$WAIT" "ocl-gap's second burst" grep -q "^ocl-gap 6 4 0" "$T/app.out"
wait_exit "$TR_PID" "gpuprof trace --duration"
[ "$RC" = 0 ] || die "live trace exited with $RC: $(cat "$T/live.err")"
grep -qE "read in ([2-9]|[1-9][0-9]+) parts of at most 3 rows" "$T/live.err" ||
  die "the window was not read in pages: $(cat "$T/live.err")"
# written as read: one page at a time (a page is 3 rows, or the rows of
# one millisecond asked with gpuprofd's own bound), never the whole window
held=$(sed -nE 's/^gpuprof: written page by page: at most ([0-9]+) rows held at once.*/\1/p' "$T/live.err")
[ -n "$held" ] && [ "$held" -lt 28 ] ||
  die "the window was not written page by page (14 events + 14 launches): $(cat "$T/live.err")"
grep -q "^pid $APP_PID: tracing on for 2 s: opencl: always traced" "$T/live.err" ||
  die "the job's process did not ack: $(cat "$T/live.err")"
"$DEC" "$T/live.pftrace" >"$T/dec.txt" || { cat "$T/dec.txt"; die "live trace does not decode"; }
grep -qP '^slices GPU 0 stream \d+\tka\t6$' "$T/dec.txt" || die "live window: $(grep -P '\tk[ab]\t' "$T/dec.txt")"
grep -qP '^slices GPU 0 stream \d+\tkb\t9$' "$T/dec.txt" && die "the window holds the first burst too"
grep -qP '^slices GPU 0 stream \d+\tkb\t4$' "$T/dec.txt" || die "live window kb: $(grep kb "$T/dec.txt")"
grep -qx 'flows 11' "$T/dec.txt" || die "live flows: $(grep flows "$T/dec.txt") (6 + 4 kernels + the read)"

# a program launching all the time (ocl-loop): two windows in a row on it,
# each with every kernel launched in it (its activity arrives when the
# kernel completes, after the window for the last ones: gpuprof trace
# waits for them) and no kernel launched outside it
LOOP=$(app ocl-loop)
preload_bg "$S" "$T/loop.out" "$LOOP" 100000000 1 10
LOOP_PID=$APID
wait_for "$WAIT" "ocl-loop registered" ps_is "$S" "$LOOP_PID" running
loop_runs() { "$GPUPROF" --socket "$S" tree --pid "$LOOP_PID" 2>/dev/null | grep -q tiny; }
wait_for "$WAIT" "ocl-loop's kernels running (compiled)" loop_runs
# (the second in pages of 1 000 rows: kernels in a later page than their
# launch keep their flow)
for w in 1 2; do
  rows=250000
  [ $w = 2 ] && rows=1000
  GPUPROF_TRACE_PAGE_ROWS=$rows "$GPUPROF" --socket "$S" trace --pid "$LOOP_PID" --duration 500ms -o "$T/loop$w.pftrace" 2>"$T/loop$w.err" ||
    die "window $w on ocl-loop: exit $? ($(cat "$T/loop$w.err"))"
  "$DEC" "$T/loop$w.pftrace" >"$T/loop$w.txt" || { tail -3 "$T/loop$w.txt"; die "window $w does not decode"; }
  # (no match is a failure with its message below, not set -e's silent exit)
  la=$(grep -P "^instants CPU thread $LOOP_PID\tlaunch <gpu kernel>\t" "$T/loop$w.txt" | cut -f3 || true)
  ka=$(grep -P '^slices GPU \d+ stream \d+\ttiny\t' "$T/loop$w.txt" | cut -f3 | paste -sd+ | bc || true)
  [ -n "$la" ] && [ "$la" -gt 0 ] && [ "$la" = "$ka" ] ||
    die "window $w: '$la' kernel launches, '$ka' kernels written ($(cat "$T/loop$w.err"); decoded: $(cut -c1-80 "$T/loop$w.txt" | sort | uniq -c | sort -rn | head -8 | tr '\n' ';'))"
  grep -qx "flows $la" "$T/loop$w.txt" || die "window $w: $(grep flows "$T/loop$w.txt") for $la launches"
  ! grep -q "had no GPU activity" "$T/loop$w.err" || die "window $w: $(cat "$T/loop$w.err")"
  # paged: a page held at a time, and carried between pages only the
  # launches of about the last two pages (matched ones are forgotten two
  # pages on, the second before the window's too): at most 3 pages' worth
  carried=$(sed -nE 's/^gpuprof: written page by page: at most [0-9]+ rows held at once, ([0-9]+) launches.*/\1/p' "$T/loop$w.err")
  [ $w = 1 ] || { [ -n "$carried" ] && [ "$carried" -le 3000 ]; } ||
    die "window $w not written page by page in bounded memory: $(cat "$T/loop$w.err")"
  echo "window $w: $la launches, $ka kernels"
done
kill "$LOOP_PID"

# gpuprofd killed mid-window: a clear error, exit 1, no file
"$GPUPROF" --socket "$S" trace --pid "$APP_PID" --duration 60s -o "$T/killed.pftrace" \
  2>"$T/killed.err" &
TR_PID=$!
wait_for "$WAIT" "the window opened" grep -q "tracing process $APP_PID" "$T/killed.err"
kill_daemon
wait_exit "$TR_PID" "gpuprof trace after its daemon was killed" 30
[ "$RC" = 1 ] || die "trace with its daemon killed: exit $RC ($(cat "$T/killed.err"))"
grep -q "gpuprofd stopped answering .* into the 60.000 s window .*; no trace written" "$T/killed.err" ||
  die "no clear error: $(cat "$T/killed.err")"
! ls "$T"/killed.pftrace* >/dev/null 2>&1 || die "a file was left: $(ls "$T"/killed.pftrace*)"
touch "$T/gate2"
wait_exit "$APP_PID" "ocl-gap"
[ "$RC" = 0 ] || die "ocl-gap exited with $RC: $(cat "$T/app.out.err")"
echo "PASS trace.live"

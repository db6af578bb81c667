#!/usr/bin/env bash
# The live Trace request: ocl-gap under a node daemon, `gpuprof trace --pid
# --duration` opened while the program waits in cpu_think (a gate file),
# so the window holds exactly the second burst (6 ka, 4 kb, decoded with
# the schema).  Access: another uid (nobody) asking for this root-owned pid
# is denied with a clear message and writes no file; an unknown pid is
# "no profiled process".
source "$(dirname "$0")/../integration/lib.sh" "$1"
have_opencl
APP=$(app ocl-gap)
DEC=$(app trace-decode)
chmod 0755 "$T"
mkdir -m 0777 "$T/sock"
S=$T/sock/gpd.sock
start_daemon "$S" "$T/node.gpdb"
preload_bg "$S" "$T/app.out" env OCL_GAP_GATE="$T/gate" "$APP" 6 4 0
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
set -e
[ $rc = 1 ] || die "another uid's trace request: exit $rc ($(cat "$T/other.err"))"
grep -q "permission denied: process $APP_PID belongs to uid 0" "$T/other.err" ||
  die "no clear denial: $(cat "$T/other.err")"
[ ! -e "$T/sock/other.pftrace" ] || die "a denied request wrote a file"
[ $rc2 = 1 ] && grep -q "no profiled process 999999999" "$T/none.err" ||
  die "unknown pid: exit $rc2 ($(cat "$T/none.err"))"

# the window: opened now, the second burst runs inside it
"$GPUPROF" --socket "$S" trace --pid "$APP_PID" --duration 2s -o "$T/live.pftrace" 2>"$T/live.err" &
TR_PID=$!
wait_for "$WAIT" "the live trace started" grep -q "tracing process" "$T/live.err"
touch "$T/gate"
wait_exit "$APP_PID" "ocl-gap"
[ "$RC" = 0 ] || die "ocl-gap exited with $RC: $(cat "$T/app.out.err")"
wait_exit "$TR_PID" "gpuprof trace --duration"
[ "$RC" = 0 ] || die "live trace exited with $RC: $(cat "$T/live.err")"
"$DEC" "$T/live.pftrace" >"$T/dec.txt" || { cat "$T/dec.txt"; die "live trace does not decode"; }
grep -qP '^slices GPU 0 stream \d+\tka\t6$' "$T/dec.txt" || die "live window: $(grep -P '\tk[ab]\t' "$T/dec.txt")"
grep -qP '^slices GPU 0 stream \d+\tkb\t9$' "$T/dec.txt" && die "the window holds the first burst too"
grep -qP '^slices GPU 0 stream \d+\tkb\t4$' "$T/dec.txt" || die "live window kb: $(grep kb "$T/dec.txt")"
grep -qx 'flows 11' "$T/dec.txt" || die "live flows: $(grep flows "$T/dec.txt") (6 + 4 kernels + the read)"
echo "PASS trace.live"

#!/usr/bin/env bash
# Node service: an application works steadily while the daemon is killed
# with SIGKILL and restarted twice; the final profile counts every
# operation and the drop counters say zero.  Also: the app's output is
# what it is without the shim.
source "$(dirname "$0")/lib.sh" "$1"
have_opencl
APP=$(app ocl-steady)
ITER=150
bare=$("$APP" $ITER 0)
start_daemon "$T/r.sock" "$T/r.gpdb"
preload "$T/r.sock" "$APP" $ITER 20 > "$T/app.out" 2>"$T/app.err" &
apid=$!
for round in 1 2; do
  sleep 1
  kill -9 "$DAEMON_PID"; wait "$DAEMON_PID" 2>/dev/null || true; DAEMON_PID=
  echo "round $round: daemon killed"
  sleep 0.3
  start_daemon "$T/r.sock" "$T/r.gpdb"
  echo "round $round: daemon restarted"
done
rc=0; wait $apid || rc=$?
cat "$T/app.err"
[ $rc -eq 0 ] || die "app exited $rc"
[ "$(cat "$T/app.out")" = "$bare" ] || die "app output '$(cat "$T/app.out")' != '$bare'"
sleep 0.5
stop_daemon
$GPDQ "$T/r.gpdb" processes 1
$GPDQ "$T/r.gpdb" kernel-count tick $ITER
$GPDQ "$T/r.gpdb" metric-total GSYNC:COUNT $ITER
$GPDQ "$T/r.gpdb" drops 0
echo "PASS daemon-restart"

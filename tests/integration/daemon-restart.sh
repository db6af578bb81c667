#!/usr/bin/env bash
# Node service: an application works steadily while the daemon is killed
# with SIGKILL and restarted twice; the final profile counts every
# operation and the drop counters say zero.  Also: the app's output is
# what it is without the shim.
source "$(dirname "$0")/lib.sh" "$1"
have_opencl
APP=$(app ocl-steady)
start_daemon "$T/r.sock" "$T/r.gpdb"
# works until told to stop, then 30 launches more
preload_bg "$T/r.sock" "$T/app.out" "$APP" 30 20 until "$T/stop"; apid=$APID
wait_for "$WAIT" "daemon counts launches of $apid" live_count_ge "$T/r.sock" "$apid" 10
for round in 1 2; do
  before=$(live_count "$T/r.sock" "$apid")
  kill_daemon
  echo "round $round: daemon killed after $before launches"
  start_daemon "$T/r.sock" "$T/r.gpdb"
  # the shim hands its region back to the new daemon, which goes on counting
  wait_for "$WAIT" "round $round: $apid handed back" ps_is "$T/r.sock" "$apid" running
  wait_for "$WAIT" "round $round: launches after the restart" live_count_ge "$T/r.sock" "$apid" $((before + 5))
  echo "round $round: daemon restarted, counting on"
done
touch "$T/stop"
wait_exit "$apid" "app"
cat "$T/app.out.err"
[ "$RC" -eq 0 ] || die "app exited $RC"
read -r n < <(sed -n 's/^done \([0-9]*\) sum .*/\1/p' "$T/app.out")
[ "$(cat "$T/app.out")" = "done $n sum $((n * 64))" ] || die "app output '$(cat "$T/app.out")' is not what the app prints without the shim"
echo "app launched $n kernels"
wait_for "$WAIT" "daemon sees $apid exit" ps_is "$T/r.sock" "$apid" exited
stop_daemon
$GPDQ "$T/r.gpdb" processes 1
$GPDQ "$T/r.gpdb" kernel-count tick "$n"
$GPDQ "$T/r.gpdb" metric-total GSYNC:COUNT "$n"
$GPDQ "$T/r.gpdb" drops 0
echo "PASS daemon-restart"

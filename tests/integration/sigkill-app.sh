#!/usr/bin/env bash
# An application killed with SIGKILL mid-run: everything it had pushed is
# in its profile.
source "$(dirname "$0")/lib.sh" "$1"
have_opencl
APP=$(app ocl-steady)
start_daemon "$T/s.sock" "$T/s.gpdb"
preload_bg "$T/s.sock" "$T/app.out" "$APP" 40 0 hang; apid=$APID
wait_for "$WAIT" "app prints ready" file_has "$T/app.out" '^ready$'
# the kernels' completions arrive on PoCL threads after clFinish: kill once
# the daemon has seen all 40 (the killed process must lose none of them)
wait_for "$WAIT" "daemon counts 40 launches of $apid" live_count_ge "$T/s.sock" "$apid" 40
kill -9 "$apid"
wait_exit "$apid" "killed app"
[ "$RC" -eq 137 ] || die "app exited $RC, expected 137 (SIGKILL)"
wait_for "$WAIT" "daemon sees $apid exit" ps_is "$T/s.sock" "$apid" exited
stop_daemon
$GPDQ "$T/s.gpdb" processes 1
$GPDQ "$T/s.gpdb" kernel-count tick 40
$GPDQ "$T/s.gpdb" kernel-under tick work_step
$GPDQ "$T/s.gpdb" metric-total GSYNC:COUNT 40
echo "PASS sigkill-app"

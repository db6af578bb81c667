#!/usr/bin/env bash
# An application killed with SIGKILL mid-run: everything it had pushed is
# in its profile.
source "$(dirname "$0")/lib.sh" "$1"
have_opencl
APP=$(app ocl-steady)
start_daemon "$T/s.sock" "$T/s.gpdb"
preload "$T/s.sock" "$APP" 40 0 hang > "$T/app.out" 2>&1 &
apid=$!
for _ in $(seq 1 400); do grep -q ready "$T/app.out" && break; sleep 0.05; done
grep -q ready "$T/app.out" || { cat "$T/app.out"; die "app never got ready"; }
kill -9 $apid; wait $apid 2>/dev/null || true
sleep 0.5
stop_daemon
$GPDQ "$T/s.gpdb" processes 1
$GPDQ "$T/s.gpdb" kernel-count tick 40
$GPDQ "$T/s.gpdb" kernel-under tick work_step
$GPDQ "$T/s.gpdb" metric-total GSYNC:COUNT 40
echo "PASS sigkill-app"

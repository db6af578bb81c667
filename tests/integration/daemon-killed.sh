#!/usr/bin/env bash
# The shim with a daemon killed mid-run (never restarted), and with no
# daemon at all: the application finishes with correct output.
source "$(dirname "$0")/lib.sh" "$1"
have_opencl
APP=$(app ocl-steady)
bare=$("$APP" 60 0)
start_daemon "$T/d.sock" "$T/d.gpdb"
preload "$T/d.sock" "$APP" 60 10 > "$T/app.out" 2>"$T/app.err" &
apid=$!
sleep 0.3
kill -9 "$DAEMON_PID"; DAEMON_PID=
rc=0; wait $apid || rc=$?
[ $rc -eq 0 ] || { cat "$T/app.err"; die "app exited $rc after the daemon died"; }
[ "$(cat "$T/app.out")" = "$bare" ] || die "output changed: $(cat "$T/app.out")"
out=$(preload "$T/nonexistent.sock" "$APP" 20 0 2>"$T/nd.err")
[ "$out" = "$("$APP" 20 0)" ] || die "output changed without daemon"
[ "$(grep -c . "$T/nd.err")" -le 1 ] || { cat "$T/nd.err"; die "more than one log line without a daemon"; }
echo "PASS daemon-killed"

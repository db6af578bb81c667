#!/usr/bin/env bash
# The shim with a daemon killed mid-run (never restarted), and with no
# daemon at all: the application finishes with correct output.
source "$(dirname "$0")/lib.sh" "$1"
have_opencl
APP=$(app ocl-steady)
start_daemon "$T/d.sock" "$T/d.gpdb"
# works until told to stop, then 30 launches more: the daemon dies while
# the app certainly runs, and the app works on without it
preload_bg "$T/d.sock" "$T/app.out" "$APP" 30 10 until "$T/stop"; apid=$APID
wait_for "$WAIT" "daemon counts launches of $apid" live_count_ge "$T/d.sock" "$apid" 5
kill_daemon
touch "$T/stop"
wait_exit "$apid" "app"
[ "$RC" -eq 0 ] || { cat "$T/app.out" "$T/app.out.err"; die "app exited $RC after the daemon died"; }
read -r n < <(sed -n 's/^done \([0-9]*\) sum .*/\1/p' "$T/app.out")
[ "$(cat "$T/app.out")" = "done $n sum $((n * 64))" ] || die "output changed: $(cat "$T/app.out")"
out=$(preload "$T/nonexistent.sock" "$APP" 20 0 2>"$T/nd.err")
[ "$out" = "$("$APP" 20 0)" ] || die "output changed without daemon: $out"
[ "$out" = "done 20 sum 1280" ] || die "unexpected output: $out"
[ "$(grep -c . "$T/nd.err")" -le 1 ] || { cat "$T/nd.err"; die "more than one log line without a daemon"; }
echo "PASS daemon-killed"

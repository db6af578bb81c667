#!/usr/bin/env bash
# SIGHUP reloads what can change live: a new log level and retention take
# effect at once; a bad file is reported with file:line and the daemon
# keeps the old settings and keeps serving.
source "$(dirname "$0")/lib.sh" "$1"
have_opencl
APP=$(app ocl-steady)
unset GPUPROF_LOG
C=$T/gpuprofd.conf
printf '[daemon]\nlog_level = warn\n[store]\nflush_interval_ms = 100\n' > "$C"
start_daemon "$T/h.sock" "$T/h.gpdb" --config "$C"
preload_bg "$T/h.sock" "$T/a1.out" "$APP" 2 0; wait $APID; first=$APID
sleep 0.3
grep -q "registered pid $first" "$T/daemon.log" && die "info line logged at level warn"
# live change: log level info, keep finished profiles 1 s
printf '[daemon]\nlog_level = info\n[store]\nflush_interval_ms = 100\nretention_max_age_s = 1\n' > "$C"
kill -HUP "$DAEMON_PID"; sleep 0.3
grep -q "reloaded $C" "$T/daemon.log" || { cat "$T/daemon.log"; die "no reload logged"; }
sleep 1.2
preload_bg "$T/h.sock" "$T/a2.out" "$APP" 2 0; wait $APID; second=$APID
sleep 0.5
grep -q "registered pid $second" "$T/daemon.log" || { cat "$T/daemon.log"; die "new log level not in effect"; }
left=$($GPDQ "$T/h.gpdb" sql "select pid from profile" | tr -d '[]' | tr ',' ' ')
echo "stored after the reload: $left"
echo " $left " | grep -qw "$first" && die "new retention not in effect (profile of $first kept)"
echo " $left " | grep -qw "$second" || die "profile of $second missing"
# a bad line: file:line reported, old settings kept, still serving
printf '[daemon]\nlog_level = info\nno_such_key = 1\n' > "$C"
kill -HUP "$DAEMON_PID"; sleep 0.3
grep -q "reload failed, keeping the old settings: $C:3" "$T/daemon.log" || { cat "$T/daemon.log"; die "bad reload not reported with file:line"; }
kill -0 "$DAEMON_PID" || die "daemon died on a bad reload"
"$GPUPROF" --socket "$T/h.sock" ps >/dev/null || die "daemon does not serve after a bad reload"
stop_daemon
echo "PASS sighup"

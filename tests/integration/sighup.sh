#!/usr/bin/env bash
# SIGHUP reloads what can change live: a new log level and retention take
# effect at once; a bad file is reported with file:line and the daemon
# keeps the old settings and keeps serving.
source "$(dirname "$0")/lib.sh" "$1"
have_opencl
APP=$(app ocl-steady)
unset GPUPROF_LOG
A=10 # retention set by the reload (s): the second profile is looked for while
     # younger, so A bounds how long storing may take on a loaded machine
C=$T/gpuprofd.conf
printf '[daemon]\nlog_level = warn\n[store]\nflush_interval_ms = 100\n' > "$C"
start_daemon "$T/h.sock" "$T/h.gpdb" --config "$C"
preload_bg "$T/h.sock" "$T/a1.out" "$APP" 2 0; first=$APID
wait_exit "$first" "app $first"
wait_for "$WAIT" "profile of $first stored" db_exited "$T/h.gpdb" "$first" tick 2
# its registration was handled before its profile was stored
grep -q "registered pid $first" "$T/daemon.log" && die "info line logged at level warn"
# live change: log level info, keep finished profiles A s
printf '[daemon]\nlog_level = info\n[store]\nflush_interval_ms = 100\nretention_max_age_s = %d\n' $A > "$C"
kill -HUP "$DAEMON_PID"
wait_for "$WAIT" "reload logged" file_has "$T/daemon.log" "reloaded $C"
wait_for $((A + WAIT)) "new retention removes the profile of $first" db_lacks "$T/h.gpdb" "$first"
preload_bg "$T/h.sock" "$T/a2.out" "$APP" 2 0; second=$APID
wait_exit "$second" "app $second"
wait_for "$WAIT" "new log level in effect" file_has "$T/daemon.log" "registered pid $second\b"
wait_for $A "profile of $second stored" db_exited "$T/h.gpdb" "$second" tick 2
echo "stored after the reload: $(db_pids "$T/h.gpdb")"
# a bad line: file:line reported, old settings kept, still serving
printf '[daemon]\nlog_level = info\nno_such_key = 1\n' > "$C"
kill -HUP "$DAEMON_PID"
wait_for "$WAIT" "bad reload reported with file:line" file_has "$T/daemon.log" "reload failed, keeping the old settings: $C:3"
kill -0 "$DAEMON_PID" || die "daemon died on a bad reload"
"$GPUPROF" --socket "$T/h.sock" ps >/dev/null || die "daemon does not serve after a bad reload"
# the old settings hold: info is still logged
preload_bg "$T/h.sock" "$T/a3.out" "$APP" 2 0; third=$APID
wait_exit "$third" "app $third"
wait_for "$WAIT" "info still logged after the bad reload" file_has "$T/daemon.log" "registered pid $third\b"
stop_daemon
echo "PASS sighup"

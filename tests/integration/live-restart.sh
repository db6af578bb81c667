#!/usr/bin/env bash
# Node service: after the daemon is killed with SIGKILL and restarted, the
# profiles already stored come back, so the live view (ps, tree, top) goes
# on: the finished process is listed with its back end, and its tree counts
# what it did.
source "$(dirname "$0")/lib.sh" "$1"
have_opencl
APP=$(app ocl-steady)
start_daemon "$T/v.sock" "$T/v.gpdb"
preload_bg "$T/v.sock" "$T/app.out" "$APP" 12 0; pid=$APID
wait_exit "$pid" "app"
[ "$RC" -eq 0 ] || { cat "$T/app.out.err"; die "app exited $RC"; }
wait_for "$WAIT" "profile of $pid stored, finished" db_exited "$T/v.gpdb" "$pid" tick 12
kill_daemon
start_daemon "$T/v.sock" "$T/v.gpdb"
"$GPUPROF" --socket "$T/v.sock" ps | tee "$T/ps.txt"
grep -E "^ *$pid .* exited .* opencl " "$T/ps.txt" >/dev/null || die "restored process $pid not listed (with its back end)"
n=$(live_count "$T/v.sock" "$pid")
echo "live tree of $pid after restart: GKER:COUNT $n"
[ "$n" -eq 12 ] || die "expected 12 launches in the live tree, got $n"
"$GPUPROF" --socket "$T/v.sock" top -n 20 > "$T/top.txt"
grep -q tick "$T/top.txt" || { cat "$T/top.txt"; die "top does not show the kernel"; }
stop_daemon
$GPDQ "$T/v.gpdb" processes 1
$GPDQ "$T/v.gpdb" kernel-count tick 12
echo "PASS live-restart"

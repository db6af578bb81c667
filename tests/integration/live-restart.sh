#!/usr/bin/env bash
# Node service: after the daemon is killed with SIGKILL and restarted, the
# profiles already stored come back, so the live view (ps, tree, top) goes
# on: the finished process is listed with its back end, and its tree counts
# what it did.
source "$(dirname "$0")/lib.sh" "$1"
have_opencl
APP=$(app ocl-steady)
start_daemon "$T/v.sock" "$T/v.gpdb"
preload_bg "$T/v.sock" "$T/app.out" "$APP" 12 0; wait $APID; pid=$APID
sleep 1.3   # one flush interval: the profile is stored
kill -9 "$DAEMON_PID"; wait "$DAEMON_PID" 2>/dev/null || true; DAEMON_PID=
start_daemon "$T/v.sock" "$T/v.gpdb"
"$GPUPROF" --socket "$T/v.sock" ps | tee "$T/ps.txt"
grep -E "^ *$pid .* exited .* opencl " "$T/ps.txt" >/dev/null || die "restored process $pid not listed (with its back end)"
"$GPUPROF" --socket "$T/v.sock" tree --pid "$pid" --json > "$T/t.json"
n=$(python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["tree"]; print(int(t["metrics"].get("GKER:COUNT",{}).get("incl",0)))' "$T/t.json")
echo "live tree of $pid after restart: GKER:COUNT $n"
[ "$n" -eq 12 ] || die "expected 12 launches in the live tree, got $n"
"$GPUPROF" --socket "$T/v.sock" top -n 20 | grep -q tick || die "top does not show the kernel"
stop_daemon
$GPDQ "$T/v.gpdb" processes 1
$GPDQ "$T/v.gpdb" kernel-count tick 12
echo "PASS live-restart"

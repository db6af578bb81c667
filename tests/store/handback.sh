#!/usr/bin/env bash
# Hand-back exactness.
# 1. A profile id handed out by a daemon killed before it committed
#    anything is never given to another process by its successor; the
#    first process's hand-back then gets a profile of its own and the other
#    process's stored profile keeps exactly its own records.
# 2. A shim that reconnects to the SAME daemon (not restarted) goes on with
#    its profile: every record counted once, nothing marked corrupt.
source "$(dirname "$0")/../integration/lib.sh" "$1"
CLIENT=$(find "$BUILD" -type f -perm -u+x -name test-daemon-client -print -quit)
[ -n "$CLIENT" ] || { echo "SKIP: test-daemon-client not built"; exit 77; }
export GPUPROF_LOG=info
printf '[store]\nflush_interval_ms = 3600000\n' > "$T/slow.conf"
DB=$T/h.gpdb
q() { $GPDQ "$DB" sql "$1"; }
kcount() { q "select coalesce(sum(m.value),0) from metric m join metric_desc d on d.id=m.metric_id where d.name='GKER:COUNT' and m.profile_id=$1"; }

# --- 1: id never reused after a crash -----------------------------------
start_daemon "$T/d.sock" "$DB" --config "$T/slow.conf"
coproc A { "$CLIENT" "$T/d.sock" handback 5 5; }
# bash closes and unsets A (and A_PID) as soon as the coprocess ends, which
# may come before we read its last line: keep our own copies
apid=$A_PID
exec {a_out}<&"${A[0]}" {a_in}>&"${A[1]}"
read -r -t 20 line <&"$a_out" || die "client A: no phase 1"
ida=${line#PHASE1 }
echo "A got profile $ida"
# the monitor journals A's records (and releases them) on its next pass
# (the journal sits beside the store, daemon/main.c):
# wait for that, or the kill may come first and the successor reads them
# from the ring instead (the journal path is what part 1 checks)
journaled() { [ "$(cat "$T"/journal/"$ida".*.jnl 2>/dev/null | wc -c)" -gt 64 ]; }
wait_for 20 "A's records in the journal" journaled
kill -9 "$DAEMON_PID"; wait "$DAEMON_PID" 2>/dev/null || true; DAEMON_PID=
[ "$(q "select count(*) from profile")" = "[[0]]" ] || die "something was committed before the kill"
start_daemon "$T/d.sock" "$DB" --config "$T/slow.conf"
"$CLIENT" "$T/d.sock" honest 7 || die "client B failed"
idb=$(grep -o "registered pid [0-9]* uid [0-9]* exe [^ ]* as profile [0-9]*" "$T/daemon.log" | tail -1 | awk '{print $NF}')
echo "B got profile $idb"
[ -n "$idb" ] && [ "$idb" != "$ida" ] || die "profile id $ida handed out twice"
echo go >&"$a_in"
read -r -t 20 line <&"$a_out" || die "client A: no phase 2"
ida2=${line#PHASE2 }
[ "$ida2" != "$idb" ] || die "A's hand-back attached to B's profile $idb"
# the first daemon released A's slots once they were in its journal (no
# commit yet): the successor replays them from there, not from the ring
grep "records replayed from" "$T/daemon.log" || true
grep -q "profile $ida2: [0-9]* records replayed from [0-9]* journal segments of profile $ida\$" "$T/daemon.log" ||
  die "A's journal was not replayed: $(grep -i journal "$T/daemon.log")"
wait "$apid" || die "client A failed"
stop_daemon
[ "$(kcount "$idb")" = "[[7.0]]" ] || die "B's profile counts $(kcount "$idb") kernels, not 7"
# nothing of A was committed before the kill: its 5 + 5 are all re-read
[ "$(kcount "$ida2")" = "[[10.0]]" ] || die "A's new profile counts $(kcount "$ida2") kernels, not 10"
echo "ids: A $ida -> $ida2, B $idb"

# --- 2: reconnect to the same daemon ------------------------------------
rm -f "$DB" "$DB-wal" "$DB-shm"; : > "$T/daemon.log"
start_daemon "$T/d.sock" "$DB"
coproc C { "$CLIENT" "$T/d.sock" handback 300 200 50; }
cpid=$C_PID
exec {c_out}<&"${C[0]}" {c_in}>&"${C[1]}"
read -r -t 20 line <&"$c_out" || die "client C: no phase 1"
idc=${line#PHASE1 }
echo go >&"$c_in"
read -r -t 20 line <&"$c_out" || die "client C: no phase 2"
[ "${line#PHASE2 }" = "$idc" ] || die "reconnect got profile ${line#PHASE2 }, not $idc"
wait "$cpid" || die "client C failed"
for _ in $(seq 1 200); do
  [ "$(q "select count(*) from profile where state='exited'")" = "[[1]]" ] && break; sleep 0.05
done
stop_daemon
[ "$(q "select count(*) from profile")" = "[[1]]" ] || die "$(q "select id, state from profile") : not one profile"
[ "$(kcount "$idc")" = "[[550.0]]" ] || die "reconnected profile counts $(kcount "$idc") kernels, not 550"
[ "$(q "select count(*) from profile where error is not null")" = "[[0]]" ] || die "marked: $(q "select error from profile")"
# the daemon either still read the region (goes on with it) or had
# finished and stored the process (reloads it): both count each record once
grep -q "pid [0-9]* reconnected: profile $idc goes on\|handed back its region (profile $idc, reloaded)" \
  "$T/daemon.log" || die "neither a reconnect nor a reload line"
echo "PASS handback"

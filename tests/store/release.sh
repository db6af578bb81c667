#!/usr/bin/env bash
# Release never waits for a commit: with the writer held (another process
# holds the database's write lock, as a slow disk or a long retention pass
# would hold it), a process pushing 100 000 kernel pairs at 20 000 pairs/s
# into 65536-slot rings loses none of them.  The monitor releases each
# span once it is in the process's journal (daemon/journal.c); before,
# slots were released only after the writer's COMMIT and the rings
# overflowed (tens of thousands dropped).
# Then the writer gets the lock back: the stored profile counts exactly
# 100 000 kernels and 0 drops, and the journal is empty (deleted once
# committed).
source "$(dirname "$0")/lib.sh" "$1"
N=100000 RATE=20000
printf '[store]\nflush_interval_ms = 100\n[shm]\nring_slots = 65536\n' > "$T/small.conf"
DB=$T/r.gpdb
start_daemon "$T/d.sock" "$DB" --config "$T/small.conf"

dblock_hold "$DB"

t0=$(date +%s%N)
"$CLIENT" "$T/d.sock" victim "$N" "$RATE" > "$T/victim.out" || die "victim failed: $(cat "$T/victim.out")"
t1=$(date +%s%N)
read -r word id _ drops < "$T/victim.out"
[ "$word" = DONE ] || die "victim: $(cat "$T/victim.out")"
echo "victim: profile $id, $N pairs in $(( (t1 - t0) / 1000000 )) ms, $drops records dropped in its rings"
# the writer was really held: nothing of the victim is stored yet
[ "$(q "select count(*) from profile where id=$id")" = "[[0]]" ] || die "the writer was not held"
[ "$drops" = 0 ] || die "the victim lost $drops records while the writer was held"
ls "$T/journal"/*.jnl >/dev/null 2>&1 || die "no journal segment while the writer is held"

dblock_release
wait_for "$WAIT" "profile $id stored as exited" exited "$id"
[ "$(kcount "$id")" = "[[$N.0]]" ] || die "stored $(kcount "$id") kernels, not $N"
[ "$(q "select drops from profile where id=$id")" = "[[0]]" ] || die "stored drops: $(q "select drops from profile where id=$id")"
stop_daemon
left=$(find "$T/journal" -name '*.jnl' | wc -l)
[ "$left" = 0 ] || die "$left journal segments left after the commit: $(ls -l "$T/journal")"
echo "PASS release"

#!/usr/bin/env bash
# Exactly once across a daemon SIGKILL with the release point moved to the
# journal.  A process pushes 300 kernel pairs, which are committed; then
# the writer is held (another process holds the database's write lock)
# and it pushes 200 more: the daemon consumes them, appends them to the
# process's journal and releases the rings (the client sees its rings
# empty: "released") with nothing of them committed.  The daemon is
# SIGKILLed, restarted; the process hands its region back and pushes 50
# more.  The successor reloads the stored profile (300), replays exactly
# the 400 journaled records (200 pairs) from the committed ring cursor,
# and reads the 50 new pairs from the ring: 550 kernels, each once, one
# profile; the journal is empty after the final commit.
source "$(dirname "$0")/lib.sh" "$1"
printf '[store]\nflush_interval_ms = 100\n' > "$T/fast.conf"
DB=$T/j.gpdb
start_daemon "$T/d.sock" "$DB" --config "$T/fast.conf"

handback2_start 300 200 50
committed() { [ "$(kcount "$id")" = "[[300.0]]" ]; }
wait_for "$WAIT" "300 kernels of profile $id committed" committed

dblock_hold "$DB"

echo go >&"$a_in"
read -r -t 30 word id1 rel <&"$a_out" && [ "$word" = PHASE1B ] || die "client: no phase 1b"
[ "$rel" = released ] || die "200 pairs consumed but the rings were not released without a commit"
ls "$T/journal/$id".*.jnl >/dev/null 2>&1 || die "no journal segment of profile $id: $(ls -l "$T/journal")"
[ "$(kcount "$id")" = "[[300.0]]" ] || die "more than the first 300 committed: $(kcount "$id")"
kill_daemon
dblock_release

start_daemon "$T/d.sock" "$DB" --config "$T/fast.conf"
echo go >&"$a_in"
read -r -t 20 word id2 <&"$a_out" && [ "$word" = PHASE2 ] || die "client: no phase 2"
[ "$id2" = "$id" ] || die "hand-back got profile $id2, not $id"
wait "$apid" || die "client failed"
wait_for "$WAIT" "profile $id stored as exited" exited "$id"
stop_daemon
grep -q "profile $id: 400 records replayed from [0-9]* journal segments of profile $id$" "$T/daemon.log" ||
  die "not 400 records replayed: $(grep -E 'replayed|journal' "$T/daemon.log")"
[ "$(kcount "$id")" = "[[550.0]]" ] || die "profile $id counts $(kcount "$id") kernels, not 550"
[ "$(q "select count(*) from profile")" = "[[1]]" ] || die "profiles: $(q "select id, state from profile")"
[ "$(q "select count(*) from profile where error is not null")" = "[[0]]" ] || die "marked: $(q "select error from profile")"
left=$(find "$T/journal" -name '*.jnl' | wc -l)
[ "$left" = 0 ] || die "$left journal segments left after the final commit"
echo "PASS journal"

#!/usr/bin/env bash
# A process the writer is copying (frozen, gpd_proc_t.snap_frozen) keeps
# its rings drained: the monitor journals what it pushes without applying
# it, releases the slots, and applies the journaled records once the copy
# is complete (daemon/journal-hold.c).  GPUPROF_TEST_FROZEN_MS keeps each
# chunked copy going 2 s longer, so with a flush every 100 ms the victim
# is frozen nearly all the time.
#  A. A victim pushes 60 000 kernel pairs at 20 000 pairs/s into
#     16384-slot rings: its activity ring gets 120 000 slots per freeze
#     (3 slots per ACTIVITY), seven times its size, the invocation ring
#     40 000.  It drops 0 records and the stored profile
#     counts exactly 60 000 kernels and 0 drops.  Before, the monitor
#     skipped a frozen process and its rings overflowed.
#  B. Exactly once across a SIGKILL while spans are held: a process
#     pushes 300 pairs, then 20 000 more (waiting for room, as only a test
#     helper does) while the writer freezes it again and again; the
#     daemon is SIGKILLed once its rings are released, restarted, the
#     process hands back and pushes 50: exactly 20 350 kernels, one
#     profile, no segment left.
source "$(dirname "$0")/lib.sh" "$1"
export GPUPROF_TEST_FROZEN_MS=2000
printf '[store]\nflush_interval_ms = 100\n[shm]\nring_slots = 16384\n' > "$T/small.conf"
DB=$T/f.gpdb
start_daemon "$T/d.sock" "$DB" --config "$T/small.conf"
grep -q "stays frozen 2000 ms longer" "$T/daemon.log" || die "the daemon ignored GPUPROF_TEST_FROZEN_MS"

# A: no loss while frozen
N=60000 RATE=20000
victim_run "$N" "$RATE" "while it was frozen"
wait_for "$WAIT" "profile $id stored as exited" exited "$id"
[ "$(kcount "$id")" = "[[$N.0]]" ] || die "stored $(kcount "$id") kernels, not $N"
[ "$(q "select drops from profile where id=$id")" = "[[0]]" ] || die "stored drops: $(q "select drops from profile where id=$id")"
grep -Eq "pid [0-9]+ ended: [0-9]+ records \([1-9][0-9]* journaled while frozen\)" "$T/daemon.log" ||
  die "nothing was journaled while frozen: $(grep ended "$T/daemon.log")"
grep "ended:" "$T/daemon.log"

# B: exactly once across a SIGKILL during the holds
handback2_start 300 20000 50
committed() { [ "$(kcount "$id")" = "[[300.0]]" ]; }
wait_for "$WAIT" "300 kernels of profile $id committed" committed
echo go >&"$a_in"
read -r -t 60 word id1 rel <&"$a_out" && [ "$word" = PHASE1B ] || die "client: no phase 1b"
[ "$rel" = released ] || die "20 000 pairs pushed but the rings were not released"
kill_daemon
echo "killed with $(kcount "$id") kernels stored, $(find "$T/journal" -name "$id.*.jnl" | wc -l) journal segments"
start_daemon "$T/d.sock" "$DB" --config "$T/small.conf"
echo go >&"$a_in"
read -r -t 20 word id2 <&"$a_out" && [ "$word" = PHASE2 ] || die "client: no phase 2"
[ "$id2" = "$id" ] || die "hand-back got profile $id2, not $id"
wait_exit "$apid" "client"
[ "$RC" = 0 ] || die "client failed ($RC)"
wait_for "$WAIT" "profile $id stored as exited" exited "$id"
stop_daemon
grep "replayed" "$T/daemon.log" || true
[ "$(kcount "$id")" = "[[20350.0]]" ] || die "profile $id counts $(kcount "$id") kernels, not 20350"
[ "$(q "select count(*) from profile where pid=$(q "select pid from profile where id=$id" | tr -d '[]')")" = "[[1]]" ] ||
  die "profiles: $(q "select id, pid, state from profile")"
[ "$(q "select count(*) from profile where error is not null")" = "[[0]]" ] || die "marked: $(q "select error from profile")"
left=$(find "$T/journal" -name '*.jnl' | wc -l)
[ "$left" = 0 ] || die "$left journal segments left after the final commit"
echo "PASS frozen"

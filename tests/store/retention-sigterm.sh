#!/usr/bin/env bash
# SIGTERM in the middle of a retention pass: a store of 40 finished
# profiles over 20 000 contexts (520 000 rows) and a 1-byte limit, so the
# first pass removes everything (seconds).  Once it removed its first
# profile the daemon gets SIGTERM and must exit 0 within 5 s (measured to
# its exit, by deadline), the pass saying it stopped; the next daemon
# finishes the removal: no profile, only the root context, work lists empty.
source "$(dirname "$0")/../integration/lib.sh" "$1"
FILL=$(app test-retention)
export GPUPROF_LOG=info
DB=$T/s.gpdb
"$FILL" fill "$DB" 1000 40 20000 1000 10000 || die "fill failed"
q() { $GPDQ "$DB" sql "$1"; }
[ "$(q "select count(*) from context")" = "[[20000]]" ] || die "fill: $(q "select count(*) from context")"
printf '[daemon]\nlog_level = info\n[store]\nretention_max_bytes = 1\nflush_interval_ms = 100\n' > "$T/r.conf"
start_daemon "$T/d.sock" "$DB" --config "$T/r.conf"
wait_for "$WAIT" "the pass removed a profile" grep -q "retention removed profile" "$T/daemon.log"
t0=${EPOCHREALTIME//[.,]/}
kill -TERM "$DAEMON_PID"
wait_exit "$DAEMON_PID" "gpuprofd after SIGTERM in a retention pass" 5
t1=${EPOCHREALTIME//[.,]/}
DAEMON_PID=
[ "$RC" -eq 0 ] || die "gpuprofd exited $RC after SIGTERM"
ms=$(( (t1 - t0) / 1000 ))
left=$(q "select count(*) from profile" | tr -d '[]')
echo "SIGTERM to exit: $ms ms; $left of 40 profiles left"
grep -q "stopped: the daemon is stopping" "$T/daemon.log" ||
  die "the pass was not stopped (it ended before SIGTERM?): $(grep 'retention pass' "$T/daemon.log")"
[ "$ms" -lt 5000 ] || die "exit took $ms ms"
[ "$left" -gt 0 ] || die "nothing left: the pass was not interrupted"
: > "$T/daemon.log"
start_daemon "$T/d2.sock" "$DB" --config "$T/r.conf"
done_all() { [ "$(q "select (select count(*) from profile), (select count(*) from context),
  (select count(*) from retain_drop) + (select count(*) from retain_ctx)")" = "[[0, 1, 0]]" ]; }
wait_for "$WAIT" "the next daemon finishes the removal" done_all
stop_daemon
echo "PASS retention-sigterm"

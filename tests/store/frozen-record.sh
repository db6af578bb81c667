#!/usr/bin/env bash
# `gpuprof record`'s private daemon keeps a frozen process's rings drained
# too: it has a ring journal in its private folder (--journal-dir), used
# for the spans of a process whose profile the writer copies in chunks
# (daemon/journal-hold.c), and `record` removes that folder at the end.
# GPUPROF_TEST_FROZEN_MS keeps each chunked copy going 2 s longer and a
# wrapper gives the daemon a flush every 100 ms and 16 384-slot rings, so
# the recorded process is frozen nearly all the time.
#  A. test-daemon-client pushes 60 000 kernel pairs at 20 000 pairs/s as
#     the recorded command (the real shim is off: GPUPROF_DISABLE=1; the
#     client speaks the protocol itself): 0 records dropped in its rings,
#     the output profile holds one process, exactly 60 000 kernels and
#     0 drops, the daemon's end line counts records journaled while
#     frozen, no journal segment is left.  Before, a frozen process under
#     record waited and its rings overflowed.
#  B. 3 000 pairs without --keep-socket: the private folder, journal/
#     included, is gone after the run.
source "$(dirname "$0")/lib.sh" "$1"
export GPUPROF_TEST_FROZEN_MS=2000 GPUPROF_DISABLE=1
printf '[store]\nflush_interval_ms = 100\n[shm]\nring_slots = 16384\n' > "$T/small.conf"
cat >"$T/gpuprofd" <<EOS
#!/usr/bin/env bash
exec "$GPUPROFD" --config "$T/small.conf" "\$@"
EOS
chmod +x "$T/gpuprofd"
mkdir -m 0700 "$T/tmp"
# rec OUT_DB N RATE [record options]: the victim under gpuprof record;
# sets id and drops (from its DONE line)
rec() {
  local db=$1 n=$2 rate=$3 rc=0 word
  shift 3
  TMPDIR=$T/tmp GPUPROF_DAEMON=$T/gpuprofd "$GPUPROF" record "$@" -o "$db" -- \
    sh -c 'exec "$0" "$GPUPROF_SOCKET" victim "$1" "$2"' "$CLIENT" "$n" "$rate" >"$T/victim.out" 2>"$T/rec.err" ||
    rc=$?
  [ $rc = 0 ] || die "record exited $rc: $(cat "$T/victim.out" "$T/rec.err")"
  read -r word id _ drops < "$T/victim.out"
  [ "$word" = DONE ] || die "victim: $(cat "$T/victim.out" "$T/rec.err")"
  echo "victim: profile $id, $drops records dropped in its rings"
}

# A: no loss while frozen under record
N=60000
DB=$T/a.gpdb
rec "$DB" $N 20000 --keep-socket
[ "$drops" = 0 ] || die "the victim lost $drops records while frozen under record"
[ "$(q "select count(*) from profile")" = "[[1]]" ] || die "profiles: $(q "select id, pid, state from profile")"
[ "$(kcount "$id")" = "[[$N.0]]" ] || die "stored $(kcount "$id") kernels, not $N"
[ "$(q "select drops from profile where id=$id")" = "[[0]]" ] || die "stored drops: $(q "select drops from profile where id=$id")"
kept=$(sed -n 's/^gpuprof: kept \(.*\) (gpuprofd.sock.*/\1/p' "$T/rec.err")
[ -n "$kept" ] && [ -f "$kept/gpuprofd.log" ] || die "no kept folder: $(cat "$T/rec.err")"
grep -q "stays frozen 2000 ms longer" "$kept/gpuprofd.log" || die "the daemon ignored GPUPROF_TEST_FROZEN_MS"
grep -Eq "pid [0-9]+ ended: [0-9]+ records \([1-9][0-9]* journaled while frozen\)" "$kept/gpuprofd.log" ||
  die "nothing was journaled while frozen: $(grep ended "$kept/gpuprofd.log")"
grep "ended:" "$kept/gpuprofd.log"
[ "$(stat -c %a "$kept/journal")" = 700 ] || die "journal folder mode $(stat -c %a "$kept/journal")"
left=$(find "$kept/journal" -name '*.jnl' | wc -l)
[ "$left" = 0 ] || die "$left journal segments left after the final commit"
rm -rf "$kept"

# B: the private folder and its journal go at the end
DB=$T/b.gpdb
rec "$DB" 3000 20000
[ "$(kcount "$id")" = "[[3000.0]]" ] || die "stored $(kcount "$id") kernels, not 3000"
[ -z "$(ls -A "$T/tmp")" ] || die "left in TMPDIR: $(ls -AR "$T/tmp")"
echo "PASS frozen-record"

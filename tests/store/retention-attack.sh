#!/usr/bin/env bash
# A store at its cap under a hostile second user: retention_max_bytes = 4M
# (a uid's share: 2 MiB), flushes every 100 ms.  The victim (uid 1) stores
# one finished profile of 5 000 kernel pairs (well within its share).
# Then the attacker (nobody) keeps the writer busy with a correlation
# flood (never-matched invocations) and, for ATTACK_S seconds, runs short
# processes of 20 000 kernel pairs one after the other (each ~1.8 MB of
# trace rows by retention's estimate: the store fills in a few of them).
# Asserted, with the store's size watched throughout (size-peak.py: woken
# by every write in its folder; the database file and its -wal apart):
#   - the database file never above the cap + FILE_SLACK (docs/STORE.md
#     "The store's cap under attack"): free pages kept, 1 MiB; the trace
#     rows one count's allowances let in, at most the cap's room plus the
#     uids' unused shares, here 4 MiB; the attacker's pending rows, at
#     most its share, 2 MiB;
#   - the -wal file never above WAL_MAX: a commit that leaves it at
#     4 MiB or more cuts it to 0 bytes (store/db.c, docs/STORE.md), so it
#     exceeds 4 MiB by at most one transaction of the writer, a tracing
#     thread or retention (measured: docs/PERFORMANCE.md, "The store's
#     peak, watched"): 4 MiB + 4 MiB for that transaction;
#   - both together within the cap + FILE_SLACK + WAL_MAX at the end;
#   - the victim keeps its profile whole: exactly 5 000 kernels, 5 001 GPU
#     trace events (the kernels and the client's one copy) and 5 000
#     launches stored;
#   - retention removed attacker profiles only, and the attacker's trace
#     rows were refused once its share was spent.
source "$(dirname "$0")/lib.sh" "$1"
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (two users)"; exit 77; }
command -v setpriv >/dev/null || { echo "SKIP: no setpriv"; exit 77; }
ATTACK_S=${ATTACK_S:-20}
CAP=$((4 << 20)) FILE_SLACK=$((7 << 20)) WAL_MAX=$((8 << 20))
SLACK=$((FILE_SLACK + WAL_MAX))
chmod 0755 "$T"
mkdir -p "$T/bin" "$T/sock" "$T/prof"
chmod 0777 "$T/sock"
cp "$CLIENT" "$T/bin/"
chmod -R a+rX "$T/bin"
CL=$T/bin/$(basename "$CLIENT")
DB=$T/prof/d.gpdb
printf '[daemon]\nlog_level = info\n[store]\nretention_max_bytes = 4M\nflush_interval_ms = 100\n' > "$T/q.conf"
S=$T/sock/d.sock
start_daemon "$S" "$DB" --config "$T/q.conf"
as() { local u=$1; shift; setpriv --reuid="$u" --regid="$u" --clear-groups env HOME=/ "$@"; }
size() { stat -c %s "$DB" "$DB-wal" 2>/dev/null | awk '{ s += $1 } END { print s + 0 }'; }

# the victim: one finished profile of 5 000 pairs
as 1 "$CL" "$S" honest 5000 > "$T/v.out" 2>&1 || die "victim failed: $(cat "$T/v.out")"
V=$(q "select id from profile where uid = 1" | tr -d '[] ')
[ -n "$V" ] || die "no victim profile"
wait_for "$WAIT" "the victim's profile stored exited" exited "$V"
vstate() {
  q "select (select cast(coalesce(sum(m.value), 0) as integer) from metric m join metric_desc d on d.id = m.metric_id
      where d.name = 'GKER:COUNT' and m.profile_id = $V),
    (select count(*) from trace_event where profile_id = $V),
    (select count(*) from trace_launch where profile_id = $V)"
}
vstored() { [ "$(vstate)" = "[[5000, 5001, 5000]]" ]; }
wait_for "$WAIT" "the victim's kernels and trace rows stored" vstored

# the store's peak from here on (tests/store/size-peak.py)
python3 "$(dirname "$0")/size-peak.py" "$DB" "$T/peak.stop" $((ATTACK_S + 3 * WAIT)) > "$T/peak.out" 2>&1 &
PEAK=$!
# the attacker: a flood that keeps the writer busy, and short processes
mkfifo "$T/f.in"
as 65534 "$CL" "$S" flood 2000000 200000 < "$T/f.in" > "$T/flood.out" 2>&1 &
exec {FI}>"$T/f.in"
( end=$((SECONDS + ATTACK_S)) n=0
  while [ $SECONDS -lt $end ]; do as 65534 "$CL" "$S" honest 20000 > /dev/null 2>&1; n=$((n + 1)); done
  echo "$n" > "$T/fill.n" ) &
FILL=$!
wait_exit "$FILL" "the attacker's short processes" $((ATTACK_S + WAIT))
exec {FI}>&-
settled() {
  local s; s=$(size)
  local left; left=$(q "select count(*) from profile where state = 'running'" | tr -d '[] ')
  echo "store $s bytes, $left running"
  [ "$left" = 0 ] && [ "$s" -le $((CAP + SLACK)) ]
}
wait_for "$WAIT" "the attacker's processes ended, the store within cap + slack" settled
touch "$T/peak.stop"
wait_exit "$PEAK" "the size watcher" 10
[ "$RC" = 0 ] || die "size watcher: $(cat "$T/peak.out")"
read -r _ max _ pdb _ pwal _ dbmax _ walmax _ samples < "$T/peak.out"
n=$(cat "$T/fill.n")
removed=$(grep -c "retention removed profile" "$T/daemon.log" || true)
others=$(grep "retention removed profile" "$T/daemon.log" | grep -vc "uid 65534" || true)
left=$(q "select count(*) from profile where uid = 65534" | tr -d '[] ')
echo "attacker: $n short processes + a flood, $left profiles left, $removed removed by retention;" \
  "store peak $max bytes ($pdb in the file, $pwal in the -wal); each file's own peak: $dbmax" \
  "(cap $CAP + slack $FILE_SLACK), $walmax (at most $WAL_MAX); $samples samples; at the end $(size);" \
  "victim: $(vstate)"
[ "$dbmax" -le $((CAP + FILE_SLACK)) ] || die "the database file reached $dbmax bytes (cap $CAP + slack $FILE_SLACK)"
[ "$walmax" -le "$WAL_MAX" ] || die "the -wal file reached $walmax bytes (at most $WAL_MAX)"
[ "$(vstate)" = "[[5000, 5001, 5000]]" ] || die "the victim lost data: $(vstate)"
[ "$others" = 0 ] || die "retention removed $others profiles of another uid than the attacker's"
[ "$removed" -ge 1 ] || die "retention removed nothing"
grep -q "uid 65534 is over its share of a full store" "$T/daemon.log" || die "no trace row refused"
stop_daemon
echo "PASS retention-attack"

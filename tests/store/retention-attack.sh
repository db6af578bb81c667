#!/usr/bin/env bash
# A store at its cap under a hostile second user: retention_max_bytes = 4M
# (a uid's share: 2 MiB), flushes every 100 ms.  The victim (uid 1) stores
# one finished profile of 5 000 kernel pairs (well within its share).
# Then the attacker (nobody) keeps the writer busy with a correlation
# flood (never-matched invocations) and, for ATTACK_S seconds, runs short
# processes of 20 000 kernel pairs one after the other (each ~1.8 MB of
# trace rows by retention's estimate: the store fills in a few of them).
# Asserted, the store sampled every 0.2 s (the database file + its -wal):
#   - never above the cap + SLACK (docs/STORE.md "The cap under attack":
#     the -wal file's limit after a checkpoint, 4 MiB; free pages kept,
#     1 MiB; the trace rows one count's allowances let in, at most the
#     cap's room plus the uids' shares, here 4 MiB), nor above it at the end;
#   - the victim keeps its profile whole: exactly 5 000 kernels, 5 001 GPU
#     trace events (the kernels and the client's one copy) and 5 000
#     launches stored;
#   - retention removed attacker profiles only, and the attacker's trace
#     rows were refused once its share was spent.
source "$(dirname "$0")/lib.sh" "$1"
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (two users)"; exit 77; }
command -v setpriv >/dev/null || { echo "SKIP: no setpriv"; exit 77; }
ATTACK_S=${ATTACK_S:-20}
CAP=$((4 << 20)) SLACK=$((12 << 20))
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

# the attacker: a flood that keeps the writer busy, and short processes
mkfifo "$T/f.in"
as 65534 "$CL" "$S" flood 2000000 200000 < "$T/f.in" > "$T/flood.out" 2>&1 &
exec {FI}>"$T/f.in"
( end=$((SECONDS + ATTACK_S)) n=0
  while [ $SECONDS -lt $end ]; do as 65534 "$CL" "$S" honest 20000 > /dev/null 2>&1; n=$((n + 1)); done
  echo "$n" > "$T/fill.n" ) &
FILL=$!
max=0
while kill -0 "$FILL" 2>/dev/null; do
  s=$(size); [ "$s" -le "$max" ] || max=$s
  sleep 0.2
done
wait "$FILL"
exec {FI}>&-
settled() {
  local s; s=$(size); [ "$s" -le "$max" ] || max=$s
  local left; left=$(q "select count(*) from profile where state = 'running'" | tr -d '[] ')
  echo "store $s bytes, $left running"
  [ "$left" = 0 ] && [ "$s" -le $((CAP + SLACK)) ]
}
wait_for "$WAIT" "the attacker's processes ended, the store within cap + slack" settled
n=$(cat "$T/fill.n")
removed=$(grep -c "retention removed profile" "$T/daemon.log" || true)
others=$(grep "retention removed profile" "$T/daemon.log" | grep -vc "uid 65534" || true)
left=$(q "select count(*) from profile where uid = 65534" | tr -d '[] ')
echo "attacker: $n short processes + a flood, $left profiles left, $removed removed by retention;" \
  "store peak $max bytes (cap $CAP + slack $SLACK), at the end $(size); victim: $(vstate)"
[ "$max" -le $((CAP + SLACK)) ] || die "the store reached $max bytes (cap $CAP + slack $SLACK)"
[ "$(vstate)" = "[[5000, 5001, 5000]]" ] || die "the victim lost data: $(vstate)"
[ "$others" = 0 ] || die "retention removed $others profiles of another uid than the attacker's"
[ "$removed" -ge 1 ] || die "retention removed nothing"
grep -q "uid 65534 is over its share of a full store" "$T/daemon.log" || die "no trace row refused"
stop_daemon
echo "PASS retention-attack"

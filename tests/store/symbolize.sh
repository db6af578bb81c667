#!/usr/bin/env bash
# Nothing slow on the writer: symbolization of a large -g binary does not
# delay another process.  An attacker (uid nobody when the test runs as
# root) names 20 000 call sites in store-bigdebug (20 000 functions in one
# compilation unit, built with -g: each lookup walks the unit); the writer
# used to symbolize every new FRAME context before its COMMIT, and the
# rings were released only after it, so a victim pushing 100 000 kernel
# pairs at 20 000 pairs/s into 65536-slot rings overflowed.  Now:
#  - the attacker's 20 000 contexts are stored at once, by module +
#    offset (label 0x...), before nearly any is symbolized;
#  - then, while the symbolizer works through them, the victim loses 0
#    records and its profile stores exactly 100 000 kernels;
#  - their symbols arrive later through the symbolizer thread (budget
#    per uid) as updates: contexts labelled f_<n> with their frame rows.
source "$(dirname "$0")/lib.sh" "$1"
BIG=$BUILD/tests/apps/store-bigdebug
[ -x "$BIG" ] || { echo "SKIP: store-bigdebug not built"; exit 77; }
command -v nm >/dev/null || { echo "SKIP: no nm"; exit 77; }
N=100000 RATE=20000
printf '[store]\nflush_interval_ms = 100\n[shm]\nring_slots = 65536\n' > "$T/small.conf"
DB=$T/s.gpdb
# call sites: 4 bytes into each f_<n>
nm "$BIG" | while read -r addr type name; do
  if [ "$type" = T ] && [ "${name#f_}" != "$name" ]; then printf '%x\n' $((16#$addr + 4)); fi
done > "$T/offsets"
[ "$(wc -l < "$T/offsets")" = 20000 ] || die "nm found $(wc -l < "$T/offsets") functions, not 20000"
AS=()
auid=$(id -u)
if [ "$auid" = 0 ] && command -v setpriv >/dev/null; then
  AS=(setpriv --reuid=65534 --regid=65534 --clear-groups)
  auid=65534
  chmod 755 "$T" # the attacker reaches the socket
fi
start_daemon "$T/d.sock" "$DB" --config "$T/small.conf"

mkfifo "$T/attacker.in"
"${AS[@]}" "$CLIENT" "$T/d.sock" frames "$BIG" "$T/offsets" <"$T/attacker.in" >"$T/attacker.out" 2>&1 &
apid=$!
exec {a_in}>"$T/attacker.in"
wait_for 30 "attacker announced its frames" grep -q '^FRAMES [0-9]* 20000$' "$T/attacker.out"
read -r _ aid _ < "$T/attacker.out"
stored() { [ "$(q "select count(*) from cct_local where profile_id=$aid and local_id >= 10")" = "[[20000]]" ]; }
wait_for 30 "the attacker's 20 000 frame contexts stored (the writer does not wait for symbols)" stored
hex=$(q "select count(*) from context where uid=$auid and module='$BIG' and label like '0x%'")
echo "attacker's contexts stored by module + offset before the victim starts: $hex"
[ "${hex//[^0-9]/}" -ge 10000 ] || die "only $hex of 20 000 frames were stored unsymbolized: was the writer symbolizing?"
victim_run "$N" "$RATE" "beside the attacker's symbolization"
wait_for "$WAIT" "victim profile $id stored as exited" exited "$id"
kc=$(kcount "$id")
[ "$kc" = "[[$N.0]]" ] || die "victim stored $kc kernels, not $N"
# symbols come later, as updates
named() {
  [ "$(q "select count(*) from context c join frame f on f.uid=c.uid and f.context_id=c.id and f.depth=0
          where c.uid=$auid and c.module='$BIG' and c.label glob 'f_[0-9]*' and f.function=c.label
          and f.file like '%bigdebug.c' and f.line > 0")" != "[[0]]" ]
}
wait_for "$WAIT" "some of the attacker's frames symbolized later" named
echo "symbolized so far: $(q "select count(*) from context where uid=$auid and module='$BIG' and label glob 'f_[0-9]*'")"
exec {a_in}>&-
wait "$apid" || die "attacker failed: $(cat "$T/attacker.out")"
stop_daemon
grep -o 'symbolizer: .*' "$T/daemon.log" || true
echo "PASS symbolize"

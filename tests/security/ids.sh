#!/bin/sh
# ids.sh - profile ids say nothing about other users (issue 23).
# gpdsec1 registers one profile at a time (a client speaking the real
# protocol); between two of them root registers 1, 2, ... 8 profiles.
# gpdsec1's ids must not tell how many: each lies in [2^52, 2^53) (exact
# in JSON), no two of them are within 1 000 000 of each other (sequential
# ids would differ by exactly root's count + 1), and the nine are neither
# ascending nor descending.  Then 1000 more ids, a daemon restart on the
# same store and 200 more: all 1209 + root's 36 distinct (the count and
# its key survive the restart).  Skips (77) unless root.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd setpriv
id gpdsec1 >/dev/null 2>&1 || useradd -M gpdsec1 || fail "useradd gpdsec1"
start_daemon ""
hellos() { # user n: n profiles' ids, one a line, appended to $T/all
  if [ "$1" = root ]; then
    $PY "$HOSTILE" hellos "$S" "$2" >"$T/h.out" 2>&1
  else
    as "$1" $PY "$HOSTILE" hellos "$S" "$2" >"$T/h.out" 2>&1
  fi || fail "hellos $1 $2: $(cat "$T/h.out")"
  sed -n 's/^profile //p' "$T/h.out" | tee -a "$T/all"
}
: >"$T/all"
: >"$T/mine"
for k in 1 2 3 4 5 6 7 8; do
  hellos gpdsec1 1 >>"$T/mine"
  hellos root "$k" >/dev/null
done
hellos gpdsec1 1 >>"$T/mine"
[ "$(wc -l <"$T/mine")" = 9 ] || fail "gpdsec1 got $(wc -l <"$T/mine") ids, not 9"
$PY - "$T/mine" <<'PY' || fail "gpdsec1's ids tell: $(tr '\n' ' ' <"$T/mine")"
import sys
ids = [int(l) for l in open(sys.argv[1])]
assert all(2**52 <= i < 2**53 for i in ids), "out of [2^52, 2^53)"
for a, b, k in zip(ids, ids[1:], range(1, 9)):
    assert abs(b - a) >= 10**6, "ids %d, %d: %d apart (root started %d)" % (a, b, b - a, k)
assert ids != sorted(ids) and ids != sorted(ids, reverse=True), "monotonic"
PY
ok "gpdsec1's 9 ids: apart by >= 1e6, not monotonic, in [2^52, 2^53)"
hellos gpdsec1 1000 >/dev/null
kill -TERM $D
wait_gone $D || fail "daemon did not stop"
start_daemon ""
hellos gpdsec1 200 >/dev/null
n=$(wc -l <"$T/all")
u=$(sort -u "$T/all" | wc -l)
[ "$n" = 1245 ] && [ "$u" = "$n" ] || fail "$u distinct of $n ids (1245 expected, all distinct)"
ok "$u ids across a restart, all distinct"
exit 0

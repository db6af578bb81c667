#!/bin/sh
# procs.sh - a uid's processes held by the daemon are bounded, ended ones
# included (issue 23: the soak's attacker started ~117 short processes a
# second; each ended one kept its region mapped until the writer stored
# its profile, so a slow writer let one uid pin tens of thousands of
# regions: 56 GiB of daemon memory, the fd limit, every uid's
# registrations refused).
# With [daemon] max_procs_per_uid = 4 and the writer held (another process
# holds the database's write lock), gpdsec1 registers processes that end at
# once (hostile.py hellos: Hello, then close): 4 are taken, the 5th is
# refused naming max_procs_per_uid and "not stored yet"; gpdsec2 and root
# still register.  Once the lock is let go the writer stores the four and
# unmaps their regions, and gpdsec1 registers again.  Skips (77) unless
# root.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd setpriv
for u in gpdsec1 gpdsec2; do
  id "$u" >/dev/null 2>&1 || useradd -M "$u" || fail "useradd $u"
done
start_daemon '[daemon]
max_procs_per_uid = 4
[store]
flush_interval_ms = 100'
DB=$T/state/gpuprofd.gpdb
wait_cmd 300 test -e "$DB" || fail "no store at $DB: $(cat "$DLOG")"

# the writer held: the database's write lock taken by another process
mkfifo "$T/lock.in"
$PY -c '
import sqlite3, sys
c = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=20)
c.execute("BEGIN IMMEDIATE")
print("LOCKED", flush=True)
sys.stdin.readline()
c.execute("ROLLBACK")' "$DB" <"$T/lock.in" >"$T/lock.out" 2>&1 &
L=$!
track $L
exec 7>"$T/lock.in"
wait_for "$T/lock.out" '^LOCKED' 200 || fail "lock not taken: $(cat "$T/lock.out")"

as gpdsec1 $PY "$HOSTILE" hellos "$S" 6 >"$T/h1.out" 2>&1
cat "$T/h1.out"
[ "$(grep -c '^profile ' "$T/h1.out")" = 4 ] || fail "gpdsec1: want 4 registrations taken"
grep -q "^refused .*uid $(id -u gpdsec1) holds 4 processes, running or ended and not stored yet (max_procs_per_uid)" \
  "$T/h1.out" || fail "gpdsec1: the 5th not refused by max_procs_per_uid"
ok "gpdsec1: 4 ended processes not stored yet, the 5th refused"

as gpdsec2 $PY "$HOSTILE" hellos "$S" 2 >"$T/h2.out" 2>&1 || fail "gpdsec2 refused: $(cat "$T/h2.out")"
$PY "$HOSTILE" hellos "$S" 6 >"$T/h0.out" 2>&1 || fail "root refused: $(cat "$T/h0.out")"
ok "gpdsec2 and root still register"

echo go >&7
exec 7>&-
wait $L || fail "lock holder: $(cat "$T/lock.out")"
# stored: gpdsec1 may register again (deadline 20 s)
wait_cmd 200 as gpdsec1 $PY "$HOSTILE" hellos "$S" 1 >"$T/h1b.out" 2>&1 ||
  fail "gpdsec1 still refused after the writer got the lock back: $(cat "$T/h1b.out")"
got=$($PY -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("select count(*) from profile where uid=?", (int(sys.argv[2]),)).fetchone()[0])' "$DB" "$(id -u gpdsec1)")
[ "$got" -ge 4 ] || fail "want the 4 ended profiles of gpdsec1 stored, found $got"
ok "after the commit gpdsec1 registers again ($got profiles of it stored)"
[ "$(grep -c "uid $(id -u gpdsec1): .*registration refused" "$DLOG")" = 1 ] || fail "want one refusal line: $(cat "$DLOG")"
echo "PASS procs"

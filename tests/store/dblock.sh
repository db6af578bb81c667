# dblock.sh - sourced by store tests (after integration/lib.sh): another
# process holds a database's write lock, so the daemon's writer waits in
# BEGIN as it would behind a slow disk or a long retention pass.
#   dblock_hold DB      returns once the lock is held
#   dblock_release      lets go and reaps the holder
dblock_hold() {
  rm -f "$T/dblock.in" "$T/dblock.out"
  mkfifo "$T/dblock.in"
  python3 -c '
import sqlite3, sys
c = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=20)
c.execute("BEGIN IMMEDIATE")
print("LOCKED", flush=True)
sys.stdin.readline()
c.execute("ROLLBACK")' "$1" <"$T/dblock.in" >"$T/dblock.out" 2>&1 &
  DBLOCK_PID=$!
  exec {DBLOCK_FD}>"$T/dblock.in"
  wait_for 20 "the database lock taken" grep -q LOCKED "$T/dblock.out"
}
dblock_release() {
  echo go >&"$DBLOCK_FD"
  exec {DBLOCK_FD}>&-
  wait "$DBLOCK_PID" || die "lock holder: $(cat "$T/dblock.out")"
}

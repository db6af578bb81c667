# lib.sh BUILD_DIR - sourced by the store tests that drive
# test-daemon-client (release, journal, symbolize): the integration
# helpers, the client ($CLIENT), queries on $DB, and another process that
# holds a database's write lock, so that the daemon's writer waits in
# BEGIN as it would behind a slow disk or a long retention pass.
#   q SQL               the query's JSON rows
#   kcount PROFILE      its stored GKER:COUNT
#   exited PROFILE      true once it is stored as exited
#   dblock_hold DB      returns once the lock is held
#   dblock_release      lets go and reaps the holder
#   victim_run N RATE WHILE   the victim pushes N pairs at RATE/s; sets
#                       id (its profile); fails unless it dropped 0
#   handback2_start K J M     test-daemon-client handback2 as a coprocess
#                       (apid, a_out, a_in); returns at PHASE1, id set
source "$(dirname "${BASH_SOURCE[0]}")/../integration/lib.sh" "$1"
CLIENT=$(find "$BUILD" -type f -perm -u+x -name test-daemon-client -print -quit)
[ -n "$CLIENT" ] || { echo "SKIP: test-daemon-client not built"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: no python3"; exit 77; }
export GPUPROF_LOG=info
q() { $GPDQ "$DB" sql "$1"; }
kcount() {
  q "select coalesce(sum(m.value),0) from metric m join metric_desc d on d.id=m.metric_id where d.name='GKER:COUNT' and m.profile_id=$1"
}
exited() { [ "$(q "select state from profile where id=$1")" = '[["exited"]]' ]; }
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
victim_run() {
  "$CLIENT" "$T/d.sock" victim "$1" "$2" > "$T/victim.out" || die "victim failed: $(cat "$T/victim.out")"
  local word drops
  read -r word id _ drops < "$T/victim.out"
  [ "$word" = DONE ] || die "victim: $(cat "$T/victim.out")"
  echo "victim: profile $id, $drops records dropped in its rings"
  [ "$drops" = 0 ] || die "the victim lost $drops records $3"
}
handback2_start() {
  coproc A { "$CLIENT" "$T/d.sock" handback2 "$1" "$2" "$3"; }
  apid=$A_PID
  exec {a_out}<&"${A[0]}" {a_in}>&"${A[1]}"
  local word
  read -r -t 20 word id <&"$a_out" && [ "$word" = PHASE1 ] || die "client: no phase 1"
}

#!/usr/bin/env bash
# The daemon's state is private: a state dir it creates is 0700, the
# database and its -wal/-shm 0600; a second user cannot read the database;
# a state dir that is a link, another user's, or writable by others is
# refused with a clear message; an existing readable database is made 0600.
source "$(dirname "$0")/../integration/lib.sh" "$1"
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (a second user)"; exit 77; }
command -v setpriv >/dev/null || { echo "SKIP: no setpriv"; exit 77; }
id gpdtest1 >/dev/null 2>&1 || useradd -M gpdtest1 || die "useradd gpdtest1"
CLIENT=$(find "$BUILD" -type f -perm -u+x -name test-daemon-client -print -quit)
[ -n "$CLIENT" ] || { echo "SKIP: test-daemon-client not built"; exit 77; }
chmod 0755 "$T"
: > "$T/empty.conf"
sd() { # state-dir daemon in the background: sd SOCK DIR
  "$GPUPROFD" --foreground --socket "$1" --config "$T/empty.conf" --state-dir "$2" \
    >>"$T/daemon.log" 2>&1 &
  DAEMON_PID=$!
  for _ in $(seq 1 200); do
    [ -S "$1" ] && return 0
    kill -0 "$DAEMON_PID" 2>/dev/null || { cat "$T/daemon.log"; die "gpuprofd exited at start"; }
    sleep 0.05
  done
  die "no socket"
}
sd "$T/d.sock" "$T/st"
"$CLIENT" "$T/d.sock" honest 20 || die "client failed"
DB=$T/st/gpuprofd.gpdb
for _ in $(seq 1 200); do
  [ "$($GPDQ "$DB" sql "select count(*) from profile where state='exited'" 2>/dev/null)" = "[[1]]" ] && break
  sleep 0.05
done
[ "$($GPDQ "$DB" sql "select count(*) from profile where state='exited'")" = "[[1]]" ] || die "profile not stored"
[ "$(stat -c %a "$T/st")" = 700 ] || die "state dir mode $(stat -c %a "$T/st")"
for f in "$DB" "$DB-wal" "$DB-shm"; do
  [ -f "$f" ] || die "$f missing while the daemon runs"
  [ "$(stat -c %a "$f")" = 600 ] || die "$f mode $(stat -c %a "$f")"
done
# a second user: not through the directory, and not through the file even
# when the directory is opened up
setpriv --reuid=gpdtest1 --regid="$(id -g gpdtest1)" --clear-groups cat "$DB" >/dev/null 2>&1 &&
  die "gpdtest1 read the database"
chmod 0711 "$T/st"
setpriv --reuid=gpdtest1 --regid="$(id -g gpdtest1)" --clear-groups cat "$DB" >/dev/null 2>&1 &&
  die "gpdtest1 read the database file"
stop_daemon
# restarted: the loosened dir is tightened again, a 0644 db made 0600
chmod 0644 "$DB"
sd "$T/d.sock" "$T/st"
[ "$(stat -c %a "$T/st")" = 700 ] || die "state dir not made private again: $(stat -c %a "$T/st")"
[ "$(stat -c %a "$DB")" = 600 ] || die "database not made private again: $(stat -c %a "$DB")"
stop_daemon

refused() { # refused DIR WHAT: the daemon exits 1 and says why
  local rc=0
  "$GPUPROFD" --foreground --socket "$T/r.sock" --config "$T/empty.conf" --state-dir "$1" \
    >"$T/r.out" 2>&1 || rc=$?
  [ $rc -eq 1 ] || { cat "$T/r.out"; die "state dir $2 accepted (rc $rc)"; }
  grep -q "state dir refused: .*$3" "$T/r.out" || { cat "$T/r.out"; die "no clear message for $2"; }
  echo "refused $2: $(cat "$T/r.out")"
}
mkdir -m 0700 "$T/real"; ln -s "$T/real" "$T/link"
refused "$T/link" "a symbolic link" "symbolic link"
[ -z "$(ls -A "$T/real")" ] || die "database created through the link"
mkdir -m 0700 "$T/theirs"; chown gpdtest1 "$T/theirs"
refused "$T/theirs" "of another user" "owned by uid"
mkdir -m 0777 "$T/open"
refused "$T/open" "writable by others" "writable by group or others"
[ -z "$(ls -A "$T/open")" ] || die "database created in an open dir"
echo "PASS state-private"

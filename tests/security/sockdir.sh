#!/bin/sh
# sockdir.sh - the socket's directory (issue 23).  A daemon started under
# umask 077 whose socket lies in directories that do not exist yet makes
# each of them 0755, so another user (gpdsec1) can connect and is served;
# a socket directory owned by another user is refused at start with a
# clear message (that user could swap the socket).  Skips (77) unless root.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd setpriv
id gpdsec1 >/dev/null 2>&1 || useradd -M gpdsec1 || fail "useradd gpdsec1"

SOCK=$T/run/a/b/gpd.sock
(umask 077 && exec "$T/bin/gpuprofd" --foreground --socket "$SOCK" --config /dev/null \
  --state-dir "$T/state" >"$DLOG" 2>&1) &
D=$!
track $D
wait_listen "$SOCK"
for d in "$T/run" "$T/run/a" "$T/run/a/b"; do
  [ "$(stat -c '%a %u' "$d")" = "755 0" ] || fail "$d: mode/owner $(stat -c '%a %u' "$d"), want 755 0"
done
ok "socket directories made 0755 under umask 077"
as gpdsec1 "$T/bin/gpuprof" --socket "$SOCK" ps >"$T/ps.out" 2>&1 || fail "gpdsec1 cannot use the daemon: $(cat "$T/ps.out")"
ok "gpdsec1 connects and is served"
kill $D
wait $D

mkdir "$T/evil"
chown gpdsec1 "$T/evil"
"$T/bin/gpuprofd" --foreground --socket "$T/evil/gpd.sock" --config /dev/null --state-dir "$T/state" \
  >"$T/evil.log" 2>&1 &
E=$!
track $E
wait_gone $E 100 || fail "daemon with another user's socket directory kept running"
wait $E && fail "daemon with another user's socket directory exited 0"
grep -q "cannot listen on $T/evil/gpd.sock: .*its directory belongs to another user" "$T/evil.log" ||
  fail "no clear message: $(cat "$T/evil.log")"
[ -e "$T/evil/gpd.sock" ] && fail "socket made in another user's directory"
ok "another user's socket directory refused: $(tail -1 "$T/evil.log")"
exit 0

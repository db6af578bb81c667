#!/bin/sh
# notify.sh - daemon/notify.c through the test-only notify-helper:
# bind (mkdir -p, mode 0666, refuse a live socket, replace a stale one,
# never unlink a non-socket) and socket activation with a test-owned
# NOTIFY_SOCKET (READY=1, STATUS=, RELOADING=1 + MONOTONIC_USEC, STOPPING=1).
. "$(dirname "$0")/lib.sh"
H=${GPD_TEST_BIN:?}/notify-helper
need_file "$H"
need_cmd python3

# 1. Bind: parent directories are created 0755, socket is 0666.
S=$T/a/b/gpd.sock
"$H" "$S" >"$T/h1.out" 2>&1 &
P1=$!; track $P1
wait_for "$T/h1.out" '^listening activated=0' || fail "helper did not listen: $(cat "$T/h1.out")"
[ "$(stat -c %a "$S")" = 666 ] || fail "socket mode $(stat -c %a "$S"), want 666"
[ "$(stat -c %a "$T/a/b")" = 755 ] || fail "dir mode $(stat -c %a "$T/a/b"), want 755"
[ "$(unix_get "$S")" = "ok activated=0" ] || fail "no answer on bound socket"
ok "bind + modes"

# 2. A live daemon's socket is not taken.
if "$H" "$S" >"$T/h2.out" 2>&1; then fail "second helper took a live socket"; fi
grep -q "Address already in use" "$T/h2.out" || fail "want EADDRINUSE, got: $(cat "$T/h2.out")"
[ "$(unix_get "$S")" = "ok activated=0" ] || fail "first helper lost its socket"
ok "live socket kept (EADDRINUSE)"

# 3. A stale socket (its daemon was killed) is replaced.
kill -KILL $P1; wait $P1 2>/dev/null
[ -S "$S" ] || fail "stale socket vanished on its own"
"$H" "$S" >"$T/h3.out" 2>&1 &
P3=$!; track $P3
wait_for "$T/h3.out" '^listening activated=0' || fail "stale socket not replaced: $(cat "$T/h3.out")"
[ "$(unix_get "$S")" = "ok activated=0" ] || fail "no answer after replacing stale socket"
kill -TERM $P3; wait $P3 2>/dev/null
ok "stale socket replaced"

# 4. A regular file at the path is never unlinked.
echo keep >"$T/file.sock"
if "$H" "$T/file.sock" >"$T/h4.out" 2>&1; then fail "helper bound over a regular file"; fi
grep -q "File exists" "$T/h4.out" || fail "want EEXIST, got: $(cat "$T/h4.out")"
[ "$(cat "$T/file.sock")" = keep ] || fail "regular file changed"
ok "non-socket file kept (EEXIST)"

# 5. Socket activation + sd_notify.
need_cmd systemd-socket-activate
N=$T/notify.sock; L=$T/notify.log
start_notify_listener "$N" "$L"
A=$T/act.sock
systemd-socket-activate -l "$A" -E NOTIFY_SOCKET="$N" "$H" "$T/unused.sock" >"$T/h5.out" 2>&1 &
P5=$!; track $P5
# systemd-socket-activate listens first and execs the helper on the first
# connection; that connection is answered by the activated helper.
i=0; while [ ! -S "$A" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
[ "$(unix_get "$A")" = "ok activated=1" ] || fail "activated helper: $(cat "$T/h5.out")"
wait_for "$L" '(^| )READY=1( |$)' || fail "no READY=1: $(cat "$L")"
grep -q 'STATUS=listening on fd 3 (activated=1)' "$L" || fail "no one-line STATUS=: $(cat "$L")"
[ ! -e "$T/unused.sock" ] || fail "activated helper also bound its own path"
kill -HUP $P5
wait_for "$L" 'RELOADING=1 MONOTONIC_USEC=[0-9]+' || fail "no RELOADING=1 + MONOTONIC_USEC: $(cat "$L")"
kill -TERM $P5
wait_for "$L" 'STOPPING=1' || fail "no STOPPING=1: $(cat "$L")"
wait $P5; rc=$?
[ $rc = 0 ] || fail "helper exit $rc after SIGTERM"
ok "socket activation + notify"
exit 0

#!/bin/sh
# socket_activation.sh - the real gpuprofd under systemd-socket-activate
# with a test-owned NOTIFY_SOCKET: the first client's connection starts it
# and is served, READY=1 arrives, `gpuprof --socket S ps` works, SIGTERM
# gives STOPPING=1 and a clean exit.
. "$(dirname "$0")/lib.sh"
need_file "$GPUPROFD"
need_file "$GPUPROF"
need_cmd systemd-socket-activate
need_cmd python3

N=$T/notify.sock; L=$T/notify.log; S=$T/gpd.sock
mkdir -p "$T/state"; : >"$T/gpuprofd.conf"
start_notify_listener "$N" "$L"
systemd-socket-activate -l "$S" -E NOTIFY_SOCKET="$N" -E GPUPROF_STATE_DIR="$T/state" \
  -E GPUPROF_LOG "$GPUPROFD" --foreground --config "$T/gpuprofd.conf" \
  --socket "$T/not-used.sock" >"$T/d.out" 2>&1 &
D=$!; track $D
i=0; while [ ! -S "$S" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
[ -S "$S" ] || fail "systemd-socket-activate did not listen: $(cat "$T/d.out")"

# The first connection activates the daemon; it must be served, not lost.
"$GPUPROF" --socket "$S" ps >"$T/ps1.out" 2>&1 || fail "first ps: $(cat "$T/ps1.out"; cat "$T/d.out")"
wait_for "$L" '(^| )READY=1( |$)' || fail "no READY=1: $(cat "$L"; cat "$T/d.out")"
[ ! -e "$T/not-used.sock" ] || fail "activated daemon bound --socket as well"
"$GPUPROF" --socket "$S" ps >"$T/ps2.out" 2>&1 || fail "second ps: $(cat "$T/ps2.out")"
GPUPROF_SOCKET=$S "$GPUPROF" ps >/dev/null 2>&1 || fail "ps via GPUPROF_SOCKET"
ok "activated + READY=1 + ps"

kill -TERM $D
wait_for "$L" '(^| )STOPPING=1( |$)' || fail "no STOPPING=1: $(cat "$L")"
wait_gone $D || fail "daemon still running after SIGTERM"
wait $D; rc=$?
[ $rc = 0 ] || fail "daemon exit $rc after SIGTERM: $(cat "$T/d.out")"
ok "SIGTERM -> STOPPING=1, exit 0"
exit 0

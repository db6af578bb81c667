#!/usr/bin/env bash
# control.sh - the daemon -> shim control channel (`gpuprof sample`) end to
# end without a GPU: a real daemon, the real shim in ctl-app (whose test
# back end records every Control it gets), the real CLI.
#  1. round trip: sample --pid -> Control -> back end "on" with the window,
#     period and flags asked -> ack (3 targets) -> CLI exit 0;
#  2. the window ends in the shim: back end "off" for the same id, the
#     daemon's state (ps control_on) clears, `sample` says so;
#  3. --stop ends a window early; --job selects by job;
#  4. unknown kinds: 7 reaches the shim (no back end serves it: ENOTSUP),
#     99 is refused by the daemon; bad requests get a clear error;
#  5. a process that exits mid-window, one that dies before answering;
#  6. access: another uid cannot sample this process (root may).
source "$(dirname "$0")/lib.sh" "$1"
CTL=$(app ctl-app)
S=$T/gpd.sock
chmod 0755 "$T"
start_daemon "$S" "$T/p.db"

app_ready() { file_has "$1" '^ready'; }
# registered: listed by `ps --all` (ctl-app uses no GPU API: plain ps hides it)
listed() { "$GPUPROF" --socket "$S" ps --all | awk -v p="$1" '$1 == p { f = 1 } END { exit !f }'; }
A_OUT=$T/a.ctl
SLURM_JOB_ID=ctljob preload_bg "$S" "$T/a.out" "$CTL" "$A_OUT" run
A=$APID
wait_for "$WAIT" "ctl-app registered" listed "$A"
wait_for "$WAIT" "ctl-app ready" app_ready "$T/a.out"

# 1 + 2: a 1 s window, waited for
"$GPUPROF" --socket "$S" sample --pid "$A" --duration 1s --period 9 --counts >"$T/s1" 2>&1 ||
  { cat "$T/s1"; die "sample --pid failed"; }
cat "$T/s1"
file_has "$T/s1" "^pid $A: PC sampling on for 1 s \(3 targets\): test: test back end" || die "no ack line"
file_has "$T/s1" '^window ended' || die "the window end was not seen"
grep -qE '^on id=[0-9]+ kind=1 dur=1000 period=9 flags=1$' "$A_OUT" || { cat "$A_OUT"; die "back end did not get the window"; }
id=$(sed -n 's/^on id=\([0-9]*\).*/\1/p' "$A_OUT" | head -1)
grep -qE "^off id=$id kind=1$" "$A_OUT" || { cat "$A_OUT"; die "the window of $id did not end in the shim"; }

# 3: --no-wait, then --stop; and --job
"$GPUPROF" --socket "$S" sample --pid "$A" --duration 60s --no-wait >"$T/s2" 2>&1 || { cat "$T/s2"; die "no-wait"; }
file_has "$T/s2" "^pid $A: PC sampling on for 60 s" || die "no-wait: no ack"
"$GPUPROF" --socket "$S" sample --pid "$A" --stop >"$T/s3" 2>&1 || { cat "$T/s3"; die "--stop failed"; }
[ "$(grep -c '^off ' "$A_OUT")" -eq 2 ] || { cat "$A_OUT"; die "--stop did not reach the back end"; }
"$GPUPROF" --socket "$S" sample --job ctljob --duration 200ms >"$T/s4" 2>&1 || { cat "$T/s4"; die "--job failed"; }
file_has "$T/s4" "^pid $A: PC sampling on" || die "--job did not select the process"
"$GPUPROF" --socket "$S" sample --job nosuchjob --duration 1s >"$T/s5" 2>&1 && die "an empty job succeeded"
file_has "$T/s5" 'no running process of job nosuchjob' || { cat "$T/s5"; die "empty job: no clear error"; }

# 4: kinds and bad requests
"$GPUPROF" --socket "$S" sample --pid "$A" --kind 7 --no-wait >"$T/k7" 2>&1 && die "kind 7 succeeded"
file_has "$T/k7" "^pid $A: not done: no back end in this process serves control kind 7" || { cat "$T/k7"; die "kind 7"; }
"$GPUPROF" --socket "$S" sample --pid "$A" --kind 99 >"$T/k99" 2>&1 && die "kind 99 succeeded"
file_has "$T/k99" 'unknown control kind 99' || { cat "$T/k99"; die "kind 99: no clear error"; }
"$GPUPROF" --socket "$S" sample --pid "$A" --duration 2h >"$T/long" 2>&1 && die "a 2 h window succeeded"
file_has "$T/long" 'longer than 3600000 ms' || { cat "$T/long"; die "2 h: no clear error"; }
"$GPUPROF" --socket "$S" sample --pid 999999 >"$T/nopid" 2>&1 && die "no such pid succeeded"
file_has "$T/nopid" 'no profiled process 999999' || { cat "$T/nopid"; die "bad pid: no clear error"; }
# raw requests: no control at all; a control field that is garbage
$PY - "$S" <<'PY' || die "raw control requests"
import socket, struct, sys
def call(payload):
    s = socket.socket(socket.AF_UNIX); s.settimeout(10); s.connect(sys.argv[1])
    s.sendall(struct.pack("<I", len(payload)) + payload)
    hdr = b""
    while len(hdr) < 4:
        b = s.recv(4 - len(hdr)); assert b, "EOF"; hdr += b
    n = struct.unpack("<I", hdr)[0]; body = b""
    while len(body) < n:
        b = s.recv(n - len(body)); assert b, "EOF"; body += b
    return body
req = bytes([0x08, 0x01])                      # ControlRequest{pid: 1}
r = call(bytes([(42 << 3 | 2) & 0x7f | 0x80, (42 << 3 | 2) >> 7, len(req)]) + req)
assert r[0] == (20 << 3 | 2) and b"without a control" in r, r
bad = bytes([0x1a, 0x03, 0xff, 0xff, 0xff])     # control: 3 bytes of garbage
r = call(bytes([(42 << 3 | 2) & 0x7f | 0x80, (42 << 3 | 2) >> 7, len(bad)]) + bad)
assert r[0] == (20 << 3 | 2), r
print("raw requests: clear errors")
PY
"$GPUPROF" --socket "$S" ps >/dev/null || die "daemon gone after bad requests"

# 5: a process that exits in its window; one that dies before answering
B_OUT=$T/b.ctl
preload_bg "$S" "$T/b.out" "$CTL" "$B_OUT" exit-on
B=$APID
wait_for "$WAIT" "app b registered" listed "$B"
wait_for "$WAIT" "app b ready" app_ready "$T/b.out"
"$GPUPROF" --socket "$S" sample --pid "$B" --duration 30s >"$T/sb" 2>&1 || { cat "$T/sb"; die "exit-on: sample failed"; }
file_has "$T/sb" '^window ended' || { cat "$T/sb"; die "exit-on: the end was not seen"; }
wait_exit "$B" "app b"
C_OUT=$T/c.ctl
preload_bg "$S" "$T/c.out" "$CTL" "$C_OUT" die-in-ctl
C=$APID
wait_for "$WAIT" "app c registered" listed "$C"
wait_for "$WAIT" "app c ready" app_ready "$T/c.out"
"$GPUPROF" --socket "$S" sample --pid "$C" --duration 5s >"$T/sc" 2>&1 && die "die-in-ctl succeeded"
file_has "$T/sc" "^pid $C: not done: the process ended before it answered" || { cat "$T/sc"; die "die-in-ctl: no clear result"; }
"$GPUPROF" --socket "$S" sample --pid "$C" >"$T/sc2" 2>&1 && die "an ended process was sampled"
file_has "$T/sc2" "process $C has ended" || { cat "$T/sc2"; die "ended: no clear error"; }

# 6: another uid (needs root to create and become it)
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
  id gpdtest1 >/dev/null 2>&1 || useradd -M gpdtest1 || die "useradd gpdtest1"
  setpriv --reuid=gpdtest1 --regid="$(id -g gpdtest1)" --init-groups env HOME=/ \
    "$GPUPROF" --socket "$S" sample --pid "$A" --duration 1s >"$T/other" 2>&1 && die "another uid sampled the process"
  file_has "$T/other" "no profiled process $A" || { cat "$T/other"; die "other uid: not answered as no such pid"; }
  n=$(grep -c '^on ' "$A_OUT")
  [ "$n" -eq 3 ] || { cat "$A_OUT"; die "the refused request reached the process"; }
  echo "other uid: refused"
else
  echo "note: not root: the second-uid check is left out"
fi
echo "PASS: control channel"

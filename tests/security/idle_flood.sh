#!/bin/sh
# idle_flood.sh - connection limits with real users (issue 14, test a).
# gpdsec1 opens 50 connections, one PsRequest each, then idles: the
# per-uid cap (30) admits 30 and refuses 20.  gpdsec3 does the same: only
# 18 more fit below max_clients - clients_reserve (64 - 16).  With 48
# idle connections held, root and a third user (gpdsec2) still get
# `gpuprof ps` answered (the reserve).  Every admitted idle connection is
# closed by the idle timeout (4 s), each hostile uid gets exactly one log
# line per kind (refused, timed out), and afterwards gpdsec1 is served
# again.  Skips (77) unless root.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd setpriv
for u in gpdsec1 gpdsec2 gpdsec3; do
  id "$u" >/dev/null 2>&1 || useradd -M "$u" || fail "useradd $u"
done
U1=$(id -u gpdsec1); U2=$(id -u gpdsec2); U3=$(id -u gpdsec3)

start_daemon '[daemon]
max_clients = 64
max_clients_per_uid = 30
clients_reserve = 16
clients_reserve_per_uid = 2
idle_timeout_ms = 4000
limit_log_interval_s = 3600'

as gpdsec1 $PY "$HOSTILE" idle "$S" 50 30 >"$T/h1.out" 2>&1 &
H1=$!; track $H1
wait_for "$T/h1.out" '^admitted' 200 || fail "gpdsec1 flood did not finish: $(cat "$T/h1.out")"
as gpdsec3 $PY "$HOSTILE" idle "$S" 50 30 >"$T/h3.out" 2>&1 &
H3=$!; track $H3
wait_for "$T/h3.out" '^admitted' 200 || fail "gpdsec3 flood did not finish: $(cat "$T/h3.out")"
cat "$T/h1.out" "$T/h3.out"
grep -q '^admitted 30 refused 20$' "$T/h1.out" || fail "gpdsec1: want 30 admitted, 20 refused"
grep -q '^refusal -87 .*max_clients_per_uid' "$T/h1.out" || fail "gpdsec1: refusal reason"
grep -q '^admitted 18 refused 32$' "$T/h3.out" || fail "gpdsec3: want 18 admitted, 32 refused"
grep -q '^refusal -87 .*kept for root' "$T/h3.out" || fail "gpdsec3: refusal reason"
ok "per-uid cap and global reserve: 30 + 18 admitted"

# Root and a light user are served while the 48 idle connections are held.
ps_within 50 || fail "root: gpuprof ps failed with the daemon full: $(cat "$T/ps.out")"
ps_within 50 gpdsec2 || fail "gpdsec2: gpuprof ps failed with the daemon full: $(cat "$T/ps.out")"
grep -q '^closed' "$T/h1.out" "$T/h3.out" && fail "idle connections closed before the check: inconclusive"
ok "root and gpdsec2 served while gpdsec1 and gpdsec3 hold 48 connections"

wait "$H1"; r1=$?
wait "$H3"; r3=$?
cat "$T/h1.out" "$T/h3.out"
[ $r1 = 0 ] && grep -Eq '^closed 30 of 30 after ([3-9]|[1-9][0-9])\.' "$T/h1.out" ||
  fail "gpdsec1's idle connections not all closed by the 4 s timeout"
[ $r3 = 0 ] && grep -Eq '^closed 18 of 18 after ([3-9]|[1-9][0-9])\.' "$T/h3.out" ||
  fail "gpdsec3's idle connections not all closed by the 4 s timeout"
ok "idle connections closed by the timeout"

cat "$DLOG"
[ "$(lines "uid $U1: .*max_clients_per_uid")" = 1 ] || fail "want 1 refusal line for uid $U1"
[ "$(lines "uid $U3: .*kept for root")" = 1 ] || fail "want 1 refusal line for uid $U3"
[ "$(lines "uid $U1: .*no complete frame within")" = 1 ] || fail "want 1 timeout line for uid $U1"
[ "$(lines "uid $U3: .*no complete frame within")" = 1 ] || fail "want 1 timeout line for uid $U3"
[ "$(lines "uid ($U1|$U3):")" = 4 ] || fail "want 4 lines for the hostile uids in all"
[ "$(lines "uid $U2:")" = 0 ] || fail "gpdsec2 was refused or timed out"
ok "one log line per uid and kind"

ps_within 50 gpdsec1 || fail "gpdsec1 not served again after its connections closed: $(cat "$T/ps.out")"
kill -0 $D || fail "daemon died"
ok "gpdsec1 served again"
exit 0

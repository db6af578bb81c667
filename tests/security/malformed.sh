#!/bin/sh
# malformed.sh - bad frames (issue 14, test d).  Five connections each
# send: undecodable protobuf, a length of 0xffffffff, a length of 4 MiB + 1
# (one over GPD_FRAME_MAX), an Error message (clients never send one), a
# GpuBinary before any Hello, an empty Msg, and a frame cut short by EOF.
# Every one but the last gets an Error with the exact code and then EOF;
# the last is closed.  The daemon keeps serving (`gpuprof ps`), and with
# limit_log_interval_s = 5 the log holds one line per kind and then one
# summary line per kind with the exact count of the rest.
. "$(dirname "$0")/lib.sh"
U=$(id -u)

start_daemon '[daemon]
limit_log_interval_s = 5'

$PY "$HOSTILE" malformed "$S" >"$T/h.out" 2>&1 || fail "$(cat "$T/h.out")"
cat "$T/h.out"
ok "every bad frame got its Error and EOF"
ps_within 50 || fail "gpuprof ps failed after the bad frames: $(cat "$T/ps.out")"
kill -0 $D || fail "daemon died"
ok "daemon still serving"

for w in "4 more undecodable frames rejected" "9 more oversized frames rejected" \
  "14 more unexpected messages rejected" "4 more truncated frames at EOF"; do
  wait_for "$DLOG" "uid $U: $w in the last 5 s" 150 || fail "no summary '$w': $(cat "$DLOG")"
done
cat "$DLOG"
[ "$(lines "uid $U: .*bad frame")" = 1 ] || fail "want 1 'bad frame' line"
[ "$(lines "uid $U: .*frame rejected .*frame length exceeds")" = 1 ] || fail "want 1 oversized line"
[ "$(lines "uid $U: client pid [0-9]*: (unexpected message|GpuBinary before Hello)")" = 1 ] || fail "want 1 protocol line"
[ "$(lines "uid $U: .*truncated frame at EOF \(")" = 1 ] || fail "want 1 truncated line"
n=$(wc -l <"$DLOG")
[ "$n" = 8 ] || fail "want 8 log lines for 35 bad connections, got $n"
ok "35 bad connections: 4 lines and 4 summaries"
exit 0

#!/bin/sh
# slowloris.sh - slow and silent peers are timed out (issue 14, test c).
# idle_timeout_ms = 1500.  Four peers of one uid: one sends a header
# promising a 4 MiB payload and then trickles a byte every 100 ms, one
# sends half a header, one sends nothing, one reads its PsReply and then
# idles.  Each is closed by the daemon after >= 1 s (the trickle does not
# keep its connection alive), within a 15 s deadline; the uid gets one
# timeout log line, not four.  A registered shim process of the same uid,
# registered before them, is not timed out: it is still running in
# `gpuprof ps` afterwards.
. "$(dirname "$0")/lib.sh"
need_file "$SHIM"

start_daemon '[daemon]
idle_timeout_ms = 1500
limit_log_interval_s = 3600'

# An ASan build's shim needs the ASan runtime first in an uninstrumented
# program (sleep); only that process gets it, the daemon keeps its own.
pre=$SHIM
if readelf -d "$SHIM" 2>/dev/null | grep -q 'libasan'; then
  pre="$(gcc -print-file-name=libasan.so):$SHIM"
fi
env LD_PRELOAD="$pre" ASAN_OPTIONS=detect_leaks=0 GPUPROF_SOCKET="$S" sleep 60 &
P=$!; track $P
i=0
until ps_within 10 && grep -Eq "^ *$P .* running " "$T/ps.out"; do
  i=$((i + 1)); [ $i -lt 100 ] || fail "shim process $P did not register: $(cat "$T/ps.out" "$DLOG")"
done
ok "shim process $P registered"

for v in trickle header silent after-reply; do
  $PY "$HOSTILE" slow "$S" $v 15 >"$T/$v.out" 2>&1 &
  track $!
  eval "H_$(echo $v | tr - _)=$!"
done
for v in trickle header silent after-reply; do
  eval "h=\$H_$(echo $v | tr - _)"
  wait "$h" || fail "$v: $(cat "$T/$v.out")"
  echo "$v: $(cat "$T/$v.out")"
  grep -Eq "^closed after [1-9][0-9]*\." "$T/$v.out" || fail "$v closed too early"
done
b=$(sed -n 's/.*sent \([0-9]*\) bytes.*/\1/p' "$T/trickle.out")
[ "$b" -ge 10 ] || fail "trickle sent only $b bytes: it was not trickling through the timeout"
ok "trickle, half header, silent and idle-after-reply peers closed by the timeout"

"$T/bin/gpuprof" --socket "$S" ps --all >"$T/ps.out" 2>&1 || fail "ps: $(cat "$T/ps.out")"
cat "$T/ps.out"
grep -Eq "^ *$P .* running " "$T/ps.out" || fail "the registered shim process was timed out"
ok "registered shim connection not timed out"

cat "$DLOG"
[ "$(lines "uid $(id -u): .*within 1500 ms")" = 1 ] || fail "want 1 timeout line for uid $(id -u)"
grep -q "pid $P:.*closing" "$DLOG" && fail "the shim's connection was closed"
ok "one timeout line for four timed-out connections"
exit 0

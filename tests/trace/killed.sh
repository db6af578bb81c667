#!/usr/bin/env bash
# A daemon killed (SIGKILL) mid-trace: ocl-gap waits in cpu_think after
# warm + the first burst; once those events are in trace_event the daemon
# is killed and restarted; the shim hands its region back, the second burst
# runs; the stored profile and its trace hold every kernel exactly once
# (7 + 6 ka, 5 + 4 kb: what was written before the kill is kept, what
# the successor re-reads is not written twice) and the trace exports; the
# idle time (cpu_think spins through the restart) is blamed on cpu_think.
source "$(dirname "$0")/../integration/lib.sh" "$1"
have_opencl
APP=$(app ocl-gap)
DEC=$(app trace-decode)
DB=$T/k.gpdb
start_daemon "$T/k.sock" "$DB"
preload_bg "$T/k.sock" "$T/app.out" env OCL_GAP_GATE="$T/gate" "$APP" 6 4 0; apid=$APID
wait_for "$WAIT" "ocl-gap in cpu_think" grep -q thinking "$T/app.out"
trace_count() { # NAME: trace_event rows of kernel NAME
  $PY - "$DB" "$1" <<'PYEOF'
import sqlite3, sys
db = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True, timeout=10)
try:
    print(db.execute("SELECT count(*) FROM trace_event e JOIN string s ON s.profile_id = e.profile_id"
                     " AND s.id = e.name WHERE s.text = ?", (sys.argv[2],)).fetchone()[0])
except sqlite3.OperationalError:
    print(0)
PYEOF
}
traced() { [ "$(trace_count ka)" = 7 ] && [ "$(trace_count kb)" = 5 ]; }
wait_for "$WAIT" "warm + first burst traced (7 ka, 5 kb)" traced
kill_daemon
start_daemon "$T/k.sock" "$DB"
wait_for "$WAIT" "$apid handed back" ps_is "$T/k.sock" "$apid" running
touch "$T/gate"
wait_exit "$apid" "ocl-gap"
[ "$RC" -eq 0 ] || { cat "$T/app.out.err"; die "ocl-gap exited $RC"; }
wait_for "$WAIT" "daemon sees $apid exit" ps_is "$T/k.sock" "$apid" exited
stop_daemon
[ "$(trace_count ka)" = 13 ] || die "ka rows after the restart: $(trace_count ka) (want 13)"
[ "$(trace_count kb)" = 9 ] || die "kb rows after the restart: $(trace_count kb) (want 9)"
$GPDQ "$DB" kernel-count ka 13
$GPDQ "$DB" kernel-count kb 9
"$GPUPROF" trace --pid "$apid" -o "$T/k.pftrace" "$DB" 2>"$T/tr.err" || { cat "$T/tr.err"; die "trace failed"; }
"$DEC" "$T/k.pftrace" >"$T/dec.txt" || { cat "$T/dec.txt"; die "trace does not decode"; }
grep -qP '^slices GPU 0 stream \d+\tka\t13$' "$T/dec.txt" || die "exported ka: $(grep ka "$T/dec.txt")"
# without CPU samples the CPU context of the gap (cpu_think spinning
# through the restart) is unknown: said so, with the call that ends it
# (cpu_think's clFinish) as the hint; never "running"
"$GPUPROF" report --wide "$DB" >"$T/rep.txt" || die "report failed"
grep -A4 "GPU idleness blame" "$T/rep.txt" | grep "unknown" | head -1 |
  grep -q "(no CPU sample) next GPU call from: .*cpu_think" ||
  die "the largest blame is not the unknown span before cpu_think's call: $(grep -A5 'idleness blame' "$T/rep.txt")"
! grep -A22 "GPU idleness blame" "$T/rep.txt" | grep -q " running " ||
  die "blame marked running without CPU samples: $(grep -A8 'idleness blame' "$T/rep.txt")"
echo "PASS trace.killed"

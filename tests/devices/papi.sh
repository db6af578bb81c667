#!/usr/bin/env bash
# devices.papi: gpuprofd counts perf::TASK-CLOCK (ns of CPU time) of real
# profiled processes, through PAPI where it can count, else through
# perf_event_open(2) (a VM whose libpfm4 finds no PMU disables PAPI's
# perf_event component).  Each process spins for 0.3 s of CPU time that it
# measures itself (CLOCK_PROCESS_CPUTIME_ID) after it is counted: the
# daemon's TASK-CLOCK of it is >= 80 % of that, at most the CPU time the
# process had in all and at most the wall time it ran; the stored rows
# agree; a user sees the counters of their own process only.  SKIP only
# where neither path can count (the status line says why).
source "$(dirname "$0")/../integration/lib.sh" "$1"
command -v setpriv >/dev/null || { echo "SKIP: no setpriv"; exit 77; }
C=$T/gpuprofd.conf
printf '[devices]\ninterval_ms = 100\nnvml_library =\nsysman_library =\npapi_events = perf::TASK-CLOCK,perf::CONTEXT-SWITCHES\n' > "$C"
chmod 0755 "$T"
mkdir -m 0777 "$T/nb"
start_daemon "$T/d.sock" "$T/d.gpdb" --config "$C"
chmod 0777 "$T/d.sock"
papi_state() {
  "$GPUPROF" --socket "$T/d.sock" devices > "$T/st.txt" || return 1
  grep -E '^  papi    (on|off) ' "$T/st.txt" | grep -qv ' starting$'
}
wait_for "$WAIT" "CPU counters opened or refused" papi_state
grep '^  papi ' "$T/st.txt"
if grep -q '^  papi    off ' "$T/st.txt"; then
  echo "SKIP: neither PAPI nor perf_event_open can count here: $(grep '^  papi ' "$T/st.txt")"
  exit 77
fi
grep -qE '^  papi    on  .*back end (papi|perf_event)' "$T/st.txt" || die "the status line does not name the back end"
# spin.py GO OUT: waits for GO, spins 0.3 s of its own CPU time, writes
# "spun_ns total_cpu_ns" to OUT, then idles until killed
cat > "$T/spin.py" <<'EOF'
import os, sys, time
go, out = sys.argv[1], sys.argv[2]
end = time.monotonic() + 100
while not os.path.exists(go) and time.monotonic() < end:
    time.sleep(0.02)
cpu = lambda: time.clock_gettime_ns(time.CLOCK_PROCESS_CPUTIME_ID)
c0 = cpu()
while cpu() - c0 < 300000000:
    pass
c1 = cpu()
with open(out + ".tmp", "w") as f:
    f.write("%d %d\n" % (c1 - c0, c1))
os.rename(out + ".tmp", out)
while time.monotonic() < end:
    time.sleep(0.5)
EOF
chmod 0644 "$T/spin.py"
start=$(now_ms)
# A: root, profiled, job job-papi; B: uid 65534, profiled
preload_bg "$T/d.sock" "$T/a.out" env GPUPROF_JOB_ID=job-papi "$PY" "$T/spin.py" "$T/a.go" "$T/a.res"; A=$APID
run_bg "$T/nb/b.out" setpriv --reuid=65534 --regid=65534 --clear-groups \
  env LD_PRELOAD="${LD_PRELOAD:+$LD_PRELOAD:}$SHIM" GPUPROF_SOCKET="$T/d.sock" GPUPROF_JOB_ID=job-nb \
  "$PY" "$T/spin.py" "$T/nb/b.go" "$T/nb/b.res"; B=$BGPID
# value PROMFILE PID EVENT: the counter of PID's EVENT in an exposition
value() {
  # awk without the ASan runtime the preloaded pass gives every program
  # (Debian's mawk over-reads in memcmp, which ASan reports as its error)
  env -u LD_PRELOAD awk -v p="$2" -v e="$3" '$1 ~ "^gpuprof_process_papi_events_total" && $1 ~ "pid=\"" p "\"" && $1 ~ "event=\"" e "\"" { print $2 }' "$1"
}
both_counted() {
  "$GPUPROF" --socket "$T/d.sock" devices --prometheus > "$T/p.txt" || return 1
  [ -n "$(value "$T/p.txt" "$A" perf::TASK-CLOCK)" ] && [ -n "$(value "$T/p.txt" "$B" perf::TASK-CLOCK)" ]
}
wait_for "$WAIT" "TASK-CLOCK rows of A ($A) and B ($B)" both_counted
touch "$T/a.go" "$T/nb/b.go"
wait_for "$WAIT" "A and B spun" test -s "$T/a.res" -a -s "$T/nb/b.res"
read -r SPUN TOTAL < "$T/a.res"
echo "A measured: spun $SPUN ns, process CPU $TOTAL ns"
caught_up() {
  "$GPUPROF" --socket "$T/d.sock" devices --prometheus > "$T/p.txt" || return 1
  V=$(value "$T/p.txt" "$A" perf::TASK-CLOCK)
  echo "TASK-CLOCK of $A: ${V:-none} (want >= 0.8 * $SPUN)"
  [ -n "$V" ] && $PY -c 'import sys; sys.exit(0 if float(sys.argv[1]) >= 0.8 * float(sys.argv[2]) else 1)' "$V" "$SPUN"
}
wait_for "$WAIT" "TASK-CLOCK of A at 80 % of the CPU time it spun" caught_up
wall_ns=$((($(now_ms) - start) * 1000000))
# the process idles after writing its total: allow it 50 ms of idle CPU
$PY -c 'import sys; v, t, w = map(float, sys.argv[1:]); print("task-clock %.3f s, process CPU %.3f s, wall %.3f s" % (v / 1e9, t / 1e9, w / 1e9)); sys.exit(0 if v <= t + 5e7 and v <= w else 1)' "$V" "$TOTAL" "$wall_ns" ||
  die "TASK-CLOCK $V ns is more than the CPU time ($TOTAL ns) or wall time ($wall_ns ns) of the process"
grep "pid=\"$A\"" "$T/p.txt"
grep "pid=\"$A\"" "$T/p.txt" | grep -q 'job="job-papi(claimed)"' || die "the counter row lacks the job"
[ -n "$(value "$T/p.txt" "$A" perf::CONTEXT-SWITCHES)" ] || die "no CONTEXT-SWITCHES row for A"
# nobody sees B's counters, not A's
setpriv --reuid=65534 --regid=65534 --clear-groups "$GPUPROF" --socket "$T/d.sock" devices --prometheus > "$T/np.txt" ||
  die "devices --prometheus as nobody"
[ -n "$(value "$T/np.txt" "$B" perf::TASK-CLOCK)" ] || { cat "$T/np.txt"; die "nobody does not see its own process's counters"; }
[ -z "$(value "$T/np.txt" "$A" perf::TASK-CLOCK)" ] || die "nobody sees root's process's counters"
! grep -q 'job-papi' "$T/np.txt" || die "nobody sees root's job"
setpriv --reuid=65534 --regid=65534 --clear-groups "$GPUPROF" --socket "$T/d.sock" devices > "$T/nt.txt" ||
  die "devices as nobody"
cat "$T/nt.txt"
grep -qE "^ *$B job-nb\(claimed\) " "$T/nt.txt" || die "nobody's text view lacks its own process's counters"
! grep -qE "^ *$A " "$T/nt.txt" || die "nobody's text view shows root's process's counters"
stop_daemon
max=$($GPDQ "$T/d.gpdb" sql "select max(c.value) from cpu_counter c join profile p on p.id=c.profile_id where p.pid=$A and c.event='perf::TASK-CLOCK'")
echo "stored max TASK-CLOCK of A: $max"
$PY -c 'import sys, json; v = json.loads(sys.argv[1])[0][0]; sys.exit(0 if v is not None and v >= 0.8 * float(sys.argv[2]) else 1)' "$max" "$SPUN" ||
  die "stored TASK-CLOCK of A below 80 % of what it spun"
echo "PASS devices.papi"

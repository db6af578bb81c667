#!/usr/bin/env bash
# devices.papi: gpuprofd counts perf::TASK-CLOCK (ns of CPU time) of a real
# profiled process through PAPI (attached to its pid); the value is > 0,
# grows, and is at most the wall time it ran (one thread).  SKIP (with
# PAPI's reason) where PAPI cannot count software events, e.g. a VM whose
# libpfm4 finds no PMU ("perf_event component disabled").
source "$(dirname "$0")/../integration/lib.sh" "$1"
C=$T/gpuprofd.conf
printf '[devices]\ninterval_ms = 100\nnvml_library =\nsysman_library =\npapi_events = perf::TASK-CLOCK\n' > "$C"
start_daemon "$T/d.sock" "$T/d.gpdb" --config "$C"
papi_state() {
  "$GPUPROF" --socket "$T/d.sock" devices > "$T/st.txt" || return 1
  grep -E '^  papi    (on|off) ' "$T/st.txt" | grep -qv ' starting$'
}
wait_for "$WAIT" "PAPI opened or refused" papi_state
if grep -q '^  papi    off ' "$T/st.txt"; then
  echo "SKIP: PAPI cannot count here: $(grep '^  papi ' "$T/st.txt")"
  exit 77
fi
# a busy single-threaded profiled process
start=$(now_ms)
preload_bg "$T/d.sock" "$T/a.out" env GPUPROF_JOB_ID=job-papi "$PY" -c 'while True: pass'; A=$APID
counted() {
  "$GPUPROF" --socket "$T/d.sock" devices --prometheus > "$T/p.txt" || return 1
  V=$(awk -v p="$A" '$1 ~ "^gpuprof_process_papi_events_total" && $1 ~ "pid=\"" p "\"" && $1 ~ "perf::TASK-CLOCK" { print $2 }' "$T/p.txt")
  echo "TASK-CLOCK of $A: ${V:-none}"
  [ -n "$V" ] && $PY -c 'import sys; sys.exit(0 if float(sys.argv[1]) > 2e8 else 1)' "$V"
}
wait_for "$WAIT" "TASK-CLOCK of $A above 0.2 s" counted
wall_ns=$((($(now_ms) - start) * 1000000))
grep "pid=\"$A\"" "$T/p.txt"
grep -q "job=\"job-papi\"" "$T/p.txt" || die "the counter row lacks the job"
$PY -c 'import sys; v, w = float(sys.argv[1]), float(sys.argv[2]); print("task-clock %.3f s, wall %.3f s" % (v / 1e9, w / 1e9)); sys.exit(0 if 0 < v <= w * 1.05 else 1)' "$V" "$wall_ns" ||
  die "TASK-CLOCK $V ns is not within the $wall_ns ns the process ran"
stop_daemon
n=$($GPDQ "$T/d.gpdb" sql "select count(*) from cpu_counter c join profile p on p.id=c.profile_id where p.pid=$A and c.event='perf::TASK-CLOCK' and c.value > 0")
[ "$n" != '[[0]]' ] || die "no stored TASK-CLOCK rows for $A"
echo "stored rows: $n"
echo "PASS devices.papi"

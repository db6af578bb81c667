#!/usr/bin/env bash
# test-cupti-busy.sh - another tool holds CUPTI: the real shim and its CUDA
# back end on fake-cupti.c, whose cuptiSubscribe returns
# CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED while the file
# FAKE_CUPTI_BUSY names exists, under a real gpuprofd with a duty policy
# (100 ms windows every 500 ms, governor off).  busy-app launches a kernel
# every 2 ms and checks its own arithmetic.
#  1. busy from the start: `gpuprof policy --pid --json` says busy (the
#     code's name) with busy_windows >= 1 and no traced window; `ps` and
#     `policy --pid` print "busy: held by another tool";
#  2. the other tool lets go: windows trace again (windows >= 2, busy
#     empty, busy_windows kept);
#  3. the application is unharmed (exit 0, its sum right), and the stored
#     profile counts exactly the kernel records the fake handed over (K >=
#     1), all after the busy period; the shim's summary counts the busy
#     windows;
#  4. PC sampling with the profiling hardware held (FAKE_CUPTI_PCS_BUSY:
#     cuptiPCSamplingEnable -> CUPTI_ERROR_HARDWARE_BUSY) in a second
#     process that traces: a `gpuprof sample` window is one busy
#     PC-sampling window however often it retries; once the file goes the
#     context is enabled (exactly one enable more than were refused), the
#     application unharmed.
# Args: BUILD_DIR BUSY_APP FAKE_LIB.
source "$(dirname "$0")/../integration/lib.sh" "$1"
APP=$2
FAKE=$3
[ -x "$APP" ] || { echo "SKIP: busy-app not built"; exit 77; }
S=$T/gpd.sock
cat >"$T/busy.conf" <<'CONF'
[collect]
mode = duty
window_ms = 100
period_ms = 500
period_min_ms = 500
governor = 0
CONF
start_daemon "$S" "$T/busy.db" --config "$T/busy.conf"

touch "$T/held"
export GPUPROF_CUPTI_PATH="$FAKE" FAKE_CUPTI_BUSY="$T/held" FAKE_CUPTI_STATS="$T/fake.stats" GPUPROF_CUPTI_SELFTEST=1
preload_bg "$S" "$T/app.out" "$APP" "$T/stop" 120
A=$APID
app_ready() { file_has "$T/app.out" '^ready$'; }
wait_for "$WAIT" "busy-app ready" app_ready

# cuda_json [PID]: policy --pid PID (default A) --json, the CUDA back
# end's windows, busy_windows and busy
cuda_json() {
  "$GPUPROF" --socket "$S" policy --pid "${1:-$A}" --json >"$T/pol.json" || return 1
  $PY - "$T/pol.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))["procs"][0]
c = [b for b in p["backends"] if b["api"] == "cuda"][0]
print("windows=%d busy_windows=%d busy=%s" % (c["windows"], c["busy_windows"], c["busy"]))
PY
}
# 1: busy
is_busy() {
  cuda_json >"$T/cj" || return 1
  cat "$T/cj"
  grep -qE '^windows=0 busy_windows=[1-9][0-9]* busy=busy: held by another tool \(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED\), [0-9]+ windows? skipped, retrying$' "$T/cj"
}
wait_for "$WAIT" "policy --json says busy" is_busy
"$GPUPROF" --socket "$S" ps >"$T/ps"
cat "$T/ps"
file_has "$T/ps" "^ +busy: held by another tool \(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED\), [0-9]+ windows? skipped, retrying$" ||
  die "ps: no busy line"
"$GPUPROF" --socket "$S" policy --pid "$A" >"$T/pol"
file_has "$T/pol" "^    busy: held by another tool \(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED\)" ||
  { cat "$T/pol"; die "policy --pid: no busy line"; }
[ -s "$T/fake.stats" ] && die "the fake's stats before its exit"
kill -0 "$A" || die "busy-app died while busy"

# 2: the other tool lets go; the back-off waits at most 8 periods by now
rm -f "$T/held"
traced() {
  cuda_json >"$T/cj" || return 1
  cat "$T/cj"
  grep -qE '^windows=([2-9]|[1-9][0-9]+) busy_windows=[1-9][0-9]* busy=$' "$T/cj"
}
wait_for "$WAIT" "windows trace again" traced
"$GPUPROF" --socket "$S" ps >"$T/ps2"
file_has "$T/ps2" "busy: held" && { cat "$T/ps2"; die "ps: still busy"; }
BUSY_N=$(sed -nE 's/^windows=[0-9]+ busy_windows=([0-9]+) .*/\1/p' "$T/cj")

# 3: unharmed, and every record the fake handed over is in the profile
touch "$T/stop"
wait_exit "$A" "busy-app"
cat "$T/app.out"
[ "$RC" -eq 0 ] || { cat "$T/app.out.err"; die "busy-app exited $RC"; }
grep -E "busy|another tool|start again" "$T/app.out.err" || true
file_has "$T/app.out" '^launches [0-9]+ sum [0-9]+$' || die "busy-app: no result"
read -r _ K _ SUBS _ REF _ <"$T/fake.stats" || die "no fake stats"
echo "fake: $K kernel records handed over, $SUBS subscribes, $REF refused"
[ "$K" -ge 1 ] || die "no kernel record after the busy period"
[ "$REF" -ge 2 ] || die "the fake refused $REF subscriptions (the start and >= 1 window)"
[ "$SUBS" -gt "$REF" ] || die "never subscribed after the busy period"
file_has "$T/app.out.err" "gpuprof-cupti: CUDA tracing duty-cycled: .*; busy \(another tool held CUPTI\): [0-9]+ tracing and 0 PC-sampling window\(s\) skipped" ||
  { cat "$T/app.out.err"; die "the shim's summary: no busy windows"; }
N=$(sed -nE 's/.*busy \(another tool held CUPTI\): ([0-9]+) tracing.*/\1/p' "$T/app.out.err")
[ "$N" -ge "$BUSY_N" ] && [ "$N" -eq $((REF - 1)) ] ||
  die "busy windows: summary $N, report $BUSY_N, fake refused $REF (one at the start)"
wait_for "$WAIT" "the stored profile with $K kernel records" db_exited "$T/busy.db" "$A" gpd_fake_busy "$K"

# 4: PC sampling refused while tracing runs
touch "$T/pcs-held"
unset FAKE_CUPTI_BUSY
FAKE_CUPTI_PCS_BUSY="$T/pcs-held" FAKE_CUPTI_STATS="$T/fake2.stats" preload_bg "$S" "$T/app2.out" "$APP" "$T/stop2" 120
B=$APID
b_traced() {
  cuda_json "$B" >"$T/cj" || return 1
  cat "$T/cj"
  grep -qE '^windows=[1-9][0-9]* busy_windows=0 busy=$' "$T/cj"
}
wait_for "$WAIT" "the second process traces" b_traced
"$GPUPROF" --socket "$S" sample --pid "$B" --duration 100s --no-wait >"$T/s1" 2>&1 || { cat "$T/s1"; die "sample"; }
pcs_busy() {
  cuda_json "$B" >"$T/cj" || return 1
  cat "$T/cj"
  grep -qE '^windows=[0-9]+ busy_windows=1 busy=busy: held by another tool \(CUPTI_ERROR_HARDWARE_BUSY\), 1 PC-sampling window skipped, retrying$' "$T/cj"
}
wait_for "$WAIT" "PC sampling busy" pcs_busy
"$GPUPROF" --socket "$S" ps >"$T/ps3"
file_has "$T/ps3" "^ +busy: held by another tool \(CUPTI_ERROR_HARDWARE_BUSY\), 1 PC-sampling window skipped, retrying$" ||
  { cat "$T/ps3"; die "ps: no PC-sampling busy line"; }
rm -f "$T/pcs-held"
pcs_on() {
  cuda_json "$B" >"$T/cj" || return 1
  cat "$T/cj"
  grep -qE '^windows=[0-9]+ busy_windows=1 busy=$' "$T/cj"
}
wait_for "$WAIT" "PC sampling on after the hardware is free" pcs_on
"$GPUPROF" --socket "$S" sample --pid "$B" --stop >/dev/null 2>&1 || die "sample --stop"
touch "$T/stop2"
wait_exit "$B" "busy-app (PC sampling)"
cat "$T/app2.out"
[ "$RC" -eq 0 ] || { cat "$T/app2.out.err"; die "busy-app (PC sampling) exited $RC"; }
read -r _ K2 _ SUBS2 _ REF2 _ PE _ PR _ <"$T/fake2.stats" || die "no fake stats (PC sampling)"
echo "fake: $K2 kernel records, $SUBS2 subscribes ($REF2 refused), $PE PC-sampling enables ($PR refused)"
[ "$REF2" -eq 0 ] && [ "$PR" -ge 1 ] && [ "$PE" -eq $((PR + 1)) ] || die "PC-sampling enables: $PE, refused $PR"
file_has "$T/app2.out.err" "busy \(another tool held CUPTI\): 0 tracing and 1 PC-sampling window\(s\) skipped" ||
  { cat "$T/app2.out.err"; die "the shim's summary: no busy PC-sampling window"; }
stop_daemon
echo "PASS: busy windows ($N), then $K kernel records traced; PC sampling refused $PR times in 1 window, then on; the applications unharmed"

#!/usr/bin/env bash
# test-cupti-duty.sh - the duty-cycle estimate with known truth: the real
# shim and its CUDA back end on fake-cupti.c under a real gpuprofd.
# duty-app launches N = 1200 kernels through cudaLaunchKernel (counted by
# the shim's interposer), one every 1 ms, each running 3 ms
# (FAKE_CUPTI_KERNEL_MS=3), with GPUPROF_CUDA_TRACE=duty:50/0.25: at each
# window's end ~3 kernels are still running.  The report's estimate of
# launch_loop's kernel count (observed / f, f = launches traced whole
# inside windows / all counted launches) must be N exactly (to 1e-6), and
# launches_in equal the observed count; before the windows were drained
# (unforced flushes) and f counted only launches traced whole, the kernels
# running at a window's end were counted in f but dropped by the forced
# flush, and the estimate came out low (~5 %).
# Args: BUILD_DIR APP FAKE_LIB.
source "$(dirname "$0")/../integration/lib.sh" "$1"
APP=$2
FAKE=$3
N=1200
[ -x "$APP" ] || { echo "SKIP: duty-app not built"; exit 77; }
S=$T/gpd.sock
: >"$T/default.conf"
start_daemon "$S" "$T/d.db" --config "$T/default.conf"
export GPUPROF_CUPTI_PATH="$FAKE" GPUPROF_CUPTI_SELFTEST=1 FAKE_CUPTI_KERNEL_MS=3 GPUPROF_CUDA_TRACE=duty:50/0.25
preload_bg "$S" "$T/app.out" "$APP" "$N"
A=$APID
wait_exit "$A" "duty-app" 60
grep "CUDA tracing duty-cycled\|incomplete" "$T/app.out.err" || true
[ "$RC" -eq 0 ] || { cat "$T/app.out.err"; die "duty-app exited $RC"; }
file_has "$T/app.out" "^launches $N$" || die "duty-app: no result"
stored() {
  [ -e "$T/d.db" ] && [ "$($GPDQ "$T/d.db" sql "select state from profile where pid=$A")" = '[["exited"]]' ]
}
wait_for "$WAIT" "the stored profile of $A" stored
stop_daemon
"$GPUPROF" report --json "$T/d.db" >"$T/r.json" || die "report"
$PY - "$T/r.json" "$N" <<'PY' || die "the estimate"
import json, sys
d = json.load(open(sys.argv[1]))["duty_estimates"]["processes"]
n = int(sys.argv[2])
assert len(d) == 1, d
p = d[0]
cs = [c for c in p["contexts"] if "launch_loop" in c["path"]]
obs = sum(c["observed_count"] for c in cs)
est = sum(c["count"] for c in cs)
print("windows %d, f %.6f (%s), launches %d, in windows traced whole %d; launch_loop: observed %d, estimate %.6f, "
      "truth %d" % (p["windows"], p["f"], p["f_source"], p["launches"], p["launches_in"], obs, est, n))
assert p["f_source"] == "launches", "f not from counted launches"
assert p["launches"] == n, "counted launches %d, not %d" % (p["launches"], n)
assert p["windows"] >= 3, "too few windows"
assert obs > 0 and p["launches_in"] == obs, "launches_in %d != observed %d" % (p["launches_in"], obs)
assert abs(est - n) <= 1e-6 * n, "estimate %.6f != truth %d (%.3f %%)" % (est, n, 100.0 * (est - n) / n)
print("PASS: estimate = truth")
PY
echo "PASS: duty estimate exact"

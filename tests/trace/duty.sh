#!/usr/bin/env bash
# Duty-cycled estimates: duty-client (a fake shim) reports 10 duty windows
# of 10 ms every 100 ms (f = 0.1) and the kernels launched in them through
# a real daemon into its store (trace_duty, trace_window, trace_event).
# `gpuprof report --json` scales each kernel context by 1/f with the
# per-window (cluster sampling) error: call site A (3 1 2 2 3 1 2 2 3 1
# launches of 1000 ns) 200 +- 10 sqrt(6) launches, 200 +- 24.4949 us;
# call site B (one 5000 ns kernel per window) 100 +- 0, 500 +- 0 us.
# Without the trace rows the report falls back to the per-launch
# (Poisson) error: A 200 +- 10 sqrt(18), B 100 +- 30 launches.
source "$(dirname "$0")/../integration/lib.sh" "$1"
CLIENT=$(app duty-client)
S=$T/gpd.sock
start_daemon "$S" "$T/d.gpdb"
"$CLIENT" "$S" >"$T/client.out" 2>&1 || die "duty-client: $(cat "$T/client.out")"
CPID=$(sed -n 's/^duty-client \([0-9]*\) sent$/\1/p' "$T/client.out")
[ -n "$CPID" ] || die "duty-client output: $(cat "$T/client.out")"
wait_for "$WAIT" "the client's profile stored" db_exited "$T/d.gpdb" "$CPID" kern_a 20
stop_daemon # the tracing threads and the writer commit everything

"$GPUPROF" report "$T/d.gpdb" >"$T/rep.txt" || die "report failed"
grep -q "^Duty-cycled estimates" "$T/rep.txt" || die "no duty section: $(cat "$T/rep.txt")"
grep -q "process $CPID (profile [0-9]*): 10 windows, 0.100000 s traced of 1.000000 s (f = 0.100000)$" \
  "$T/rep.txt" || die "duty summary: $(grep -A4 '^Duty' "$T/rep.txt")"
"$GPUPROF" report --json "$T/d.gpdb" >"$T/rep.json" || die "report --json failed"
check() { # check JSON MODE: the estimates of both call sites
  $PY - "$1" "$2" "$CPID" <<'PYEOF'
import json, math, sys
d = json.load(open(sys.argv[1]))
mode, pid = sys.argv[2], int(sys.argv[3])
g = d["duty_estimates"]
assert g["estimate"] == "observed / f" and g["unit"] == "s", g
(p,) = g["processes"]
assert p["pid"] == pid and p["api"] == "cuda" and p["windows"] == 10 and p["windows_stored"] == 10, p
assert p["final"] is True and abs(p["f"] - 0.1) < 1e-12, p
assert abs(p["traced"] - 0.1) < 1e-12 and abs(p["elapsed"] - 1.0) < 1e-12, p
by = {c["path"].rsplit(" > ", 1)[-1]: c for c in p["contexts"]}
a, b = by["kern_a"], by["kern_b"]
def near(x, y):
    return abs(x - y) <= 1e-9 * max(1.0, abs(y))
assert a["observed_count"] == 20 and near(a["observed_GKER"], 20e-6), a
assert b["observed_count"] == 10 and near(b["observed_GKER"], 50e-6), b
assert near(a["count"], 200) and near(a["GKER"], 200e-6), a
assert near(b["count"], 100) and near(b["GKER"], 500e-6), b
if mode == "window":
    assert a["error"] == "window" and b["error"] == "window", (a, b)
    assert near(a["count_se"], 10 * math.sqrt(6)) and near(a["GKER_se"], 10 * math.sqrt(6e6) * 1e-9), a
    assert b["count_se"] == 0 and b["GKER_se"] == 0, b
else:
    assert a["error"] == "launch" and b["error"] == "launch", (a, b)
    assert near(a["count_se"], 10 * math.sqrt(18)), a
    assert near(a["GKER_se"], math.sqrt(0.9 * 20000.0 ** 2 / 20) / 0.1 * 1e-9), a
    assert near(b["count_se"], 30) and near(b["GKER_se"], 150000e-9), b
# largest estimated GKER first
assert p["contexts"][0]["path"].endswith("kern_b"), p["contexts"]
PYEOF
}
check "$T/rep.json" window || die "per-window estimates: $(head -c 3000 "$T/rep.json")"

# without the trace rows: the per-launch error
cp "$T/d.gpdb" "$T/notrace.gpdb"
$PY -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute("delete from trace_event"); c.commit()' \
  "$T/notrace.gpdb"
"$GPUPROF" report --json "$T/notrace.gpdb" >"$T/notrace.json" || die "report --json (no trace) failed"
check "$T/notrace.json" launch || die "per-launch estimates: $(head -c 3000 "$T/notrace.json")"

# The back end counted its kernel launches (shim/cupti/cupti-count.c):
# 200 of 2500 inside the windows, so f = 0.08 (not the time fraction 0.1)
# and the per-window error of A is sqrt(10 (1 - 0.08) 2/3) / 0.08.
S2=$T/gpd2.sock
start_daemon "$S2" "$T/d2.gpdb"
"$CLIENT" "$S2" launches >"$T/client2.out" 2>&1 || die "duty-client launches: $(cat "$T/client2.out")"
CPID2=$(sed -n 's/^duty-client \([0-9]*\) sent$/\1/p' "$T/client2.out")
[ -n "$CPID2" ] || die "duty-client output: $(cat "$T/client2.out")"
wait_for "$WAIT" "the counting client's profile stored" db_exited "$T/d2.gpdb" "$CPID2" kern_a 20
stop_daemon
"$GPUPROF" report "$T/d2.gpdb" >"$T/rep2.txt" || die "report (launches) failed"
grep -q "process $CPID2 (profile [0-9]*): 10 windows, 0.100000 s traced of 1.000000 s (f = 0.080000 from counted \
launches: 200 of 2500 inside windows; time fraction 0.100000)$" "$T/rep2.txt" ||
  die "duty summary with launches: $(grep -A4 '^Duty' "$T/rep2.txt")"
"$GPUPROF" report --json "$T/d2.gpdb" >"$T/rep2.json" || die "report --json (launches) failed"
$PY - "$T/rep2.json" "$CPID2" <<'PYEOF' || die "launch-fraction estimates: $(head -c 3000 "$T/rep2.json")"
import json, math, sys
(p,) = json.load(open(sys.argv[1]))["duty_estimates"]["processes"]
assert p["pid"] == int(sys.argv[2]) and p["f_source"] == "launches", p
assert abs(p["f"] - 0.08) < 1e-12 and abs(p["f_time"] - 0.1) < 1e-12, p
assert p["launches"] == 2500 and p["launches_in"] == 200, p
by = {c["path"].rsplit(" > ", 1)[-1]: c for c in p["contexts"]}
a, b = by["kern_a"], by["kern_b"]
def near(x, y):
    return abs(x - y) <= 1e-9 * max(1.0, abs(y))
assert a["error"] == "window" and near(a["count"], 250) and near(a["GKER"], 250e-6), a
assert near(a["count_se"], math.sqrt(10 * 0.92 * 6 / 9) / 0.08), a
assert near(b["count"], 125) and near(b["GKER"], 625e-6) and b["count_se"] == 0, b
PYEOF
echo "PASS trace.duty"

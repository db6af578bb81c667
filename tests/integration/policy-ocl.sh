#!/usr/bin/env bash
# policy-ocl.sh - what an OpenCL process costs under the node's policy
# (issue 22: back ends that cannot detach; docs/SERVICE.md "Collection
# policy"): ocl-gap on PoCL, attached as the job prolog attaches (the
# shim preloaded, the daemon's socket, no GPUPROF_* knob), stopped in its
# cpu_think after 2 x (N1 + N2) + 2 kernels.  `gpuprof policy --pid
# --json` must give the OpenCL back end's report (full, cannot detach)
# with the operations counted (>= the kernels and clFinish calls made),
# the shim's own time measured on 1 in 64 of them (> 0, < the elapsed
# time) and the overhead estimate equal to that time over the elapsed
# time; `policy --pid` and `ps` say how it was estimated.
source "$(dirname "$0")/lib.sh" "$1"
have_opencl
APP=$(app ocl-gap)
S=$T/gpd.sock
start_daemon "$S" "$T/p.db"
N1=300 N2=200
preload_bg "$S" "$T/app.out" env OCL_GAP_GATE="$T/gate" "$APP" "$N1" "$N2" 0
A=$APID
wait_for "$WAIT" "ocl-gap in cpu_think" grep -q thinking "$T/app.out"
# the report the shim sends at most once a second: operations up to the gate
ops_in() {
  "$GPUPROF" --socket "$S" policy --pid "$A" --json >"$T/pol.json" 2>"$T/pol.err" &&
    $PY - "$T/pol.json" "$(( N1 + N2 + 4 ))" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))["procs"][0]
b = [x for x in p["backends"] if x["api"] == "opencl"]
sys.exit(0 if b and b[0]["launches"] >= int(sys.argv[2]) else 1)
PY
}
wait_for "$WAIT" "the OpenCL back end's report with the first burst's operations" ops_in
$PY - "$T/pol.json" "$A" "$(( N1 + N2 + 4 ))" <<'PY' || { cat "$T/pol.json"; die "policy --pid --json"; }
import json, re, sys
p = json.load(open(sys.argv[1]))["procs"][0]
assert p["pid"] == int(sys.argv[2]), p
b = [x for x in p["backends"] if x["api"] == "opencl"][0]
assert b["mode"] == "full" and b["can_detach"] is False, b
assert "cannot detach" in b["note"] and "1 in 64 operations timed" in b["note"], b["note"]
ops, self_ns, el = b["launches"], b["self_ns"], b["elapsed_ns"]
assert ops >= int(sys.argv[3]), ops
assert 0 < self_ns < el, (self_ns, el)
# the estimate is the shim's own time over the elapsed time (6 digits printed)
assert abs(p["overhead"] - self_ns / el) <= 1e-6 + 1e-3 * self_ns / el, (p["overhead"], self_ns / el)
m = re.match(r"measured: the shim's own time in (\d+) opencl operations \(([0-9.]+) us each, sampled\) over "
             r"\d+ s; the runtime's event profiling not included$", p["overhead_how"])
assert m and int(m.group(1)) == ops, p["overhead_how"]
assert abs(float(m.group(2)) - self_ns / ops / 1e3) < 0.01, (m.group(2), self_ns / ops / 1e3)
print("opencl: %d operations, %.2f us each, overhead %.4f %%" % (ops, self_ns / ops / 1e3, 100 * p["overhead"]))
PY
"$GPUPROF" --socket "$S" policy --pid "$A" >"$T/pol.txt"
cat "$T/pol.txt"
file_has "$T/pol.txt" "^  opencl: full \(default\): opencl back end traces every operation \(cannot detach\)" ||
  die "policy --pid: no OpenCL line"
file_has "$T/pol.txt" "^    [0-9]+ operations in [0-9.]+ s, the shim's own time [0-9.]+ ms \([0-9.]+ us each\)$" ||
  die "policy --pid: no operations line"
"$GPUPROF" --socket "$S" ps >"$T/ps"
cat "$T/ps"
file_has "$T/ps" "^ +collect: opencl: full \(cannot detach\); overhead ~[0-9.]+ % \(measured: the shim's own time in [0-9]+ opencl operations" ||
  die "ps: no measured overhead for the OpenCL process"
touch "$T/gate"
wait_exit "$A" "ocl-gap"
[ "$RC" -eq 0 ] || { cat "$T/app.out.err"; die "ocl-gap exited $RC"; }
echo PASS

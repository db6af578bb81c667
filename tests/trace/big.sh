#!/usr/bin/env bash
# A large synthetic trace (bench-tracewrite's: GPD_BIG_EVENTS operations,
# default 200 000, each with its launch, 43-frame call paths) written in
# both formats and read back whole: the Perfetto file decodes with the
# schema and every interned id resolves (trace-decode), one slice per
# operation and one launch instant each; the Chrome JSON parses, has one
# X event per operation, and every `sf` (and every parent) resolves in
# stackFrames, each kernel's stack 43 frames deep under its full name;
# the Chrome JSON with launches has a flow from each launch to its
# operation's GPU slice (chrome-flows.py), every operation but the syncs,
# also gzip-compressed (`-o OUT.json.gz`).
source "$(dirname "$0")/../integration/lib.sh" "$1"
N=${GPD_BIG_EVENTS:-200000}
BENCH=$BUILD/bin/bench-tracewrite
DEC=$(app trace-decode)
[ -x "$BENCH" ] || { echo "SKIP: bench-tracewrite not built"; exit 77; }
BENCH_KEEP=1 "$BENCH" --events "$N" --before 0 --dir "$T" >"$T/bench.out" || die "bench-tracewrite failed"
cat "$T/bench.out"
pf=$(ls "$T"/bench-tracewrite.*.0) js=$(ls "$T"/bench-tracewrite.*.1) jl=$(ls "$T"/bench-tracewrite.*.2)
jz=$(ls "$T"/bench-tracewrite.*.4)
"$DEC" "$pf" >"$T/dec.txt" || { tail -3 "$T/dec.txt"; die "trace-decode rejected the file"; }
grep -q '^ok$' "$T/dec.txt" || die "no ok from trace-decode"
$PY - "$T/dec.txt" "$N" <<'PYEOF' || die "Perfetto counts: $(grep -v '^track' "$T/dec.txt" | head -20)"
import re, sys
n = int(sys.argv[2])
d = open(sys.argv[1]).read()
slices = sum(int(m.group(1)) for m in re.finditer(r"^slices GPU 0 stream \d+\t.*\t(\d+)$", d, re.M))
host = sum(int(m.group(1)) for m in re.finditer(r"^slices CPU thread 4242\t<gpu sync>.*\t(\d+)$", d, re.M))
launches = sum(int(m.group(1)) for m in re.finditer(r"^instants CPU thread 4242\tlaunch .*\t(\d+)$", d, re.M))
flows = int(re.search(r"^flows (\d+)$", d, re.M).group(1))
resolved = int(re.search(r"^resolved (\d+)$", d, re.M).group(1))
syncs = n // 200
assert slices == n - syncs and host == syncs and launches == n, (slices, host, launches)
assert flows == n - syncs, flows
assert resolved >= 2 * n - syncs, resolved  # a name per slice and launch, a stack per launch
PYEOF
$PY - "$js" "$N" <<'PYEOF' || die "Chrome JSON"
import json, sys
n = int(sys.argv[2])
d = json.load(open(sys.argv[1]))
ev, sf = d["traceEvents"], d["stackFrames"]
x = [e for e in ev if e["ph"] == "X"]
assert len(x) == n, len(x)
for f in sf.values():
    assert "parent" not in f or f["parent"] in sf, f
depth = {}
def deep(i):
    k = str(i)
    if k not in depth:
        p = sf[k].get("parent")
        depth[k] = 1 + (deep(p) if p is not None else 0)
    return depth[k]
names = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
kern = [e for e in x if names[(e["pid"], e["tid"])].startswith("GPU ") and not e["name"].startswith("<")]
assert kern and all(deep(e["sf"]) == 44 and sf[str(e["sf"])]["name"].startswith("void at::native::") for e in kern)
assert all("sf" in e for e in x), "an operation without its call path"
print("chrome: %d X events, %d stack frames, %.1f bytes per operation" % (len(x), len(sf), len(open(sys.argv[1], "rb").read()) / n))
PYEOF
$PY "$HERE/../trace/chrome-flows.py" "$jl" $((N - N / 200)) || die "Chrome JSON with launches: flows"
$PY "$HERE/../trace/chrome-flows.py" "$jz" $((N - N / 200)) || die "Chrome JSON with launches, gzip-compressed: flows"
echo "PASS trace.big"

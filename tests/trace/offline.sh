#!/usr/bin/env bash
# ocl-gap (two queues, a 300 ms GPU-idle gap while the CPU is in cpu_think)
# under `gpuprof record` with CPU sampling; its trace written as Perfetto and decoded back with
# the schema (trace-decode), as Chrome JSON, and its idleness blame in
# `gpuprof report`.  Exact counts: 2*6+1 ka on one stream, 2*4+1 kb on the
# other, a flow from each launch to its kernel/copy/memset.
source "$(dirname "$0")/../integration/lib.sh" "$1"
have_opencl
APP=$(app ocl-gap)
DEC=$(app trace-decode)
# with CPU sampling (the shim's GPUPROF_CPU_SAMPLING): the blame of the gap
# goes through the samples (trace.killed checks it without samples)
COLUMNS=100 GPUPROF_CPU_SAMPLING=1000 "$GPUPROF" record -o "$T/g.gpdb" -- "$APP" 6 4 300 >"$T/app.out" 2>"$T/rec.err" ||
  { cat "$T/rec.err"; die "record failed"; }
grep -q "^ocl-gap 6 4 300" "$T/app.out" || die "ocl-gap output: $(cat "$T/app.out")"

# record's summary: the 5 heaviest calling contexts by GPU time, innermost
# first (short kernel name, then the call path as report spells it), cut
# to the 100 columns given (call sites without directories); ka and kb each at their call sites in
# ocl-gap.c with their launch counts, by time, heaviest first; 6 kernel
# contexts, 2 memsets and a copy: 4 more
$PY - "$T/rec.err" <<'PYEOF' || die "record summary contexts: $(cat "$T/rec.err")"
import re, sys
err = open(sys.argv[1]).read().splitlines()
head = err.index("gpuprof: heaviest calling contexts by GPU time (innermost first):")
rows = err[head + 1:head + 6]
assert err[head + 6] == "gpuprof:   (4 more; gpuprof report shows all)", err[head + 6:head + 7]
# the call site and its caller, file names without directories (the
# whole path does not fit in 100 columns), so the same in any checkout
sites = {("ka", 6): r"burst \(ocl-gap\.c:47\) < main \(ocl-gap\.c:10[24]\) < \.\.\.$",
         ("ka", 1): r"warm \(ocl-gap\.c:56\) < main \(ocl-gap\.c:101\) < \.\.\.$",
         ("kb", 4): r"burst \(ocl-gap\.c:49\) < main \(ocl-gap\.c:10[24]\) < \.\.\.$",
         ("kb", 1): r"warm \(ocl-gap\.c:57\) < main \(ocl-gap\.c:101\) < \.\.\.$"}
times, kernels = [], 0
for r in rows:
    m = re.match(r"gpuprof:   +(\S+) s +\S+% +(\d+)x  (<gpu \w+>|\S+) < (.*)$", r)
    assert m and len(r) <= 100, ("row", r)
    times.append(float(m.group(1)))
    leaf, count, path = m.group(3), int(m.group(2)), m.group(4)
    if leaf in ("ka", "kb"):
        kernels += 1
        assert (leaf, count) in sites and re.match(sites[(leaf, count)], path), ("kernel context", r)
    else:
        assert leaf in ("<gpu memset>", "<gpu copy>") and re.match(r"main \(ocl-gap\.c:(9[78]|105)\) < \.\.\.$", path), r
assert times == sorted(times, reverse=True), times
assert kernels >= 2, rows  # 3 contexts at most are not kernels
print("record summary: %d contexts shown, %d kernel contexts" % (len(rows), kernels))
PYEOF

# Perfetto, decoded with the schema
"$GPUPROF" trace -o "$T/g.pftrace" "$T/g.gpdb" 2>"$T/tr.err" || { cat "$T/tr.err"; die "trace failed"; }
"$DEC" "$T/g.pftrace" >"$T/dec.txt" || { cat "$T/dec.txt"; die "trace-decode rejected the file"; }
dec=$(<"$T/dec.txt")
grep -q '^ok$' <<<"$dec" || die "no ok from trace-decode"
grep -qP '^slices GPU 0 stream \d+\tka\t13$' <<<"$dec" || die "not 13 ka slices on one stream: $(grep ka <<<"$dec")"
grep -qP '^slices GPU 0 stream \d+\tkb\t9$' <<<"$dec" || die "not 9 kb slices on one stream: $(grep kb <<<"$dec")"
sa=$(grep -P '\tka\t' <<<"$dec" | cut -f1)
sb=$(grep -P '\tkb\t' <<<"$dec" | cut -f1)
[ "$sa" != "$sb" ] || die "ka and kb on the same track ($sa)"
# kernels 13 + 9, two memsets (fills), one read: each launch flows to its operation
grep -qx 'flows 25' <<<"$dec" || die "flows: $(grep flows <<<"$dec") (want 25)"
grep -qP '^instants CPU thread \d+\tlaunch <gpu kernel>\t22$' <<<"$dec" || die "not 22 kernel launches on the CPU thread"
# the gap: one idle slice of at least the 300 ms cpu_think spins (its own
# clock; 290 ms leaves room for the clocks' rates).  A slice is labelled
# with the context that holds the largest share of its blame summed over
# the interval: cpu_think (running), or, on a loaded machine where PoCL
# starts the second burst's kernels late, the same interval's wait in
# burst's clFinish (ocl-gap.c:50 or 51, the file named by its full path)
# can hold more than cpu_think's busiest line.  Either is a right answer; anything else (main, no context) is
# wrong.  That cpu_think gets >= 0.29 s of the idleness is checked exactly
# below in the report's sums (text and JSON).  (No awk: under the ASan
# pass every process gets libasan preloaded, and mawk reads past its
# buffers.)
gap=0
while read -r _ _ dur path; do
  [[ $dur -ge 290000000 && ( $path == *cpu_think* || $path =~ burst\ \([^\)]*ocl-gap\.c:5[01]\)$ ) ]] && gap=1
done < <(grep '^idle ' <<<"$dec")
[ $gap = 1 ] || die "no >= 290 ms idle slice blamed on cpu_think (or burst's clFinish): $(grep '^idle' <<<"$dec" | sort -k3 -n | tail -3)
the report's blame: $("$GPUPROF" report "$T/g.gpdb" 2>&1 | grep -A8 'idleness blame')"

# idleness blame in the report: cpu_think's contexts (its samples), running, >= 0.29 s
"$GPUPROF" report --wide "$T/g.gpdb" >"$T/rep.txt" || die "report failed"
grep -q "GPU idleness blame" "$T/rep.txt" || die "report has no idleness blame section"
$PY - "$T/rep.txt" <<'PYEOF' ||
import sys
# running (its CPU samples), or unknown with cpu_think's call as the hint:
# a sub-interval without a sample (a loaded machine, ASan) is not sampled
s = sum(float(l.split()[1]) for l in open(sys.argv[1])
        if "%" in l and (" running " in l or " unknown " in l) and "cpu_think" in l)
sys.exit(0 if s >= 0.29 else 1)
PYEOF
  die "report does not blame >= 0.29 s on cpu_think: $(grep -A6 'idleness blame' "$T/rep.txt")"
# the same in `report --json` (gpu_idleness): one traced process, GIDLE as
# the text says it, = GIDLE:RUN + GIDLE:SYNC = the sum of its contexts,
# cpu_think's running contexts >= 0.29 s
"$GPUPROF" report --json "$T/g.gpdb" >"$T/rep.json" || die "report --json failed"
$PY - "$T/rep.json" "$T/rep.txt" <<'PYEOF' || die "report --json gpu_idleness: $(head -c 2000 "$T/rep.json")"
import json, re, sys
d = json.load(open(sys.argv[1]))
g = d["gpu_idleness"]
assert g["metric"] == "GIDLE" and g["unit"] == "s", g
ps = g["processes"]
assert len(ps) == 1, ps
p = ps[0]
txt = re.search(r"GPU idle ([0-9.]+) s of ([0-9.]+) s .*, (\d+) interval", open(sys.argv[2]).read())
# the text rounds to 6 decimals, the JSON to 9
assert abs(p["GIDLE"] - float(txt.group(1))) <= 6e-7 and abs(p["span"] - float(txt.group(2))) <= 6e-7, (p, txt.groups())
assert p["intervals"] == int(txt.group(3)), p
assert abs(p["GIDLE:RUN"] + p["GIDLE:SYNC"] + p["GIDLE:UNKNOWN"] - p["GIDLE"]) < 1e-6, p
# contexts past the first 100 (CPU samples in many places) are only counted
shown = sum(c["GIDLE"] for c in p["contexts"])
assert (abs(shown - p["GIDLE"]) < 1e-6) if p["more_contexts"] == 0 else (shown <= p["GIDLE"] + 1e-6), p
run = sum(c["GIDLE"] for c in p["contexts"] if c["cpu"] in ("running", "unknown") and "cpu_think" in c["path"])
assert run >= 0.29 and p["GIDLE:RUN"] + p["GIDLE:UNKNOWN"] >= run, (run, p)
assert p["pid"] in [q["pid"] for q in d["processes"]], p
PYEOF

# Chrome JSON (chosen by the .json name, and by --format)
"$GPUPROF" trace --format chrome -o "$T/g.trace" "$T/g.gpdb" 2>/dev/null || die "chrome trace failed"
"$GPUPROF" trace -o "$T/g.json" "$T/g.gpdb" 2>/dev/null || die "chrome trace (.json) failed"
cmp -s "$T/g.trace" "$T/g.json" || die "--format chrome and .json differ"
$PY - "$T/g.json" <<'PYEOF' || die "chrome trace content"
import json, re, sys, collections
d = json.load(open(sys.argv[1]))
ev = d["traceEvents"]
x = collections.Counter((e["name"], e["tid"]) for e in ev if e["ph"] == "X" and e["name"] in ("ka", "kb"))
byname = collections.Counter(n for (n, _t) in x.elements())
assert byname == {"ka": 13, "kb": 9}, byname
assert len({t for (_n, t) in x}) == 2, x
# call paths: "sf" ids into stackFrames, every one (and every parent) resolves
sf = d["stackFrames"]
def path(i):
    p = []
    while i is not None:
        fr = sf[str(i)]
        p.append(fr["name"])
        i = fr.get("parent")
    return " > ".join(reversed(p))
for e in ev:
    if "sf" in e:
        path(e["sf"])
assert all("parent" not in f or f["parent"] in sf for f in sf.values())
# each kernel's stack: its launch's call path, the kernel innermost
kern = [e for e in ev if e["ph"] == "X" and e["name"] in ("ka", "kb")]
assert all(re.search(r"main .* > k[ab]$", path(e["sf"])) for e in kern), [path(e["sf"]) for e in kern][:3]
gaps = [e for e in ev if e["ph"] == "X" and e["name"] == "GPU idle" and e["dur"] >= 290000
        and "sf" in e and ("cpu_think" in path(e["sf"])
             or re.search(r"burst \([^)]*ocl-gap\.c:5[01]\)$", path(e["sf"])))]
assert len(gaps) == 1, gaps  # the label rule: see the Perfetto check above
PYEOF
# with --launches: each device operation's launch a slice on its CPU
# thread, one flow from it to the GPU slice (chrome-flows.py); as many
# flows as the profile has device operations (kernel, copy, memset) with
# a launch row of the same correlation id
"$GPUPROF" trace --format chrome --launches -o "$T/gl.json" "$T/g.gpdb" 2>/dev/null || die "chrome trace --launches failed"
want=$($PY -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT count(*) FROM trace_event e WHERE e.op IN (1, 2, 3) AND EXISTS (SELECT 1 FROM trace_launch l WHERE l.profile_id = e.profile_id AND l.corr = e.corr)").fetchone()[0])' "$T/g.gpdb")
[ "$want" -ge 22 ] || die "only $want launched device operations in the profile (ka 13 + kb 9 at least)"
$PY "$HERE/../trace/chrome-flows.py" "$T/gl.json" "$want" || die "chrome trace --launches: flows"
# the launches are what --launches adds: without it, the same events otherwise
$PY - "$T/g.json" "$T/gl.json" <<'PYEOF' || die "--launches changed more than launches and flow keys"
import json, sys
strip = lambda e: {k: v for k, v in e.items() if k not in ("bind_id", "flow_in")}
a = [e for e in json.load(open(sys.argv[1]))["traceEvents"]]
b = [strip(e) for e in json.load(open(sys.argv[2]))["traceEvents"] if e.get("name") != "launch"]
assert a == b, (len(a), len(b))
PYEOF
"$GPUPROF" trace --launches -o "$T/x.pftrace" "$T/g.gpdb" 2>/dev/null && die "--launches accepted for Perfetto"
# OUT.json.gz: Chrome JSON, gzip-compressed, the same events
"$GPUPROF" trace --launches -o "$T/gl.json.gz" "$T/g.gpdb" 2>/dev/null || die "chrome trace .json.gz failed"
$PY -c 'import gzip, sys; sys.exit(gzip.open(sys.argv[1]).read() != open(sys.argv[2], "rb").read())' \
  "$T/gl.json.gz" "$T/gl.json" || die ".json.gz is not the gzip of the .json"
$PY "$HERE/../trace/chrome-flows.py" "$T/gl.json.gz" "$want" || die "chrome trace .json.gz: flows"

# a window with no events: a clear message and a valid, empty trace
"$GPUPROF" trace --from 1000 -o "$T/empty.pftrace" "$T/g.gpdb" 2>"$T/empty.err" || die "empty window failed"
grep -q "no trace events in the window" "$T/empty.err" || die "no message for an empty window: $(cat "$T/empty.err")"
"$DEC" "$T/empty.pftrace" >"$T/empty.txt" || die "empty trace does not decode"
! grep -q '^slices' "$T/empty.txt" || die "the empty window has slices"
# a window that holds the second burst only (after the gap)
"$GPUPROF" trace --from 0 --to 100s -o "$T/all.pftrace" "$T/g.gpdb" 2>/dev/null || die "window failed"
# (the decoder's output read whole: `| grep -q` under pipefail fails when
# grep exits before the decoder has written the rest, as with CPU samples)
"$DEC" "$T/all.pftrace" >"$T/all.txt" || die "the window's trace does not decode"
grep -qP '\tka\t13$' "$T/all.txt" || die "a window covering everything lost events"

# bad input
echo "not a profile" >"$T/bad.gpdb"
set +e
"$GPUPROF" trace -o "$T/x.pftrace" "$T/bad.gpdb" 2>"$T/bad.err"; rc=$?
"$GPUPROF" trace -o "$T/x.pftrace" --format svg "$T/g.gpdb" 2>/dev/null; rc2=$?
"$GPUPROF" trace -o "$T/x.pftrace" --pid 1 --duration 1ms --socket "$T/none.sock" 2>"$T/nod.err"; rc3=$?
set -e
[ $rc = 1 ] && [ -s "$T/bad.err" ] || die "a bad file: exit $rc, '$(cat "$T/bad.err")'"
[ $rc2 = 64 ] || die "a bad --format: exit $rc2"
[ $rc3 = 2 ] || die "live trace without a daemon: exit $rc3 ($(cat "$T/nod.err"))"
# the CPU samples: one instant per trace_cpu_sample row on the thread's track
rows=$($PY -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT count(*) FROM trace_cpu_sample").fetchone()[0])' "$T/g.gpdb")
inst=$($PY -c 'import sys; print(sum(int(l.rsplit("\t", 1)[1]) for l in open(sys.argv[1]) if l.startswith("instants CPU thread") and "\tcpu sample: " in l))' "$T/dec.txt")
[ "$rows" -gt 0 ] && [ "$inst" = "$rows" ] || die "CPU sample instants $inst, rows $rows"
echo "PASS trace.offline"

"""check-report-gpu.py MODE REPORT.json PROFILE.gpdb [NVDISASM] - exact checks
of the GPU part of `gpuprof report --json` against the stored PC samples
(tests/gpuanalysis/test-report-gpu.sh).  Expected values are computed here
from the pcsample table: GINST of a kernel = its samples over all stall
reasons but CUPTI's "_not_issued" subsets; each call site's share of hot()
= that call instruction's samples / all of hot()'s call samples (Zhou et
al. 2021, section 6.3), times hot()'s own samples."""
import json
import re
import sqlite3
import sys

mode, report, gpdb = sys.argv[1], sys.argv[2], sys.argv[3]
doc = json.load(open(report))
db = sqlite3.connect(gpdb)
rows = db.execute(
    "SELECT fs.text, s.pc, ss.text, s.samples FROM pcsample s "
    "JOIN string fs ON fs.profile_id = s.profile_id AND fs.id = s.func "
    "JOIN string ss ON ss.profile_id = s.profile_id AND ss.id = s.stall").fetchall()
rows = [r for r in rows if not r[2].endswith("_not_issued")]


def walk(n, par=()):
    yield n, par
    for c in n.get("children", []):
        yield from walk(c, par + (n,))


def g(n, what="incl", m="GINST"):
    x = n["metrics"].get(m)
    return x[what] if x else 0.0


def close(a, b):
    return abs(a - b) <= 1e-6 * max(1.0, abs(b))


def kernel(prefix):
    ks = [n for n, _ in walk(doc["tree"]) if n["kind"] == "kernel" and n["label"].startswith(prefix)]
    assert len(ks) == 1, "kernel %s: %d nodes" % (prefix, len(ks))
    return ks[0]


ok = True
for mangled, prefix in (("_Z5knownPKfiPf", "known("), ("_Z11known_callsPKfiiPf", "known_calls(")):
    want = sum(r[3] for r in rows if r[0] == mangled)
    k = kernel(prefix)
    if not close(g(k), want):
        print("FAIL %s: GINST %r, stored samples %r" % (prefix, g(k), want))
        ok = False
    stl = sum(v["incl"] for m, v in k["metrics"].items() if m.startswith("GINST:STL_") and m != "GINST:STL_ANY")
    if not close(stl, want):
        print("FAIL %s: sum of GINST:STL_* %r != GINST %r" % (prefix, stl, want))
        ok = False
    kids = [c for c in k["children"] if c["kind"] == "gpu_function"]
    if mode == "collapsed":
        if k["children"] and any(c["kind"].startswith("gpu") for c in k["children"]):
            print("FAIL %s: collapsed report has GPU children" % prefix)
            ok = False
        continue
    if mode == "unplaced":
        if kids:
            print("FAIL %s: GPU functions without a binary" % prefix)
            ok = False
        continue
    if mode == "flat":
        names = sorted(c["label"] for c in kids)
        if names != ["_Z3hotPKfif"] + (["_Z4facti"] if prefix == "known(" else []):
            print("FAIL %s: functions without nvdisasm %s" % (prefix, names))
            ok = False
        continue
    # detail: hot() in two contexts, split by the call instructions' samples
    text = open(sys.argv[4]).read()
    sec = text[text.index(".text." + mangled + ":"):]
    sec = sec[:sec.find("//----", 10)] if "//----" in sec[10:] else sec
    calls = [int(m.group(1), 16) for m in re.finditer(r"/\*([0-9a-f]{4})\*/\s+CALL\.REL\.NOINC `\(\$\w+\$_Z3hot", sec)]
    w = {c: sum(r[3] for r in rows if r[0] == mangled and r[1] == c) for c in calls}
    hots = {int(c["label"].split("call at ")[1].rstrip(")"), 16): g(c) for c in kids if "hot" in c["label"]}
    tot = sum(hots.values())
    if sorted(hots) != sorted(calls) or len(calls) != 2:
        print("FAIL %s: hot() contexts %s, call sites %s" % (prefix, sorted(hots), calls))
        ok = False
        continue
    for c in calls:
        share = w[c] / sum(w.values())
        if not close(hots[c], share * tot):
            print("FAIL %s: context at 0x%x %r, want %r (share %.4f)" % (prefix, c, hots[c], share * tot, share))
            ok = False
    loops = [n for n, par in walk(k) if n["kind"] == "gpu_loop" and any("hot" in p["label"] for p in par)]
    if not loops:
        print("FAIL %s: no loop below hot()" % prefix)
        ok = False
print("check-report-gpu %s: %s" % (mode, "PASS" if ok else "FAIL"))
sys.exit(0 if ok else 1)

#!/usr/bin/env python3
"""eval-suite.py - the advisor's validation suite, scored offline (issue 25,
docs/ADVISOR.md "Validation suite").

  eval-suite.py DIR [--split FILE] [--gpuprof GPUPROF] [--advised DIR2]
                    [--twosite] [--json OUT.json]

DIR is the folder suite/ of gpu-suite.sh's suite.tgz: timings.txt (bare
timings, `advise-suite time`), CASE.gpdb (the pair recorded with PC
sampling), CASE.run.txt (its kernel times under sampling),
CASE.advise.json (`gpuprof advise --json` on the GPU machine), gpubins/
with the nvdisasm text of every binary, twosite/ (pcsamp-known runs).

--gpuprof GPUPROF: advise every CASE.gpdb again with that gpuprof (the
stored nvdisasm text, GPUPROF_NVDISASM=0) into DIR2 (--advised, default
DIR/advised), and score those: how a changed estimator does on the same
samples.  With --twosite the twosite runs are reported again with it too.

Per pair: the measured speedup (median over the alternating rounds of
bad/fixed), the advisor's first suggestion for the bad kernel, whether it
is the right fix (--split, default suite-split.txt beside this script),
the rank and estimate of the right fix (1.0 when the advisor does not
suggest it: no speedup predicted) and its absolute error
|estimate - measured| / measured, and the PC-sampling overhead (kernel
time under sampling / bare, bad and fixed).  Per half: the right-fix-first
rate over the pairs whose measured fix gives >= 1.3x, and the mean
absolute error over all pairs with a measurement.  --twosite: known()'s
split between its two call sites of hot() (3:1 work) in each run, by
tests/gpuanalysis/check-pcsamp.py, oriented: the context at the 3n-work
call over the one at the n-work call, the calls found by their source
lines in the stored nvdisasm text.  Exit 0; 2 on bad usage or input.
"""
import argparse
import ast
import json
import os
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
THRESHOLD = 1.3


def read_split(path):
    pairs = []
    for line in open(path):
        f = line.split("#", 1)[0].split()
        if len(f) >= 4:
            pairs.append({"pair": f[0], "half": f[1], "family": f[2], "right": " ".join(f[3:])})
    return pairs


def read_timings(d):
    """{case: (bad ms, fixed ms, speedup)} from timings.txt's speedup lines."""
    t = {}
    p = os.path.join(d, "timings.txt")
    if os.path.exists(p):
        for line in open(p):
            f = line.split()
            if len(f) == 5 and f[0] == "speedup":
                t[f[1]] = (float(f[2]), float(f[3]), float(f[4]))
    return t


def read_run(d, case):
    """{variant: median ms} under PC sampling, from CASE.run.txt."""
    r = {}
    p = os.path.join(d, case + ".run.txt")
    if os.path.exists(p):
        for line in open(p):
            f = line.split()
            if len(f) == 5 and f[0] == "run":
                r[f[2]] = float(f[3])
    return r


def advise(gpuprof, db, out):
    env = dict(os.environ, GPUPROF_NVDISASM="0")
    with open(out, "w") as o:
        rc = subprocess.run([gpuprof, "advise", "--kernels", "0", "--top", "12", "--json", db],
                            stdout=o, stderr=subprocess.PIPE, env=env).returncode
    if rc != 0:
        print("  %s: advise rc=%d" % (os.path.basename(db), rc))


def bad_kernel(doc, case):
    for k in doc.get("kernels", []):
        if k.get("name", "").startswith(case + "_bad(") or k.get("mangled", "").find(
                "%d%s_bad" % (len(case) + 4, case)) >= 0:
            return k
    return None


def score(pair, timing, doc):
    """One pair's row: measured, first suggestion, right?, rank, estimate, error."""
    row = dict(pair)
    row["measured"] = timing[2] if timing else None
    k = bad_kernel(doc, pair["pair"]) if doc else None
    adv = k["advice"] if k else []
    row["samples"] = k["samples"] if k else 0
    row["first"] = adv[0]["optimization"] if adv else "-"
    row["first_est"] = adv[0]["speedup"] if adv else None
    row["rank"] = next((a["rank"] for a in adv if a["optimization"] == pair["right"]), None)
    row["estimate"] = next((a["speedup"] for a in adv if a["optimization"] == pair["right"]), 1.0)
    row["right_first"] = row["first"] == pair["right"]
    row["error"] = (abs(row["estimate"] - row["measured"]) / row["measured"]
                    if row["measured"] else None)
    row["notes"] = (k.get("notes") or "") if k else ("no advice file" if doc is None else "no bad kernel")
    return row


def call_lines(gpubins, func):
    """{"0x70": source line} for the CALL instructions of func's section in
    the nvdisasm text beside the binaries (the last line marker before each)."""
    calls = {}
    for name in sorted(os.listdir(gpubins)) if os.path.isdir(gpubins) else []:
        if not name.endswith(".nvdisasm"):
            continue
        sec, line = None, 0
        for ln in open(os.path.join(gpubins, name), errors="replace"):
            m = re.match(r"\s*\.section\s+\.text\.([^,\s]+)", ln)
            if m:
                sec = m.group(1)
                continue
            m = re.search(r"line (\d+)", ln) if ln.lstrip().startswith("//##") else None
            if m:
                line = int(m.group(1))
                continue
            m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(@!?U?P\w+\s+)?CALL", ln)
            if m and sec == func:
                calls["0x%x" % int(m.group(1), 16)] = line
    return calls


def twosite(d, gpuprof):
    """known()'s split of hot() between its call sites (3:1 work per call):
    the ratio of the larger to the smaller context, and the ratio of the
    context at the 3n-work call (// CALL-3) to the one at the n-work call
    (// CALL-1), which is what has to come out 3."""
    t = os.path.join(d, "twosite")
    runs = sorted((f for f in os.listdir(t) if re.match(r"run\d+\.gpdb$", f)) if os.path.isdir(t) else [],
                  key=lambda f: int(f[3:-5]))
    src = os.path.join(HERE, "..", "gpuanalysis", "pcsamp-known.cu")
    chk = os.path.join(HERE, "..", "gpuanalysis", "check-pcsamp.py")
    want = {tag: i + 1 for i, l in enumerate(open(src)) for tag in ("CALL-3", "CALL-1") if "// " + tag in l}
    lines = call_lines(os.path.join(t, "gpubins"), "_Z5knownPKfiPf")
    ratios = []
    print("\n== two call sites with 3:1 work: known() -> hot(), per run (CALL-3 at line %s, CALL-1 at "
          "line %s; calls %s)" % (want.get("CALL-3"), want.get("CALL-1"), lines))
    for f in runs:
        rep = os.path.join(t, f[:-5] + ".report.json")
        if gpuprof:
            rep = os.path.join(t, f[:-5] + ".report.again.json")
            with open(rep, "w") as o:
                subprocess.run([gpuprof, "report", "--gpu-detail", "--json", os.path.join(t, f)], stdout=o,
                               stderr=subprocess.DEVNULL, env=dict(os.environ, GPUPROF_NVDISASM="0"))
        out = subprocess.run([sys.executable, chk, rep, src], capture_output=True, text=True).stdout
        m = re.search(r"known\(\): GINST [0-9.]+; hot\(\) contexts by call site: (\{[^}]*\}).*?"
                      r"INFO: context ratio ([0-9.inf]+)", out, re.S)
        if not m:
            print("%-6s no split: %s" % (f[:-5], out.strip().replace("\n", " | ")[:200]))
            continue
        sites = ast.literal_eval(m.group(1))
        by = {lines.get(pc): v for pc, v in sites.items()}
        hi, lo = by.get(want.get("CALL-3")), by.get(want.get("CALL-1"))
        r = hi / lo if hi and lo else None
        ratios.append(r)
        print("%-6s split %s  larger/smaller %s, CALL-3/CALL-1 %s%s" % (
            f[:-5], m.group(1), m.group(2), "%.3f" % r if r else "-",
            " (error %.1f %% against 3)" % (100 * abs(r - 3) / 3) if r else " (call sites not found)"))
    if ratios:
        ok = [r for r in ratios if r]
        within = sum(abs(r - 3) / 3 <= 0.05 for r in ok)
        print("runs within 5 %% of 3:1 (CALL-3/CALL-1): %d of %d; median %s" % (
            within, len(ratios), "%.3f" % statistics.median(ok) if ok else "-"))
    return ratios


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--split", default=os.path.join(HERE, "suite-split.txt"))
    ap.add_argument("--gpuprof")
    ap.add_argument("--advised")
    ap.add_argument("--twosite", action="store_true")
    ap.add_argument("--json")
    a = ap.parse_args()
    if not os.path.isdir(a.dir) or not os.path.exists(a.split):
        print("eval-suite: no folder %s or split %s" % (a.dir, a.split))
        return 2
    pairs = read_split(a.split)
    timings = read_timings(a.dir)
    adir = a.dir
    if a.gpuprof:
        adir = a.advised or os.path.join(a.dir, "advised")
        os.makedirs(adir, exist_ok=True)
        for p in pairs:
            db = os.path.join(a.dir, p["pair"] + ".gpdb")
            if os.path.exists(db):
                advise(a.gpuprof, db, os.path.join(adir, p["pair"] + ".advise.json"))
    rows = []
    for p in pairs:
        path = os.path.join(adir, p["pair"] + ".advise.json")
        doc = None
        if os.path.exists(path):
            try:
                doc = json.load(open(path))
            except ValueError:
                doc = {}
        row = score(p, timings.get(p["pair"]), doc)
        run = read_run(a.dir, p["pair"])
        t = timings.get(p["pair"])
        row["overhead"] = [run[v] / t[i] if t and v in run and t[i] > 0 else None
                           for i, v in enumerate(("bad", "fixed"))]
        rows.append(row)

    def f(v, fmt):
        return fmt % v if v is not None else "-"

    print("%-10s %-9s %-16s %8s  %-29s %7s %-3s %4s %8s %7s %9s" % (
        "pair", "half", "family", "measured", "first suggestion", "est", "ok", "rank", "estimate",
        "error", "overhead"))
    for r in rows:
        print("%-10s %-9s %-16s %8s  %-29s %7s %-3s %4s %8s %7s %4s/%-4s" % (
            r["pair"], r["half"], r["family"], f(r["measured"], "%.3fx"), r["first"][:29],
            f(r["first_est"], "%.3f"), "yes" if r["right_first"] else "NO", f(r["rank"], "%d"),
            f(r["estimate"], "%.3fx"), f(r["error"] and 100 * r["error"], "%.1f%%"),
            f(r["overhead"][0], "%.2f"), f(r["overhead"][1], "%.2f")))
        if r["notes"]:
            print("%10s note: %s" % ("", r["notes"][:160]))
    summary = {}
    for half in ("calibrate", "heldout"):
        hr = [r for r in rows if r["half"] == half]
        big = [r for r in hr if r["measured"] is not None and r["measured"] >= THRESHOLD]
        errs = [r["error"] for r in hr if r["error"] is not None]
        ovh = [o for r in hr for o in r["overhead"] if o is not None]
        s = {"pairs": len(hr), "measured": len(errs), "ranked": len(big),
             "right_first": sum(r["right_first"] for r in big),
             "mae": statistics.mean(errs) if errs else None,
             "overhead_median": statistics.median(ovh) if ovh else None,
             "misses": [r["pair"] for r in big if not r["right_first"]]}
        summary[half] = s
        print("%-9s right fix first %d of %d pairs with a measured fix >= %.1fx%s; mean absolute error "
              "%s over %d pairs; PC-sampling overhead median %s" % (
                  half, s["right_first"], s["ranked"], THRESHOLD,
                  " (%.0f %%)" % (100.0 * s["right_first"] / s["ranked"]) if s["ranked"] else "",
                  f(s["mae"] and 100 * s["mae"], "%.1f %%"), s["measured"],
                  f(s["overhead_median"], "%.2fx")))
        if s["misses"]:
            print("%-9s not first: %s" % ("", " ".join(s["misses"])))
    ratios = twosite(a.dir, a.gpuprof) if a.twosite else None
    if a.json:
        with open(a.json, "w") as o:
            json.dump({"pairs": rows, "halves": summary, "twosite": ratios}, o, indent=1)
    return 0


sys.exit(main())

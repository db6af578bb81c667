"""check-pcsamp.py - the known-structure check of PC sampling (issue 7) on a
`gpuprof report --gpu-detail --json` of pcsamp-known.cu:
  known_calls(): hot() called 3 times from one call site and once from
  another, equal work per call -> its two GPU contexts hold GINST 3:1
  within 5 % (the reconstruction's equal-cost-per-call assumption holds);
  known(): hot() called once from each of two sites with 3:1 work per
  call -> the ratio is printed, not checked: call-site samples measure
  calls, not work per call (Zhou et al. 2021, section 6.3, gprof's
  assumption), so no sampling-based reconstruction can recover it;
  the hottest source line of hot() is the loop's line ("// HOT-LINE" or
  the loop header "// HOT-LOOP").
Usage: check-pcsamp.py REPORT.json pcsamp-known.cu   (exit 0 PASS, 1 FAIL)
"""
import json
import sys


def ginst(n):
    m = n.get("metrics", {}).get("GINST")
    return m["incl"] if m else 0.0


def walk(n, parents=()):
    yield n, parents
    for c in n.get("children", []):
        yield from walk(c, parents + (n,))


def sites_and_lines(kernels):
    sites, lines = {}, {}
    for k in kernels:
        for n, par in walk(k):
            if n["kind"] == "gpu_function" and "hot" in n["label"] and "call at" in n["label"]:
                site = n["label"].split("call at ")[1].rstrip(")")
                sites[site] = sites.get(site, 0.0) + ginst(n)
            if n["kind"] == "gpu_line" and any(p["kind"] == "gpu_function" and "hot" in p["label"]
                                               for p in par):
                lines[n["label"]] = lines.get(n["label"], 0.0) + ginst(n)
    return sites, lines


def main():
    doc = json.load(open(sys.argv[1]))
    src = open(sys.argv[2]).read().split("\n")
    want_lines = {"pcsamp-known.cu:%d" % (i + 1) for i, l in enumerate(src)
                  if "// HOT-LINE" in l or "// HOT-LOOP" in l}
    ok = True
    for name, check in (("known_calls(", True), ("known(", False)):
        kernels = [n for n, _ in walk(doc["tree"]) if n["kind"] == "kernel" and n["label"].startswith(name)]
        if not kernels:
            print("FAIL: no kernel %s) in the report" % name)
            ok = False
            continue
        sites, lines = sites_and_lines(kernels)
        total = sum(ginst(k) for k in kernels)
        print("%s): GINST %.0f; hot() contexts by call site: %s" % (name, total,
              {s: round(v) for s, v in sites.items()}))
        print("  hot() lines: %s" % {l: round(v) for l, v in sorted(lines.items(), key=lambda x: -x[1])})
        if len(sites) != 2:
            print("FAIL: expected 2 GPU contexts of hot(), got %d" % len(sites))
            ok = False
            continue
        a, b = sorted(sites.values(), reverse=True)
        ratio = a / b if b else float("inf")
        if check:
            good = abs(ratio - 3.0) / 3.0 <= 0.05
            print("  %s: call-site ratio %.3f (want 3 within 5 %%)" % ("PASS" if good else "FAIL", ratio))
            ok &= good
        else:
            print("  INFO: context ratio %.3f for a 3:1 work ratio in equal call counts" % ratio)
        top = max(lines.items(), key=lambda x: x[1])[0] if lines else None
        good = top in want_lines
        print("  %s: hottest line of hot() %s (loop lines %s)" % ("PASS" if good else "FAIL", top,
                                                                   sorted(want_lines)))
        ok &= good
    return 0 if ok else 1


sys.exit(main())

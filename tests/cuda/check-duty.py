#!/usr/bin/env python3
"""check-duty.py FULL.json DUTY.json F - per-context GPU time of a
duty-cycled run against full tracing (`gpuprof report --json` of the same
steady loop; tests/cuda/gpu-torchcost.sh).

F is the duty run's window fraction (the shim's "fraction f = ..." line).
Each kernel context (the path of labels from the root to the kernel node)
of the duty run is scaled by 1/F (shim/cupti/cupti-mode.c: T^ = T / f,
relative standard error sqrt((1 - f) / n) for n observed launches) and
compared with the full run.  Prints the total, then the heaviest contexts
of the full run with estimate, difference and predicted error; the verdict
is on the contexts holding 80 % of the full run's GPU time.
"""
import json
import math
import sys


def contexts(path):
    doc = json.load(open(path))
    out = {}
    stack = [(doc["tree"], ())]
    while stack:
        n, anc = stack.pop()
        key = anc + ((n.get("kind") or "", n.get("label") or ""),)
        if n.get("kind") == "kernel":
            m = n.get("metrics", {})
            t = (m.get("GKER") or {}).get("excl") or 0
            c = (m.get("GKER:COUNT") or {}).get("excl") or 0
            a = out.setdefault(key, [0.0, 0.0])
            a[0] += t
            a[1] += c
        for ch in n.get("children", []):
            stack.append((ch, key))
    return out


def main():
    full, duty, f = contexts(sys.argv[1]), contexts(sys.argv[2]), float(sys.argv[3])
    tf = sum(v[0] for v in full.values())
    td = sum(v[0] for v in duty.values())
    nd = sum(v[1] for v in duty.values())
    est = td / f
    se = est * math.sqrt((1 - f) / nd) if nd else float("inf")
    print("window fraction f = %.5f" % f)
    print("total GPU time: full %.4f s, duty observed %.4f s (%d launches) -> estimate %.4f s +- %.4f "
          "(%+.2f %%)" % (tf / 1e9, td / 1e9, nd, est / 1e9, se / 1e9, 100 * (est - tf) / tf))
    print("%-6s %-48s %10s %10s %8s %8s %6s" % ("rank", "kernel (context depth)", "full ms", "est ms",
                                                 "diff %", "se %", "n obs"))
    cum, within, covered, checked = 0.0, 0, 0.0, 0
    for i, (k, (t, c)) in enumerate(sorted(full.items(), key=lambda kv: -kv[1][0])):
        if cum >= 0.8 * tf:
            break
        cum += t
        d = duty.get(k, [0.0, 0.0])
        e = d[0] / f
        rse = math.sqrt((1 - f) / d[1]) if d[1] else float("inf")
        diff = (e - t) / t if t else 0
        ok = abs(diff) <= 0.05
        checked += 1
        within += ok
        covered += t if ok else 0
        print("%-6d %-48s %10.3f %10.3f %+8.2f %8.2f %6d %s" % (i + 1, (k[-1][1][:40] + " (%d)" % len(k)),
                                                              t / 1e6, e / 1e6, 100 * diff, 100 * rse, d[1],
                                                              "ok" if ok else "OFF"))
    print("contexts holding 80 %% of GPU time: %d, within 5 %%: %d (%.1f %% of the GPU time)"
          % (checked, within, 100 * covered / tf if tf else 0))
    print("check-duty: %s" % ("PASS" if within == checked and abs(est - tf) <= 0.05 * tf else "FAIL"))


main()

#!/usr/bin/env python3
"""check-graphs.py REPORT.json REPLAYS - test-cupti-graphs.sh's check: the
kernels and memsets of graph-app's replays below replay() > <graph replay>
under the function that created each node, REPLAYS of each, nothing else
(graph-app's plain launches of gpd_fake_busy, which wait for a detached
phase, are not graph work and not checked)."""
import json
import sys


def main():
    doc = json.load(open(sys.argv[1]))
    n = int(sys.argv[2])
    got = {}
    stack = [(doc["tree"], [])]
    while stack:
        node, anc = stack.pop()
        kind, lab = node.get("kind"), node.get("label") or ""
        m = node.get("metrics", {})
        c = 0
        if kind == "kernel" and lab == "gpd_fake_busy":
            pass
        elif kind == "kernel":
            c = (m.get("GKER:COUNT") or {}).get("excl") or 0
        elif kind == "placeholder" and lab == "<gpu memset>":
            c = (m.get("GMSET:COUNT") or {}).get("excl") or 0
            lab = "memset"
        if c:
            fns = [f.get("function") or "" for k, l, fr in anc for f in fr]
            labs = [l for k, l, fr in anc]
            if "<graph replay>" in labs:
                i = labs.index("<graph replay>")
                above = [f.get("function") or "" for k, l, fr in anc[:i] for f in fr]
                below = [f.get("function") or "" for k, l, fr in anc[i + 1:] for f in fr]
                site = "replay" if "replay" in above else "?"
                creator = next((f for f in reversed(below) if f in ("layer_a", "layer_b", "build_c")), "?")
                key = (site, creator, lab)
            else:
                key = ("not below <graph replay>", "/".join(fns[-3:]), lab)
            got[key] = got.get(key, 0) + c
        for ch in node.get("children", []):
            stack.append((ch, anc + [(kind, lab, node.get("frames", []))]))
    want = {("replay", "layer_a", "gpd_fake_k0"): n, ("replay", "layer_a", "gpd_fake_k1"): n,
            ("replay", "layer_b", "memset"): n, ("replay", "build_c", "gpd_fake_k3"): n}
    for k, v in sorted(got.items()):
        print("%s > <graph replay> > %s: %s %g" % (k[0], k[1], k[2], v))
    if got != want:
        print("FAIL: want %s" % sorted(want.items()))
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())

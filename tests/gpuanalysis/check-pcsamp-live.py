#!/usr/bin/env python3
"""Checks a `gpuprof tree --json` document of pcsamp-live.sh (stdin).

usage: check-pcsamp-live.py tree|detail|none
  tree    the two kernel nodes of _Z10pcs_kernelPfi hold GINST 90 and 30
          (exclusive), GINST:STL_GMEM 60/20, STL_NONE 30/10, STL_ANY 60/20,
          no other stall metric; the root's inclusive GINST is 120; no node
          names the never-launched _Z9unlaunchedv.
  detail  (--gpu-detail) the kernels hold GINST only inclusively (90/30),
          each with two gpu_stall children: STL_GMEM 60/20, STL_NONE 30/10.
  none    no kernel node, no GINST anywhere (another uid's view).
Exit 0 when it holds, 1 (with what was seen) when not.
"""
import json
import sys

KNAME = "_Z10pcs_kernelPfi"


def nodes(n, parent=None):
    yield n, parent
    for c in n.get("children", []):
        yield from nodes(c, n)


def m(n, name, which="excl"):
    v = n["metrics"].get(name)
    return v[which] if v else 0


def fail(msg):
    print(msg)
    sys.exit(1)


def main():
    mode = sys.argv[1]
    doc = json.load(sys.stdin)
    tree = doc["tree"]
    alln = list(nodes(tree))
    if any("unlaunched" in (n.get("raw_name", "") + n["label"]) for n, _ in alln):
        fail("the never-launched kernel is shown")
    if mode == "none":
        if any(n["kind"] == "kernel" for n, _ in alln):
            fail("kernel nodes visible")
        if any("GINST" in k for n, _ in alln for k in n["metrics"]):
            fail("GINST visible")
        return
    ks = [n for n, _ in alln if n["kind"] == "kernel" and n["raw_name"] == KNAME]
    if len(ks) != 2:
        fail("want 2 kernel nodes of %s, got %d" % (KNAME, len(ks)))
    got = sorted(ks, key=lambda n: -m(n, "GINST", "incl"))
    if m(tree, "GINST", "incl") != 120:
        fail("root GINST incl %r, want 120" % m(tree, "GINST", "incl"))
    for n, (gi, gm, no) in zip(got, [(90, 60, 30), (30, 20, 10)]):
        if m(n, "GINST", "incl") != gi:
            fail("kernel GINST incl %r, want %d" % (m(n, "GINST", "incl"), gi))
        stl = {k for k in n["metrics"] if k.startswith("GINST:STL_")}
        if stl != {"GINST:STL_GMEM", "GINST:STL_NONE", "GINST:STL_ANY"}:
            fail("kernel stall metrics %r" % sorted(stl))
        if mode == "tree":
            want = {"GINST": gi, "GINST:STL_GMEM": gm, "GINST:STL_NONE": no, "GINST:STL_ANY": gm}
            for k, v in want.items():
                if m(n, k) != v or m(n, k, "incl") != v:
                    fail("kernel %s excl/incl %r/%r, want %d" % (k, m(n, k), m(n, k, "incl"), v))
        else:
            if m(n, "GINST") != 0:
                fail("--gpu-detail: kernel keeps GINST %r exclusively" % m(n, "GINST"))
            kids = {c["label"].split(" ")[0]: c for c in n["children"] if c["kind"] == "gpu_stall"}
            if set(kids) != {"GINST:STL_GMEM", "GINST:STL_NONE"}:
                fail("stall children %r" % sorted(kids))
            if m(kids["GINST:STL_GMEM"], "GINST") != gm or m(kids["GINST:STL_GMEM"], "GINST:STL_GMEM") != gm:
                fail("STL_GMEM child %r" % kids["GINST:STL_GMEM"]["metrics"])
            if m(kids["GINST:STL_NONE"], "GINST") != no or m(kids["GINST:STL_NONE"], "GINST:STL_ANY") != 0:
                fail("STL_NONE child %r" % kids["GINST:STL_NONE"]["metrics"])


main()

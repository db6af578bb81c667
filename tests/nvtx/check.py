#!/usr/bin/env python3
"""check.py - the NVTX ranges of nvtx-known's (or nvtx-py.py's) profile (tests/nvtx).

Usage: check.py DB [known|off|py]
Sums GKER:COUNT by the chain of `<nvtx> ...` context nodes on each
kernel's path (root first) and compares the table with what nvtx-known.c
must give, exactly: every row present with its value, no other row.  Also
checks where each range node sits: the first frame below it (below the
range nodes that stand together with it) is the function whose frame the
range was pushed in (main, layer, deep).  `off` (GPUPROF_NVTX=0): no range
node at all, the same 32 kernels.  `py` (nvtx-py.py): GXCOPY:COUNT by range
chain, and every range node between the Python frames `<module>` and
`main` of the script.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "integration")]  # the bundle holds gpdq.py beside it
from gpdq import Profile  # noqa: E402

DEEP = tuple("d%d" % i for i in range(32))
PY = "nvtx-py.py"


def expected(mode):
    if mode == "off":
        return {(): 32}
    if mode == "py":
        return {(): 2, ("outer",): 3, ("outer", "a"): 3, ("ctx",): 1}
    return {
        (): 2,
        ("outer",): 8,
        ("outer", "inner"): 3,
        ("outer", "io::load"): 4,
        ("outer", "phase"): 5,
        ("outer", "wide\u00e9"): 1,
        ("worker",): 2,
        DEEP: 7,
    }


# the function of the first frame below each range node (its push frame)
BELOW = {"outer": "main", "inner": "layer", "io::load": "main", "phase": "main", "wide\u00e9": "main",
         "worker": "worker"}


def placement(p, chain, i, last, name, mode):
    """1 when range node chain[i] (last: the innermost range node of the
    chain) sits where its push put it, else 0 (and says why)."""
    if mode == "py":
        # Python frames (kind 5): `<module>` above the outermost range node,
        # `main` below the innermost one
        above = next((p.ctx[c][2] for c in reversed(chain[:i]) if p.ctx[c][1] == 5), "-")
        below = next((p.ctx[c][2] for c in chain[last + 1:] if p.ctx[c][1] == 5), "-")
        ok = above.startswith("<module> (") and PY in above and below.startswith("main (") and PY in below
        if not ok:
            print("BAD  range %-10s between %s and %s, want <module> and main of %s" % (name, above, below, PY))
        return int(ok)
    nxt = chain[last + 1] if last + 1 < len(chain) else None
    fns = p.funcs.get(nxt, []) if nxt else []
    fn = fns[-1] if fns else (p.ctx[nxt][2] if nxt else "-")
    want = "deep" if name in DEEP else BELOW.get(name, "?")
    if fn != want and not fn.startswith(want + "("):
        print("BAD  range %-10s first frame below it is %s, want %s" % (name, fn, want))
        return 0
    return 1


def main():
    db, mode = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "known"
    p = Profile(db)
    got, bad = {}, 0
    metric = "GXCOPY:COUNT" if mode == "py" else "GKER:COUNT"
    for cid, v in p.values(metric).items():
        if not v:
            continue
        chain = []
        c = cid
        while c and c in p.ctx:
            chain.append(c)
            c = p.ctx[c][0]
        chain.reverse()  # root first
        at = [i for i, c in enumerate(chain) if p.ctx[c][2].startswith("<nvtx> ")]
        labels = [p.ctx[chain[i]][2][len("<nvtx> "):] for i in at]
        for i, name in zip(at, labels):
            # a range's frame: below the last of the range nodes that stand together
            last = i
            while last + 1 in at:
                last += 1
            bad += 1 - placement(p, chain, i, last, name, mode)
        key = tuple(labels)
        got[key] = got.get(key, 0) + v
    want = expected(mode)
    for k in sorted(set(got) | set(want)):
        g, w = got.get(k, 0), want.get(k, 0)
        shown = " > ".join(k) if len(k) < 4 else "%s > ... > %s (%d)" % (k[0], k[-1], len(k))
        print("%-4s %-40s %4g (want %g)" % ("ok" if g == w else "BAD", shown or "(no range)", g, w))
        bad += g != w
    print("FAIL: %d rows or placements differ" % bad if bad else "all %d rows exact" % len(want))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""check.py - the NVTX ranges of nvtx-known's profile (tests/nvtx).

Usage: check.py DB [off]
Sums GKER:COUNT by the chain of `<nvtx> ...` context nodes on each
kernel's path (root first) and compares the table with what nvtx-known.c
must give, exactly: every row present with its value, no other row.  Also
checks where each range node sits: the first frame below it is the
function whose frame the range was pushed in (main, layer, deep), and no
range node has a label ancestor it was not nested in.  With `off`
(GPUPROF_NVTX=0): no range node at all, the same 30 kernels.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "integration")]  # the bundle holds gpdq.py beside it
from gpdq import Profile  # noqa: E402

DEEP = tuple("d%d" % i for i in range(32))


def expected(off):
    if off:
        return {(): 30}
    return {
        (): 2,
        ("outer",): 8,
        ("outer", "inner"): 3,
        ("outer", "io::load"): 4,
        ("outer", "phase"): 5,
        ("outer", "wide\u00e9"): 1,
        DEEP: 7,
    }


# the function of the first frame below each range node (its push frame)
BELOW = {"outer": "main", "inner": "layer", "io::load": "main", "phase": "main", "wide\u00e9": "main"}


def main():
    db, off = sys.argv[1], len(sys.argv) > 2 and sys.argv[2] == "off"
    p = Profile(db)
    got, bad = {}, 0
    for cid, v in p.values("GKER:COUNT").items():
        if not v:
            continue
        chain = []
        c = cid
        while c and c in p.ctx:
            chain.append(c)
            c = p.ctx[c][0]
        chain.reverse()  # root first
        labels = []
        for i, c in enumerate(chain):
            lab = p.ctx[c][2]
            if not lab.startswith("<nvtx> "):
                continue
            name = lab[len("<nvtx> "):]
            labels.append(name)
            nxt = next((d for d in chain[i + 1:] if not p.ctx[d][2].startswith("<nvtx> ")), None)
            fns = p.funcs.get(nxt, []) if nxt else []
            fn = fns[-1] if fns else (p.ctx[nxt][2] if nxt else "-")
            want = "deep" if name in DEEP else BELOW.get(name, "?")
            if fn != want and not fn.startswith(want + "("):
                print("BAD  range %-10s first frame below it is %s, want %s" % (name, fn, want))
                bad += 1
        key = tuple(labels)
        got[key] = got.get(key, 0) + v
    want = expected(off)
    for k in sorted(set(got) | set(want)):
        g, w = got.get(k, 0), want.get(k, 0)
        shown = " > ".join(k) if len(k) < 4 else "%s > ... > %s (%d)" % (k[0], k[-1], len(k))
        print("%-4s %-40s %4g (want %g)" % ("ok" if g == w else "BAD", shown or "(no range)", g, w))
        bad += g != w
    print("FAIL: %d rows or placements differ" % bad if bad else "all %d rows exact" % len(want))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

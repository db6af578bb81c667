#!/usr/bin/env python3
"""handoff-check.py - where the kernels of handoff.py landed (exact counts).

Usage: handoff-check.py PROFILE SCRIPT N carried|native
Every GKER:COUNT is one launch of handoff-lib.c's kernel.  Each context
with kernels is one of:
  direct   Python frames <module> > main > direct_path, no <worker>
  handoff  Python frames <module> > main > train_step > engine_run, then <worker>,
           then native frames with gpd_hl_dispatch, then the kernel
  native   no Python frame, no <worker> (the worker's native path)
carried: direct N, handoff 2N, native 3N (GPUPROF_TEST_HANDOFF names the
dispatch); native: direct N, native 5N (the dispatch symbol is absent).
"""
import re
import sqlite3
import sys


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def main():
    prof, script, n, mode = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    tags = {}
    for i, text in enumerate(open(script), 1):
        m = re.search(r"# L:(\w+)", text)
        if m:
            tags[m.group(1)] = i

    def fr(fn, tag):
        return "%s (%s:%d)" % (fn, script, tags[tag])

    db = sqlite3.connect("file:%s?mode=ro" % prof, uri=True)
    mid = {name: i for i, name in db.execute("SELECT id, name FROM metric_desc")}
    ctx = {c: (p, k, lab or "") for c, p, k, lab in db.execute("SELECT id, parent, kind, label FROM context")}
    got = {"direct": 0, "handoff": 0, "native": 0}
    for cid, v in db.execute("SELECT context_id, SUM(value) FROM metric WHERE metric_id = ? GROUP BY context_id",
                             (mid["GKER:COUNT"],)):
        chain, c = [], cid
        while c in ctx and len(chain) < 10000:
            chain.append(ctx[c][1:])
            c = ctx[c][0]
        chain.reverse()
        py = [lab for k, lab in chain if k == 5]
        if py and py[0] == fr("<module>", "module"):
            py = py[1:]
        labels = [lab for k, lab in chain]
        if py == [fr("main", "main_direct"), fr("direct_path", "direct")] and "<worker>" not in labels:
            got["direct"] += v
        elif py == [fr("main", "main_train"), fr("train_step", "train_step"), fr("engine_run", "engine_run")]:
            i = labels.index(py[-1])
            if labels[i + 1] != "<worker>":
                fail("no <worker> right below engine_run: %s" % labels)
            if not any(k == 1 and "gpd_hl_dispatch" in lab for k, lab in chain[i + 2:]):
                fail("no native gpd_hl_dispatch frame below <worker>: %s" % labels)
            got["handoff"] += v
        elif not py and "<worker>" not in labels:
            if not any(k == 1 and "gpd_hl_dispatch" in lab for k, lab in chain):
                fail("a worker kernel without its gpd_hl_dispatch frame: %s" % labels)
            got["native"] += v
        else:
            fail("kernels (%g) under an unexpected path: %s" % (v, labels))
    want = {"direct": n, "handoff": 2 * n, "native": 3 * n} if mode == "carried" else \
        {"direct": n, "handoff": 0, "native": 5 * n}
    for k in want:
        print("%-8s %4g kernels (want %d)" % (k, got[k], want[k]))
    if got != want:
        fail("counts %s, want %s" % (got, want))
    print("ok")


main()

#!/usr/bin/env python3
"""pyq.py - check the Python frames of an ocl-py.py profile (exact counts).

Usage: pyq.py PROFILE SCRIPT N [FACTOR [python]]
PROFILE is a gpuprof SQLite file or a `gpuprof tree --json` output;
"python": it is a Python view (--python): no native frame at all.  Line
numbers come from the "# L:<tag>" comments of SCRIPT; N is the script's
argument; FACTOR the number of runs merged into PROFILE (default 1).
Every GXCOPY copy is one clEnqueueWriteBuffer; for each Python call path
below, the number of copies whose Python frames (root first) end with it
must be exact.  Exits 1 with a message on the first failure.
"""
import json
import re
import sqlite3
import sys


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def lines_of(script):
    tags = {}
    for i, text in enumerate(open(script), 1):
        m = re.search(r"# L:(\w+)", text)
        if m:
            tags[m.group(1)] = i
    return tags


def leaves_gpdb(path, metric="GXCOPY:COUNT"):
    """[(path of (kind, label) root first, value)] for every context with metric."""
    db = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
    mid = {n: i for i, n in db.execute("SELECT id, name FROM metric_desc")}
    ctx = {cid: (parent, kind, label or "")
           for cid, parent, kind, label in db.execute("SELECT id, parent, kind, label FROM context")}
    vals = db.execute("SELECT context_id, SUM(value) FROM metric WHERE metric_id = ? GROUP BY context_id",
                      (mid[metric],)).fetchall()
    out = []
    for cid, v in vals:
        chain = []
        c = cid
        while c in ctx and len(chain) < 100000:
            chain.append((ctx[c][1], ctx[c][2]))
            c = ctx[c][0]
        out.append((chain[::-1], v))
    return out


KIND = {"root": 0, "frame": 1, "placeholder": 2, "kernel": 3, "unknown": 4, "python": 5}


def leaves_json(path):
    tree = json.load(open(path))["tree"]
    out = []
    stack = [(tree, [])]
    while stack:
        node, chain = stack.pop()
        chain = chain + [(KIND.get(node["kind"], -1), node["label"])]
        m = node.get("metrics", {}).get("GXCOPY:COUNT")
        if m and m.get("excl"):
            out.append((chain, m["excl"]))
        for ch in node.get("children", []):
            stack.append((ch, chain))
    return out


def main():
    prof, script, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    factor = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    pyview = len(sys.argv) > 5 and sys.argv[5] == "python"
    L = lines_of(script)
    leaves = leaves_json(prof) if prof.endswith(".json") else leaves_gpdb(prof)

    def fr(fn, tag):
        return "%s (%s:%d)" % (fn, script, L[tag])

    up = fr("upload", "upload")
    want = {
        "path_a": ([fr("main", "main_a"), fr("path_a", "path_a"), up], n),
        "path_b": ([fr("main", "main_b"), fr("path_b", "path_b"), up], 2 * n),
        "generator": ([fr("main", "main_gen"), fr("use_gen", "use_gen"),
                       fr("use_gen.<locals>.<genexpr>", "use_gen"), fr("gen_uploads", "gen"), up], n),
        "recursion": ([fr("main", "main_rec")] + [fr("rec", "rec_call")] * 4 + [fr("rec", "rec_base"), up], 1),
        "threads": ([fr("worker", "worker"), up], 2 * n),
        "callback": ([fr("main", "main_cb"), fr("via_callback", "qsort"), fr("cmp", "cmp"), up], n),
    }
    got = {k: 0 for k in want}
    total = 0
    for chain, v in leaves:
        total += v
        py = [label for kind, label in chain if kind == 5]
        if not py or py[-1] != up:
            fail("a copy (%g) whose innermost Python frame is not %s: %s" % (v, up, py))
        for k, (suffix, _) in want.items():
            if py[-len(suffix):] == suffix and (k != "threads" or not any(
                    lab.startswith("main (") for lab in py)):
                got[k] += v
        if pyview:
            if any(kind == 1 for kind, label in chain):
                fail("a native frame in the Python view: %s" % chain)
            continue
        if py[-2:] == [fr("cmp", "cmp"), up]:
            # the C frames of qsort stand between via_callback and cmp
            i = max(j for j, (kind, label) in enumerate(chain) if label == fr("via_callback", "qsort"))
            k = max(j for j, (kind, label) in enumerate(chain) if label == fr("cmp", "cmp"))
            if not any(kind == 1 and "qsort" in label for kind, label in chain[i:k]):
                fail("no native qsort frame between via_callback and cmp: %s" % chain[i:k])
    for k, (suffix, cnt) in want.items():
        print("%-10s %4g copies (want %d) under %s" % (k, got[k], cnt * factor, " > ".join(suffix)))
        if got[k] != cnt * factor:
            fail("%s: %g copies, want %d" % (k, got[k], cnt * factor))
    want_total = (7 * n + 1) * factor
    print("total      %4g copies (want %d)" % (total, want_total))
    if total != want_total:
        fail("total copies %g, want %d" % (total, want_total))
    print("ok")


if __name__ == "__main__":
    main()

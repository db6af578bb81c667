#!/usr/bin/env python3
"""Time of `gpuprof export` (pprof, folded, speedscope) and `gpuprof view`
on a large saved profile, against `gpuprof report` of the same file in the
same run (the baseline: the same load from SQLite and tree build, then
text rendering).  Prints a table: median wall time of --reps runs, the
ratio to report, and the output size.

usage: bench-export.py --gpuprof PATH [--leaves N] [--reps R]

The profile (the schema of docs/FORMATS.md, via tests/cli/fixture.sql):
main -> 50 phases -> 20 solvers each -> N/1000 launch sites each ->
<gpu kernel> -> kernel, i.e. N kernel contexts (default 20 000, about
3.05 N contexts in all), each with GPUOP, GKER and GKER:COUNT.
"""
import argparse
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "cli"))
from test_cli import make_db  # noqa: E402  (the fixture profile's schema)


def build(path, leaves):
    make_db(path, "DELETE FROM metric; DELETE FROM frame; DELETE FROM context;")
    c = sqlite3.connect(path)
    ctx, frames, metrics = [], [], []
    ctx.append((1, 0, 0, None, None, 0, "<program root>", None))
    ctx.append((2, 1, 1, "/opt/app/bin/app", None, 0x1000, "main", None))
    frames.append((2, 0, "main", "app.c", 10, 0))
    nid = 3
    sites = max(1, leaves // 1000)
    for p in range(50):
        pid_ = nid
        nid += 1
        ctx.append((pid_, 2, 1, "/opt/app/bin/app", None, 0x2000 + p, "phase_%d" % p, None))
        frames.append((pid_, 0, "phase_%d" % p, "phase.c", 100 + p, 0))
        for s in range(20):
            sid = nid
            nid += 1
            ctx.append((sid, pid_, 1, "/opt/app/lib/libsolve.so", None, 0x3000 + s, "solver_%d" % s, None))
            frames.append((sid, 0, "solver_%d" % s, "solve.c", 200 + s, 0))
            for k in range(sites):
                lid, ph, kid = nid, nid + 1, nid + 2
                nid += 3
                ctx.append((lid, sid, 1, "/opt/app/lib/libsolve.so", None, 0x4000 + k, "launch", None))
                frames.append((lid, 0, "launch", "launch.c", 300 + k, 0))
                ctx.append((ph, lid, 2, None, None, 0, "<gpu kernel>", None))
                name = "kernel_%d<float>(float*, int)" % ((p * 20 + s + k) % 97)
                ctx.append((kid, ph, 3, None, None, 0, name, "_Z8kernel_%di" % k))
                ns = 1000 + (kid * 7919) % 100000
                metrics += [(1, kid, 0, ns), (1, kid, 1, ns), (1, kid, 49, 1 + kid % 5)]
    c.executemany("INSERT INTO context VALUES (?, ?, ?, ?, ?, ?, ?, ?)", ctx)
    c.executemany("INSERT INTO frame VALUES (?, ?, ?, ?, ?, ?)", frames)
    c.executemany("INSERT INTO metric VALUES (?, ?, ?, ?)", metrics)
    c.commit()
    c.close()
    return len(ctx)


def timed(cmd, out, reps):
    t = []
    for _ in range(reps):
        t0 = time.perf_counter()
        with open(out, "wb") as f:
            p = subprocess.run(cmd, stdout=f, stderr=subprocess.PIPE, env=dict(os.environ, BROWSER="", DISPLAY=""))
        t.append(time.perf_counter() - t0)
        if p.returncode != 0:
            raise RuntimeError(p.stderr.decode().strip()[-300:])
    return statistics.median(t)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpuprof", required=True)
    ap.add_argument("--leaves", type=int, default=20000)
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    g = a.gpuprof
    with tempfile.TemporaryDirectory(prefix="bex-") as tmp:
        db = os.path.join(tmp, "big.gpdb")
        n = build(db, a.leaves)
        print("profile: %d contexts, %d kernel contexts, %.1f MB SQLite; median of %d runs" %
              (n, 50 * 20 * max(1, a.leaves // 1000), os.path.getsize(db) / 1e6, a.reps))
        runs = [("report (baseline)", [g, "report", db], "r.txt"),
                ("export --format pprof", [g, "export", "--format", "pprof", "-o", "-", db], "x.pb.gz"),
                ("export --format folded", [g, "export", "--format", "folded", db], "x.folded"),
                ("export --format speedscope", [g, "export", "--format", "speedscope", db], "x.json"),
                ("view --no-browser", [g, "view", "--no-browser", "-o", os.path.join(tmp, "v.html"), db], "v.txt")]
        print("%-28s %10s %8s %12s" % ("command", "time (s)", "ratio", "output (B)"))
        base = None
        for name, cmd, out in runs:
            o = os.path.join(tmp, out)
            try:
                t = timed(cmd, o, a.reps)
            except RuntimeError as e:
                print("%-28s failed: %s" % (name, e))
                continue
            base = base or t
            size = os.path.getsize(os.path.join(tmp, "v.html") if out == "v.txt" else o)
            print("%-28s %10.3f %7.2fx %12d" % (name, t, t / base, size))


if __name__ == "__main__":
    main()

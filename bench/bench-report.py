#!/usr/bin/env python3
"""Time of `gpuprof report` on a synthetic profile of N GPU operations
(default 1 000 000) with a trace, end to end and per step (GPUPROF_TIMINGS=1:
loading, calling-context tree, idleness blame, ...), for --gpuprof and, in
the same run, for --baseline (an older build, e.g. the main checkout's)
when given.  Prints a markdown table.

usage: bench-report.py --gpuprof PATH [--baseline PATH] [--ops N] [--keep FILE [--reuse]]

The profile (docs/FORMATS.md schema: tests/cli/fixture.sql plus the trace
tables): one process, 256 launch sites 43 CPU frames deep (30 shared
frames, 4 phases x 8 layers x 8 ops), a kernel context under each; N
trace_event rows on 4 streams (every --sync-every'th, default 20th, a
host-timed sync, as a training step's copies and synchronizations) with small
GPU-idle gaps between bursts, N trace_launch rows on one thread, no CPU
samples (the blame goes through the launches).
"""
import argparse
import os
import re
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "cli"))
from test_cli import make_db  # noqa: E402

TRACE_SQL = """
CREATE TABLE trace_event(profile_id INTEGER NOT NULL, start_ns INTEGER NOT NULL,  stream INTEGER NOT NULL,
  corr INTEGER NOT NULL, end_ns INTEGER NOT NULL,  device INTEGER NOT NULL, op INTEGER NOT NULL,
  subkind INTEGER NOT NULL, node INTEGER NOT NULL, name INTEGER NOT NULL, bytes INTEGER NOT NULL,
  PRIMARY KEY(profile_id, start_ns, stream, corr)) WITHOUT ROWID;
CREATE TABLE trace_launch(profile_id INTEGER NOT NULL, ts_ns INTEGER NOT NULL,  tid INTEGER NOT NULL,
  corr INTEGER NOT NULL, node INTEGER NOT NULL, op INTEGER NOT NULL,
  PRIMARY KEY(profile_id, ts_ns, tid, corr)) WITHOUT ROWID;
CREATE TABLE trace_stat(profile_id INTEGER PRIMARY KEY,  events INTEGER NOT NULL, dropped INTEGER NOT NULL,
  refused INTEGER NOT NULL);
"""


def build(path, n, every):
    make_db(path, "DELETE FROM metric; DELETE FROM frame; DELETE FROM context;" + TRACE_SQL)
    c = sqlite3.connect(path)
    pid = c.execute("SELECT id FROM profile LIMIT 1").fetchone()[0]
    c.execute("DELETE FROM profile WHERE id != ?", (pid,))
    ctx, frames, metrics = [], [], []
    ctx.append((1, 0, 0, None, None, 0, "<program root>", None))
    nid, parent = 2, 1
    for d in range(30):
        ctx.append((nid, parent, 1, "/usr/bin/python3.11", None, 0x1000 + d, "f%d" % d, None))
        frames.append((nid, 0, ["_start", "main", "Py_RunMain"][d] if d < 3 else "_PyEval_EvalFrameDefault",
                       "Python/ceval.c", 4000 + d, 0))
        parent, nid = nid, nid + 1
    base = parent
    sites = []
    for ph in range(4):
        p1, nid = nid, nid + 1
        ctx.append((p1, base, 1, "train.py", None, ph, "phase%d" % ph, None))
        frames.append((p1, 0, "phase%d" % ph, "train.py", 100 + ph, 0))
        for ly in range(8):
            p = p1
            for d in range(11):
                q, nid = nid, nid + 1
                ctx.append((q, p, 1, "libtorch_cpu.so", None, 0x100 * ly + d, "dispatch%d" % d, None))
                frames.append((q, 0, "c10::impl::call_%d" % d, "dispatch.h", 400 + d, 0))
                p = q
            for op in range(8):
                cs, ph_, k = nid, nid + 1, nid + 2
                nid += 3
                ctx.append((cs, p, 1, "libtorch_cuda.so", None, 0x4000 + op, "op%d" % op, None))
                frames.append((cs, 0, "at::native::op%d_kernel_cuda" % op, "Ops.cu", 500 + op, 0))
                ctx.append((ph_, cs, 2, None, None, 0, "<gpu kernel>", None))
                ctx.append((k, ph_, 3, None, None, 0, "void vectorized_elementwise_kernel<4, F%d<float> >(int)"
                            % (op + 8 * ly), None))
                sites.append((ph_, k))
    ev, la = [], []
    ts, sfree = 10 ** 12, [0, 0, 0, 0]
    tot = {}
    for i in range(n):
        ph_, k = sites[(i * 7) % len(sites)]
        sync = i % every == every - 1
        st = i % 4
        dur = 2000 + (i * 37) % 9000
        ts += 700 + (i * 13) % 600 + (200000 if i % 1000 == 999 else 0)
        la.append((pid, ts, 4242, i + 1, ph_, 6 if sync else 1))  # GPD_OP_SYNC, GPD_OP_KERNEL
        if sync:
            ev.append((pid, ts + 100, 0, i + 1, ts + 4100, 0, 6, 0, ph_, 0, 0))
            continue
        start = max(ts + 3000, sfree[st])
        sfree[st] = start + dur
        ev.append((pid, start, st, i + 1, start + dur, 0, 1, 0, k, 0, 0))
        tot[k] = tot.get(k, 0) + dur
    for k, ns in tot.items():
        metrics += [(pid, k, 0, ns), (pid, k, 1, ns), (pid, k, 49, n // len(sites))]
    c.executemany("INSERT INTO context VALUES (?, ?, ?, ?, ?, ?, ?, ?)", ctx)
    c.executemany("INSERT INTO frame VALUES (?, ?, ?, ?, ?, ?)", frames)
    c.executemany("INSERT INTO metric VALUES (?, ?, ?, ?)", metrics)
    c.executemany("INSERT INTO trace_event VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", ev)
    c.executemany("INSERT INTO trace_launch VALUES (?, ?, ?, ?, ?, ?)", la)
    c.execute("INSERT INTO trace_stat VALUES (?, ?, 0, 0)", (pid, 2 * n))
    c.commit()
    c.close()


def run(gpuprof, path, limit):
    env = dict(os.environ, GPUPROF_TIMINGS="1")
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    try:
        p = subprocess.run([gpuprof, "report", path], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           env=env, text=True, timeout=limit)
    except subprocess.TimeoutExpired:
        return None, None, []
    wall = time.monotonic() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    if p.returncode != 0:
        sys.exit("%s report failed (%d): %s" % (gpuprof, p.returncode, p.stderr[-2000:]))
    steps = [(m.group(1), float(m.group(2)))
             for m in re.finditer(r"^gpuprof: timing (.*) ([0-9.]+) s$", p.stderr, re.M)]
    return wall, cpu, steps


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpuprof", required=True)
    ap.add_argument("--baseline")
    ap.add_argument("--ops", type=int, default=1000000)
    ap.add_argument("--sync-every", type=int, default=20)
    ap.add_argument("--limit", type=float, default=300, help="s: a slower run is stopped and shown as > limit")
    ap.add_argument("--keep")
    ap.add_argument("--reuse", action="store_true", help="use the --keep file as it is when it exists")
    a = ap.parse_args()
    d = tempfile.mkdtemp()
    path = a.keep or os.path.join(d, "big.gpdb")
    t0 = time.monotonic()
    if not (a.reuse and a.keep and os.path.exists(path)):
        build(path, a.ops, a.sync_every)
    print("synthetic profile: %d GPU operations (every %dth a sync), 43-frame launch sites; built in %.1f s, %.0f MB"
          % (a.ops, a.sync_every, time.monotonic() - t0, os.path.getsize(path) / 1e6))
    print()
    print("load average %s (wall times on a shared machine; CPU = user + system of the report)"
          % open("/proc/loadavg").read().split()[0])
    print()
    print("| gpuprof | report wall s | report CPU s | steps (wall s) |")
    print("|---|---:|---:|---|")
    for label, exe in (("baseline", a.baseline), ("this build", a.gpuprof)):
        if not exe:
            continue
        wall, cpu, steps = run(exe, path, a.limit)
        print("| %s | %s | %s | %s |" % (label, "> %.0f" % a.limit if wall is None else "%.2f" % wall,
                                        "-" if cpu is None else "%.2f" % cpu,
                                        ", ".join("%s %.2f" % s for s in steps) or "(no step timings)"))
    if not a.keep:
        os.unlink(path)
        os.rmdir(d)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""gpuprof merge tests (docs/ANALYZER.md): exact statistics of known
profiles, merge of one input = the input, threads = one thread = MPI
ranks, bad inputs with and without --keep-going, job / uid selection and
per-user contexts, `report --stats`.

usage: test_merge.py --gpuprof PATH [--mpirun PATH] CASE
Exit 0 pass, 1 fail, 77 skip."""
import argparse
import json
import math
import os
import re
import shutil
import sqlite3
import struct
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpdb  # noqa: E402

GPUPROF = None
MPIRUN = None
M = {}  # metric name -> id


def check(cond, what):
    if not cond:
        print("FAIL: " + what)
        sys.exit(1)
    print("ok: " + what)


def run(args, timeout=120, env=None):
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.run(args, capture_output=True, text=True, timeout=timeout, env=e)
    return p.returncode, p.stdout, p.stderr


def merge(out, inputs, *opts, rc_want=0):
    rc, o, e = run([GPUPROF, "merge", "-o", out] + list(opts) + list(inputs))
    if rc != rc_want:
        print(o + e)
    check(rc == rc_want, "merge %s -> exit %d (want %d)" % (" ".join(opts), rc, rc_want))
    return e


def rows(path, sql):
    db = gpdb.connect(path)  # a sharded output read as one file
    r = db.execute(sql).fetchall()
    db.close()
    return r


def stat(path, ctx, metric, uid=1000):
    r = rows(path, "SELECT n, nz, sum, min, mean, max, stddev, cv, min_profile, max_profile, vals FROM stat "
                   "WHERE uid=%d AND context_id=%d AND metric_id=%d" % (uid, gpdb.s64(ctx), metric))
    return r[0] if r else None


def pmetric(path, profile_id):
    b = rows(path, "SELECT vals FROM pmetric WHERE profile_id=%d" % profile_id)[0][0]
    return {(struct.unpack_from("<Q", b, o)[0], struct.unpack_from("<I", b, o + 8)[0]):
            struct.unpack_from("<d", b, o + 12)[0] for o in range(0, len(b), 20)}


# Known job: contexts main(1) -> solve(2) -> kern(3), main -> io(4) -> copy(5)
CTX = [(1000, 1, 0, 1, "main"), (1000, 2, 1, 1, "solve"), (1000, 3, 2, 3, "kern"),
       (1000, 4, 1, 1, "io"), (1000, 5, 4, 3, "copy")]


def known_inputs(tmp):
    """3 node files, 4 processes (ranks 0..3): GKER at kern = 10, 20, -, 30;
    GXCOPY at copy only on rank 2 = 7."""
    K, X = M["GKER"], M["GXCOPY"]
    a, b, c = (os.path.join(tmp, n) for n in ("n0.gpdb", "n1.gpdb", "n2.gpdb"))
    gpdb.write(a, [dict(id=3, pid=100, uid=1000, rank=0, job="42", values={(3, K): 10.0, (2, K): 1.0}),
                   dict(id=8, pid=101, uid=1000, rank=1, job="42", values={(3, K): 20.0})],
               CTX[:3], frames=[(1000, 2, 0, "solve", "solve.c", 12)])
    gpdb.write(b, [dict(id=1, pid=200, uid=1000, rank=2, job="42", values={(5, X): 7.0})], CTX)
    gpdb.write(c, [dict(id=1, pid=300, uid=1000, rank=3, job="42", values={(3, K): 30.0})], CTX[:3])
    return [a, b, c]


def case_stats(tmp):
    ins = known_inputs(tmp)
    out = os.path.join(tmp, "job.gpdb")
    merge(out, ins, "-j", "2")
    check(rows(out, "SELECT value FROM meta WHERE key='format_version'") == [("3",)], "format_version 3")
    check(rows(out, "SELECT id, pid, rank FROM profile ORDER BY id") ==
          [(1, 100, 0), (2, 101, 1), (3, 200, 2), (4, 300, 3)], "profiles renumbered 1..4 in input order")
    check(sorted(r[0] for r in rows(out, "SELECT id FROM context")) == [1, 2, 3, 4, 5],
          "contexts: union by Merkle id, each once")
    check(rows(out, "SELECT function, file, line FROM frame") == [("solve", "solve.c", 12)], "frames kept")
    check(rows(out, "SELECT count(*) FROM metric") == [(0,)], "metric table empty (values in pmetric/stat)")
    n, nz, s, mn, mean, mx, sd, cv, minp, maxp, vals = stat(out, 3, M["GKER"])
    check((n, nz, s, mn, mean, mx, minp, maxp) == (4, 3, 60.0, 0.0, 15.0, 30.0, 3, 4),
          "kern GKER: n 4, nz 3, sum 60, min 0 (profile 3), mean 15, max 30 (profile 4)")
    check(abs(sd - math.sqrt(125.0)) < 1e-9 and abs(cv - math.sqrt(125.0) / 15) < 1e-12,
          "kern GKER: stddev sqrt(125), cv sqrt(125)/15 (population, absent = 0)")
    check([struct.unpack_from("<Id", vals, o) for o in range(0, len(vals), 12)] == [(1, 10.0), (2, 20.0), (4, 30.0)],
          "context-major values: (profile, value) in profile order, zeros absent")
    r = stat(out, 5, M["GXCOPY"])
    check(r[:10] == (4, 1, 7.0, 0.0, 1.75, 7.0, math.sqrt((5.25 ** 2 + 3 * 1.75 ** 2) / 4),
                     math.sqrt((5.25 ** 2 + 3 * 1.75 ** 2) / 4) / 1.75, 1, 3),
          "copy GXCOPY on one rank of 4: min 0 at profile 1, max at profile 3")
    check(rows(out, "SELECT count(*) FROM stat") == [(3,)], "one stat row per non-zero (context, metric)")
    check(pmetric(out, 1) == {(2, M["GKER"]): 1.0, (3, M["GKER"]): 10.0} and pmetric(out, 3) == {(5, M["GXCOPY"]): 7.0},
          "profile-major values per profile")
    # report reads the merged file like its inputs
    rc1, o1, _ = run([GPUPROF, "report", "--json", out])
    rc2, o2, _ = run([GPUPROF, "report", "--json"] + ins)
    check(rc1 == 0 and rc2 == 0, "report reads merged file and inputs")
    check(strip_json(o1) == strip_json(o2), "report of merged file = report of its inputs (tree, processes)")
    j = json.loads(run([GPUPROF, "report", "--json", "--pid", "300", out])[1])
    check(find_incl(j, "kern", "GKER") == 30, "report --pid 300 of merged file: kern GKER 30 (pmetric)")
    j = json.loads(run([GPUPROF, "report", "--json", out])[1])
    check(find_incl(j, "kern", "GKER") == 60, "report of merged file: kern GKER 60 (stat sums)")


def find_incl(doc, label, metric):
    found = []

    def walk(n):
        if n.get("label") == label:
            found.append(n.get("metrics", {}).get(metric, {}).get("incl", 0))
        for k in n.get("children", []):
            walk(k)
    walk(doc["tree"])
    return round(found[0]) if found else None


def strip_json(text):
    d = json.loads(text)
    for p in d.get("processes", []):
        p.pop("source", None)
        p.pop("profile_id", None)
    return d


def case_one(tmp):
    ins = known_inputs(tmp)
    out = os.path.join(tmp, "one.gpdb")
    merge(out, ins[:1])
    rc1, o1, _ = run([GPUPROF, "report", "--json", out])
    rc2, o2, _ = run([GPUPROF, "report", "--json", ins[0]])
    check(rc1 == 0 and strip_json(o1) == strip_json(o2), "merge of one input reports as the input (--json)")
    t1 = run([GPUPROF, "report", out])[1].splitlines()[1:]
    t2 = run([GPUPROF, "report", ins[0]])[1].splitlines()[1:]
    check(t1 == t2, "merge of one input: same text report")
    # and a merged file merges again to the same statistics
    out2 = os.path.join(tmp, "again.gpdb")
    merge(out2, [out])
    q = "SELECT uid, context_id, metric_id, n, nz, sum, min, mean, max, stddev, cv, min_profile, max_profile, vals FROM stat"
    check(rows(out, q) == rows(out2, q), "merged file re-merged alone: identical stat rows")


def same_tables(a, b, what):
    for t, q in (("profile", "SELECT * FROM profile ORDER BY id"), ("context", "SELECT * FROM context ORDER BY uid, id"),
                 ("frame", "SELECT * FROM frame ORDER BY uid, context_id, depth"),
                 ("backend", "SELECT * FROM backend ORDER BY profile_id, api"),
                 ("pmetric", "SELECT * FROM pmetric ORDER BY profile_id"),
                 ("stat", "SELECT * FROM stat ORDER BY uid, context_id, metric_id")):
        check(rows(a, q) == rows(b, q), "%s: %s identical" % (what, t))


def many_inputs(tmp, n=7):
    """n node files, 2 processes each, shared and private contexts."""
    K = M["GKER"]
    paths = []
    for i in range(n):
        p = os.path.join(tmp, "node%d.gpdb" % i)
        ctx = CTX[:3] + [(1000, 100 + i, 1, 1, "only%d" % i)]
        gpdb.write(p, [dict(id=2 * i + 1, pid=1000 + 2 * i, uid=1000, rank=2 * i,
                            values={(3, K): float(i + 1), (100 + i, K): 2.0}),
                       dict(id=2 * i + 2, pid=1001 + 2 * i, uid=1000, rank=2 * i + 1, values={(3, K): 0.5 * i})], ctx)
        paths.append(p)
    return paths


def case_threads(tmp):
    ins = many_inputs(tmp)
    a, b = os.path.join(tmp, "j1.gpdb"), os.path.join(tmp, "j4.gpdb")
    merge(a, ins, "-j", "1")
    merge(b, ins, "-j", "4")
    same_tables(a, b, "-j 1 vs -j 4")
    n, nz, s = stat(a, 3, M["GKER"])[:3]
    check((n, nz, s) == (14, 13, sum(i + 1 + 0.5 * i for i in range(7))), "kern over 14 processes, one zero")


# Open MPI's own allocations (MCA components it unloads) are reported as
# leaks in an ASan build; gpuprof's are checked by the other cases
MPI_ENV = {"OMPI_MCA_btl": "self,vader", "OMPI_MCA_btl_vader_single_copy_mechanism": "none",
           "OMPI_MCA_rmaps_base_oversubscribe": "1", "OMPI_ALLOW_RUN_AS_ROOT": "1",
           "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "ASAN_OPTIONS": "detect_leaks=0"}


def need_mpi():
    if not MPIRUN:
        print("SKIP: no mpirun")
        sys.exit(77)
    if not os.path.exists(os.path.join(os.path.dirname(GPUPROF), "gpuprof-merge-mpi")):
        print("SKIP: gpuprof built without MPI")
        sys.exit(77)


def case_mpi(tmp):
    need_mpi()
    ins = many_inputs(tmp)
    a, b = os.path.join(tmp, "thr.gpdb"), os.path.join(tmp, "mpi.gpdb")
    merge(a, ins, "-j", "1")
    env = MPI_ENV
    rc, o, e = run([MPIRUN, "--oversubscribe", "-np", "4", GPUPROF, "merge", "-o", b] + ins, env=env, timeout=150)
    print(o + e)
    check(rc == 0 and "4 ranks" in e, "mpirun -np 4 gpuprof merge: 4 ranks, exit 0")
    same_tables(a, b, "threads vs 4 MPI ranks")
    # a bad input on one rank: nothing written without --keep-going
    bad = os.path.join(tmp, "bad.gpdb")
    with open(bad, "wb") as f:
        f.write(b"not a profile at all" * 10)
    c = os.path.join(tmp, "mpi-bad.gpdb")
    rc, o, e = run([MPIRUN, "--oversubscribe", "-np", "4", GPUPROF, "merge", "-o", c] + ins + [bad], env=env,
                   timeout=150)
    check(rc != 0 and bad in e and not os.path.exists(c), "MPI: bad input named, nothing written")
    rc, o, e = run([MPIRUN, "--oversubscribe", "-np", "4", GPUPROF, "merge", "--keep-going", "-o", c] + ins + [bad],
                   env=env, timeout=150)
    check(rc == 3 and os.path.exists(c) and rows(c, "SELECT count(*) FROM profile") == [(14,)],
          "MPI --keep-going: exit 3, the 14 good processes merged")
    # GPU binaries and PC samples through the ranks: rank 0's input lacks
    # the binary, rank 1's has it (its part carries where it lies)
    fa, fb = fixture_copy(tmp, "fa", "missing"), fixture_copy(tmp, "fb")
    os.mkdir(os.path.join(tmp, "mpiout"))
    thr, mp = os.path.join(tmp, "thr-bins.gpdb"), os.path.join(tmp, "mpiout", "m.gpdb")
    merge(thr, [fa, fb], "-j", "1")
    rc, o, e = run([MPIRUN, "--oversubscribe", "-np", "2", GPUPROF, "merge", "-o", mp, fa, fb], env=env, timeout=150)
    check(rc == 0 and "note:" not in e, "MPI merge of PC-sampled profiles: exit 0, no note (%s)" % e.strip())
    check(read(os.path.join(tmp, "mpiout", "gpubins", GPUBIN_H + ".gpubin")) ==
          read(os.path.join(GPUBIN_FIX, "gpubins", GPUBIN_H + ".gpubin")),
          "MPI: the binary from rank 1's input copied beside the output, exact bytes")
    for t in ("pcsample", "pcsample_cubin", "pcsample_stat", "gpubin", "string"):
        q = "SELECT * FROM %s ORDER BY 1, 2, 3" % t
        check(rows(thr, q) == rows(mp, q), "MPI vs threads: %s identical" % t)


def spread_inputs(tmp, n=8):
    """n node files, 2 processes each (node 5's of uid 1001), 48 contexts
    whose ids spread over the whole signed 64-bit range (every owner's
    range of the partitioned MPI reduction holds some), frames, labels
    that differ per node (the first input's must win), node-own contexts."""
    K, G = M["GKER"], M["GPUOP"]
    ids = [(c * 0x0555555555555557 + 0x1234567) & 0xFFFFFFFFFFFFFFFF for c in range(48)]
    paths = []
    for i in range(n):
        uid = 1001 if i == 5 else 1000
        p = os.path.join(tmp, "spread%d.gpdb" % i)
        own = (0x8000000000000000 + 977 * (i + 1)) & 0xFFFFFFFFFFFFFFFF  # near the lowest signed id
        ctx = [(uid, cid, 0, 3, "k%d@node%d" % (c, i)) for c, cid in enumerate(ids)] + [(uid, own, 0, 1, "own%d" % i)]
        frames = [(uid, cid, d, "f%d_%d" % (c, d), "src%d.c" % i, c * 10 + d) for c, cid in enumerate(ids[:12])
                  for d in range(2)]
        procs = []
        for j in range(2):
            vals = {(cid, K): float((c * 7 + i * 3 + j) % 11) for c, cid in enumerate(ids) if (c + i + j) % 3}
            vals.update({(cid, G): 0.25 * (c + 1) * (i + 1) for c, cid in enumerate(ids) if c % 4 == j})
            vals[(own, K)] = 5.0 + i
            vals = {k: v for k, v in vals.items() if v}
            procs.append(dict(id=j + 1, pid=3000 + 2 * i + j, uid=uid, rank=2 * i + j, values=vals))
        gpdb.write(p, procs, ctx, frames)
        paths.append(p)
    return paths


def case_mpiranks(tmp):
    """-np 1, 2, 3, 4 = one thread: every table, `report --json`, and
    `report --stats` per metric; labels from the first input."""
    need_mpi()
    ins = spread_inputs(tmp)
    ref = os.path.join(tmp, "ref.gpdb")
    merge(ref, ins, "-j", "1")
    check(rows(ref, "SELECT count(*) FROM context") == [(48 * 2 + 8,)], "48 shared contexts per uid, 8 node-own")
    check(rows(ref, "SELECT DISTINCT substr(label, instr(label, '@')) FROM context WHERE uid = 1000 AND label LIKE "
                    "'k%'") == [("@node0",)], "labels of uid 1000 from the first input")

    def texts(path):
        out = []
        for args in (["--json"], ["--stats", "--metric", "GKER"], ["--stats", "--metric", "GPUOP"]):
            rc, o, e = run([GPUPROF, "report"] + args + [path])
            check(rc == 0 and o, "report %s %s" % (" ".join(args), os.path.basename(path)))
            out.append(o.replace(path, "FILE"))  # the file's name is in both
        return out

    want = texts(ref)
    for np_ in (1, 2, 3, 4):
        out = os.path.join(tmp, "np%d.gpdb" % np_)
        rc, o, e = run([MPIRUN, "--oversubscribe", "-np", str(np_), GPUPROF, "merge", "-o", out] + ins, env=MPI_ENV,
                       timeout=150)
        print(e)
        check(rc == 0 and ("%d ranks" % np_ in e or np_ == 1), "mpirun -np %d gpuprof merge: exit 0" % np_)
        same_tables(ref, out, "one thread vs %d ranks" % np_)
        check(rows(ref, "SELECT * FROM meta WHERE key NOT IN ('created_ns', 'host') ORDER BY key") ==
              rows(out, "SELECT * FROM meta WHERE key NOT IN ('created_ns', 'host') ORDER BY key"),
              "%d ranks: meta identical" % np_)
        check(texts(out) == want, "%d ranks: report --json and --stats identical" % np_)


def sharded_outputs(tmp, path):
    """What the readers make of a profile: report --json, --stats, --pid,
    export folded, trace (Chrome JSON); the file's name masked."""
    out = []
    for args in (["report", "--json"], ["report", "--stats", "--metric", "GKER"],
                 ["report", "--pid", "3003"], ["export", "--format", "folded"]):
        rc, o, e = run([GPUPROF] + args + [path])
        check(rc == 0 and o, "%s of %s" % (" ".join(args), os.path.basename(path)))
        out.append(o.replace(path, "FILE"))
    t = os.path.join(tmp, "t.json")
    rc, o, e = run([GPUPROF, "trace", "-o", t, "--format", "chrome", path])
    check(rc == 0, "trace of %s (%s)" % (os.path.basename(path), e.strip()))
    out.append(read(t))
    return out


def sharded_reads(tmp, ref, job, names, refusals=True):
    """job (sharded, shard files `names` beside it) reads as ref everywhere;
    merge of it alone is one ordinary file with ref's tables; (refusals) a
    deleted, truncated, linked or badly named shard is a clear error
    naming it."""
    same_tables(ref, job, "one thread vs sharded")
    want = sharded_outputs(tmp, ref)
    check(sharded_outputs(tmp, job) == want, "sharded: report, --stats, --pid, export folded, trace as one file")
    one = os.path.join(tmp, "one.gpdb")
    merge(one, [job])
    check(rows(one, "SELECT count(*) FROM sqlite_master WHERE name = 'shard'") == [(0,)] and
          not os.path.exists(one + ".shard-001"), "merge of a sharded file alone: one file")
    same_tables(ref, one, "one thread vs the sharded file assembled")
    if not refusals:
        return

    def refused(path, what, *needles, every=False):
        """every reader (report, --stats, export, merge) or report alone"""
        for args in (["report"], ["report", "--stats"], ["export", "--format", "folded"])[:3 if every else 1]:
            rc, o, e = run([GPUPROF] + args + [path])
            check(rc != 0 and all(n in e for n in needles), "%s %s: %s" % (" ".join(args), what, e.strip()))
        x = os.path.join(tmp, "x.gpdb")
        if every:
            rc, o, e = run([GPUPROF, "merge", "-o", x, path])
            check(rc != 0 and all(n in e for n in needles) and not os.path.exists(x), "merge %s: refused" % what)

    s2 = os.path.join(os.path.dirname(job), names[1])
    os.rename(s2, s2 + ".keep")
    refused(job, "with a deleted shard", names[1], "No such file", every=True)
    shutil.copy(s2 + ".keep", s2)
    os.truncate(s2, os.path.getsize(s2) - 4096)
    refused(job, "with a truncated shard", names[1], "truncated")
    os.unlink(s2)
    os.symlink(s2 + ".keep", s2)
    refused(job, "with a shard that is a link", names[1], "not a regular file")
    os.unlink(s2)
    with open(s2 + ".keep", "rb") as f, open(s2, "wb") as g:  # same size, other bytes: not a database
        g.write(b"x" * len(f.read()))
    refused(job, "with a shard that is no database", names[1])
    os.rename(s2 + ".keep", s2)
    check(sharded_outputs(tmp, job) == want, "shard back in place: read again")
    # names that leave the directory are refused before any file is opened
    for bad in ("../" + names[0], "sub/" + names[0], "..", ".hidden", ""):
        b = os.path.join(os.path.dirname(job), "bad.gpdb")
        shutil.copy(job, b)
        db = sqlite3.connect(b)
        db.execute("UPDATE shard SET name = ? WHERE ord = 1", (bad,))
        db.commit()
        db.close()
        refused(b, "with shard name %r" % bad, "refused name", every=bad == "..")
        os.unlink(b)


def case_shards(tmp):
    """A sharded MPI output (each rank k > 0 writes OUT.shard-00k): the
    files, rank 0's own range only, every reader as the one-thread merge
    (sharded_reads); --single-file."""
    need_mpi()
    ins = spread_inputs(tmp)
    ref = os.path.join(tmp, "ref.gpdb")
    merge(ref, ins, "-j", "1")
    job = os.path.join(tmp, "job.gpdb")
    rc, o, e = run([MPIRUN, "--oversubscribe", "-np", "4", GPUPROF, "merge", "-o", job] + ins, env=MPI_ENV,
                   timeout=150)
    print(e)
    check(rc == 0 and "4 ranks (sharded: 4 files)" in e, "mpirun -np 4 gpuprof merge: sharded, exit 0")
    names = ["job.gpdb.shard-%03d" % k for k in (1, 2, 3)]
    raw = sqlite3.connect("file:%s?mode=ro" % job, uri=True)
    check([r[0] for r in raw.execute("SELECT name FROM shard ORDER BY ord")] == names and
          all(os.path.isfile(os.path.join(tmp, n)) for n in names), "3 shard files beside the output, listed")
    own = raw.execute("SELECT count(*) FROM context").fetchone()[0]
    listed = raw.execute("SELECT sum(contexts), sum(profiles) FROM shard").fetchone()
    raw.close()
    total = rows(ref, "SELECT count(*) FROM context")[0][0]
    check(0 < own < total and own + listed[0] == total and listed[1] == 12,
          "rank 0's file holds its own range only (%d of %d contexts); the shards the rest" % (own, total))
    sharded_reads(tmp, ref, job, names, refusals=False)  # merge.shardread: the refusals
    single = os.path.join(tmp, "single.gpdb")
    rc, o, e = run([MPIRUN, "--oversubscribe", "-np", "3", GPUPROF, "merge", "--single-file", "-o", single] + ins,
                   env=MPI_ENV, timeout=150)
    check(rc == 0 and "(sharded)" not in e and not os.path.exists(single + ".shard-001"), "--single-file: one file")
    same_tables(ref, single, "one thread vs 3 ranks --single-file")
    # more ranks than shards (SQLite's attach limit, lowered here to 2):
    # ranks 0-2 own the ranges, ranks 3 and 4 only read and hand their
    # rows to the owners, their blobs to ranks 0 and 1 (rank % 3)
    grp = os.path.join(tmp, "grp.gpdb")
    rc, o, e = run([MPIRUN, "--oversubscribe", "-np", "5", GPUPROF, "merge", "-o", grp] + ins,
                   env=dict(MPI_ENV, GPD_MERGE_MAX_SHARDS="2"), timeout=150)
    check(rc == 0 and "5 ranks (sharded: 3 files)" in e and os.path.exists(grp + ".shard-002") and
          not os.path.exists(grp + ".shard-003"), "5 ranks, at most 2 shards: 3 files (%s)" % e.strip())
    raw = sqlite3.connect("file:%s?mode=ro" % grp, uri=True)
    # inputs per rank 1, 2, 1, 2, 2 (2 processes each)
    check(raw.execute("SELECT profiles FROM shard ORDER BY ord").fetchall() == [(8,), (2,)] and
          raw.execute("SELECT count(*) FROM pmetric").fetchone() == (6,),
          "blobs: rank 1's shard holds its and rank 4's processes, rank 0's file its and rank 3's")
    raw.close()
    same_tables(ref, grp, "one thread vs 5 ranks in 3 files")
    check(sharded_outputs(tmp, grp) == sharded_outputs(tmp, ref), "5 ranks in 3 files: every reader as one file")
    # a new merge under the same name removes the shards it does not name
    rc, o, e = run([MPIRUN, "--oversubscribe", "-np", "2", GPUPROF, "merge", "-o", job] + ins, env=MPI_ENV,
                   timeout=150)
    check(rc == 0 and os.path.exists(job + ".shard-001") and not os.path.exists(job + ".shard-002") and
          not os.path.exists(job + ".shard-003"), "2 ranks over the 4-rank output: 1 shard left")
    same_tables(ref, job, "one thread vs 2 ranks")
    merge(job, ins, "-j", "1")
    check(not os.path.exists(job + ".shard-001"), "one thread over it: no shard left")


def case_shardread(tmp):
    """The readers of sharded files without MPI (so under ASan too): the
    one-thread merge split into a main file and 3 shards by
    gpdb.shard_split, the way the MPI merge lays them out; every refusal,
    and a shard of another merge (its nonce) in place of one."""
    ins = spread_inputs(tmp)
    ref = os.path.join(tmp, "ref.gpdb")
    merge(ref, ins, "-j", "1")
    job = os.path.join(tmp, "job.gpdb")
    names = gpdb.shard_split(ref, job, 3)
    check(rows(job, "SELECT count(*) FROM context") == rows(ref, "SELECT count(*) FROM context"), "split: all rows")
    sharded_reads(tmp, ref, job, names)
    # a shard of another split (another nonce) in place of this one's
    other = os.path.join(tmp, "o", "job.gpdb")
    os.mkdir(os.path.dirname(other))
    gpdb.shard_split(ref, other, 3)
    s2 = os.path.join(tmp, names[1])
    check(os.path.getsize(other + ".shard-002") == os.path.getsize(s2), "another split: same sizes")
    shutil.copy(other + ".shard-002", s2)
    rc, o, e = run([GPUPROF, "report", job])
    check(rc != 0 and names[1] in e and "another merge" in e, "another merge's shard refused: " + e.strip())


def truncate_copy(src, dst):
    data = open(src, "rb").read()
    with open(dst, "wb") as f:
        f.write(data[:len(data) // 2])


def case_bad(tmp):
    ins = known_inputs(tmp)
    newer = os.path.join(tmp, "newer.gpdb")
    gpdb.write(newer, [dict(id=1, pid=9, uid=1000, values={})], CTX[:1], version=9)
    trunc = os.path.join(tmp, "trunc.gpdb")
    truncate_copy(ins[1], trunc)
    other = os.path.join(tmp, "othermetrics.gpdb")
    gpdb.write(other, [dict(id=1, pid=9, uid=1000, values={})], CTX[:1], metric_desc=["GKER", "GPUOP"])
    junk = os.path.join(tmp, "junk.gpdb")
    with open(junk, "w") as f:
        f.write("hello\n" * 100)
    out = os.path.join(tmp, "out.gpdb")
    for bad, word in ((newer, "newer"), (trunc, "truncated"), (other, "another version"), (junk, "not a gpuprof")):
        rc, o, e = run([GPUPROF, "merge", "-o", out] + ins + [bad])
        check(rc == 1 and bad in e and word in e and not os.path.exists(out),
              "%s: exit 1, error names the file (%s), nothing written" % (os.path.basename(bad), word))
    check(not [f for f in os.listdir(tmp) if f.startswith(".out.gpdb")], "no temporary file left behind")
    e = merge(out, [ins[0], newer, ins[1], trunc, ins[2]], "--keep-going", rc_want=3)
    check(newer in e and trunc in e and "2 of 5 inputs skipped" in e, "--keep-going names both skipped files")
    check(rows(out, "SELECT pid FROM profile ORDER BY id") == [(100,), (101,), (200,), (300,)],
          "--keep-going: the 3 good inputs' 4 processes merged")
    check(stat(out, 3, M["GKER"])[2] == 60.0, "--keep-going: sums of the good inputs")
    rc, o, e = run([GPUPROF, "merge", "-o", out, os.path.join(tmp, "missing.gpdb")])
    check(rc == 1 and "missing.gpdb" in e, "missing input named")
    rc, o, e = run([GPUPROF, "merge", "x.gpdb"])
    check(rc == 64 and "-o" in e, "no -o: usage error")


def case_select(tmp):
    K = M["GKER"]
    p = os.path.join(tmp, "store.gpdb")
    # a node store: job 42 of uid 1000 and job 43 of uid 2000 share a Merkle id with different labels
    gpdb.write(p, [dict(id=1, pid=10, uid=1000, job="42", values={(3, K): 5.0}),
                   dict(id=2, pid=11, uid=2000, job="43", values={(3, K): 9.0}),
                   dict(id=3, pid=12, uid=1000, job="42", values={(3, K): 1.0})],
               CTX[:3] + [(2000, 1, 0, 1, "secret_main"), (2000, 2, 1, 1, "secret_solve"),
                          (2000, 3, 2, 3, "secret_kernel")])
    out = os.path.join(tmp, "j42.gpdb")
    merge(out, [p], "--job", "42")
    check(rows(out, "SELECT pid FROM profile ORDER BY id") == [(10,), (12,)], "--job 42: its 2 processes")
    check(rows(out, "SELECT DISTINCT uid FROM context") == [(1000,)], "--job 42: no context rows of uid 2000")
    check("secret" not in run([GPUPROF, "report", out])[1], "--job 42: no label of the other user")
    check(stat(out, 3, K)[:3] == (2, 2, 6.0), "--job 42: statistics over its 2 processes")
    both = os.path.join(tmp, "both.gpdb")
    merge(both, [p])
    check(stat(both, 3, K, uid=1000)[:3] == (2, 2, 6.0) and stat(both, 3, K, uid=2000)[:3] == (1, 1, 9.0),
          "two users: statistics per uid over that uid's processes")
    check(rows(both, "SELECT label FROM context WHERE uid=2000 AND id=3") == [("secret_kernel",)],
          "two users: each keeps its own labels")
    u = os.path.join(tmp, "u2000.gpdb")
    merge(u, [p], "--uid", "2000")
    check(rows(u, "SELECT pid FROM profile") == [(11,)], "--uid 2000: its process only")


def case_reportstats(tmp):
    ins = many_inputs(tmp)
    out = os.path.join(tmp, "s.gpdb")
    merge(out, ins)
    rc, o, e = run([GPUPROF, "report", "--stats", "--metric", "GKER", out])
    print(o + e)
    lines = [l for l in o.splitlines() if "<-" in l]
    check(rc == 0 and lines, "report --stats lists contexts")
    # kern: values 1,0 / 2,0.5 / ... over 14 processes; onlyI: 2.0 on one of 14 -> cv sqrt(13) highest
    check(lines[0].split()[0] == "%.3f" % math.sqrt(13) and "only" in lines[0], "highest CV first (one-rank context)")
    kern = [l for l in lines if l.split("<-")[0].split()[-1] == "kern"][0]
    check("rank 1" in kern and "rank 12" in kern, "kern: min at rank 1 (0), max at rank 12 (7)")
    rc, o, e = run([GPUPROF, "report", "--stats", ins[0]])
    check(rc == 1 and "only `gpuprof merge` output" in e, "--stats on an unmerged file: clear error")
    # processes outside MPI (rank -1, as the daemon stores them): the
    # extremes are host:pid, never "rank -1"
    K = M["GKER"]
    plain = []
    for i in range(3):
        p = os.path.join(tmp, "plain%d.gpdb" % i)
        gpdb.write(p, [dict(id=1, pid=500 + i, uid=1000, rank=-1, values={(3, K): float(i + 1)})], CTX[:3])
        plain.append(p)
    out = os.path.join(tmp, "plain.gpdb")
    merge(out, plain)
    rc, o, e = run([GPUPROF, "report", "--stats", "--metric", "GKER", out])
    print(o + e)
    kern = [l for l in o.splitlines() if "<-" in l and l.split("<-")[0].split()[-1] == "kern"]
    check(rc == 0 and kern and "rank -1" not in o, "non-MPI processes: no 'rank -1'")
    check(re.search(r":500 .*:502 ", kern[0]) is not None, "kern: min at host:500, max at host:502: %r" % kern[0])


def case_slurm(tmp):
    """systemd/slurm/gpuprof-epilog.sh on a node store with two jobs of two
    users: the node file holds only the job's profiles, written with the
    user's rights; the controller step merges the node files."""
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        print("SKIP: needs root and setpriv (the epilog runs as root)")
        sys.exit(77)
    K = M["GKER"]
    os.chmod(tmp, 0o755)
    store = os.path.join(tmp, "store.gpdb")
    gpdb.write(store, [dict(id=1, pid=10, uid=65534, job="77", rank=0, values={(3, K): 5.0}),
                       dict(id=2, pid=11, uid=1000, job="78", rank=0, values={(3, K): 9.0}),
                       dict(id=3, pid=12, uid=65534, job="77", rank=1, values={(3, K): 1.0})],
               [(65534, 1, 0, 1, "main"), (65534, 2, 1, 1, "solve"), (65534, 3, 2, 3, "kern"),
                (1000, 3, 0, 3, "secret_kernel")])
    # a GPU binary job 77's first process loaded, in the store's gpubins/
    db = sqlite3.connect(store)
    db.execute("INSERT INTO gpubin VALUES(?, 'cubin', ?, ?, 1)",
               (GPUBIN_H, len(read(os.path.join(GPUBIN_FIX, "gpubins", GPUBIN_H + ".gpubin"))),
                "gpubins/%s.gpubin" % GPUBIN_H))
    db.commit()
    db.close()
    os.mkdir(os.path.join(tmp, "gpubins"), 0o700)
    shutil.copy(os.path.join(GPUBIN_FIX, "gpubins", GPUBIN_H + ".gpubin"), os.path.join(tmp, "gpubins"))
    os.chmod(store, 0o600)
    shared = os.path.join(tmp, "shared")
    os.mkdir(shared)
    os.chown(shared, 65534, 65534)
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "systemd", "slurm",
                          "gpuprof-epilog.sh")
    env = {"GPUPROF": os.path.abspath(GPUPROF), "GPUPROF_JOB_DIR": shared, "GPUPROF_STORE": store,
           "SLURM_JOB_ID": "77", "SLURM_JOB_UID": "65534", "SLURM_JOB_GID": "65534"}
    rc, o, e = run(["sh", script], env=env)
    node = [f for f in os.listdir(os.path.join(shared, "77")) if f != "gpubins"]
    check(rc == 0 and len(node) == 1 and node[0].endswith(".gpdb"), "node epilog: one node file (%s %s)" % (node, e))
    nf = os.path.join(shared, "77", node[0])
    st = os.stat(nf)
    check(st.st_uid == 65534 and st.st_mode & 0o077 == 0, "node file written as the user, private")
    check(rows(nf, "SELECT pid FROM profile ORDER BY id") == [(10,), (12,)], "node file: only job 77's processes")
    check(rows(nf, "SELECT DISTINCT uid FROM context") == [(65534,)], "node file: only the user's contexts")
    nb = os.path.join(shared, "77", "gpubins", GPUBIN_H + ".gpubin")
    check(os.path.exists(nb) and os.stat(nb).st_uid == 65534 and
          read(nb) == read(os.path.join(GPUBIN_FIX, "gpubins", GPUBIN_H + ".gpubin")),
          "node epilog: the job's GPU binary beside the node file, the user's, exact bytes")
    env.update({"SLURM_SCRIPT_CONTEXT": "epilog_slurmctld", "GPUPROF_WAIT": "1"})
    rc, o, e = run(["sh", script], env=env)
    job = os.path.join(shared, "77.gpdb")
    check(rc == 0 and os.path.exists(job) and os.stat(job).st_uid == 65534, "controller epilog: job file, user's")
    check(stat(job, 3, K, uid=65534)[:3] == (2, 2, 6.0), "job file: statistics over the job's 2 processes")
    jb = os.path.join(shared, "gpubins", GPUBIN_H + ".gpubin")
    check(os.path.exists(jb) and os.stat(jb).st_uid == 65534, "controller epilog: GPU binary beside the job file")
    rc, o, e = run(["sh", script], env={"GPUPROF_JOB_DIR": "", "SLURM_JOB_ID": "77"})
    check(rc == 0, "epilog without GPUPROF_JOB_DIR: does nothing, exits 0")


GPUBIN_FIX = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gpuanalysis", "fixtures", "h100")
GPUBIN_H = "c093beaf1608ac1626d8f4a117d40950"  # the one binary of the H100 fixture


def fixture_copy(tmp, name, binary="keep"):
    """The H100 PC-sampling profile (its store and gpubins/) in tmp/name;
    binary: keep, missing, garbage (other bytes under the hash's name) or
    link (a symbolic link to the real file)."""
    d = os.path.join(tmp, name)
    shutil.copytree(GPUBIN_FIX, d)
    b = os.path.join(d, "gpubins", GPUBIN_H + ".gpubin")
    if binary == "missing":
        os.unlink(b)
    elif binary == "garbage":
        with open(b, "wb") as f:
            f.write(b"\x7fELF" + b"\0" * 4000)
    elif binary == "link":
        os.unlink(b)
        os.symlink(os.path.join(GPUBIN_FIX, "gpubins", GPUBIN_H + ".gpubin"), b)
    return os.path.join(d, "known.gpdb")


def read(path):
    with open(path, "rb") as f:
        return f.read()


def case_gpubins(tmp):
    fix_bin = read(os.path.join(GPUBIN_FIX, "gpubins", GPUBIN_H + ".gpubin"))
    fix_dis = read(os.path.join(GPUBIN_FIX, "gpubins", GPUBIN_H + ".nvdisasm"))
    env = {"GPUPROF_NVDISASM": "0"}  # the saved nvdisasm text or nothing
    # two inputs referring to the same binary: copied once, exact bytes
    a, b = fixture_copy(tmp, "a"), fixture_copy(tmp, "b")
    os.mkdir(os.path.join(tmp, "out"))
    out = os.path.join(tmp, "out", "m.gpdb")
    e = merge(out, [a, b])
    bins = os.path.join(tmp, "out", "gpubins")
    check(sorted(os.listdir(bins)) == [GPUBIN_H + ".gpubin", GPUBIN_H + ".nvdisasm"],
          "gpubins/ beside the merged file: the binary and its nvdisasm text, once (%s)" % os.listdir(bins))
    check(read(os.path.join(bins, GPUBIN_H + ".gpubin")) == fix_bin, "copied binary: exact bytes")
    check(read(os.path.join(bins, GPUBIN_H + ".nvdisasm")) == fix_dis, "copied nvdisasm text: exact bytes")
    check(os.stat(os.path.join(bins, GPUBIN_H + ".gpubin")).st_mode & 0o777 == 0o600, "copied binary is 0600")
    check("1 referred to, 1 copied" in e, "summary counts one binary copied: " + e.strip().splitlines()[-1])
    check(rows(out, "SELECT hash, size, path FROM gpubin") ==
          [(GPUBIN_H, len(fix_bin), "gpubins/%s.gpubin" % GPUBIN_H)], "one gpubin row")
    n_in = rows(a, "SELECT COUNT(*), SUM(samples) FROM pcsample")[0]
    check(rows(out, "SELECT COUNT(*), SUM(samples) FROM pcsample")[0] == (2 * n_in[0], 2 * n_in[1]),
          "PC samples of both inputs carried")
    check(rows(out, "SELECT profile_id, hash FROM pcsample_cubin ORDER BY 1") == [(1, GPUBIN_H), (2, GPUBIN_H)],
          "pcsample_cubin renumbered per profile")
    check(rows(out, "SELECT COUNT(*) FROM pcsample_stat") == [(2,)], "pcsample_stat of both profiles")
    # merged again into the same folder: the binary is there already
    e = merge(out, [a])
    check("0 copied beside" in e and "1 already there" in e, "second merge into the folder: binary already there")
    # one input: `report --gpu-detail` of the merged file = of the input
    one = os.path.join(tmp, "out", "one.gpdb")
    merge(one, [a])
    rc1, o1, e1 = run([GPUPROF, "report", "--gpu-detail", "--json", one], env=env)
    rc2, o2, _ = run([GPUPROF, "report", "--gpu-detail", "--json", a], env=env)
    check(rc1 == 0 and "not found" not in e1, "report --gpu-detail of the merged file finds the binary: " + e1.strip())
    check(strip_json(o1) == strip_json(o2), "report --gpu-detail of a one-input merge = of the input (--json)")
    check("0x0290 FFMA" in run([GPUPROF, "report", "--gpu-detail", one], env=env)[1],
          "merged file's GPU detail shows instructions")
    # a binary missing, not matching its hash, or a link: a note each, the merge done
    for how, why in (("missing", "not found"), ("garbage", "does not match its hash"), ("link", "")):
        d = os.path.join(tmp, "out-" + how)
        os.mkdir(d)
        o = os.path.join(d, "m.gpdb")
        e = merge(o, [fixture_copy(tmp, how, how)])
        check(os.path.exists(o), "%s binary: merged file written" % how)
        check(("note: GPU binary " + GPUBIN_H) in e and why in e and "1 missing" in e,
              "%s binary: a note naming it: %s" % (how, e.strip().splitlines()[0]))
        check(not os.path.exists(os.path.join(d, "gpubins", GPUBIN_H + ".gpubin")), "%s binary: not copied" % how)
        rc, ro, re_ = run([GPUPROF, "report", "--gpu-detail", o], env=env)
        check(rc == 0 and "GPU binary %s not found" % GPUBIN_H in ro + re_, "%s binary: report notes it missing" % how)
    # missing beside the first input, there beside the second: copied, no note
    d = os.path.join(tmp, "out-second")
    os.mkdir(d)
    e = merge(os.path.join(d, "m.gpdb"), [os.path.join(tmp, "missing", "known.gpdb"), b])
    check("note:" not in e and read(os.path.join(d, "gpubins", GPUBIN_H + ".gpubin")) == fix_bin,
          "binary missing beside one input: copied from the other's")
    # a destination folder others can write to is not used
    d = os.path.join(tmp, "out-open")
    os.makedirs(os.path.join(d, "gpubins"))
    os.chmod(os.path.join(d, "gpubins"), 0o777)
    e = merge(os.path.join(d, "m.gpdb"), [a])
    check("not a folder of this user that only it can write to" in e and
          os.listdir(os.path.join(d, "gpubins")) == [], "gpubins/ writable by others: nothing copied, a note")


def main():
    global GPUPROF, MPIRUN, M
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpuprof", required=True)
    ap.add_argument("--mpirun")
    ap.add_argument("case")
    a = ap.parse_args()
    GPUPROF = a.gpuprof
    MPIRUN = a.mpirun or shutil.which("mpirun")
    M = gpdb.metric_ids(GPUPROF)
    tmp = tempfile.mkdtemp(prefix="gpd-merge-")
    try:
        globals()["case_" + a.case](tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("PASS")


if __name__ == "__main__":
    main()

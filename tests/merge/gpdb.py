"""Small writer of format-2 profile stores (docs/FORMATS.md) for the merge
tests: the schema is read from store/store-schema.h, the
one the daemon creates, so the inputs are what a daemon would write."""
import os
import re
import sqlite3
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMA_H = os.path.join(HERE, "..", "..", "store", "store-schema.h")


def schema():
    text = open(SCHEMA_H).read()
    body = text[text.index("#define GPD_STORE_SCHEMA"):]
    body = body[:body.index("#endif")]
    return "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', body))


def s64(x):
    """uint64 Merkle id -> SQLite's signed 64-bit integer (same bits)."""
    return struct.unpack("<q", struct.pack("<Q", x))[0]


def metric_ids(gpuprof):
    """name -> id from `gpuprof metrics` (ids are the line order)."""
    import subprocess
    out = subprocess.run([gpuprof, "metrics"], capture_output=True, text=True, check=True).stdout
    return {line.split()[0]: i for i, line in enumerate(out.splitlines())}


def write(path, profiles, contexts, frames=(), version=2, metric_desc=None):
    """profiles: dicts with id, pid, uid, (job, rank, host) and values
    {(ctx, metric_id): value}; contexts: (uid, id, parent, kind, label);
    frames: (uid, ctx, depth, function, file, line)."""
    if os.path.exists(path):
        os.unlink(path)
    db = sqlite3.connect(path)
    db.executescript(schema())
    db.execute("PRAGMA user_version=%d" % version)
    db.executemany("INSERT INTO meta VALUES(?,?)",
                   [("format", "gpuprof"), ("format_version", str(version)), ("host", "testhost"),
                    ("created_ns", "1"), ("clock", "CLOCK_MONOTONIC_RAW")])
    for i, name in enumerate(metric_desc or []):
        db.execute("INSERT INTO metric_desc VALUES(?,?,?,?)", (i, name, "ns", name))
    for p in profiles:
        db.execute("INSERT INTO profile(id, pid, uid, gid, exe, hostname, job_id, rank, start_ns, end_ns, state,"
                   " records) VALUES(?,?,?,?,?,?,?,?,?,?,?,?)",
                   (p["id"], p["pid"], p["uid"], p["uid"], "/bin/app", p.get("host", "node"), p.get("job"),
                    p.get("rank"), 100, 200, "exited", 7))
        db.execute("INSERT INTO backend VALUES(?,?,?,?,?)", (p["id"], "opencl", 1, 0, None))
        for (ctx, m), v in sorted(p["values"].items()):
            db.execute("INSERT INTO metric VALUES(?,?,?,?)", (p["id"], s64(ctx), m, v))
    for uid, cid, parent, kind, label in contexts:
        db.execute("INSERT INTO context(uid, id, parent, kind, module, offset, label) VALUES(?,?,?,?,?,?,?)",
                   (uid, s64(cid), s64(parent), kind, "/bin/app", cid & 0xffff, label))
    for uid, cid, depth, fn, file, line in frames:
        db.execute("INSERT INTO frame VALUES(?,?,?,?,?,?,0)", (uid, s64(cid), depth, fn, file, line))
    db.commit()
    db.close()


def connect(path):
    """Open a saved profile read-only as gpuprof's readers do
    (store/shard-read.c): a sharded merged file's shards attached and its
    split tables shadowed by TEMP VIEWs over main's and the shards' rows."""
    db = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
    if not db.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='shard'").fetchall():
        return db
    d = os.path.dirname(os.path.realpath(path))
    names = [r[0] for r in db.execute("SELECT name FROM shard ORDER BY ord")]
    for i, n in enumerate(names):
        assert "/" not in n and ".." not in n, n
        db.execute("ATTACH ? AS s%d" % i, ("file:%s?mode=ro" % os.path.join(d, n),))
    for t in ("context", "frame", "stat", "pmetric"):
        db.execute("CREATE TEMP VIEW %s AS SELECT * FROM main.%s%s" %
                   (t, t, "".join(" UNION ALL SELECT * FROM s%d.%s" % (i, t) for i in range(len(names)))))
    return db


def shard_split(src, dst, n):
    """Copy merged file src to dst as a sharded file of n shards laid out
    as `mpirun -np n+1 gpuprof merge` writes them (docs/FORMATS.md): shard
    k holds the contexts, frames and stat rows of the k-th of n+1
    consecutive id ranges and the pmetric blobs of the k-th of n+1 profile
    ranges; dst keeps range 0 and a `shard` table.  Returns the names."""
    import shutil
    shutil.copy(src, dst)
    db = sqlite3.connect(dst)
    ids = sorted({r[0] for r in db.execute("SELECT id FROM context")})
    pids = sorted(r[0] for r in db.execute("SELECT profile_id FROM pmetric"))
    schema = {r[0]: r[1] for r in db.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'")}
    nonce = "%032x" % (hash(dst) & (2 ** 128 - 1))
    names = []
    for k in range(1, n + 1):
        name = "%s.shard-%03d" % (os.path.basename(dst), k)
        path = os.path.join(os.path.dirname(dst), name)
        if os.path.exists(path):
            os.unlink(path)
        lo, hi = ids[len(ids) * k // (n + 1)], ids[len(ids) * (k + 1) // (n + 1) - 1]
        plo, phi = pids[len(pids) * k // (n + 1)], pids[len(pids) * (k + 1) // (n + 1) - 1]
        db.execute("ATTACH ? AS s", (path,))
        for t in ("context", "frame", "stat", "pmetric"):
            db.execute(schema[t].replace("CREATE TABLE %s" % t, "CREATE TABLE s.%s" % t, 1))
        db.execute("CREATE TABLE s.shard_of(nonce TEXT NOT NULL, ord INTEGER NOT NULL)")
        db.execute("INSERT INTO s.shard_of VALUES(?, ?)", (nonce, k))
        for t, col in (("context", "id"), ("frame", "context_id"), ("stat", "context_id")):
            db.execute("INSERT INTO s.%s SELECT * FROM main.%s WHERE %s BETWEEN ? AND ?" % (t, t, col), (lo, hi))
            db.execute("DELETE FROM main.%s WHERE %s BETWEEN ? AND ?" % (t, col), (lo, hi))
        db.execute("INSERT INTO s.pmetric SELECT * FROM main.pmetric WHERE profile_id BETWEEN ? AND ?", (plo, phi))
        db.execute("DELETE FROM main.pmetric WHERE profile_id BETWEEN ? AND ?", (plo, phi))
        db.commit()
        db.execute("DETACH s")
        names.append(name)
    db.execute("CREATE TABLE shard(ord INTEGER PRIMARY KEY, name TEXT NOT NULL, bytes INTEGER NOT NULL,"
               " xxh64 TEXT NOT NULL, nonce TEXT NOT NULL, contexts INTEGER NOT NULL, keys INTEGER NOT NULL,"
               " profiles INTEGER NOT NULL)")
    for k, name in enumerate(names, 1):
        size = os.path.getsize(os.path.join(os.path.dirname(dst), name))
        db.execute("INSERT INTO shard VALUES(?, ?, ?, '0', ?, 0, 0, 0)", (k, name, size, nonce))
    db.commit()
    db.close()
    return names

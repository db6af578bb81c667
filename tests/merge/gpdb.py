"""Small writer of format-2 profile stores (docs/FORMATS.md) for the merge
tests: the schema is read from common/include/gpuprof/store-schema.h, the
one the daemon creates, so the inputs are what a daemon would write."""
import os
import re
import sqlite3
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMA_H = os.path.join(HERE, "..", "..", "common", "include", "gpuprof", "store-schema.h")


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

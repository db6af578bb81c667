#!/usr/bin/env python3
"""Tests of the gpuprof CLI (tests/cli.cmake).

usage: test_cli.py --gpuprof PATH CASE

The profile fixture (fixture.sql, the schema of docs/FORMATS.md) has known
numbers: root GPUOP 6 ms, GKER 5 ms; see the comment at its top.  Each case
exits 0 on success, 1 on a failed assertion (with a message).
"""
import argparse
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import re

HERE = os.path.dirname(os.path.abspath(__file__))
GPUPROF = None
FAKED = None
APP = None
FAILS = []


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL:", what)


def run(args, env=None, timeout=60, cwd=None):
    e = dict(os.environ)
    if env:
        e.update(env)
    p = subprocess.run([GPUPROF] + args, capture_output=True, text=True, env=e, timeout=timeout, cwd=cwd)
    return p.returncode, p.stdout, p.stderr


def make_db(path, extra_sql=""):
    if os.path.exists(path):
        os.unlink(path)
    c = sqlite3.connect(path)
    with open(os.path.join(HERE, "fixture.sql")) as f:
        c.executescript(f.read())
    if extra_sql:
        c.executescript(extra_sql)
    c.commit()
    c.close()


def make_deep_db(path, depth):
    """A chain of depth CPU frames (f0..f6, deep.c) with deep_kernel at the
    bottom: GPUOP = GKER = 7000 ns, GKER:COUNT 7."""
    make_db(path, "DELETE FROM metric; DELETE FROM frame; DELETE FROM context;")
    c = sqlite3.connect(path)
    c.execute("INSERT INTO context VALUES (1, 0, 0, NULL, NULL, 0, '<program root>', NULL)")
    c.executemany("INSERT INTO context VALUES (?, ?, 1, '/opt/app/bin/app', NULL, ?, ?, NULL)",
                  ((i, i - 1, i, "f%d" % (i % 7)) for i in range(2, depth + 2)))
    c.executemany("INSERT INTO frame VALUES (?, 0, ?, 'deep.c', ?, 0)",
                  ((i, "f%d" % (i % 7), i % 100) for i in range(2, depth + 2)))
    c.execute("INSERT INTO context VALUES (?, ?, 2, NULL, NULL, 0, '<gpu kernel>', NULL)", (depth + 2, depth + 1))
    c.execute("INSERT INTO context VALUES (?, ?, 3, NULL, NULL, 0, 'deep_kernel', NULL)", (depth + 3, depth + 2))
    c.execute("INSERT INTO metric VALUES (1, ?, 0, 7000)", (depth + 3,))  # GPUOP
    c.execute("INSERT INTO metric VALUES (1, ?, 1, 7000)", (depth + 3,))  # GKER
    c.execute("INSERT INTO metric VALUES (1, ?, 49, 7)", (depth + 3,))    # GKER:COUNT
    c.commit()
    c.close()


def line_with(text, needle):
    """The first line with needle in the tree or flat profile (after the
    report's summary tables), else anywhere."""
    for head in ("Calling context tree", "Flat profile"):
        if head in text:
            text = text[text.index(head):]
            break
    for l in text.splitlines():
        if needle in l:
            return l
    return None


def cols(line):
    return line.split() if line else []


# ---------------------------------------------------------------- cases

def case_report(tmp):
    db = os.path.join(tmp, "p.gpdb")
    make_db(db)
    rc, out, err = run(["report", db])
    check(rc == 0, "report exits 0 (rc=%d, err=%s)" % (rc, err))
    check("2 processes" in out, "header names 2 processes")
    # a pid the file does not have: an error, not an empty report
    # the summaries come first (as nsys stats): kernels by GKER with their
    # short names, then the other operations
    check(out.index("Kernels (GKER): ") < out.index("GPU operations other than kernels") <
          out.index("Calling context tree"), "summaries first")
    krow = [l for l in out.splitlines() if l.endswith("  axpy_kernel")]
    check(len(krow) == 1 and cols(krow[0])[:4] == ["0.005000", "100.0%", "16", "312.500"], "kernel summary row %r" % krow)
    crow = [l for l in out.splitlines() if l.endswith("  <gpu copy>")]
    check(len(crow) == 1 and cols(crow[0])[:2] == ["0.001000", "100.0%"], "operation summary row %r" % crow)
    rc2, out2, err2 = run(["report", "--long-names", db])
    check(rc2 == 0 and any(l.endswith("  axpy_kernel(float*)") for l in out2.splitlines()), "--long-names")
    rc2, out2, err2 = run(["report", "--pid", "424242", db])
    check(rc2 == 1 and "no process 424242 in " in err2 and out2 == "", "--pid not in the file: rc=%d %r" % (rc2, err2))
    # PC samples asked of a profile without CUDA (its cuda back end failed): CUDA-only, not "record with ..."
    rc2, out2, err2 = run(["report", "--gpu-detail", db])
    check(rc2 == 0 and "PC sampling is CUDA-only" in err2 and "GPUPROF_PC_SAMPLING=1" not in err2,
          "--gpu-detail without CUDA: %r" % err2)
    rc2, out2, err2 = run(["advise", db])
    check("PC sampling is CUDA-only" in out2 + err2 and "GPUPROF_PC_SAMPLING=1" not in out2 + err2,
          "advise without CUDA: %r" % (out2 + err2))
    # tree lines cut to the terminal width (COLUMNS): "..." ends a cut
    # line, which ends at column 100 unless 24 characters of its text are
    # all that is left; --wide (and output to a pipe without COLUMNS, as
    # above) cuts nothing
    rc2, out2, err2 = run(["report", db], env={"COLUMNS": "100"})
    tree = out2[out2.index("Calling context tree"):].split("\n\n")[0].splitlines()[2:]
    cut = [l for l in tree if l.endswith("...")]
    check(rc2 == 0 and len(cut) >= 10 and all(len(l) == 100 or len(l[75:].lstrip()) == 24 for l in cut) and
          all(len(l) <= 100 for l in tree if "[inlined]" not in l and not l.endswith("...")),
          "COLUMNS=100: tree lines %r" % [(len(l), l) for l in tree])
    rc2, out2, err2 = run(["report", "--wide", db], env={"COLUMNS": "100"})
    check(rc2 == 0 and "..." not in out2 and "{GXCOPY:H2D=1.00 MiB, GKER:COUNT=16, GXCOPY:COUNT=2}" in out2,
          "--wide cuts nothing")
    check("..." not in out, "a pipe without COLUMNS cuts nothing")
    root = cols(line_with(out, "<program root>"))
    # GPUOP incl, %, excl, GKER incl, %, excl
    check(root[:6] == ["0.006000", "100.0%", "0", "0.005000", "100.0%", "0"], "root values %r" % root[:6])
    solve = cols(line_with(out, "solve (solve.c:20)"))
    check(solve[:6] == ["0.005000", "83.3%", "0", "0.005000", "100.0%", "0"], "solve values %r" % solve[:6])
    copy = cols(line_with(out, "<gpu copy>"))
    check(copy[:6] == ["0.001000", "16.7%", "0.001000", "0", "0.0%", "0"], "copy values %r" % copy[:6])
    check("GXCOPY:H2D=1.00 MiB" in (line_with(out, "<gpu copy>") or ""), "copy shows 1 MiB H2D")
    k = line_with(out, "axpy_kernel(float*)  {GKER:COUNT=15}")
    check(k is not None and cols(k)[:3] == ["0.004000", "66.7%", "0.004000"], "merged kernel (2 profiles) %r" % k)
    # shape: indentation grows along the path; inlined frame nested under solve
    lines = out.splitlines()
    ctx_col = line_with(out, "calling context").index("calling context")

    def indent(needle):
        l = line_with(out, needle)
        return len(l[ctx_col:]) - len(l[ctx_col:].lstrip()) if l else -1

    check(indent("<program root>") < indent("main (app.c:10)") < indent("solve (solve.c:20)"), "main below root, solve below main")
    check(indent("[inlined] axpy_launch (vec.h:5)") > indent("solve (solve.c:20)"), "inlined frame nested")
    check(indent("solve (solve.c:31)") > indent("[inlined] axpy_launch"), "recursive solve below the inlined frame")
    check(indent("copy_in (copy.c:7)") == indent("solve (solve.c:20)"), "copy_in sibling of solve")
    # order: solve (5 ms) before copy_in (1 ms); zero subtree 'idle' hidden
    i_solve = [i for i, l in enumerate(lines) if "solve (solve.c:20)" in l][0]
    i_copy = [i for i, l in enumerate(lines) if "copy_in" in l][0]
    check(i_solve < i_copy, "children sorted by GPUOP")
    check(line_with(out, "idle") is None, "zero-metric subtree hidden")
    # processes, back ends, gpubins
    p1 = cols(line_with(out, " 1001 "))
    check(p1[:7] == ["1001", "77", "0", "exited", "100", "3", "-cuda,opencl"], "process 1001 row %r" % p1)
    check('error: ring 3: index out of range "x\\y"' in out, "process error shown")
    check(line_with(out, "cuda     pid 1001: libcuda.so.1: cannot open shared object file (code -4191)") is not None,
          "disabled back end and why")
    check(line_with(out, "0123456789abcdef0123456789abcdef cubin") is not None, "gpubin listed")
    # a WAL database: the read-only open leaves no -wal/-shm behind
    wal = os.path.join(tmp, "w.gpdb")
    make_db(wal, "PRAGMA journal_mode=WAL;")
    rc, out, err = run(["report", wal])
    check(rc == 0 and not os.path.exists(wal + "-wal") and not os.path.exists(wal + "-shm"), "no -wal/-shm left")
    # --depth 1: root and main only
    rc, out, err = run(["report", "--depth", "1", db])
    check(rc == 0 and line_with(out, "main (app.c:10)") and not line_with(out, "solve"), "--depth 1 cuts below main")
    # --pid 1002: only the second profile's kernel
    rc, out, err = run(["report", "--pid", "1002", db])
    root = cols(line_with(out, "<program root>"))
    check(rc == 0 and root[:1] == ["0.001000"] and "1 process" in out, "--pid 1002 root 0.001 s: %r" % root)
    check(line_with(out, "copy_in") is None, "--pid 1002 has no copy")
    # --metric GXCOPY:H2D: a column of its own, sorted by it
    rc, out, err = run(["report", "--metric", "GXCOPY:H2D", db])
    hdr = line_with(out, "calling context")
    check(rc == 0 and hdr.split()[0] == "GXCOPY:H2D:incl", "--metric adds the first column: %r" % hdr)
    c = cols(line_with(out, "copy_in (copy.c:7)"))
    check(c[:2] == ["1048576", "100.0%"], "copy_in H2D bytes %r" % c[:2])
    # two files merge by context id: values double
    db2 = os.path.join(tmp, "q.gpdb")
    make_db(db2)
    rc, out, err = run(["report", db, db2])
    root = cols(line_with(out, "<program root>"))
    check(rc == 0 and root[:1] == ["0.012000"] and "4 processes" in out, "two files merged: %r" % root[:2])


def case_json(tmp):
    db = os.path.join(tmp, "p.gpdb")
    make_db(db)
    rc, out, err = run(["report", "--json", db])
    check(rc == 0, "report --json exits 0")
    try:
        doc = json.loads(out)
    except ValueError as e:
        check(False, "valid JSON: %s" % e)
        return
    t = doc["tree"]
    check(t["kind"] == "root" and t["metrics"]["GPUOP"] == {"id": 0, "unit": "ns", "excl": 0, "incl": 6000000},
          "root GPUOP %r" % t["metrics"].get("GPUOP"))
    check(t["metrics"]["GKER:COUNT"]["incl"] == 16, "root launch count 16")
    main = t["children"]
    check(len(main) == 1 and main[0]["label"] == "main", "root has one child main")
    kids = main[0]["children"]
    check([k["label"] for k in kids] == ["solve", "copy_in"], "main's children %r (idle hidden)" % [k["label"] for k in kids])
    solve = kids[0]
    check(solve["frames"] == [{"function": "solve", "file": "solve.c", "line": 20, "inlined": False},
                              {"function": "axpy_launch", "file": "vec.h", "line": 5, "inlined": True}], "solve frames")
    ph = solve["children"][0]
    check(ph["kind"] == "placeholder" and ph["label"] == "<gpu kernel>", "placeholder below solve")
    k = ph["children"][0]
    check(k["kind"] == "kernel" and k["id"] == "9000000000000000" and k["raw_name"] == "_Z11axpy_kernelPf",
          "kernel id/raw name %r %r" % (k["id"], k["raw_name"]))
    m = k["metrics"]
    check(m["GKER"]["excl"] == 4000000 and m["GKER"]["incl"] == 4000000, "kernel GKER merged over profiles")
    check(m["GKER:COUNT"]["excl"] == 15, "kernel launches 15")
    check(m["GKER:THR_REG"]["unit"] == "mean" and m["GKER:THR_REG"]["excl"] == 32, "mean register count 32: %r"
          % m["GKER:THR_REG"])
    copy = kids[1]["children"][0]
    check(copy["metrics"]["GXCOPY:H2D"] == {"id": 25, "unit": "bytes", "excl": 1048576, "incl": 1048576}, "copy bytes")
    procs = doc["processes"]
    check([p["pid"] for p in procs] == [1001, 1002], "processes")
    check(procs[1]["error"] == 'ring 3: index out of range "x\\y"\tend', "escaped error string round-trips")
    check(doc["backends_disabled"] == [{"pid": 1001, "api": "cuda", "code": -4191,
                                        "reason": "libcuda.so.1: cannot open shared object file"}], "backends_disabled")
    check(doc["gpubins"] == [{"hash": "0123456789abcdef0123456789abcdef", "kind": "cubin", "size": 4096,
                              "path": "gpubins/0123456789abcdef0123456789abcdef.gpubin"}], "gpubins")
    # control characters and non-ASCII in labels stay valid JSON
    make_db(db, "UPDATE context SET label = 'k<' || char(1) || '>' || char(233) || 'x' WHERE id = 12;"
                "UPDATE frame SET function = CAST(X'6B61FF' AS TEXT) WHERE context_id = 10 AND depth = 0;")
    rc, out, err = run(["report", "--json", db])
    try:
        doc = json.loads(out)
        labels = []

        def walk(n):
            labels.append(n["label"])
            for c in n["children"]:
                walk(c)
        walk(doc["tree"])
        check("k<\x01>\u00e9x" in labels, "control char and UTF-8 label round-trip: %r" % labels)
        check("ka\\xff" in labels, "invalid UTF-8 escaped as the text \\xff, as the terminal shows it")
    except ValueError as e:
        check(False, "JSON with odd labels is valid: %s" % e)


def case_flat(tmp):
    db = os.path.join(tmp, "p.gpdb")
    make_db(db)
    rc, out, err = run(["report", "--flat", db])
    check(rc == 0, "report --flat exits 0")
    lines = [l for l in out.splitlines() if l.strip()]
    hdr = [i for i, l in enumerate(lines) if "KIND" in l][0]
    rows = [l.split(None, 8) for l in lines[hdr + 1:hdr + 7]]
    # GPUOP excl, %, GPUOP incl, GKER excl, %, GKER incl, COUNT, KIND, NAME
    check(rows[0] == ["0.005000", "83.3%", "0.005000", "0.005000", "100.0%", "0.005000", "16", "kernel", "axpy_kernel(float*)"],
          "kernel row aggregates both contexts: %r" % rows[0])
    check(rows[1] == ["0.001000", "16.7%", "0.001000", "0", "0.0%", "0", "2", "gpu-op", "<gpu copy>"], "copy row %r" % rows[1])
    solve = [r for r in rows if r[-1] == "solve"]
    check(len(solve) == 1 and solve[0][2] == "0.005000", "recursive solve counted once inclusive (0.005): %r" % solve)
    check(not [r for r in rows if r[-1] == "idle"], "zero rows hidden")
    # a frame without a symbol is spelled one way in the tree and --flat
    # (module+offset, as perf does), never ??
    db2 = os.path.join(tmp, "unsym.gpdb")
    make_db(db2, "UPDATE context SET label = '??' WHERE label = 'solve'; DELETE FROM frame WHERE function = 'solve';")
    rc, out, err = run(["report", db2])
    tree = [l for l in out.splitlines() if "app+0x" in l]
    rc2, out2, err2 = run(["report", "--flat", db2])
    flat = [l for l in out2.splitlines() if "app+0x" in l]
    check(rc == 0 and rc2 == 0 and tree and flat and "??" not in out + out2, "no ?? in tree or flat: %r %r" % (tree, flat))
    m = re.search(r"(app\+0x[0-9a-f]+)", tree[0]) if tree else None
    name = m.group(1) if m else None
    check(name is not None and re.fullmatch(r"app\+0x[0-9a-f]+", name) and any(l.endswith(" " + name) for l in flat),
          "the same spelling %r in both" % name)
    # two calls of one function from one line (siblings of one name): the
    # tree tells them apart by their call sites' offsets
    db3 = os.path.join(tmp, "twins.gpdb")
    make_db(db3, "INSERT INTO context SELECT 900, parent, kind, module, NULL, offset + 16, label, NULL FROM context"
                 " WHERE label = 'solve' ORDER BY id LIMIT 1; INSERT INTO frame SELECT 900, depth, function, file, line,"
                 " inlined FROM frame WHERE context_id = (SELECT id FROM context WHERE label = 'solve' ORDER BY id"
                 " LIMIT 1); INSERT INTO metric VALUES (1, 900, 0, 1000);")
    rc, out, err = run(["report", db3])
    twins = [l for l in out.split("Calling context tree")[1].splitlines() if "solve (solve.c:20)" in l]
    check(rc == 0 and len(twins) == 2 and all(re.search(r"solve \(solve\.c:20\) @app\+0x[0-9a-f]+", l) for l in twins)
          and len({re.search(r"@(app\+0x[0-9a-f]+)", l).group(1) for l in twins}) == 2,
          "siblings of one name show their call sites: %r" % twins)


def case_badfile(tmp):
    rc, out, err = run(["report", os.path.join(tmp, "missing.gpdb")])
    check(rc == 1 and "cannot open" in err and "No such file" in err, "missing file: rc=%d %r" % (rc, err))
    junk = os.path.join(tmp, "junk.gpdb")
    with open(junk, "w") as f:
        f.write("this is not sqlite\n" * 100)
    rc, out, err = run(["report", junk])
    check(rc == 1 and "not a gpuprof profile" in err, "junk file: rc=%d %r" % (rc, err))
    other = os.path.join(tmp, "other.db")
    c = sqlite3.connect(other)
    c.executescript("CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL); INSERT INTO meta VALUES('format','x');")
    c.close()
    rc, out, err = run(["report", other])
    check(rc == 1 and "not a gpuprof profile (meta.format is 'x')" in err, "foreign sqlite: rc=%d %r" % (rc, err))
    newer = os.path.join(tmp, "newer.gpdb")
    make_db(newer, "UPDATE meta SET value = '9' WHERE key = 'format_version';")
    rc, out, err = run(["report", newer])
    check(rc == 1 and "format version 9" in err, "newer format refused: %r" % err)
    rc, out, err = run(["report", tmp])
    check(rc == 1 and "is a directory" in err, "directory: %r" % err)


def case_nodaemon(tmp):
    sock = os.path.join(tmp, "none.sock")
    for args in (["ps"], ["ps", "--job", "42"], ["top"], ["tree", "--json"]):
        rc, out, err = run(args + ["--socket", sock])
        check(rc == 2, "%s: exit 2 (rc=%d)" % (args, rc))
        check(err.strip() == "gpuprof: no gpuprofd at %s (is the service running? set GPUPROF_SOCKET or --socket)" % sock,
              "%s: message %r" % (args, err))
    rc, out, err = run(["ps"], env={"GPUPROF_SOCKET": sock})
    check(rc == 2 and sock in err, "GPUPROF_SOCKET is used")
    env = dict(os.environ)
    env.pop("GPUPROF_SOCKET", None)
    p = subprocess.run([GPUPROF, "ps"], capture_output=True, text=True, env=env)
    if not os.path.exists("/run/gpuprofd/gpuprofd.sock"):
        check(p.returncode == 2 and "no gpuprofd at /run/gpuprofd/gpuprofd.sock" in p.stderr, "default socket: %r" % p.stderr)


def case_usage(tmp):
    for args in ([], ["bogus"], ["report"], ["report", "--json", "--flat", "x"], ["report", "--metric", "NOPE", "x"],
                 ["report", "--depth", "-1", "x"], ["ps", "--pid", "3"], ["top", "-n", "0"], ["tree", "extra"],
                 ["record"], ["record", "--bogus", "--", "true"], ["ps", "--socket"]):
        rc, out, err = run(args)
        check(rc == 64, "%s: exit 64 (rc=%d)" % (args, rc))
        check(err.startswith("gpuprof: ") and "usage: gpuprof" in err, "%s: message + usage %r" % (args, err))
    rc, out, err = run(["--help"])
    check(rc == 0 and "usage: gpuprof" in out, "--help")
    for opt in ("--cpu-sampling", "--stats", "--gpu-detail"):
        check(opt in out, "--help lists %s" % opt)
    rc, out, err = run(["top", "--help"])
    for opt in ("--pid N", "--job J", "-n N", "--metric NAME", "--socket PATH"):
        check(rc == 0 and re.search(r"^  %s +\S" % re.escape(opt), out, re.M), "top --help documents %s: %r" % (opt, out))
    rc, out, err = run(["metrics"])
    check(rc == 0 and out.splitlines()[0].split()[0] == "GPUOP" and "GXCOPY:H2D" in out, "metrics list")


def find_lib():
    for d in ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib/aarch64-linux-gnu"):
        p = os.path.join(d, "libm.so.6")
        if os.path.exists(p):
            return p
    return None


FAKE_DAEMON = r'''#!/usr/bin/env python3
# Fake gpuprofd for the CLI tests: accepts on --socket; on SIGTERM writes
# the fixture profile to --db and exits 0.
import os, signal, socket, sqlite3, sys, threading
a = sys.argv[1:]
sock, db = a[a.index("--socket") + 1], a[a.index("--db") + 1]
open(os.environ["FAKE_LOG"], "w").write(" ".join(a) + "\npgrp_own=" + str(os.getpgrp() == os.getpid()) +
     "\npreload=" + os.environ.get("LD_PRELOAD", "") + "\n")
s = socket.socket(socket.AF_UNIX); s.bind(sock); s.listen(8)
def term(*_):
    c = sqlite3.connect(db); c.executescript(open(os.environ["FIXTURE"]).read()); c.commit(); c.close()
    os._exit(int(os.environ.get("FAKE_EXIT", "0")))
signal.signal(signal.SIGTERM, term)
def acc():
    while True:
        c, _ = s.accept(); c.close()
threading.Thread(target=acc, daemon=True).start()
signal.pause()
'''


def case_record(tmp):
    # 1. no daemon binary
    rc, out, err = run(["record", "--", "true"], env={"GPUPROF_DAEMON": os.path.join(tmp, "nope")})
    check(rc == 2 and "cannot find gpuprofd" in err and "GPUPROF_DAEMON" in err, "missing daemon: rc=%d %r" % (rc, err))
    lib = find_lib()
    shim = lib or os.path.join(HERE, "fixture.sql")
    # 2. a daemon that fails at start: its stderr is shown
    bad = os.path.join(tmp, "bad-daemon")
    with open(bad, "w") as f:
        f.write("#!/bin/sh\necho 'gpuprofd: cannot open database: disk on fire' >&2\nexit 3\n")
    os.chmod(bad, 0o755)
    rc, out, err = run(["record", "-o", os.path.join(tmp, "x.gpdb"), "--", "true"],
                       env={"GPUPROF_DAEMON": bad, "GPUPROF_SHIM": shim, "TMPDIR": tmp})
    check(rc == 2 and "failed to start (exit status 3)" in err and "disk on fire" in err,
          "failing daemon: rc=%d %r" % (rc, err))
    check(not [d for d in os.listdir(tmp) if d.startswith("gpuprof-")], "private folder removed after a failure")
    # 3. missing shim
    rc, out, err = run(["record", "--", "true"], env={"GPUPROF_DAEMON": bad, "GPUPROF_SHIM": os.path.join(tmp, "no.so")})
    check(rc == 2 and "cannot find libgpuprof.so" in err, "missing shim: %r" % err)
    # 4. a fake daemon: env of the child, exit status, summary
    fake = os.path.join(tmp, "fake-gpuprofd")
    with open(fake, "w") as f:
        f.write(FAKE_DAEMON)
    os.chmod(fake, 0o755)
    envf = os.path.join(tmp, "env.txt")
    flog = os.path.join(tmp, "fake.log")
    out_db = os.path.join(tmp, "run.gpdb")
    env = {"GPUPROF_DAEMON": fake, "GPUPROF_SHIM": shim, "TMPDIR": tmp, "FAKE_LOG": flog,
           "FIXTURE": os.path.join(HERE, "fixture.sql"), "LD_PRELOAD": ""}
    rc, out, err = run(["record", "-o", out_db, "--", "sh", "-c",
                        'echo "$LD_PRELOAD|$GPUPROF_SOCKET|$GPUPROF_RECORD" > %s; exit 3' % envf], env=env)
    check(rc == 3, "record exits with the command's status (rc=%d, err=%r)" % (rc, err))
    got = open(envf).read().strip().split("|") if os.path.exists(envf) else ["", "", ""]
    check(got[0] == os.path.realpath(shim), "LD_PRELOAD is the shim: %r" % got[0])
    check(got[1].endswith("/gpuprofd.sock") and got[1].startswith(tmp), "GPUPROF_SOCKET private: %r" % got[1])
    check(got[2] == "1", "GPUPROF_RECORD=1")
    dargs = open(flog).read() if os.path.exists(flog) else ""
    check("--foreground --socket %s --db %s --exit-when-idle" % (got[1], out_db) in dargs, "daemon args %r" % dargs)
    check("pgrp_own=True" in dargs, "daemon in its own process group")
    check("profile written to %s" % out_db in err, "summary names the file")
    check("2 processes, 18 GPU ops, GPUOP 0.006 s, 3 dropped records" in err, "summary totals %r" % err)
    k = line_with(err, "axpy_kernel")  # its short name: no argument list
    check(k is not None and cols(k)[1:5] == ["0.005", "s", "100.0%", "16x"] and k.endswith("  axpy_kernel"),
          "top kernel line %r" % k)
    check("back end cuda disabled in pid 1001: libcuda.so.1: cannot open shared object file" in err, "disabled back end")
    # the heaviest calling contexts by GPU time, innermost first, as report spells frames
    # (fixture.sql: the kernel merged over both pids, the copy, the recursive
    # solve's kernel; the last two tie at 1 ms)
    ctx = err[err.find("gpuprof: heaviest calling contexts"):].splitlines()
    check(ctx[:4] == ["gpuprof: heaviest calling contexts by GPU time (innermost first):",
                      "gpuprof:        0.004 s  66.7%       15x  axpy_kernel < solve (solve.c:20) < main (app.c:10)",
                      "gpuprof:        0.001 s  16.7%        2x  <gpu copy> < copy_in (copy.c:7) < main (app.c:10)",
                      "gpuprof:        0.001 s  16.7%        1x  axpy_kernel < solve (solve.c:31) < solve (solve.c:20)"
                      " < main (app.c:10)"], "record summary contexts %r" % ctx)
    check(not [d for d in os.listdir(tmp) if d.startswith("gpuprof-")], "private folder removed")
    # 5. existing LD_PRELOAD kept before the shim; a second libgpuprof.so dropped
    env2 = dict(env, LD_PRELOAD="/x/libgpuprof.so:%s" % (lib or "/nonexistent.so"), ASAN_OPTIONS="verify_asan_link_order=0")
    rc, out, err = run(["record", "-o", out_db, "--", "sh", "-c", 'echo "$LD_PRELOAD" > %s' % envf], env=env2)
    pl = open(envf).read().strip()
    check(rc == 0 and pl == "%s:%s" % (lib or "/nonexistent.so", os.path.realpath(shim)), "LD_PRELOAD appended: %r" % pl)
    check("preload=\n" in open(flog).read() or "preload=" + (lib or "/nonexistent.so") in open(flog).read(),
          "daemon gets no shim preloaded")
    # 6. killed by a signal forwarded from gpuprof: 128 + 15
    rc, out, err = run(["record", "-o", out_db, "--", "sh", "-c", "kill -TERM $PPID; exec sleep 20"], env=env, timeout=30)
    check(rc == 128 + signal.SIGTERM, "SIGTERM forwarded, exit 143 (rc=%d)" % rc)
    # 7. command not found: 127 and a message; the daemon still stopped
    rc, out, err = run(["record", "-o", out_db, "--", os.path.join(tmp, "no-such-cmd")], env=env)
    check(rc == 127 and "cannot run" in err, "missing command: rc=%d %r" % (rc, err))
    check("profile written to" not in err and "no profile written" in err and not os.path.exists(out_db),
          "missing command: no profile, and no 'profile written': %r" % err)
    # 8. --keep-socket keeps the folder
    rc, out, err = run(["record", "--keep-socket", "-o", out_db, "--", "true"], env=env)
    kept = [d for d in os.listdir(tmp) if d.startswith("gpuprof-")]
    check(rc == 0 and len(kept) == 1 and "kept " in err, "--keep-socket keeps the folder: %r" % kept)
    # 9. default file name in cwd
    wd = os.path.join(tmp, "wd")
    os.mkdir(wd)
    rc, out, err = run(["record", "--", "true"], env=env, cwd=wd)
    made = os.listdir(wd)
    check(rc == 0 and len(made) == 1 and made[0].startswith("gpuprof-true-") and made[0].endswith(".gpdb"),
          "default output name: %r" % made)


def case_live(tmp):
    sock = os.path.join(tmp, "d.sock")
    d = subprocess.Popen([FAKED, sock], stdout=subprocess.PIPE, text=True)
    try:
        check(d.stdout.readline().strip() == "ready", "fake daemon ready")
        rc, out, err = run(["ps", "--socket", sock])
        check(rc == 0, "ps exits 0 (%d %r)" % (rc, err))
        hdr = out.splitlines()[0].split()
        check(hdr == ["PID", "USER", "JOB", "RANK", "STATE", "RINGS", "RECORDS", "DROPS", "BACKENDS", "EXE"], "ps header %r" % hdr)
        r1 = cols(line_with(out, " 1001 "))
        check(r1 == ["1001", "root", "77", "0", "running", "2", "100", "3", "opencl,-cuda", "/opt/app/bin/app"], "ps row %r" % r1)
        r2 = cols(line_with(out, " 1002 "))
        check(r2[:5] == ["1002", "4242424", "-", "-", "error"] and "error: bad ring" in out, "ps row 2 %r" % r2)
        rc, out, err = run(["ps", "--job", "77"], env={"GPUPROF_SOCKET": sock})
        check(rc == 0 and line_with(out, " 1001 ") and not line_with(out, " 1002 "), "ps --job 77 sends the job")
        rc, out, err = run(["ps", "--socket", sock, "--job", "denied"])
        check(rc == 1 and err.strip() == "gpuprof: permission denied: job denied belongs to another user",
              "Error reply printed, exit 1: %d %r" % (rc, err))
        rc, out, err = run(["tree", "--socket", sock])
        check(rc == 0, "tree exits 0 %r" % err)
        root = cols(line_with(out, "<program root>"))
        check(root[:6] == ["0.004000", "100.0%", "0", "0.004000", "100.0%", "0"], "live tree root %r" % root)
        k = cols(line_with(out, "vec_add"))
        check(k[:3] == ["0.004000", "100.0%", "0.004000"] and "{GKER:COUNT=8}" in line_with(out, "vec_add"), "kernel %r" % k)
        check(line_with(out, "main (main.c:12)") is not None, "frames rendered")
        check(line_with(out, "cuda     pid 1001: no CUDA driver (code -4191)") is not None, "disabled back end")
        rc, out, err = run(["tree", "--socket", sock, "--json"])
        doc = json.loads(out)
        kern = doc["tree"]["children"][0]["children"][0]["children"][0]
        check(kern["label"] == "vec_add" and kern["metrics"]["GKER"]["incl"] == 4000000, "tree --json kernel")
        rc, out, err = run(["tree", "--socket", sock, "--depth", "1"])
        main = cols(line_with(out, "main (main.c:12)"))
        check(rc == 0 and main[:3] == ["0.004000", "100.0%", "0"] and not line_with(out, "vec_add"),
              "depth-1 tree uses the reply's incl %r" % main)
        rc, out, err = run(["top", "--socket", sock])
        check(rc == 0, "top exits 0 %r" % err)
        row = line_with(out, "vec_add")
        check(row is not None and cols(row)[:5] == ["1", "vec_add", "0.002000", "50.0%", "4"], "top row %r" % row)
        check(row is not None and row.rstrip().endswith("... > solve > step > launch"), "top path innermost 3 %r" % row)
        rc, out, err = run(["top", "--socket", sock, "--pid", "999"])
        check(rc == 1 and err.strip() == "gpuprof: no process 999 is profiled", "top Error reply %r" % err)
    finally:
        d.terminate()
        d.wait()


def markers(src):
    m = {}
    with open(src) as f:
        for i, line in enumerate(f, 1):
            for name in re.findall(r"@([A-Za-z_0-9]+)", line):
                m[name] = i
    return m


def case_label(tmp):
    # an older store labelled a FRAME context with the innermost function of
    # its inline chain: the report labels it with the physical one (frames[0])
    db = os.path.join(tmp, "p.gpdb")
    make_db(db, "UPDATE context SET label = 'axpy_launch' WHERE id = 3;")
    rc, out, err = run(["report", db])
    check(rc == 0 and line_with(out, "solve (solve.c:20)") is not None, "physical function shown %r" % err)
    l = line_with(out, "[inlined] axpy_launch (vec.h:5)")
    check(l is not None and l.index("[inlined]") > line_with(out, "solve (solve.c:20)").index("solve"),
          "inlined frame nested below its function")
    rc, out, err = run(["report", "--json", db])
    doc = json.loads(out)
    solve = doc["tree"]["children"][0]["children"][0]
    check(solve["label"] == "solve" and [f["function"] for f in solve["frames"]] == ["solve", "axpy_launch"] and
          [f["inlined"] for f in solve["frames"]] == [False, True], "json label and frames %r" % solve["label"])
    rc, out, err = run(["report", "--flat", db])
    check(line_with(out, "cpu     axpy_launch") is None and line_with(out, "cpu     solve") is not None,
          "flat row by physical function")


def case_peruid(tmp):
    # the store's per-user schema: context/frame rows carry uid; the report
    # takes the rows of its profiles' users (1000), not another user's (2000)
    db = os.path.join(tmp, "p.gpdb")
    make_db(db, """
      ALTER TABLE context RENAME TO context_old;
      CREATE TABLE context(uid INTEGER NOT NULL, id INTEGER NOT NULL, parent INTEGER, kind INTEGER, module TEXT,
                           build_id TEXT, offset INTEGER, label TEXT, raw_name TEXT, PRIMARY KEY(uid, id));
      INSERT INTO context SELECT 2000, id, parent, kind, module, build_id, offset, 'other_' || label, raw_name
        FROM context_old;
      INSERT INTO context SELECT 1000, * FROM context_old;
      DROP TABLE context_old;
      ALTER TABLE frame RENAME TO frame_old;
      CREATE TABLE frame(uid INTEGER NOT NULL, context_id INTEGER NOT NULL, depth INTEGER NOT NULL, function TEXT,
                         file TEXT, line INTEGER, inlined INTEGER, PRIMARY KEY(uid, context_id, depth));
      INSERT INTO frame SELECT 2000, context_id, depth, 'other_' || function, file, line + 1000, inlined
        FROM frame_old;
      INSERT INTO frame SELECT 1000, * FROM frame_old;
      DROP TABLE frame_old;""")
    rc, out, err = run(["report", db])
    check(rc == 0, "per-uid report exits 0: %r" % err)
    check("other_" not in out, "no label of uid 2000 shown")
    check(line_with(out, "main (app.c:10)") is not None and line_with(out, "solve (solve.c:20)") is not None,
          "labels of uid 1000 shown")
    rc, out, err = run(["report", "--json", db])
    check(rc == 0 and "other_" not in out, "json: no label of uid 2000")


def case_deep(tmp):
    # a 200 000-deep chain of CPU frames with a kernel at the bottom: no
    # recursion (stack overflow) and linear-size output
    depth = 200000
    db = os.path.join(tmp, "deep.gpdb")
    make_deep_db(db, depth)
    rc, out, err = run(["report", db], timeout=120)
    check(rc == 0, "deep report exits 0 (rc=%d, %s)" % (rc, err[-300:]))
    lines = out.splitlines()
    check(sum(1 for l in lines if " f" in l and "(deep.c:" in l) == depth, "all %d frames printed" % depth)
    k = line_with(out, "deep_kernel")
    check(k is not None and "[depth %d]" % (depth + 2) in k and "{GKER:COUNT=7}" in k, "kernel line %r" % k)
    check(max(len(l) for l in lines) < 400, "indentation is bounded")
    rc, out, err = run(["report", "--json", db], timeout=120)
    check(rc == 0 and out.count('"kind":"frame"') == depth and out.rstrip().endswith("}"),
          "deep json: rc=%d, %d frames" % (rc, out.count('"kind":"frame"')))
    check(out.count("[") == out.count("]") and out.count("{") == out.count("}"), "deep json brackets balance")
    rc, out, err = run(["report", "--flat", db], timeout=120)
    row = cols(line_with(out, "deep_kernel"))
    check(rc == 0 and row[-3:] == ["7", "kernel", "deep_kernel"], "flat kernel row %r" % row)
    f0 = cols(line_with(out, " cpu     f0"))
    check(f0[:3] == ["0", "0.0%", "0.000007"], "flat: recursion counted once %r" % f0)


def case_fifo(tmp):
    fifo = os.path.join(tmp, "p.gpdb")
    os.mkfifo(fifo)
    try:
        rc, out, err = run(["report", fifo], timeout=20)
    except subprocess.TimeoutExpired:
        rc, err = -1, "timed out"
    check(rc == 1 and "not a regular file" in err, "FIFO refused at once: rc=%d %r" % (rc, err))


def case_hidden(tmp):
    # profile 3 (pid 1003, e.g. a linker PoCL runs) has no back end and no
    # metric: left out of the header and process list unless --all
    db = os.path.join(tmp, "p.gpdb")
    make_db(db, "INSERT INTO profile SELECT 3, 1003, ppid, uid, gid, '/usr/bin/ld', '[\"ld\"]', hostname, job_id, "
                "step_id, rank, local_rank, start_ns, end_ns, state, records, drops, error FROM profile WHERE id = 2;")
    rc, out, err = run(["report", db])
    check(rc == 0 and "2 processes" in out and line_with(out, "/usr/bin/ld") is None, "ld hidden: %r" % err)
    check("(1 more that never used a GPU API not listed; --all lists them)" in out, "hidden count said")
    rc, out, err = run(["report", "--all", db])
    check(rc == 0 and "3 processes" in out and line_with(out, "/usr/bin/ld") is not None, "--all lists ld")
    rc, out, err = run(["report", "--json", db])
    doc = json.loads(out)
    check(doc["hidden_processes"] == 1 and [p["pid"] for p in doc["processes"]] == [1001, 1002], "json hides ld")


def case_recordold(tmp):
    fake = os.path.join(tmp, "fake-gpuprofd")
    with open(fake, "w") as f:
        f.write(FAKE_DAEMON)
    os.chmod(fake, 0o755)
    shim = find_lib() or os.path.join(HERE, "fixture.sql")
    out_db = os.path.join(tmp, "run.gpdb")
    env = {"GPUPROF_DAEMON": fake, "GPUPROF_SHIM": shim, "TMPDIR": tmp, "FAKE_LOG": os.path.join(tmp, "fake.log"),
           "FIXTURE": os.path.join(HERE, "fixture.sql"), "LD_PRELOAD": ""}
    rc, out, err = run(["record", "-o", out_db, "--", "true"], env=env)
    check(rc == 0 and "moved" not in err and not os.path.exists(out_db + ".old"), "first record: no .old (%r)" % err)
    c = sqlite3.connect(out_db)
    c.execute("UPDATE profile SET exe = '/first/run' WHERE id = 1")
    c.commit()
    c.close()
    open(out_db + "-wal", "w").close()  # a log beside it goes along
    rc, out, err = run(["record", "-o", out_db, "--", "true"], env=env)
    check(rc == 0, "second record exits 0 (%r)" % err)
    check("gpuprof: the existing profile %s was moved to %s.old" % (out_db, out_db) in err, "one line says so %r" % err)
    check(os.path.exists(out_db + ".old") and os.path.exists(out_db + ".old-wal") and
          not os.path.exists(out_db + "-wal"), "FILE, FILE-wal -> FILE.old, FILE.old-wal")
    rc, out, err = run(["report", "--all", out_db + ".old"])
    check(rc == 0 and "/first/run" in out, "the old run is in FILE.old")
    rc, out, err = run(["report", "--all", out_db])
    check(rc == 0 and "/first/run" not in out and "2 processes" in out, "FILE holds the new run only")


def check_inline_doc(doc, m):
    """ocl-inline's tree (report --json or tree --json): 6 launches of bump,
    each under main > phase_c whose frames are phase_c then the inlined
    helper, with their exact lines."""
    found = []

    def walk(n, anc):
        if n["kind"] == "kernel" and n["label"] == "bump":
            found.append((n, anc))
        for c in n["children"]:
            walk(c, anc + [n])
    walk(doc["tree"], [])
    count = sum(n["metrics"].get("GKER:COUNT", {}).get("incl", 0) for n, _ in found)
    check(count == 6, "bump launched 6 times (got %r)" % count)
    for n, anc in found:
        frames = [a for a in anc if a["kind"] == "frame"]
        labels = [a["label"] for a in frames]
        check(labels[-2:] == ["main", "phase_c"], "path ends main > phase_c: %r" % labels)
        check(anc[-1]["kind"] == "placeholder", "kernel below a placeholder")
        pc = frames[-1]["frames"] if frames else []
        got = [(f["function"], os.path.basename(f["file"]), f["line"], f["inlined"]) for f in pc]
        want = [("phase_c", "ocl-inline.c", m["phase_c"], False), ("helper", "ocl-inline.c", m["helper"], True)]
        check(got == want, "phase_c frames %r, want %r" % (got, want))


def case_inline(tmp):
    # end to end: ocl-inline under `gpuprof record` (real daemon, shim, PoCL):
    # main > phase_c > helper (inlined, with its call-site line) > <gpu kernel> > bump
    if not APP or not os.path.exists(APP):
        print("SKIP: no ocl-inline")
        sys.exit(77)
    m = markers(os.path.join(HERE, "ocl-inline.c"))
    db = os.path.join(tmp, "i.gpdb")
    p = subprocess.run([GPUPROF, "record", "-o", db, "--", APP], capture_output=True, text=True, timeout=120)
    if p.returncode == 77:
        print("SKIP: no OpenCL device")
        sys.exit(77)
    check(p.returncode == 0 and "sum 6144" in p.stdout, "record rc=%d out=%r err=%r" % (p.returncode, p.stdout,
                                                                                     p.stderr[-500:]))
    rc, out, err = run(["report", "--json", db])
    check(rc == 0, "report --json exits 0 %r" % err)
    check_inline_doc(json.loads(out), m)
    rc, out, err = run(["report", db])
    pl = line_with(out, "ocl-inline.c:%d)" % m["phase_c"])
    hl = line_with(out, "ocl-inline.c:%d)" % m["helper"])
    kl = line_with(out, " bump ")
    check(pl is not None and " phase_c (" in pl, "text report shows phase_c %r" % pl)
    check(hl is not None and "[inlined] helper (" in hl, "text report shows the inlined helper %r" % hl)
    check(kl is not None and "{GKER:COUNT=6}" in kl, "text report shows bump x6 %r" % kl)
    if pl and hl and kl:
        lines = out.splitlines()
        i = lines.index(pl)
        check(lines[i + 1] == hl and "<gpu kernel>" in lines[i + 2] and lines.index(kl) == i + 3,
              "helper right below phase_c, then <gpu kernel>, then bump")
        check(len(kl) - len(kl.lstrip()) > 0 and kl.index("bump") > pl.index("phase_c"), "bump nested deeper")


def preload_with(shim):
    """LD_PRELOAD with the shim after what is there (under ASan the runtime
    preloaded by scripts/test must stay first)."""
    cur = os.environ.get("LD_PRELOAD", "")
    return cur + ":" + shim if cur else shim


def case_psall(tmp):
    # live: a process under the shim that never calls a GPU API is hidden
    # from `ps` (counted) and listed by `ps --all`
    gpuprofd = os.path.join(os.path.dirname(GPUPROF), "gpuprofd")
    shim = os.path.join(os.path.dirname(os.path.dirname(GPUPROF)), "lib", "libgpuprof.so")
    if not os.path.exists(gpuprofd) or not os.path.exists(shim):
        print("SKIP: no gpuprofd or shim")
        sys.exit(77)
    sock = os.path.join(tmp, "d.sock")
    d = subprocess.Popen([gpuprofd, "--foreground", "--socket", sock, "--db", os.path.join(tmp, "d.gpdb")],
                         stdout=subprocess.DEVNULL, stderr=open(os.path.join(tmp, "d.log"), "w"))
    sl = None
    try:
        deadline = time.time() + 20
        while not os.path.exists(sock) and time.time() < deadline:
            time.sleep(0.05)
        check(os.path.exists(sock), "daemon listens")
        env = dict(os.environ, LD_PRELOAD=preload_with(shim), GPUPROF_SOCKET=sock)
        sl = subprocess.Popen(["sleep", "60"], env=env)
        pid = str(sl.pid)
        out = ""
        while time.time() < deadline:
            rc, out, err = run(["ps", "--all", "--socket", sock])
            if line_with(out, " %s " % pid):
                break
            time.sleep(0.1)
        check(line_with(out, " %s " % pid) is not None, "ps --all lists the plain process %r" % out)
        rc, out, err = run(["ps", "--socket", sock])
        check(rc == 0 and line_with(out, " %s " % pid) is None, "ps hides it")
        check("(1 process that never used a GPU API not shown; --all shows them)" in out, "ps says so %r" % out)
    finally:
        for p in (sl, d):
            if p:
                p.kill()
                p.wait()


def case_livetree(tmp):
    # the daemon's live answers: tree --json and top for ocl-inline
    gpuprofd = os.path.join(os.path.dirname(GPUPROF), "gpuprofd")
    shim = os.path.join(os.path.dirname(os.path.dirname(GPUPROF)), "lib", "libgpuprof.so")
    if not APP or not os.path.exists(APP) or not os.path.exists(gpuprofd) or not os.path.exists(shim):
        print("SKIP: no ocl-inline, gpuprofd or shim")
        sys.exit(77)
    m = markers(os.path.join(HERE, "ocl-inline.c"))
    sock = os.path.join(tmp, "d.sock")
    d = subprocess.Popen([gpuprofd, "--foreground", "--socket", sock, "--db", os.path.join(tmp, "d.gpdb")],
                         stdout=subprocess.DEVNULL, stderr=open(os.path.join(tmp, "d.log"), "w"))
    try:
        deadline = time.time() + 60
        while not os.path.exists(sock) and time.time() < deadline:
            time.sleep(0.05)
        check(os.path.exists(sock), "daemon listens")
        p = subprocess.run([APP], env=dict(os.environ, LD_PRELOAD=preload_with(shim), GPUPROF_SOCKET=sock), capture_output=True,
                           text=True, timeout=120)
        if p.returncode == 77:
            print("SKIP: no OpenCL device")
            sys.exit(77)
        check(p.returncode == 0, "ocl-inline under the shim: %r" % p.stderr[-300:])
        doc = None
        while time.time() < deadline:  # the monitor drains the rings shortly after
            rc, out, err = run(["tree", "--json", "--socket", sock])
            if rc == 0 and '"GKER:COUNT":{"id":49,"unit":"count","excl":6' in out:
                doc = json.loads(out)
                break
            time.sleep(0.1)
        check(doc is not None, "live tree has the 6 launches")
        if doc:
            check_inline_doc(doc, m)
        rc, out, err = run(["top", "--socket", sock])
        row = line_with(out, " bump ")
        check(rc == 0 and row is not None and row.rstrip().endswith("main > phase_c"), "top path %r" % row)
    finally:
        d.kill()
        d.wait()


CASES = {n[5:]: f for n, f in globals().items() if n.startswith("case_")}


def main():
    global GPUPROF, FAKED, APP
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpuprof", required=True)
    ap.add_argument("--faked")
    ap.add_argument("--app")
    ap.add_argument("case", choices=sorted(CASES))
    a = ap.parse_args()
    GPUPROF = a.gpuprof
    FAKED = a.faked
    APP = a.app
    with tempfile.TemporaryDirectory(prefix="gpt-") as tmp:
        CASES[a.case](tmp)
    if FAILS:
        print("%d check(s) failed" % len(FAILS))
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Tests of `gpuprof export` and `gpuprof view` (tests/export.cmake).

usage: test_export.py --gpuprof PATH --viewer DIR [--app OCL_KNOWN] CASE

The fixture profile (tests/cli/fixture.sql, known numbers: root GPUOP 6 ms,
GKER 5 ms; axpy_kernel 4 ms / 15 launches below solve with its inlined
axpy_launch, 1 ms / 1 launch below the recursive solve; the copy 1 ms,
1 MiB H2D, 2 copies) is exported and read back: pprof with a real decoder
(the npm package pprof-format, run with node), folded stacks and
speedscope JSON with exact numbers; `view` pages; a real OpenCL program
(ocl-known) recorded with `gpuprof record`, exported and, in case
`browser`, shown by headless Chromium.  Exits 0 on success, 1 on a failed
check, 77 (SKIP) when node, the viewer packages, Chromium or OpenCL are
missing.
"""
import argparse
import base64
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "cli"))
from test_cli import make_db, make_deep_db  # noqa: E402  (the fixture profiles)

GPUPROF = VIEWER = APP = None
FAILS = []
NODE = shutil.which("node")


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL:", what)


def skip(why):
    print("SKIP:", why)
    sys.exit(77)


def run(args, env=None, timeout=120, cwd=None, text=True):
    e = dict(os.environ)
    e.pop("BROWSER", None)
    e.pop("DISPLAY", None)
    e.pop("WAYLAND_DISPLAY", None)
    if env:
        e.update(env)
    p = subprocess.run([GPUPROF] + args, capture_output=True, text=text, env=e, timeout=timeout, cwd=cwd)
    return p.returncode, p.stdout, p.stderr


def need_node(pkg):
    if not NODE:
        skip("no node")
    if not os.path.isdir(os.path.join(VIEWER, "node_modules", pkg)):
        skip("viewer/node_modules/%s missing (scripts/viewer installs it)" % pkg)


def node_env():
    """node is a tool here, not under test: without a preloaded sanitizer
    runtime (scripts/test's preloaded ASan pass)."""
    e = dict(os.environ)
    e.pop("LD_PRELOAD", None)
    return e


def decode_pprof(path):
    """The profile as pprof-format decodes it (pprof-decode.mjs)."""
    p = subprocess.run([NODE, os.path.join(HERE, "pprof-decode.mjs"), VIEWER, path], capture_output=True,
                       text=True, timeout=120, env=node_env())
    check(p.returncode == 0, "pprof-format decodes %s (rc=%d %s)" % (path, p.returncode, p.stderr[-500:]))
    return json.loads(p.stdout) if p.returncode == 0 else None


KERNEL = "axpy_kernel(float*)"
# root-first stacks of the fixture, an inline chain outermost first
STACK_K = ["main", "solve", "axpy_launch", "<gpu kernel>", KERNEL]
STACK_R = ["main", "solve", "axpy_launch", "solve", "<gpu kernel>", KERNEL]
STACK_C = ["main", "copy_in", "<gpu copy>"]


# ---------------------------------------------------------------- cases

def case_gopprof(tmp):
    """The pprof file read as users read it: `go tool pprof` (Debian's
    golang-go), whose symbolizer demangles every function whose system
    name equals its name and cuts C++-looking names ("<gpu kernel>") to
    nothing ("<unknown>") when that fails."""
    go = shutil.which("go")
    if not go:
        print("SKIP: no go toolchain (golang-go, scripts/deps)")
        sys.exit(77)
    db = os.path.join(tmp, "f.gpdb")
    make_db(db)
    out = os.path.join(tmp, "x.pb.gz")
    rc, so, se = run(["export", "--format", "pprof", "-o", out, db])
    check(rc == 0, "export pprof (rc=%d %s)" % (rc, se))
    env = dict(os.environ, HOME=tmp, GOCACHE=os.path.join(tmp, "gocache"), GOFLAGS="-mod=mod",
               PPROF_TMPDIR=tmp)
    for view in ("-top", "-traces"):
        p = subprocess.run([go, "tool", "pprof", view, out], capture_output=True, text=True, env=env, timeout=120)
        print(p.stdout[-3000:])
        check(p.returncode == 0, "go tool pprof %s exits 0 (%s)" % (view, p.stderr[-500:]))
        check("<unknown>" not in p.stdout, "go tool pprof %s: no <unknown>" % view)
        for name in ("<gpu kernel>", "<gpu copy>") if view == "-traces" else ("axpy_kernel",):
            check(name in p.stdout, "go tool pprof %s shows %s" % (view, name))


def case_pprof(tmp):
    need_node("pprof-format")
    db = os.path.join(tmp, "f.gpdb")
    make_db(db)
    out = os.path.join(tmp, "x.pb.gz")
    rc, so, se = run(["export", "--format", "pprof", "-o", out, db])
    check(rc == 0 and so == "", "export pprof exits 0 silently (rc=%d %s)" % (rc, se))
    with open(out, "rb") as f:
        check(f.read(2) == b"\x1f\x8b", "the file is gzip")
    d = decode_pprof(out)
    if not d:
        return
    check(d["string0"] == "", "string_table[0] is empty")
    # one sample type per metric present, in metric id order
    check(d["sample_types"] == [["GPUOP", "nanoseconds"], ["GKER", "nanoseconds"], ["GXCOPY", "nanoseconds"],
                                ["GXCOPY:H2D", "bytes"], ["GXCOPY:COUNT", "count"], ["GKER:THR_REG", "count"],
                                ["GKER:COUNT", "count"]], "sample types %r" % d["sample_types"])
    check(d["default_sample_type"] == "GPUOP", "default sample type GPUOP")
    by = {tuple(s["stack"]): s for s in d["samples"]}
    check(sorted(by) == sorted([tuple(STACK_K), tuple(STACK_R), tuple(STACK_C)]),
          "three samples with the report's paths: %r" % sorted(by))
    k, r, c = by.get(tuple(STACK_K)), by.get(tuple(STACK_R)), by.get(tuple(STACK_C))
    if k and r and c:
        # node merge of pid 1001 and 1002: 3 + 1 ms, 10 + 5 launches
        check(k["values"] == {"GPUOP": 4000000, "GKER": 4000000, "GXCOPY": 0, "GXCOPY:H2D": 0, "GXCOPY:COUNT": 0,
                              "GKER:THR_REG": 480, "GKER:COUNT": 15}, "kernel sample values %r" % k["values"])
        check(r["values"]["GKER"] == 1000000 and r["values"]["GKER:COUNT"] == 1, "recursive kernel %r" % r["values"])
        check(c["values"] == {"GPUOP": 1000000, "GKER": 0, "GXCOPY": 1000000, "GXCOPY:H2D": 1048576,
                              "GXCOPY:COUNT": 2, "GKER:THR_REG": 0, "GKER:COUNT": 0}, "copy values %r" % c["values"])
        # source lines: main calls at app.c:10, solve at solve.c:20 where
        # axpy_launch is inlined, which launches at vec.h:5
        check(k["lines"][:3] == ["app.c:10", "solve.c:20", "vec.h:5"], "kernel sample lines %r" % k["lines"])
        check(r["lines"][3] == "solve.c:31", "recursive solve line %r" % r["lines"])
    # totals equal the report's root values
    tot = {t: sum(s["values"][t] for s in d["samples"]) for t, _ in d["sample_types"]}
    check(tot["GPUOP"] == 6000000 and tot["GKER"] == 5000000 and tot["GKER:COUNT"] == 16,
          "totals %r" % tot)
    fns = {f["name"]: f for f in d["functions"]}
    check(fns.get(KERNEL, {}).get("system_name") == "_Z11axpy_kernelPf", "kernel's mangled name %r" % fns.get(KERNEL))
    check(fns.get("solve", {}).get("filename") == "solve.c", "solve's file")
    check(d["mappings"] == ["/opt/app/bin/app"], "one mapping: the program %r" % d["mappings"])
    # solve (with its inline chain), solve (recursive) and main etc.: equal
    # frames share a location; 7 distinct ones
    check(d["locations"] == 7, "7 locations %r" % d["locations"])
    check(any("process 1001 /opt/app/bin/app" in c for c in d["comments"]) and
          any(c.startswith("gpuprof ") and "export of" in c for c in d["comments"]), "comments %r" % d["comments"])
    check(d["duration_nanos"] == 850, "duration: first start to last end %r" % d["duration_nanos"])
    # --pid: only pid 1002's profile (1 ms of axpy, 5 launches)
    rc, so, se = run(["export", "--format", "pprof", "--pid", "1002", "-o", out, db])
    d = decode_pprof(out) if rc == 0 else None
    check(d is not None and [s["stack"] for s in d["samples"]] == [STACK_K] and
          d["samples"][0]["values"]["GKER:COUNT"] == 5, "--pid 1002 %r" % (d and d["samples"]))
    # standard output when redirected, -o - too
    with open(os.path.join(tmp, "y.pb.gz"), "wb") as f:
        p = subprocess.run([GPUPROF, "export", "--format", "pprof", "--metric", "GKER", db], stdout=f, timeout=60)
    check(p.returncode == 0, "pprof to redirected standard output")
    d = decode_pprof(os.path.join(tmp, "y.pb.gz"))
    check(d is not None and d["default_sample_type"] == "GKER", "--metric GKER is the default sample type")


def case_folded(tmp):
    db = os.path.join(tmp, "f.gpdb")
    make_db(db)
    rc, so, se = run(["export", "--format", "folded", db])
    check(rc == 0, "export folded exits 0 %r" % se)
    want = ["main;solve;axpy_launch_[i];<gpu kernel>;%s 4000000" % KERNEL,
            "main;solve;axpy_launch_[i];solve;<gpu kernel>;%s 1000000" % KERNEL,
            "main;copy_in;<gpu copy> 1000000"]
    check(so.splitlines() == want, "folded GPUOP stacks %r" % so)
    rc, so, se = run(["export", "--format", "folded", "--metric", "GKER:COUNT", db])
    check(so.splitlines() == [want[0].replace(" 4000000", " 15"), want[1].replace(" 1000000", " 1")],
          "folded GKER:COUNT %r" % so)
    rc, so, se = run(["export", "--format", "folded", "--metric", "GXCOPY:H2D", "-o", os.path.join(tmp, "h.txt"), db])
    with open(os.path.join(tmp, "h.txt")) as f:
        check(rc == 0 and f.read() == "main;copy_in;<gpu copy> 1048576\n", "folded H2D bytes to a file")
    # a name that holds ';' or a line break cannot split a stack
    make_db(db, "UPDATE context SET label = 'op;er' || char(10) || 'ator' WHERE id = 7;")
    rc, so, se = run(["export", "--format", "folded", db])
    check("main;copy_in;op:er ator 1000000" in so.splitlines(), "separators in names replaced %r" % so)


def case_speedscope(tmp):
    db = os.path.join(tmp, "f.gpdb")
    make_db(db)
    rc, so, se = run(["export", "--format", "speedscope", "--metric", "GKER", db])
    check(rc == 0, "export speedscope exits 0 %r" % se)
    d = json.loads(so)
    check(d["$schema"] == "https://www.speedscope.app/file-format-schema.json", "schema")
    names = [p["name"] for p in d["profiles"]]
    check(names == ["GPUOP", "GKER", "GXCOPY", "GXCOPY:H2D", "GXCOPY:COUNT", "GKER:THR_REG (sum over launches)",
                    "GKER:COUNT"], "one profile per metric %r" % names)
    check(d["activeProfileIndex"] == 1, "--metric GKER is shown first")
    fr = d["shared"]["frames"]
    check({"name": "[inlined] axpy_launch", "file": "vec.h", "line": 5} in fr, "inlined frame %r" % fr)
    for p in d["profiles"]:
        check(p["type"] == "sampled" and len(p["samples"]) == len(p["weights"]), "sampled profile %s" % p["name"])
        check(abs(sum(p["weights"]) - p["endValue"]) < 1e-6 * max(1, p["endValue"]), "weights sum to endValue")
    g = d["profiles"][0]
    stacks = {tuple(fr[i]["name"] for i in s): w for s, w in zip(g["samples"], g["weights"])}
    check(stacks == {("main", "solve", "[inlined] axpy_launch", "<gpu kernel>", KERNEL): 4e6,
                     ("main", "solve", "[inlined] axpy_launch", "solve", "<gpu kernel>", KERNEL): 1e6,
                     ("main", "copy_in", "<gpu copy>"): 1e6}, "GPUOP stacks %r" % stacks)
    check(g["unit"] == "nanoseconds" and d["profiles"][3]["unit"] == "bytes" and d["profiles"][6]["unit"] == "none",
          "units")


def case_errors(tmp):
    db = os.path.join(tmp, "f.gpdb")
    make_db(db)
    out = os.path.join(tmp, "x.pb.gz")
    rc, so, se = run(["export", "--format", "pprof", "-o", out, os.path.join(tmp, "missing.gpdb")])
    check(rc == 1 and "missing.gpdb" in se and not os.path.exists(out),
          "missing input: exit 1 naming it, no output file (rc=%d %r)" % (rc, se))
    bad = os.path.join(tmp, "bad.gpdb")
    with open(bad, "w") as f:
        f.write("not a database\n" * 100)
    rc, so, se = run(["export", "--format", "folded", bad])
    check(rc == 1 and "bad.gpdb" in se and so == "", "foreign file: exit 1 naming it %r" % se)
    rc, so, se = run(["export", "--format", "svg", db])
    check(rc == 64 and "unknown format 'svg'" in se, "unknown format: usage error %r" % se)
    rc, so, se = run(["export", db])
    check(rc == 64 and "--format" in se, "no --format: usage error %r" % se)
    rc, so, se = run(["export", "--format", "pprof"])
    check(rc == 64 and "no profile file" in se, "no file: usage error %r" % se)
    rc, so, se = run(["export", "--format", "folded", "--metric", "NOPE", db])
    check(rc == 64 and "unknown metric" in se, "unknown metric %r" % se)
    rc, so, se = run(["export", "--format", "pprof", "-o", os.path.join(tmp, "no", "dir", "x.pb.gz"), db])
    check(rc == 1 and "cannot write" in se and "x.pb.gz" in se, "unwritable output %r" % se)
    rc, so, se = run(["view", "--no-browser", "-o", os.path.join(tmp, "v.html"), os.path.join(tmp, "missing.gpdb")])
    check(rc == 1 and "missing.gpdb" in se and not os.path.exists(os.path.join(tmp, "v.html")),
          "view of a missing file: exit 1, no page %r" % se)
    rc, so, se = run(["view", "-o", os.path.join(tmp, "v.html"), db], env={"GPUPROF_SPEEDSCOPE_DIR": tmp})
    check(rc == 1 and "speedscope" in se and tmp in se, "view without speedscope: clear error %r" % se)
    rc, so, se = run(["view"])
    check(rc == 64 and "no profile file" in se, "view without a file: usage error")
    # pprof is binary: never to a terminal
    import pty
    m, s = pty.openpty()
    p = subprocess.run([GPUPROF, "export", "--format", "pprof", db], stdout=s, stderr=subprocess.PIPE, timeout=60)
    os.close(s)
    os.close(m)
    check(p.returncode == 64 and b"binary" in p.stderr, "pprof to a terminal refused %r" % p.stderr)


def embedded_profile(html):
    m = re.search(r'loadFileFromBase64\("([^"]*)", "([A-Za-z0-9+/=]*)"\)', html)
    return (m.group(1), json.loads(base64.b64decode(m.group(2)))) if m else (None, None)


def case_view(tmp):
    if not os.path.isdir(os.path.join(VIEWER, "node_modules", "speedscope")):
        skip("viewer/node_modules/speedscope missing (scripts/viewer installs it)")
    db = os.path.join(tmp, "run1.gpdb")
    make_db(db)
    # default page name: FILE's base name with .html, in the current folder
    rc, so, se = run(["view", db], cwd=tmp)
    page = os.path.join(tmp, "run1.html")
    check(rc == 0 and os.path.exists(page), "view writes run1.html (rc=%d %s)" % (rc, se))
    check(("open file://%s in a browser" % page) in so, "no browser: the URL is printed %r" % so)
    with open(page) as f:
        html = f.read()
    # self-contained: speedscope's script and style inline, no file it loads
    check(not re.search(r'<script[^>]+src=|<link[^>]+href=', html), "no external script or style sheet")
    check("data:font/woff2;base64," in html, "the font is inlined")
    name, doc = embedded_profile(html)
    rc, so, se = run(["export", "--format", "speedscope", db])
    exp = json.loads(so)
    check(name == "run1.speedscope.json" and doc and doc.pop("name") == "run1" and exp.pop("name") == db and doc == exp,
          "the page embeds the speedscope export")
    # $BROWSER is started with the page's URL
    rec = os.path.join(tmp, "browser.args")
    fake = os.path.join(tmp, "fake-browser")
    with open(fake, "w") as f:
        f.write("#!/bin/sh\necho \"$@\" > %s.tmp && mv %s.tmp %s\n" % (rec, rec, rec))
    os.chmod(fake, stat.S_IRWXU)
    other = os.path.join(tmp, "sub dir")
    os.mkdir(other)
    rc, so, se = run(["view", "--metric", "GKER", "-o", os.path.join(other, "p.html"), db], env={"BROWSER": fake})
    url = "file://%s/sub%%20dir/p.html" % tmp
    check(rc == 0 and ("opened with $BROWSER: %s" % url) in so, "view opens $BROWSER %r %r" % (so, se))
    # the browser runs detached: wait for its record with a deadline
    import time
    end = time.time() + 30
    while not os.path.exists(rec) and time.time() < end:
        time.sleep(0.05)
    check(os.path.exists(rec) and open(rec).read().strip() == url, "the browser got the page's URL")
    with open(os.path.join(other, "p.html")) as f:
        name, doc = embedded_profile(f.read())
    check(doc is not None and doc["activeProfileIndex"] == 1, "--metric GKER shown first")
    # a $BROWSER that cannot be run: said, and the URL printed
    rc, so, se = run(["view", "-o", page, db], env={"BROWSER": os.path.join(tmp, "no-such-browser")})
    check(rc == 0 and "could not start" in so and "file://" in so, "a missing $BROWSER is reported %r" % so)


def case_deep(tmp):
    # a 20 000-deep chain of CPU frames with a kernel at the bottom: no
    # recursion in the exporters, the whole stack in each format
    depth = 20000
    db = os.path.join(tmp, "deep.gpdb")
    make_deep_db(db, depth)
    rc, so, se = run(["export", "--format", "folded", db])
    fr = so.rstrip("\n").rsplit(" ", 1)[0].split(";") if rc == 0 else []
    check(len(fr) == depth + 2 and fr[-2:] == ["<gpu kernel>", "deep_kernel"] and so.endswith(" 7000\n"),
          "deep folded: %d frames" % len(fr))
    rc, so, se = run(["export", "--format", "speedscope", db])
    d = json.loads(so) if rc == 0 else None
    check(d is not None and len(d["profiles"][0]["samples"][0]) == depth + 2 and len(d["shared"]["frames"]) == 7 * 100 + 2,
          "deep speedscope: the whole stack, equal frames shared")
    if NODE and os.path.isdir(os.path.join(VIEWER, "node_modules", "pprof-format")):
        out = os.path.join(tmp, "deep.pb.gz")
        rc, so, se = run(["export", "--format", "pprof", "-o", out, db])
        d = decode_pprof(out) if rc == 0 else None
        check(d is not None and len(d["samples"]) == 1 and len(d["samples"][0]["stack"]) == depth + 2 and
              d["samples"][0]["values"]["GKER:COUNT"] == 7, "deep pprof")


def record_known(tmp):
    """ocl-known (tests/shim/apps) under `gpuprof record`: its profile."""
    if not APP or not os.path.exists(APP):
        skip("no ocl-known (OpenCL not found at build time)")
    db = os.path.join(tmp, "ocl-known.gpdb")
    p = subprocess.run([GPUPROF, "record", "-o", db, "--", APP], capture_output=True, text=True, timeout=150)
    if p.returncode == 77:
        skip("no OpenCL device")
    check(p.returncode == 0 and os.path.exists(db), "record ocl-known rc=%d %s" % (p.returncode, p.stderr[-800:]))
    return db


def case_ocl(tmp):
    # a real PoCL run: its pprof export read back by pprof-format has the
    # program's known launch counts and bytes (tests/integration/ocl-known.sh)
    # under the CPU function that launched them
    need_node("pprof-format")
    db = record_known(tmp)
    out = os.path.join(tmp, "k.pb.gz")
    rc, so, se = run(["export", "--format", "pprof", "-o", out, db])
    check(rc == 0, "export pprof of a real run %r" % se)
    d = decode_pprof(out)
    if not d:
        return
    tot = {t: sum(s["values"][t] for s in d["samples"]) for t, _ in d["sample_types"]}
    check(tot.get("GKER:COUNT") == 25 and tot.get("GXCOPY:H2D") == 3145728 and tot.get("GXCOPY:D2H") == 131072 and
          tot.get("GXCOPY:COUNT") == 6 and tot.get("GMSET:DEV") == 4096, "totals of the known program %r" % tot)
    per = {}
    for s in d["samples"]:
        st = s["stack"]
        if s["values"].get("GKER:COUNT"):
            check(len(st) >= 3 and st[-2] == "<gpu kernel>" and "step" in st[:-2],
                  "a kernel below <gpu kernel> below step: %r" % st)
            per[st[-1]] = per.get(st[-1], 0) + s["values"]["GKER:COUNT"]
    check(per == {"axpy": 15, "scale": 10}, "launches per kernel %r" % per)
    rc, so, se = run(["export", "--format", "folded", "--metric", "GKER:COUNT", db])
    n = {}
    for l in so.splitlines():
        st, v = l.rsplit(" ", 1)
        n[st.split(";")[-1]] = n.get(st.split(";")[-1], 0) + int(v)
        check(";step;" in st and ";<gpu kernel>;" in st, "folded kernel stack %r" % st)
    check(n == {"axpy": 15, "scale": 10}, "folded launch counts %r" % n)


def case_browser(tmp):
    # the view of a real run in headless Chromium shows the flame graph of
    # its kernel time (GKER): frames named main, step, <gpu kernel>, axpy;
    # and speedscope's pprof importer draws the run's pprof export
    need_node("playwright-core")
    if not os.path.isdir(os.path.join(VIEWER, "node_modules", "speedscope")):
        skip("viewer/node_modules/speedscope missing")
    if not (os.path.exists("/usr/lib/chromium/chromium") or shutil.which("chromium")):
        skip("no chromium")
    db = record_known(tmp)
    page = os.path.join(tmp, "k.html")
    rc, so, se = run(["view", "--no-browser", "--metric", "GKER", "-o", page, db])
    check(rc == 0, "view of a real run %r" % se)
    shot = os.environ.get("GPD_EXPORT_SHOT") or os.path.join(tmp, "k.png")
    pb = os.path.join(tmp, "k.pb.gz")
    rc, so, se = run(["export", "--format", "pprof", "-o", pb, db])
    check(rc == 0, "export pprof of a real run %r" % se)
    p = subprocess.run([NODE, os.path.join(HERE, "browser-check.mjs"), VIEWER, page, shot, "--pprof=" + pb,
                        "main", "step", "<gpu kernel>", "axpy"], capture_output=True, text=True, timeout=150,
                       env=node_env())
    print(p.stdout + p.stderr)
    if p.returncode == 77:
        skip("no chromium")
    check(p.returncode == 0, "Chromium shows the flame graph (rc=%d)" % p.returncode)
    check(os.path.getsize(shot) > 10000 if os.path.exists(shot) else False, "screenshot written")


CASES = {n[5:]: f for n, f in globals().items() if n.startswith("case_")}


def main():
    global GPUPROF, VIEWER, APP
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpuprof", required=True)
    ap.add_argument("--viewer", required=True)
    ap.add_argument("--app")
    ap.add_argument("case", choices=sorted(CASES))
    a = ap.parse_args()
    GPUPROF, VIEWER, APP = a.gpuprof, a.viewer, a.app
    with tempfile.TemporaryDirectory(prefix="gpx-") as tmp:
        CASES[a.case](tmp)
    if FAILS:
        print("%d check(s) failed" % len(FAILS))
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""bench-python.py - Python frame capture vs native-only, same run.

Usage: bench-python.py LIBBENCH [batches]
For Python stack depths 8, 32, 128 (recursive Python frames above the
ctypes call), times gpd_shim_capture() in a child process with Python
frames (default) and in one with GPUPROF_PYTHON=0 (native frames only),
and prints a table: median ns per capture over batches of 2000 calls.
"""
import ctypes
import os
import subprocess
import sys

DEPTHS = (8, 32, 128)


def child(lib, batches):
    b = ctypes.PyDLL(lib)  # keeps the GIL: the thread stays in Python's state
    b.bench_python_capture.restype = ctypes.c_double
    if b.bench_python_setup() != 0:
        raise SystemExit("no region")
    node = ctypes.c_uint()

    def down(d):
        if d > 1:
            return down(d - 1)
        return b.bench_python_capture(batches, 2000, ctypes.byref(node))

    for d in DEPTHS:
        down(d)  # warm: intern the path once
        ns = down(d)
        print("%d %.1f %u" % (d, ns, node.value), flush=True)


def main():
    lib = sys.argv[1]
    batches = int(sys.argv[2]) if len(sys.argv) > 2 else 101
    if os.environ.get("BENCH_PY_CHILD"):
        child(lib, batches)
        return
    res = {}
    for mode in ("python", "native"):
        env = dict(os.environ, BENCH_PY_CHILD="1", GPUPROF_SOCKET="/nonexistent/gpuprofd.sock")
        if mode == "native":
            env["GPUPROF_PYTHON"] = "0"
        out = subprocess.run([sys.executable, __file__, lib, str(batches)], env=env, check=True,
                             stdout=subprocess.PIPE, text=True).stdout
        for row in out.strip().splitlines():
            d, ns, node = row.split()
            res[(mode, int(d))] = (float(ns), int(node))
    print("Python %s, median ns per gpd_shim_capture() (%d batches x 2000)" % (sys.version.split()[0], batches))
    print("%-14s %14s %14s %10s" % ("python depth", "native only", "with Python", "extra"))
    for d in DEPTHS:
        n, p = res[("native", d)][0], res[("python", d)][0]
        print("%-14d %14.1f %14.1f %10.1f" % (d, n, p, p - n))
        if res[("python", d)][1] == 0 or res[("native", d)][1] == 0:
            raise SystemExit("a capture returned no node")


main()

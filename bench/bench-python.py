#!/usr/bin/env python3
"""bench-python.py - Python frame capture vs native-only, same run.

Usage: bench-python.py LIBBENCH [batches]
For Python stack depths 8, 32, 128 (recursive Python frames above the
ctypes call), times gpd_shim_capture() in a child process with Python
frames (default) and in one with GPUPROF_PYTHON=0 (native frames only),
and prints a table: median ns per capture over batches of 2000 calls.
Then the handoff (docs/PYTHON.md "Work handed to a worker thread"): the
same captures on a native worker thread while the Python caller at each
depth waits in handoff_call (GPUPROF_TEST_HANDOFF names it and the
worker's bench_python_dispatch), carrying the caller's frames, against
the native-only child.
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
    h = ctypes.CDLL(lib)  # releases the GIL while the worker runs
    h.bench_python_handoff.restype = ctypes.c_double

    def handoff_call():
        return h.bench_python_handoff(batches, 2000, ctypes.byref(node))

    def hdown(d):
        if d > 1:
            return hdown(d - 1)
        return handoff_call()

    for d in DEPTHS:
        hdown(d)
        ns = hdown(d)
        print("h%d %.1f %u" % (d, ns, node.value), flush=True)

    def other_call():  # not a handoff function: the worker's native path only
        return h.bench_python_handoff(3, 100, ctypes.byref(node))

    ns = other_call()
    print("x %.1f %u" % (ns, node.value), flush=True)


def main():
    lib = sys.argv[1]
    batches = int(sys.argv[2]) if len(sys.argv) > 2 else 101
    if os.environ.get("BENCH_PY_CHILD"):
        child(lib, batches)
        return
    res = {}
    for mode in ("python", "native"):
        env = dict(os.environ, BENCH_PY_CHILD="1", GPUPROF_SOCKET="/nonexistent/gpuprofd.sock",
                   GPUPROF_TEST_HANDOFF="libbench-python,bench_python_dispatch,child.<locals>.handoff_call,bench/bench-python.py")
        if mode == "native":
            env["GPUPROF_PYTHON"] = "0"
        out = subprocess.run([sys.executable, __file__, lib, str(batches)], env=env, check=True,
                             stdout=subprocess.PIPE, text=True).stdout
        for row in out.strip().splitlines():
            d, ns, node = row.split()
            res[(mode, d)] = (float(ns), int(node))
    print("Python %s, median ns per gpd_shim_capture() (%d batches x 2000)" % (sys.version.split()[0], batches))
    print("%-14s %14s %14s %10s" % ("python depth", "native only", "with Python", "extra"))
    for d in DEPTHS:
        n, p = res[("native", str(d))][0], res[("python", str(d))][0]
        print("%-14d %14.1f %14.1f %10.1f" % (d, n, p, p - n))
        if res[("python", str(d))][1] == 0 or res[("native", str(d))][1] == 0:
            raise SystemExit("a capture returned no node")
    print("Handoff: capture on a worker thread while the Python caller waits (caller's depth)")
    print("%-14s %14s %14s %10s" % ("caller depth", "native only", "caller carried", "extra"))
    for d in DEPTHS:
        n, p = res[("native", "h%d" % d)], res[("python", "h%d" % d)]
        print("%-14d %14.1f %14.1f %10.1f" % (d, n[0], p[0], p[0] - n[0]))
        if p[1] == 0 or n[1] == 0:
            raise SystemExit("a worker capture returned no node")
    # the caller's frames were carried: another node than the worker's
    # native path (other_call); without Python frames the same one
    if res[("python", "x")][1] == res[("python", "h128")][1] or res[("native", "x")][1] != res[("native", "h128")][1]:
        raise SystemExit("handoff: the worker's node does not depend on its caller as it should")


main()

#!/usr/bin/env python3
"""bench-python.py - Python frame capture vs native-only, same run.

Usage: bench-python.py LIBBENCH [batches [FAKETORCH]]
For Python stack depths 8, 32, 128 (recursive Python frames above the
ctypes call), times gpd_shim_capture() in a child process with Python
frames (default) and in one with GPUPROF_PYTHON=0 (native frames only),
and prints a table: median ns per capture over batches of 2000 calls.
Then the handoff (docs/PYTHON.md "Work handed to a worker thread"): the
same captures on a native worker thread while the Python caller at each
depth waits in handoff_call (GPUPROF_TEST_HANDOFF names it and the
worker's bench_python_dispatch), carrying the caller's frames, against
the native-only child.
Then, with FAKETORCH (the stand-in libtorch_cpu.so of tests/python/
faketorch.cpp, whose launches are this library's timed captures),
backward under forward (docs/PYTHON.md "Backward under forward"), in the
Python child only: a forward operation's capture without a new autograd
node (the counter check alone) and with one (the record), alternating
between two lines; the engine thread's capture of a backward node whose
forward was recorded (its forward frames) and of one whose forward
launched nothing (the waiting caller's frames, as before): mean ns per
capture (two clock reads included), median over batches of 500.
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
    if os.environ.get("BENCH_PY_FAKETORCH") and os.environ.get("GPUPROF_PYTHON") != "0":
        fwd_bench(h, os.environ["BENCH_PY_FAKETORCH"], batches, node)


def fwd_bench(h, path, batches, node):
    """Rows "f<depth> nonode node caller linked": backward under forward."""
    ft = ctypes.CDLL(path)
    ft.ft_set_launch(ctypes.cast(h.bench_python_launch, ctypes.c_void_p))
    h.bench_python_launch_mean.restype = ctypes.c_double
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "python",
                                    "faketorch"))
    from torch.autograd import graph  # the stand-in's _engine_run_backward
    calls = 500

    def forward(launches, grad):
        for _ in range(calls // 2):
            ft.ft_op(launches, 1, grad)
            ft.ft_op(launches, 1, grad)  # another line: the recorded path's innermost frame moves
        return h.bench_python_launch_mean(ctypes.byref(node))

    def backward():
        graph._engine_run_backward(ft)
        return h.bench_python_launch_mean(ctypes.byref(node)), node.value

    def rows(d):
        if d > 1:
            return rows(d - 1)
        med = lambda v: sorted(v)[len(v) // 2]
        nonode = med([forward(1, 0) for _ in range(batches)])
        fw, bw, lk = [], [], 0
        for _ in range(batches):
            fw.append(forward(1, 1))
            ns, lk = backward()
            bw.append(ns)
        cw, cn = [], 0
        for _ in range(batches):
            forward(0, 1)  # nodes whose forward launched nothing: not recorded
            ns, cn = backward()
            cw.append(ns)
        return nonode, med(fw), med(cw), med(bw), cn, lk

    for d in DEPTHS:
        nonode, node_ns, caller, linked, cn, lk = rows(d)
        if cn == lk or not cn or not lk:
            raise SystemExit("backward under forward: the linked node is not another one than the caller's")
        print("f%d %.1f %.1f %.1f %.1f" % (d, nonode, node_ns, caller, linked), flush=True)


def main():
    lib = sys.argv[1]
    batches = int(sys.argv[2]) if len(sys.argv) > 2 else 101
    if len(sys.argv) > 3 and os.path.exists(sys.argv[3]):  # not built without OpenCL
        os.environ["BENCH_PY_FAKETORCH"] = os.path.abspath(sys.argv[3])
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
            if row.startswith("f"):
                res[(mode, row.split()[0])] = [float(x) for x in row.split()[1:]]
                continue
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
    if ("python", "f8") in res:
        print("Backward under forward (stand-in libtorch_cpu.so): mean ns per capture incl. two clock reads")
        print("%-8s %11s %11s %7s %11s %11s %7s" % ("depth", "fwd no node", "fwd record", "extra",
                                                     "bwd caller", "bwd fwd", "extra"))
        for d in DEPTHS:
            nonode, node, caller, linked = res[("python", "f%d" % d)]
            print("%-8d %11.1f %11.1f %7.1f %11.1f %11.1f %7.1f" % (d, nonode, node, node - nonode, caller,
                                                                    linked, linked - caller))


main()

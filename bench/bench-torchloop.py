#!/usr/bin/env python3
"""bench-torchloop.py - capture cost per GPU operation in a training-loop
shape, on the CPU (bench/bench-torchloop.c says what it emulates).

Usage: bench-torchloop.py LIBBENCH [steps] [--lib NAME=DIR ...] [--rounds R]
A "model" of 8 layers; a step runs forward (3 ops per layer), backward (3
per layer, innermost first) and an optimizer loop (16 ops): 64 GPU
operations, each from its own Python line and its own native call site,
40 native frames below the Python call.  Prints the median over steps of
the ns per op spent in gpd_shim_capture() + push, with Python frames and
native only.  --lib NAME=DIR runs the same in a child with
LD_LIBRARY_PATH=DIR (another libgpuprof.so: before/after in one run);
rounds alternate between the libraries.
"""
import ctypes
import os
import statistics
import subprocess
import sys

DEPTH = 40


def child(lib, steps):
    b = ctypes.PyDLL(lib)
    b.bt_take.restype = ctypes.c_double
    if b.bt_setup() != 0:
        raise SystemExit("no region")
    n = ctypes.c_uint64()
    node = ctypes.c_uint32()
    op = b.bt_op

    class Layer:
        def __init__(self, i):
            self.i = i

        def forward(self):
            op(self.i * 3, DEPTH)
            op(self.i * 3 + 1, DEPTH)
            op(self.i * 3 + 2, DEPTH)

        def backward(self):
            op(24 + self.i * 3, DEPTH)
            op(24 + self.i * 3 + 1, DEPTH)
            op(24 + self.i * 3 + 2, DEPTH)

    layers = [Layer(i) for i in range(8)]

    def call_layer(layer):
        layer.forward()

    def forward():
        for layer in layers:
            call_layer(layer)

    def backward():
        for layer in reversed(layers):
            layer.backward()

    def optimizer():
        for j in range(16):
            op(48 + j, DEPTH)

    def step():
        forward()
        backward()
        optimizer()

    for _ in range(20):  # warm-up: intern every path
        step()
    b.bt_take(ctypes.byref(n), ctypes.byref(node))
    per = []
    for _ in range(steps):
        step()
        ns = b.bt_take(ctypes.byref(n), ctypes.byref(node))
        per.append(ns / n.value)
    if node.value == 0:
        raise SystemExit("a capture returned no node")
    print("%.1f" % statistics.median(per), flush=True)


def main():
    args = sys.argv[1:]
    if os.environ.get("BENCH_TL_CHILD"):
        child(args[0], int(args[1]))
        return
    lib, steps, libs, rounds = args[0], 300, [], 3
    i = 1
    while i < len(args):
        if args[i] == "--lib":
            libs.append(args[i + 1].split("=", 1))
            i += 2
        elif args[i] == "--rounds":
            rounds = int(args[i + 1])
            i += 2
        else:
            steps = int(args[i])
            i += 1
    if not libs:
        libs = [["this", ""]]
    res = {}
    for r in range(rounds):
        for name, d in libs:
            for mode in ("python", "native"):
                env = dict(os.environ, BENCH_TL_CHILD="1", GPUPROF_SOCKET="/nonexistent/gpuprofd.sock")
                if d:
                    env["LD_LIBRARY_PATH"] = d
                if mode == "native":
                    env["GPUPROF_PYTHON"] = "0"
                out = subprocess.run([sys.executable, __file__, lib, str(steps)], env=env, check=True,
                                     stdout=subprocess.PIPE, text=True).stdout
                res.setdefault((name, mode), []).append(float(out.split()[0]))
    print("bench-torchloop: Python %s, 64 ops per step (40 native frames each), %d steps, "
          "median ns per op of capture + push; %d interleaved rounds" % (sys.version.split()[0], steps, rounds))
    print("%-10s %-8s %s   median" % ("shim", "frames", "  ".join("round %d" % (r + 1) for r in range(rounds))))
    for name, _ in libs:
        for mode in ("python", "native"):
            v = res[(name, mode)]
            print("%-10s %-8s %s   %7.1f" % (name, mode, "  ".join("%7.1f" % x for x in v), statistics.median(v)))


main()

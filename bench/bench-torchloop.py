#!/usr/bin/env python3
"""bench-torchloop.py - capture cost per GPU operation in a training-loop
shape, on the CPU (bench/bench-torchloop.c says what it emulates).

Usage: bench-torchloop.py LIBBENCH [steps] [--lib NAME=DIR ...] [--rounds R]
                          [--evict KB[,KB...]] [--stats]
A "model" of 8 layers; a step runs forward (3 ops per layer), backward (3
per layer, innermost first) and an optimizer loop (16 ops): 64 GPU
operations, each from its own Python line and its own native call site,
40 native frames below the Python call.  Prints the median over steps of
the ns per op spent in gpd_shim_capture() + push, with Python frames and
native only.  --lib NAME=DIR runs the same in a child with
LD_LIBRARY_PATH=DIR (another libgpuprof.so: before/after in one run;
DIR's own copy of LIBBENCH if it has one, for a DT_RPATH build);
rounds alternate between the libraries.  --evict KB: before each op,
write one byte per cache line of KB of other memory (PyTorch's own work
between two launches evicts the shim's lines; bench-torchloop.c), one
table row per value (0 = warm caches).  --stats: after the rounds, one
more child per row with GPUPROF_SHIM_STATS=1 (counters zeroed after the
warm-up): the mean ns per phase of the steady loop, counters included
(two clock reads per phase; the clock read's cost is printed), and the
frames per capture with how many of the outermost a return-address
trampoline could at best not read again (shim/capture.c,
capture_stat_frames).
"""
import ctypes
import os
import re
import statistics
import subprocess
import sys

DEPTH = 40


def child(lib, steps, evict):
    b = ctypes.PyDLL(lib)
    b.bt_take.restype = ctypes.c_double
    b.bt_take_push.restype = ctypes.c_double
    if b.bt_setup() != 0 or b.bt_evict_set(evict) != 0:
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

    per = []
    push = []
    # 20 warm-up steps intern every path; the same call line for all steps
    # (a step called from another line is another Python path: new nodes)
    for i in range(20 + steps):
        step()
        ns = b.bt_take(ctypes.byref(n), ctypes.byref(node))
        if i == 19:
            b.bt_stats_reset()
        elif i > 19:
            per.append(ns / n.value)
            push.append(b.bt_take_push() / n.value)
    if node.value == 0:
        raise SystemExit("a capture returned no node")
    print("%.1f %.1f" % (statistics.median(per), statistics.median(push)), flush=True)


STATS_ROWS = [  # (label, stats.c phase name)
    ("capture, whole", "capture (whole)"),
    ("unwind: replayed walk", "unwind: replayed walk"),
    ("unwind: miss (unw_backtrace)", "unwind: unw_backtrace (miss)"),
    ("python frame walk", "python frame walk"),
    ("node of walk (+ Python) reused", "capture: node of walk reused"),
    ("cut + splice + intern", "cut + splice + intern + announce"),
    ("push INVOKE (bench clock)", "push INVOKE"),
]

FRAME_ROWS = [  # (label, stats.c frame-count name): mean frames per capture
    ("native frames / capture", "frames: native (replayable walks)"),
    ("  of them interpreter & above", "frames: native, outer from interp."),
    ("python frames / capture", "frames: python"),
    ("  of them unchanged (outer)", "frames: python, unchanged outer part"),
]


def run_child(lib, steps, d, mode, evict, stats):
    env = dict(os.environ, BENCH_TL_CHILD="1", GPUPROF_SOCKET="/nonexistent/gpuprofd.sock")
    env.pop("GPUPROF_SHIM_STATS", None)
    if d:
        env["LD_LIBRARY_PATH"] = d
    if mode == "native":
        env["GPUPROF_PYTHON"] = "0"
    if stats:
        env["GPUPROF_SHIM_STATS"] = "1"
        env["BENCH_TL_SPLIT"] = "1"
    if d and os.path.exists(os.path.join(d, os.path.basename(lib))):
        lib = os.path.join(d, os.path.basename(lib))  # its RPATH may name its own libgpuprof.so
    p = subprocess.run([sys.executable, __file__, lib, str(steps), str(evict)], env=env, check=True,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    phases = {}
    for line in p.stderr.splitlines():
        # a phase (mean ns) or a frame count (mean frames per capture)
        m = re.match(r"gpuprof-stats: (.*?)\s+n=(\d+)\s+total=\S+ (?:ms|frames) mean=([\d.]+) (?:ns|frames)", line)
        if m:
            phases[m.group(1)] = (int(m.group(2)), float(m.group(3)))
        m = re.match(r"gpuprof-stats: clock read ([\d.]+) ns", line)
        if m:
            phases["clock"] = (0, float(m.group(1)))
    phases["push INVOKE"] = (1, float(p.stdout.split()[1]))
    return float(p.stdout.split()[0]), phases


def main():
    args = sys.argv[1:]
    if os.environ.get("BENCH_TL_CHILD"):
        child(args[0], int(args[1]), int(args[2]))
        return
    lib, steps, libs, rounds, evicts, stats = args[0], 300, [], 3, [0], False
    i = 1
    while i < len(args):
        if args[i] == "--lib":
            libs.append(args[i + 1].split("=", 1))
            i += 2
        elif args[i] == "--rounds":
            rounds = int(args[i + 1])
            i += 2
        elif args[i] == "--evict":
            evicts = [int(x) for x in args[i + 1].split(",")]
            i += 2
        elif args[i] == "--stats":
            stats = True
            i += 1
        else:
            steps = int(args[i])
            i += 1
    if not libs:
        libs = [["this", ""]]
    res = {}
    for r in range(rounds):
        for ev in evicts:
            for name, d in libs:
                for mode in ("python", "native"):
                    res.setdefault((name, mode, ev), []).append(run_child(lib, steps, d, mode, ev, False)[0])
    print("bench-torchloop: Python %s, 64 ops per step (40 native frames each), %d steps, "
          "median ns per op of capture + push; %d interleaved rounds; evict = KB of other memory "
          "written before each op" % (sys.version.split()[0], steps, rounds))
    print("%-10s %-8s %-6s %s   median" % ("shim", "frames", "evict", "  ".join("round %d" % (r + 1)
                                                                          for r in range(rounds))))
    for ev in evicts:
        for name, _ in libs:
            for mode in ("python", "native"):
                v = res[(name, mode, ev)]
                print("%-10s %-8s %-6d %s   %7.1f" % (name, mode, ev, "  ".join("%7.1f" % x for x in v),
                                                      statistics.median(v)))
    if not stats:
        return
    print("\nper phase, GPUPROF_SHIM_STATS=1, steady loop (after warm-up), mean ns with counters "
          "(n per op in brackets where not 1)")
    cols = [(ev, name, d, mode) for ev in evicts for name, d in libs for mode in ("python", "native")]
    got = {}
    for c in cols:
        ns, ph = run_child(lib, steps, c[2], c[3], c[0], True)
        got[c] = (ns, ph)
    print("%-32s %s" % ("phase", " ".join("%15s" % ("%s/%s/%d" % (c[1], c[3][:2], c[0])) for c in cols)))
    print("%-32s %s" % ("capture + push, bench clock", " ".join("%15.1f" % got[c][0] for c in cols)))
    ops = {c: max(1, got[c][1].get("capture (whole)", (1, 0))[0]) for c in cols}
    for label, key in STATS_ROWS:
        cells = []
        for c in cols:
            n, mean = got[c][1].get(key, (0, 0.0))
            cells.append("%15s" % ("-" if not n else "%.1f" % mean if n in (1, ops[c]) else
                                   "%.1f [%.2f]" % (mean, n / ops[c])))
        print("%-32s %s" % (label, " ".join(cells)))
    print("%-32s %s" % ("one clock read", " ".join("%15.1f" % got[c][1].get("clock", (0, 0.0))[1] for c in cols)))
    # frames per capture and the outermost ones unchanged since the
    # thread's last capture (what a return-address trampoline could skip)
    for label, key in FRAME_ROWS:
        print("%-32s %s" % (label, " ".join("%15s" % ("%.1f" % got[c][1][key][1] if key in got[c][1] else "-")
                                            for c in cols)))


main()

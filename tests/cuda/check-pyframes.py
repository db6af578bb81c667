#!/usr/bin/env python3
"""check-pyframes.py REPORT.json SCRIPT - Python frames of a PyTorch run
(`gpuprof report --json` of tests/cuda/torch_pyframes.py; docs/PYTHON.md).

Checks: kernels sit under `step (SCRIPT:<fwd line>)` > `Net.forward
(SCRIPT:<line>)` > a torch.nn module frame (`Module._call_impl` and the
layer's `forward` in torch/nn/modules/*.py), for the conv and both linear
layers; the optimizer's kernels under `step (SCRIPT:<opt line>)`; the
backward kernels: how much sits under the autograd engine thread with
native frames only, and how much under step's backward line (carried
from the autograd threads below `<backward>`, docs/PYTHON.md).
Prints the heaviest Python paths; exits 1 on a failed check.
"""
import json
import re
import sys


def main():
    doc = json.load(open(sys.argv[1]))
    script = sys.argv[2]
    L = {}
    for i, t in enumerate(open(script), 1):
        m = re.search(r"# L:(\w+)", t)
        if m:
            L[m.group(1)] = i
    kern = []
    stack = [(doc["tree"], [])]
    while stack:
        n, anc = stack.pop()
        me = (n.get("kind"), n.get("label") or "", [f.get("function") or "" for f in n.get("frames", [])])
        if n.get("kind") == "kernel":
            kern.append((n, anc))
        for c in n.get("children", []):
            stack.append((c, anc + [me]))

    def g(n):
        return (n.get("metrics", {}).get("GKER:COUNT") or {}).get("excl") or 0

    base = script.rsplit("/", 1)[-1]

    def py(anc):
        return [lab for k, lab, _ in anc if k == "python"]

    def at(tag, fn):
        want = "%s (" % fn
        return lambda lab: lab.startswith(want) and lab.endswith("%s:%d)" % (base, L[tag]))

    total = sum(g(n) for n, a in kern)
    fails = []
    print("kernels launched (GKER:COUNT):", total)
    with_py = sum(g(n) for n, a in kern if py(a))
    print("  under Python frames: %d (%.1f%%)" % (with_py, 100.0 * with_py / max(total, 1)))
    fwd = [(n, a) for n, a in kern if any(at("fwd", "step")(x) for x in py(a))]
    print("  under step (%s:%d): %d" % (base, L["fwd"], sum(g(n) for n, a in fwd)))
    for tag, layer in (("conv", "Conv2d"), ("fc1", "Linear"), ("fc2", "Linear")):
        sel = []
        for n, a in fwd:
            p = py(a)
            i = next((j for j, x in enumerate(p) if at(tag, "Net.forward")(x)), None)
            if i is None:
                continue
            rest = p[i + 1:]
            # torch.nn's Module._call_impl is folded in report's default view
            # (cli/fold.c): the layer's own forward frame follows Net.forward
            if any(x.startswith(layer + ".") and "/torch/nn/modules/" in x for x in rest):
                sel.append((n, a))
        c = sum(g(n) for n, a in sel)
        print("  under step > Net.forward (%s:%d) > %s.*: %d" % (base, L[tag], layer, c))
        if not c:
            fails.append("no kernel under Net.forward line %d > %s" % (L[tag], layer))
        elif tag == "fc1":
            n, a = max(sel, key=lambda x: g(x[0]))
            print("    e.g. %s, Python path: %s" % (n.get("label")[:60], " > ".join(py(a))))
    opt = sum(g(n) for n, a in kern if any(at("opt", "step")(x) for x in py(a)))
    print("  under step (%s:%d) (optimizer): %d" % (base, L["opt"], opt))
    if not opt:
        fails.append("no optimizer kernel under step's opt.step() line")
    eng = sum(g(n) for n, a in kern if not py(a) and
              any(any("autograd::Engine::thread_main" in f for f in fr) or "autograd::Engine::thread_main" in lab
                  for k, lab, fr in a))
    bwd_py = sum(g(n) for n, a in kern if any(at("bwd", "step")(x) for x in py(a)))
    carried = sum(g(n) for n, a in kern if any(k == "placeholder" and lab == "<backward>" for k, lab, _ in a))
    print("  backward: under the autograd engine thread (native frames only): %d; under step (%s:%d): %d,"
          " of which carried from the autograd threads (<backward>): %d" % (eng, base, L["bwd"], bwd_py, carried))
    if not fwd:
        fails.append("no kernel under step's forward line")
    for f in fails:
        print("FAIL:", f)
    print("check-pyframes:", "FAIL" if fails else "PASS")
    sys.exit(1 if fails else 0)


main()

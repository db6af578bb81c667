#!/usr/bin/env python3
"""check-backward.py REPORT.json SCRIPT [MIN%] - share of GPU time under a
Python frame of the user's script (`gpuprof report --json` of
tests/cuda/gpu-backward.py; docs/PYTHON.md "Work handed to a worker
thread").

For GKER (kernel time) and for all GPU time (GKER + GXCOPY + GMSET): the
share whose context has a Python frame of SCRIPT among its ancestors, and
of that the share below `<backward>` (the autograd threads' kernels
carried under their caller).  Also the share still under
torch::autograd::Engine::thread_main without a Python frame (the native
path only), and the share of GKER below an operator node (`aten::NAME`,
the default operator view, docs/PYTHON.md "Operators") with the ten
heaviest operators by the GKER below them (innermost operator).  Backward
under forward (docs/PYTHON.md "Backward under forward"): of the GKER below
`<backward>`, the share whose nearest Python frame above `<backward>` is a
forward operation's (not the caller of backward(): torch/autograd's
_engine_run_backward, backward or grad), of that the share under model
code (a Python frame of transformers/ or torchvision/), and the share left
under the caller; the five forward lines with the most backward GKER.
Exits 1 when the GKER share is below MIN% (default 95).
"""
import json
import sys


def main():
    doc = json.load(open(sys.argv[1]))
    script = sys.argv[2]
    base = script.rsplit("/", 1)[-1]
    need = float(sys.argv[3]) if len(sys.argv) > 3 else 95.0
    mets = ("GKER", "GXCOPY", "GMSET")
    tot = {m: 0.0 for m in mets}
    mine = {m: 0.0 for m in mets}
    bwd = {m: 0.0 for m in mets}
    eng = {m: 0.0 for m in mets}
    ops = {}
    op_gker = 0.0
    # below <backward>: under a forward operation's frame, of it under
    # model code, under the caller of backward(); backward GKER per forward line
    link = {"fwd": 0.0, "model": 0.0, "caller": 0.0}
    fwd_lines = {}
    # node, in script, below <backward>, in engine, operator, nearest Python
    # frame, under model code, where below <backward> (None, "fwd", "caller")
    stack = [(doc["tree"], False, False, False, None, None, False, None)]
    while stack:
        n, in_script, in_bwd, in_eng, op, near, model, side = stack.pop()
        lab = n.get("label") or ""
        if n.get("kind") == "operator":
            op = lab
        if op:
            v = (n.get("metrics", {}).get("GKER") or {}).get("excl") or 0
            ops[op] = ops.get(op, 0.0) + v
            op_gker += v
        if n.get("kind") == "python" and (lab.endswith(")") and ("/%s:" % base in lab or "(%s:" % base in lab)):
            in_script = True
        if n.get("kind") == "python":
            near = lab
            if "/transformers/" in lab or "/torchvision/" in lab:
                model = True
        if n.get("kind") == "placeholder" and lab == "<backward>":
            in_bwd = True
            caller = near is not None and "/torch/autograd/" in near and near.split(" (")[0] in (
                "_engine_run_backward", "backward", "grad")
            side = "caller" if caller or near is None else "fwd"
        if "autograd::Engine::thread_main" in lab or any(
                "autograd::Engine::thread_main" in (f.get("function") or "") for f in n.get("frames", [])):
            in_eng = True
        for m in mets:
            v = (n.get("metrics", {}).get(m) or {}).get("excl") or 0
            tot[m] += v
            if in_script:
                mine[m] += v
                if in_bwd:
                    bwd[m] += v
            elif in_eng:
                eng[m] += v
        g_ex = (n.get("metrics", {}).get("GKER") or {}).get("excl") or 0
        if side == "caller":
            link["caller"] += g_ex
        elif side == "fwd":
            link["fwd"] += g_ex
            if model:
                link["model"] += g_ex
            fwd_lines[near] = fwd_lines.get(near, 0.0) + g_ex
        for c in n.get("children", []):
            stack.append((c, in_script, in_bwd, in_eng, op, near, model, side))
    g = lambda d: d["GKER"]
    a = lambda d: sum(d.values())
    pct = lambda x, y: 100.0 * x / y if y else 0.0
    print("GKER %.6f s: under %s frames %.1f%% (below <backward> %.1f%%); native autograd path only %.1f%%"
          % (g(tot) / 1e9, base, pct(g(mine), g(tot)), pct(g(bwd), g(tot)), pct(g(eng), g(tot))))
    print("GPU time (GKER+GXCOPY+GMSET) %.6f s: under %s frames %.1f%% (below <backward> %.1f%%)"
          % (a(tot) / 1e9, base, pct(a(mine), a(tot)), pct(a(bwd), a(tot))))
    print("GKER below an operator node (aten::*): %.1f%%; heaviest operators (innermost):" % pct(op_gker, g(tot)))
    for k, v in sorted(ops.items(), key=lambda kv: -kv[1])[:10]:
        print("  %5.1f%%  %s" % (pct(v, g(tot)), k))
    below = link["fwd"] + link["caller"]
    print("backward under forward: GKER below <backward> %.6f s: under a forward operation's Python frame %.1f%% "
          "(under transformers/torchvision model code %.1f%%), under the caller of backward() %.1f%%"
          % (below / 1e9, pct(link["fwd"], below), pct(link["model"], below), pct(link["caller"], below)))
    print("forward lines with the most backward GKER (share of GKER below <backward>):")
    for k, v in sorted(fwd_lines.items(), key=lambda kv: -kv[1])[:5]:
        print("  %5.1f%%  %s" % (pct(v, below), k[:200]))
    ok = g(tot) > 0 and pct(g(mine), g(tot)) >= need
    print("check-backward:", "PASS" if ok else "FAIL (want >= %.0f%% of GKER)" % need)
    sys.exit(0 if ok else 1)


main()

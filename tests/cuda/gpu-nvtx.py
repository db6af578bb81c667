#!/usr/bin/env python3
"""gpu-nvtx.py - NVTX ranges from PyTorch as context nodes (docs/NVTX.md),
on the GPU machine, under the bundle (gpuprof on PATH: source env.sh).

  python3 gpu-nvtx.py [OUT_DIR]   record `python3 gpu-nvtx.py run` with
                                  `gpuprof record`, then check the report
  python3 gpu-nvtx.py run         the workload alone
  python3 gpu-nvtx.py check REPORT.json

Workload (STEPS = 5): inside torch.cuda.nvtx.range_push("outer"), each
step pushes "matmul" around x @ x, "relu" around torch.relu, then z.add_(1)
in "outer" only; after the pop, `with torch.cuda.nvtx.range("ctx")` around
x * 2.  Checks (report --json tree): kernels under outer > relu = STEPS,
outer alone = STEPS, ctx = 1 (one elementwise kernel each); under outer >
matmul a non-zero multiple of STEPS (cuBLAS may use more than one kernel
per GEMM); every range node sits between the Python frames `<module>`
(above: main() was called there) and `main` (below: the ranges were pushed
in main, the operations run there), the placement of docs/NVTX.md; no
range node on the warm-up kernels.  Exit 1 on a failed check.
"""
import json
import os
import subprocess
import sys

STEPS = 5


def run():
    import torch
    import torch.cuda.nvtx as nvtx

    dev = torch.device("cuda")
    x = torch.randn(256, 256, device=dev)
    for _ in range(3):  # warm-up: cuBLAS handles, no range open
        torch.relu(x @ x).add_(1)
    torch.cuda.synchronize()
    nvtx.range_push("outer")
    for _ in range(STEPS):
        nvtx.range_push("matmul")
        y = x @ x
        nvtx.range_pop()
        nvtx.range_push("relu")
        z = torch.relu(y)
        nvtx.range_pop()
        z.add_(1)
    torch.cuda.synchronize()
    nvtx.range_pop()
    with nvtx.range("ctx"):
        w = x * 2
    torch.cuda.synchronize()
    print("gpu-nvtx: done", float(w[0, 0]) == float(x[0, 0]) * 2)


def check(path):
    def kernels(n, anc):
        """(kernel node, [(kind, label) of its ancestors, root first])"""
        if n.get("kind") == "kernel":
            yield n, anc
        for c in n.get("children", []):
            yield from kernels(c, anc + [(n.get("kind") or "", n.get("label") or "")])

    def g(n):
        return (n.get("metrics", {}).get("GKER:COUNT") or {}).get("excl") or 0

    kern = list(kernels(json.load(open(path))["tree"], []))

    base = os.path.basename(__file__)
    rows, bad = {}, []
    for n, anc in kern:
        labs = [lab[len("<nvtx> "):] for k, lab in anc if lab.startswith("<nvtx> ")]
        rows[tuple(labs)] = rows.get(tuple(labs), 0) + g(n)
        if labs:
            i = next(j for j, (k, lab) in enumerate(anc) if lab.startswith("<nvtx> "))
            last = max(j for j, (k, lab) in enumerate(anc) if lab.startswith("<nvtx> "))
            above = next((lab for k, lab in reversed(anc[:i]) if k == "python"), "-")
            below = next((lab for k, lab in anc[last + 1:] if k == "python"), "-")
            if not (above.startswith("<module> (") and base in above):
                bad.append("range %s: the Python frame above it is %s, want <module> (%s:...)" % (labs, above, base))
            if not (below.startswith("main (") and base in below):
                bad.append("range %s: the Python frame below it is %s, want main (%s:...)" % (labs, below, base))
    for k in sorted(rows):
        print("  %-28s %6d kernels" % (" > ".join(k) or "(no range)", rows[k]))
    want = {("outer", "relu"): STEPS, ("outer",): STEPS, ("ctx",): 1}
    for k, v in want.items():
        if rows.get(k, 0) != v:
            bad.append("%s: %d kernels, want %d" % (" > ".join(k), rows.get(k, 0), v))
    mm = rows.get(("outer", "matmul"), 0)
    if mm == 0 or mm % STEPS:
        bad.append("outer > matmul: %d kernels, want a non-zero multiple of %d" % (mm, STEPS))
    extra = [k for k in rows if k and k not in want and k != ("outer", "matmul")]
    if extra:
        bad.append("unexpected range chains: %s" % extra)
    if not rows.get((), 0):
        bad.append("no kernel outside the ranges (the warm-up)")
    for b in bad:
        print("FAIL:", b)
    print("gpu-nvtx check:", "FAIL" if bad else "PASS")
    return 1 if bad else 0


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "run":
        return run()
    if len(sys.argv) > 2 and sys.argv[1] == "check":
        return check(sys.argv[2])
    out = sys.argv[1] if len(sys.argv) > 1 else "/tmp"
    os.makedirs(out, exist_ok=True)
    db, rep = os.path.join(out, "nvtx.gpdb"), os.path.join(out, "nvtx-report.json")
    env = dict(os.environ, GPUPROF_LOG=os.environ.get("GPUPROF_LOG", "info"))
    rc = subprocess.call(["gpuprof", "record", "-o", db, "--", sys.executable, os.path.abspath(__file__), "run"],
                         env=env)
    print("record rc=%d" % rc)
    with open(rep, "w") as f:
        rc = subprocess.call(["gpuprof", "report", "--json", db], stdout=f)
    print("report rc=%d" % rc)
    subprocess.call("gpuprof report --depth 60 %s | grep -E '<nvtx>|<gpu kernel>' | head -30" % db, shell=True)
    return check(rep)


if __name__ == "__main__":
    sys.exit(main())

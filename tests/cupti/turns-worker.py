#!/usr/bin/env python3
"""turns-worker.py - a stand-in for tests/cuda/torch_train.py's turns
protocol (TORCH_TURNS=1) without torch or a GPU, for tests/cupti/
test-turns.sh: prints "torch_startup_s ...", "ready <pid>", then for each
"go N" line "turn <s> <median step s>" with made-up, reproducible times:
a step takes 1 ms times the factor that TURNS_FAKE_COST gives this
process's GPUPROF_CUDA_TRACE ("detached=1.05,duty:10/1=1.02"; bare and
unnamed modes 1.0), times a per-process factor (TURNS_FAKE_PROC, e.g.
0.002: each process keeps its own offset of up to +-0.2 %), times a drift
that every process shares (+-5 % over the k-th turns, as a GPU's clock or
the host's load would), times a noise of +-1 % per turn (seeded by the
pid).  "dump N" (a long run, each step's time): a slow drift of +-10 %
along the run and, every 100th step, a spike of TURNS_FAKE_SPIKE's
fraction for this mode ("duty:10/1=0.02": +2 % of the run).  No sleeping: the
times are what the driver's analysis must find again.
"""
import math
import os
import random
import sys


def main():
    mode = os.environ.get("GPUPROF_CUDA_TRACE", "bare" if "GPUPROF_RECORD" not in os.environ else "full")
    cost = dict(kv.split("=", 1) for kv in os.environ.get("TURNS_FAKE_COST", "").split(",") if "=" in kv)
    f = float(cost.get(mode, "1.0"))
    spikes = dict(kv.split("=", 1) for kv in os.environ.get("TURNS_FAKE_SPIKE", "").split(",") if "=" in kv)
    spike = float(spikes.get(mode, "0"))
    rng = random.Random(os.getpid())
    f *= 1 + rng.uniform(-1, 1) * float(os.environ.get("TURNS_FAKE_PROC", "0"))
    print("torch_startup_s import 0.000 cuda 0.000 warm 0.000 (python began 0.000) fake %s" % mode, flush=True)
    print("ready %d" % os.getpid(), flush=True)
    k = 0
    while True:
        w = sys.stdin.readline().split()
        if not w or w[0] not in ("go", "dump"):
            break
        n = int(w[1])
        step = 1e-3 * f * (1 + 0.05 * math.sin(k / 3.0)) * (1 + rng.uniform(-0.01, 0.01))
        k += 1
        if w[0] == "go":
            print("turn %.9f %.9f" % (n * step, step), flush=True)
            continue
        # a long run: a slow drift of +-10 % along it and, every 100th
        # step, the spike that TURNS_FAKE_SPIKE gives this mode (a
        # fraction of 100 steps: 0.02 = +2 % of the run)
        per = [step * (1 + 0.1 * math.sin(i / 200.0)) for i in range(n)]
        for i in range(50, n, 100):
            per[i] += 100 * step * spike
        print("dump %.9f %s" % (sum(per), " ".join("%.3f" % (x * 1e6) for x in per)), flush=True)


if __name__ == "__main__":
    main()

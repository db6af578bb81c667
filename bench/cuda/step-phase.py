"""step-phase.py - where in a duty period a traced process loses time.

Runs GPT-2 from a transformers config (gpt2_train.py, same folder) for
SECONDS of timed steps after the warm-up, timing every step
(CLOCK_MONOTONIC, the shim's clock), then folds the steps by their start
time modulo PERIOD_S into 50 ms bins and prints, per bin, the steps that
started there, their mean time and their summed excess over the run's
median step (s), and the excess in total.  Under GPUPROF_CUDA_TRACE=
duty:W/P with P = PERIOD_S the windows recur at one phase, so the bins
show whether the cost sits in the window, at its opening (attach,
subscribe), at its end (detach, drain, cuptiFinalize on the next launch)
or everywhere; a bare run is the null (flat bins).

Usage: python3 step-phase.py PERIOD_S SECONDS [LABEL]
Prints "phase LABEL ..." lines (one per bin, then a summary).
"""
import sys
import time

import gpt2_train
import torch_train


def main():
    period = float(sys.argv[1])
    secs = float(sys.argv[2])
    label = sys.argv[3] if len(sys.argv) > 3 else "run"
    steps, warmup, model, opt, ids, dev = gpt2_train.setup(["", "0", "20"])
    torch = gpt2_train.torch
    for _ in range(warmup):
        gpt2_train.gpt2_step(model, opt, None, ids.to(dev), None)
    torch.cuda.synchronize()
    starts, durs = [], []
    end = time.clock_gettime(time.CLOCK_MONOTONIC) + secs
    t = time.clock_gettime(time.CLOCK_MONOTONIC)
    while t < end:
        gpt2_train.gpt2_step(model, opt, None, ids.to(dev), None)
        n = time.clock_gettime(time.CLOCK_MONOTONIC)
        starts.append(t)
        durs.append(n - t)
        t = n
    med = torch_train.quantile(sorted(durs), 0.5)
    nb = max(1, int(round(period / 0.05)))
    cnt, tot, exc = [0] * nb, [0.0] * nb, [0.0] * nb
    for s, d in zip(starts, durs):
        b = int((s % period) / period * nb) % nb
        cnt[b] += 1
        tot[b] += d
        exc[b] += d - med
    all_exc = sum(exc)
    print("phase %s: %d steps in %.1f s, median %.3f ms, mean %.3f ms, excess over the median %.3f s (%.2f %% of the run)"
          % (label, len(durs), sum(durs), med * 1e3, sum(durs) / len(durs) * 1e3, all_exc,
             100.0 * all_exc / sum(durs)))
    print("phase %s: bin_ms steps mean_ms excess_s" % label)
    for b in range(nb):
        print("phase %s: %6d %5d %8.3f %8.4f" % (label, b * 50, cnt[b], tot[b] / cnt[b] * 1e3 if cnt[b] else 0.0,
                                                 exc[b]))


if __name__ == "__main__":
    main()

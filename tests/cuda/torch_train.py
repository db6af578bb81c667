"""torch_train.py - a real PyTorch workload for gpuprof on a GPU: a few
training steps of a small CNN + MLP on random CIFAR-sized data (CUDA).

Prints "torch_steps_s <seconds>" for the timed steps (after warm-up) so the
wall time can be compared with and without gpuprof.  With TORCH_BLOCK=N
it also prints "block <step> <unix time s> <s for the last N steps>" every
N timed steps (no synchronization added), to see a tracing window come
and go in a long run.  Usage:
  python3 torch_train.py [steps] [warmup] [batch] [width]
batch (default 64) and width (channel multiplier, default 1) make the
kernels larger, so the run is less bound by launch cost.
"""
import os
import sys
import time

import torch
import torch.nn as nn


def make_model(w=1):
    return nn.Sequential(
        nn.Conv2d(3, 32 * w, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32 * w, 64 * w, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64 * w * 8 * 8, 256), nn.ReLU(), nn.Linear(256, 10))


def train_step(model, opt, loss_fn, x, y):
    opt.zero_grad(set_to_none=True)
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()
    return loss


def setup(argv):
    """(steps, warmup, batch, width, dev, model, opt, loss_fn, xs, ys) from argv."""
    steps = int(argv[1]) if len(argv) > 1 else 50
    warmup = int(argv[2]) if len(argv) > 2 else 5
    batch = int(argv[3]) if len(argv) > 3 else 64
    width = int(argv[4]) if len(argv) > 4 else 1
    dev = torch.device("cuda")
    torch.manual_seed(0)
    model = make_model(width).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    xs = torch.randn(batch, 3, 32, 32)        # host tensors: copied each step (H2D)
    ys = torch.randint(0, 10, (batch,))
    return steps, warmup, batch, width, dev, model, opt, loss_fn, xs, ys


def run(steps, warmup, batch, width, dev, model, opt, loss_fn, xs, ys):
    """Warm-up steps, then the timed steps: (wall s of the timed steps, final loss)."""
    for _ in range(warmup):
        train_step(model, opt, loss_fn, xs.to(dev), ys.to(dev))
    torch.cuda.synchronize()
    block = int(os.environ.get("TORCH_BLOCK", "0"))
    t0 = tb = time.perf_counter()
    for i in range(steps):
        loss = train_step(model, opt, loss_fn, xs.to(dev), ys.to(dev))
        if block and (i + 1) % block == 0:
            t = time.perf_counter()
            print(f"block {i + 1} {time.time():.3f} {t - tb:.4f}", flush=True)
            tb = t
    final = loss.item()                        # D2H copy
    torch.cuda.synchronize()
    return time.perf_counter() - t0, final


def main():
    a = setup(sys.argv)
    dt, final = run(*a)
    print(f"torch_steps_s {dt:.4f} steps={a[0]} batch={a[2]} width={a[3]} loss={final:.4f}")


if __name__ == "__main__":
    main()

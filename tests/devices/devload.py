"""devload.py - a PyTorch load whose GPU utilization and memory change in
known phases, for comparing gpuprofd's device series with nvidia-smi
(tests/devices/gpu-devices.sh).  Usage: python3 devload.py [seconds]

Phases (fractions of the run): 0-25 % large fp16 matmuls (busy), 25-40 %
idle holding 4 GiB, 40-70 % training steps of tests/cuda/torch_train.py's
model, 70-100 % 50 % duty-cycle matmuls holding 20 GiB more.  Prints each
phase's start as 'phase NAME <time.time()>'.
"""
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cuda"))
sys.path.insert(0, "tests/cuda")
import torch_train  # noqa: E402


def phase(name):
    print("phase %s %.3f" % (name, time.time()), flush=True)


def main():
    total = float(sys.argv[1]) if len(sys.argv) > 1 else 30.0
    t0 = time.time()
    dev = torch.device("cuda")
    a = torch.randn(8192, 8192, device=dev, dtype=torch.float16)
    b = torch.randn(8192, 8192, device=dev, dtype=torch.float16)
    phase("busy")
    while time.time() - t0 < 0.25 * total:
        for _ in range(20):
            c = a @ b
        torch.cuda.synchronize()
    phase("idle")
    hold = torch.empty(4 << 30, dtype=torch.uint8, device=dev)
    hold.fill_(1)
    torch.cuda.synchronize()
    while time.time() - t0 < 0.40 * total:
        time.sleep(0.05)
    phase("train")
    model = torch_train.make_model(2).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = torch.nn.CrossEntropyLoss()
    x = torch.randn(256, 3, 32, 32, device=dev)
    y = torch.randint(0, 10, (256,), device=dev)
    steps = 0
    while time.time() - t0 < 0.70 * total:
        torch_train.train_step(model, opt, loss_fn, x, y)
        steps += 1
        if steps % 50 == 0:
            torch.cuda.synchronize()
    torch.cuda.synchronize()
    phase("duty50")
    more = torch.empty(20 << 30, dtype=torch.uint8, device=dev)
    more.fill_(2)
    while time.time() - t0 < total:
        t = time.time()
        while time.time() - t < 0.1:
            c = a @ b
            torch.cuda.synchronize()
        time.sleep(0.1)
    torch.cuda.synchronize()
    phase("end")
    print("train_steps", steps, "checksum", float(c[0, 0]) + float(hold[0]) + float(more[0]))


main()

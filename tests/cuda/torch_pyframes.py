"""torch_pyframes.py - a PyTorch training loop with known Python frames
(tests/cuda/check-pyframes.py checks that its kernels sit under `step`,
`Net.forward` and the torch.nn module frames, with these lines: the
"# L:<tag>" comments).  Prints "torch_steps_s <seconds>" for the timed
steps.  Usage: python3 torch_pyframes.py [steps] [warmup]
"""
import sys
import time

import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 32, 3, padding=1)
        self.fc1 = nn.Linear(32 * 16 * 16, 256)
        self.fc2 = nn.Linear(256, 10)

    def forward(self, x):
        x = torch.relu(self.conv(x))  # L:conv
        x = nn.functional.max_pool2d(x, 2).flatten(1)  # L:pool
        x = torch.relu(self.fc1(x))  # L:fc1
        return self.fc2(x)  # L:fc2


def step(model, opt, loss_fn, x, y):
    opt.zero_grad(set_to_none=True)  # L:zero
    loss = loss_fn(model(x), y)  # L:fwd
    loss.backward()  # L:bwd
    opt.step()  # L:opt
    return loss


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    warmup = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    dev = torch.device("cuda")
    torch.manual_seed(0)
    model = Net().to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    xs = torch.randn(64, 3, 32, 32)
    ys = torch.randint(0, 10, (64,))
    for _ in range(warmup):
        step(model, opt, loss_fn, xs.to(dev), ys.to(dev))
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        loss = step(model, opt, loss_fn, xs.to(dev), ys.to(dev))  # L:loop
    final = loss.item()
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    print(f"torch_steps_s {dt:.4f} steps={steps} loss={final:.4f}")


if __name__ == "__main__":
    main()

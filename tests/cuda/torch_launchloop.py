"""torch_launchloop.py - a launch-bound PyTorch loop for issue 24's live
window at a high kernel rate: each step is K elementwise kernels on a
small CUDA tensor (one `torch.add` / `torch.mul` each), no host sync
inside a block, so the host launches as fast as the CUDA runtime takes
them (tens of thousands of kernels per second on an H200).

Prints "block <step> <unix time s> <s for the last N steps> <kernels/s>"
every N steps (TORCH_BLOCK, default 50; the block is synchronized at its
end so that the rate counts finished kernels), the format
tests/cuda/gpu-tracewin.sh waits for, and at the end "launchloop
<kernels> <seconds> <kernels/s>".
Usage:
  python3 torch_launchloop.py [seconds] [kernels_per_step]
(defaults 70 s, 64 kernels a step).
"""
import os
import sys
import time

import torch


def main():
    secs = float(sys.argv[1]) if len(sys.argv) > 1 else 70.0
    k = int(sys.argv[2]) if len(sys.argv) > 2 else 64
    block = int(os.environ.get("TORCH_BLOCK", "50"))
    x = torch.ones(1024, device="cuda")
    torch.cuda.synchronize()
    t0 = time.time()
    tb = t0
    step = 0
    kernels = 0
    while time.time() - t0 < secs:
        for i in range(k):
            # alternate two ops so that successive kernels have two names
            x = torch.add(x, 1.0) if i % 2 == 0 else torch.mul(x, 0.5)
        kernels += k
        step += 1
        if step % block == 0:
            torch.cuda.synchronize()
            now = time.time()
            print(f"block {step} {now:.3f} {now - tb:.6f} {block * k / (now - tb):.0f}", flush=True)
            tb = now
    torch.cuda.synchronize()
    dt = time.time() - t0
    print(f"launchloop {kernels} {dt:.3f} {kernels / dt:.0f}", flush=True)


if __name__ == "__main__":
    main()

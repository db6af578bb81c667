"""torch_kineto.py - tests/cuda/torch_train.py's loop under torch.profiler
(Kineto): the comparison point for gpuprof's tracing cost.

Activities CPU + CUDA (Kineto traces the CUDA kernels, copies and memsets
through CUPTI's activity API and the runtime calls that launched them, and
the aten operators on the CPU side, which is what links a kernel to the
code that launched it).  Prints "torch_steps_s <s>" for the timed steps,
measured inside the profiling window, before the profiler stops and
processes its trace (that processing is not counted).  Usage as
torch_train.py: [steps] [warmup] [batch] [width]
"""
import sys

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from torch_train import run, setup  # noqa: E402


def main():
    a = setup(sys.argv)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        dt, final = run(*a)
    n = sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)
    print(f"torch_steps_s {dt:.4f} steps={a[0]} batch={a[2]} width={a[3]} loss={final:.4f} kineto_gpu_events={n}")


if __name__ == "__main__":
    main()

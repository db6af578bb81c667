# bwdfwd.py - forward operations and a backward pass through a stand-in
# libtorch_cpu.so (tests/python/faketorch.cpp, through ctypes), for
# backward under forward (docs/PYTHON.md).  Arguments: the library, N
# (steps).  Per step (tests/python/bwdfwd-check.py checks exact counts):
#   forward   ft_op(fwd, bwd, grad) from the lines tagged attn_* / mlp_*:
#             a node (grad) whose backward launches `bwd` kernels, then
#             `fwd` forward kernels; attn_view makes a node and launches
#             nothing (a view), mlp_nograd launches without a node; leaf
#             is a node of no forward operation (AccumulateGrad)
#   backward  the engine thread evaluates the step's nodes while this
#             thread waits in torch/autograd/graph.py _engine_run_backward
#   side      first, on a new thread (its own counter from 0, its own
#             thread id): one node and one forward kernel, two backward
#   opt       one kernel after backward, no node
import ctypes
import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "faketorch"))
from torch.autograd import graph  # noqa: E402  (the stand-in package)

lib = ctypes.CDLL(sys.argv[1])  # releases the GIL around each call
N = int(sys.argv[2])


def chk(e, what):
    if e != 0:
        raise SystemExit("%s: %d" % (what, e))


def attention():
    chk(lib.ft_op(1, 2, 1), "attn_mm")  # L:attn_mm
    chk(lib.ft_op(0, 1, 1), "attn_view")  # L:attn_view
    chk(lib.ft_op(2, 3, 1), "attn_softmax")  # L:attn_softmax


def mlp():
    chk(lib.ft_op(1, 4, 1), "mlp_mm")  # L:mlp_mm
    chk(lib.ft_op(1, 0, 0), "mlp_nograd")  # L:mlp_nograd


def forward():
    chk(lib.ft_leaf(1), "leaf")  # L:leaf
    attention()  # L:fwd_attn
    mlp()  # L:fwd_mlp


def side():
    chk(lib.ft_op(1, 2, 1), "side")  # L:side_op


def step():
    th = threading.Thread(target=side)
    th.start()
    th.join()
    forward()  # L:step_fwd
    chk(graph._engine_run_backward(lib), "backward")  # L:step_bwd
    chk(lib.ft_op(1, 0, 0), "opt")  # L:opt


def main():
    chk(lib.ft_setup(), "ft_setup")
    for _ in range(N):
        step()  # L:main_step
    print("ok")


main()  # L:module

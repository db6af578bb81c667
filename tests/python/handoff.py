# handoff.py - Python code that hands GPU work to a native worker thread
# (tests/python/handoff-lib.c through ctypes), as loss.backward() hands
# the backward pass to PyTorch's autograd threads.  Argument: the library,
# N.  Rounds (tests/python/handoff.sh checks each one's kernels, exact):
#   direct   N kernels launched by this thread in direct_path
#   handoff  2N kernels of a worker while train_step waits in engine_run
#            (the handoff function GPUPROF_TEST_HANDOFF names)
#   none     N kernels of a worker while this thread waits in wait_other
#            (no handoff function: native path only)
#   several  2N kernels of two workers while two threads wait in
#            engine_run (whose work is it? native path only)
import ctypes
import sys
import threading

lib = ctypes.CDLL(sys.argv[1])  # releases the GIL around each call
N = int(sys.argv[2])


def chk(e, what):
    if e != 0:
        raise SystemExit("%s: %d" % (what, e))


def engine_run(n, want):
    chk(lib.hl_run(n, want), "hl_run")  # L:engine_run


def train_step(n):
    engine_run(n, 1)  # L:train_step


def direct_path(n):
    chk(lib.hl_direct(n), "hl_direct")  # L:direct


def wait_other():
    chk(lib.hl_join(), "hl_join")  # L:wait_other


def several(n):
    ts = [threading.Thread(target=engine_run, args=(n, 2)) for _ in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


def main():
    chk(lib.hl_setup(), "hl_setup")
    direct_path(N)  # L:main_direct
    lib.hl_reset()
    train_step(2 * N)  # L:main_train
    lib.hl_reset()
    chk(lib.hl_start(N), "hl_start")
    wait_other()  # L:main_wait
    lib.hl_reset()
    several(N)  # L:main_several
    print("ok")


main()  # L:module

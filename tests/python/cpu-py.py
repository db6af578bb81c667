"""cpu-py.py - a CPU-only Python program of known structure for the CPU
sampling test with Python frames (tests/python/cpu-sample.sh): no GPU call,
so the shim sees its Python frames only through CPU samples.

  py_burn_a: 300 ms of the main thread's CPU time, then py_burn_b 100 ms;
  meanwhile a threading.Thread (a pthread the shim samples from its start)
  burns py_burn_w 150 ms.

Prints "fn=NAME tid=T cpu_ns=C" per burner (C: the burn's own thread CPU
time) and "ok"."""
import ctypes
import threading
import time


try:  # the CPU time this thread's timer signals carried ([0]) and its pushed samples carry ([1])
    _lib = ctypes.CDLL(None)
    _hook, _stats = _lib.gpd_shim__cpusample_thread_ns, _lib.gpd_shim__cpusample_stats
except AttributeError:
    _hook = _stats = None


def sampling_on():
    st = (ctypes.c_uint64 * 9)()
    return _stats is not None and _stats(st) == 1


def signalled_ns():
    v = (ctypes.c_uint64 * 2)()
    _hook(v)
    return v[0]


SAMPLED = _hook is not None and sampling_on()


def spin(ms):
    """ms of this thread's CPU time; then on (at most 1 s) until the
    kernel has signalled all but 3 ms more of it than it owed at the start:
    on this project's VM a CPU-time timer's signal is sometimes late by tens
    of ms of the thread's CPU time, and a thread that stops burning keeps
    that stretch unsignalled (docs/SHIM.md, "Late signals")"""
    t0 = time.thread_time_ns()
    owed0 = max(t0 - signalled_ns(), 0) if SAMPLED else 0
    end = t0 + ms * 1000000
    x = 1
    while time.thread_time_ns() < end:
        for i in range(200):
            x = (x * 1103515245 + i) & 0xffffffff
    while SAMPLED and time.thread_time_ns() - signalled_ns() > owed0 + 3000000 and \
            time.thread_time_ns() < end + 1000000000 and sampling_on():
        for i in range(200):
            x = (x * 1103515245 + i) & 0xffffffff
    return x


def py_burn_a(ms):
    return spin(ms)


def py_burn_b(ms):
    return spin(ms)


def py_burn_w(ms):
    return spin(ms)


def timed(fn, ms):
    t0 = time.thread_time_ns()
    fn(ms)
    return time.thread_time_ns() - t0


def worker(out):
    out["tid"] = threading.get_native_id()
    out["w"] = timed(py_burn_w, 150)


def main():
    # samples are recorded once the shim is attached to the daemon (that
    # may take seconds under ASan on a loaded machine): wait, bounded
    try:
        active = ctypes.CDLL(None).gpd_shim_active
    except AttributeError:
        active = None
    for _ in range(6000 if active else 0):
        if active():
            break
        time.sleep(0.01)
    if active and not active():
        raise SystemExit("cpu-py.py: the shim never attached to the daemon")
    out = {}
    t = threading.Thread(target=worker, args=(out,))
    t.start()
    a = timed(py_burn_a, 300)
    b = timed(py_burn_b, 100)
    t.join()
    me = threading.get_native_id()
    print("fn=py_burn_a tid=%d cpu_ns=%d" % (me, a))
    print("fn=py_burn_b tid=%d cpu_ns=%d" % (me, b))
    print("fn=py_burn_w tid=%d cpu_ns=%d" % (out["tid"], out["w"]))
    print("ok")


main()

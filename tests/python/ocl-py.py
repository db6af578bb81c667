# ocl-py.py - known Python functions and lines calling OpenCL through
# ctypes (a private libOpenCL handle: the shim's ICD layer sees the calls).
# Every clEnqueueWriteBuffer is one GXCOPY:H2D copy; tests/python/
# python-frames.sh checks the counts under each Python frame and line
# named "# L:<tag>" below.  Argument: N (copies per path).
import ctypes
import sys
import threading

N = int(sys.argv[1]) if len(sys.argv) > 1 else 5
cl = ctypes.CDLL("libOpenCL.so.1")
P = ctypes.c_void_p


def chk(e, what):
    if e != 0:
        raise SystemExit("%s: %d" % (what, e))


class Ctx:
    def __init__(self):
        p = P(); n = ctypes.c_uint(); err = ctypes.c_int()
        chk(cl.clGetPlatformIDs(1, ctypes.byref(p), ctypes.byref(n)), "platforms")
        d = P()
        chk(cl.clGetDeviceIDs(p, ctypes.c_ulong(0xFFFFFFFF), 1, ctypes.byref(d), None), "devices")
        cl.clCreateContext.restype = P; cl.clCreateCommandQueue.restype = P; cl.clCreateBuffer.restype = P
        self.ctx = P(cl.clCreateContext(None, 1, ctypes.byref(d), None, None, ctypes.byref(err))); chk(err.value, "ctx")
        self.q = P(cl.clCreateCommandQueue(self.ctx, d, ctypes.c_ulong(0), ctypes.byref(err))); chk(err.value, "queue")
        self.buf = P(cl.clCreateBuffer(self.ctx, ctypes.c_ulong(1), ctypes.c_size_t(4096), None, ctypes.byref(err))); chk(err.value, "buf")
        self.data = ctypes.create_string_buffer(4096)


C = None


def upload():
    chk(cl.clEnqueueWriteBuffer(C.q, C.buf, 1, ctypes.c_size_t(0), ctypes.c_size_t(4096), C.data, 0, None, None), "write")  # L:upload


def path_a(n):
    for _ in range(n):
        upload()  # L:path_a


def path_b(n):
    i = 0
    while i < n:
        upload()  # L:path_b
        i += 1


def gen_uploads(n):
    for i in range(n):
        upload()  # L:gen
        yield i


def use_gen(n):
    return sum(1 for _ in gen_uploads(n))  # L:use_gen


def rec(depth):
    if depth == 0:
        upload()  # L:rec_base
        return
    rec(depth - 1)  # L:rec_call


def worker(n):
    for _ in range(n):
        upload()  # L:worker


CMP = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int))
calls = [0]


def cmp(a, b):
    if calls[0] < N:
        upload()  # L:cmp
    calls[0] += 1
    return a[0] - b[0]


def via_callback():
    libc = ctypes.CDLL(None)
    arr = (ctypes.c_int * 64)(*range(64, 0, -1))
    libc.qsort(arr, 64, ctypes.sizeof(ctypes.c_int), CMP(cmp))  # L:qsort
    if calls[0] < N:
        raise SystemExit("qsort compared only %d times" % calls[0])


def main():
    global C
    C = Ctx()
    path_a(N)  # L:main_a
    path_b(2 * N)  # L:main_b
    use_gen(N)  # L:main_gen
    rec(4)  # L:main_rec
    ts = [threading.Thread(target=worker, args=(N,)) for _ in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    via_callback()  # L:main_cb
    chk(cl.clFinish(C.q), "finish")
    print("ok")


main()

# ocl-ctypes.py - an interpreter calling OpenCL through ctypes with a
# private handle: ctypes.CDLL("libOpenCL.so.1") is dlopen(RTLD_LOCAL) and
# every call goes through dlsym(handle, ...), so a preloaded library's cl*
# symbols are never called; only the ICD loader's layers see the calls.
# Ten 64 KiB uploads, one buffer, one clFinish.
import ctypes
cl = ctypes.CDLL("libOpenCL.so.1")  # plain private handle (RTLD_LOCAL)
P = ctypes.c_void_p
def chk(e, what):
    if e != 0: raise SystemExit("%s: %d" % (what, e))
def platform():
    p = P(); n = ctypes.c_uint()
    chk(cl.clGetPlatformIDs(1, ctypes.byref(p), ctypes.byref(n)), "platforms")
    d = P(); chk(cl.clGetDeviceIDs(p, ctypes.c_ulong(0xFFFFFFFF), 1, ctypes.byref(d), None), "devices")
    return d
def upload(q, buf, data):
    chk(cl.clEnqueueWriteBuffer(q, buf, 1, ctypes.c_size_t(0), ctypes.c_size_t(len(data)), data, 0, None, None), "write")
def main():
    d = platform(); err = ctypes.c_int()
    cl.clCreateContext.restype = P; cl.clCreateCommandQueue.restype = P; cl.clCreateBuffer.restype = P
    ctx = P(cl.clCreateContext(None, 1, ctypes.byref(d), None, None, ctypes.byref(err))); chk(err.value, "ctx")
    q = P(cl.clCreateCommandQueue(ctx, d, ctypes.c_ulong(0), ctypes.byref(err))); chk(err.value, "queue")
    buf = P(cl.clCreateBuffer(ctx, ctypes.c_ulong(1), ctypes.c_size_t(65536), None, ctypes.byref(err))); chk(err.value, "buf")
    data = ctypes.create_string_buffer(65536)
    for i in range(10): upload(q, buf, data)
    chk(cl.clFinish(q), "finish")
    chk(cl.clReleaseMemObject(buf), "release")
    print("ok")
main()

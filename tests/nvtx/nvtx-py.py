# nvtx-py.py - NVTX ranges pushed from Python around OpenCL copies, both
# through ctypes and libnvtx-py.so (as torch.cuda.nvtx and torch's
# operations go through torch._C); tests/nvtx/check.py py checks the copy
# counts under each range chain and that each range node sits between the
# Python frames `<module>` (main() is called there) and `main` (the ranges
# are pushed and the copies made there).  Each upload() is one GXCOPY:H2D
# copy.  Usage: nvtx-py.py LIBNVTX_PY
import contextlib
import ctypes
import sys

nv = ctypes.CDLL(sys.argv[1])
nv.nvtx_push.argtypes = [ctypes.c_char_p]


def range_push(name):
    nv.nvtx_push(name.encode())


@contextlib.contextmanager
def nvtx_range(name):
    range_push(name)
    try:
        yield
    finally:
        nv.nvtx_pop()


def main():
    if nv.ocl_open() != 0:
        raise SystemExit(77)
    nv.upload()
    nv.upload()
    range_push("outer")
    for _ in range(3):
        range_push("a")
        nv.upload()
        nv.nvtx_pop()
        nv.upload()
    nv.nvtx_pop()
    with nvtx_range("ctx"):
        nv.upload()
    nv.ocl_close()
    print("ok")


main()

#!/usr/bin/env bash
# An interpreter nobody here wrote (Debian's python3, a non-PIE executable
# without .symtab) calls OpenCL through ctypes.CDLL("libOpenCL.so.1"), a
# private handle that the shim's interposed symbols never see: the shim's
# ICD loader layer records the calls.  Exact counts and bytes; the copies
# land below the interpreter's own exported functions (resolved from
# .dynsym at their link-time addresses) and ctypes' ffi_call.
source "$(dirname "$0")/lib.sh" "$1"
have_opencl
PY=/usr/bin/python3
[ -x $PY ] || { echo "SKIP: no $PY"; exit 77; }
grep -q RTLD_GLOBAL "$HERE/ocl-ctypes.py" && die "ocl-ctypes.py must use a private handle"
unset OPENCL_LAYERS
"$GPUPROF" record -o "$T/p.gpdb" -- $PY "$HERE/ocl-ctypes.py" > "$T/out.txt" 2>&1 || { cat "$T/out.txt"; die "record failed"; }
grep -qx ok "$T/out.txt" || { cat "$T/out.txt"; die "script did not finish"; }
$GPDQ "$T/p.gpdb" metric-total GXCOPY:H2D 655360
$GPDQ "$T/p.gpdb" metric-total GXCOPY:COUNT 10
$GPDQ "$T/p.gpdb" metric-total GMEM:COUNT 2
$GPDQ "$T/p.gpdb" metric-total GMEM:DEV 131072
$GPDQ "$T/p.gpdb" metric-total GSYNC:COUNT 1
# the interpreter's evaluation frames stand as Python frames (docs/PYTHON.md)
$GPDQ "$T/p.gpdb" only-under GXCOPY:H2D "upload ($HERE/ocl-ctypes.py:$(grep -n 'clEnqueueWriteBuffer' "$HERE/ocl-ctypes.py" | cut -d: -f1))"
$GPDQ "$T/p.gpdb" only-under GXCOPY:H2D ffi_call
$GPDQ "$T/p.gpdb" drops 0
echo "PASS python-ctypes"

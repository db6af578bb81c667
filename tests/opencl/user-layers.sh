#!/usr/bin/env bash
# (d) OPENCL_LAYERS already set by the user: the shim appends itself and
# both layers run.  The user's layer (tests/opencl/ocl-count-layer.c)
# counts the calls that reach it; the private-handle program ocl-dlopen
# can only be profiled by the shim's layer.  An inherited value that
# already names the shim is left as it is (no second copy).
OCLT=$(cd "$(dirname "$0")" && pwd)
source "$OCLT/../integration/lib.sh" "$1"
source "$OCLT/common.sh"
have_opencl
APP=$(app ocl-dlopen)
CL=$(find "$BUILD" -name libocl-count-layer.so -print -quit)
[ -n "$CL" ] || { echo "SKIP: libocl-count-layer.so not built"; exit 77; }
CL=$(realpath "$CL")

# The count layer alone (no shim) works and counts exactly.
OPENCL_LAYERS=$CL OCL_COUNT_LAYER_OUT=$T/bare.cnt "$APP" > "$T/bare.txt" || die "bare run failed"
[ "$(cat "$T/bare.cnt")" = "ndrange=25 write=3" ] || die "count layer alone: $(cat "$T/bare.cnt")"

# User's layer + shim.
OPENCL_LAYERS=$CL OCL_COUNT_LAYER_OUT=$T/rec.cnt "$GPUPROF" record -o "$T/u.gpdb" -- "$APP" \
  > "$T/out.txt" 2> "$T/err.txt" || { cat "$T/err.txt"; die "record failed"; }
cat "$T/err.txt"
grep -qx "OPENCL_LAYERS=$CL:$SHIM_REAL" "$T/out.txt" || die "layers not kept: $(head -1 "$T/out.txt")"
[ "$(cat "$T/rec.cnt")" = "ndrange=25 write=3" ] || die "user's layer under the shim: $(cat "$T/rec.cnt")"
known_checks "$T/u.gpdb"

# Inherited value naming the shim already: unchanged, still counted once.
OPENCL_LAYERS=$CL:$SHIM_REAL OCL_COUNT_LAYER_OUT=$T/inh.cnt "$GPUPROF" record -o "$T/i.gpdb" -- "$APP" \
  > "$T/out2.txt" 2> "$T/err2.txt" || { cat "$T/err2.txt"; die "record (inherited) failed"; }
grep -qx "OPENCL_LAYERS=$CL:$SHIM_REAL" "$T/out2.txt" || die "inherited value changed: $(head -1 "$T/out2.txt")"
[ "$(cat "$T/inh.cnt")" = "ndrange=25 write=3" ] || die "user's layer (inherited): $(cat "$T/inh.cnt")"
known_checks "$T/i.gpdb"
echo "PASS opencl.user-layers"

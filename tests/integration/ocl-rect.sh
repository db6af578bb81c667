#!/usr/bin/env bash
# The Rect forms of read/write/copy: a 16 x 4 x 2 box is 128 bytes in each
# direction, below rect_copies(), and the data arrives intact.
source "$(dirname "$0")/lib.sh" "$1"
have_opencl
APP=$(app ocl-steady)
"$GPUPROF" record -o "$T/r.gpdb" -- "$APP" 2 0 rect > "$T/out.txt" 2>&1 || { cat "$T/out.txt"; die "record failed"; }
grep -qx "rect ok" "$T/out.txt" || { cat "$T/out.txt"; die "rect copies wrong under the shim"; }
$GPDQ "$T/r.gpdb" metric-total GXCOPY:H2D 128
$GPDQ "$T/r.gpdb" metric-total GXCOPY:D2D 128
$GPDQ "$T/r.gpdb" metric-total GXCOPY:D2H 384   # 128 (rect) + 256 (the loop's result)
$GPDQ "$T/r.gpdb" metric-total GXCOPY:COUNT 4   # + the plain read of the loop's result
$GPDQ "$T/r.gpdb" only-under GXCOPY:H2D rect_copies
$GPDQ "$T/r.gpdb" only-under GXCOPY:D2D rect_copies
echo "PASS ocl-rect"

#!/usr/bin/env bash
# The known-structure OpenCL program under `gpuprof record`: exact launch
# counts, kernel time only under step(), exact bytes per copy direction.
source "$(dirname "$0")/lib.sh" "$1"
have_opencl
APP=$(app ocl-known)
bare=$("$APP")
out=$("$GPUPROF" record -o "$T/k.gpdb" -- "$APP" 2>"$T/rec.err") || { cat "$T/rec.err"; die "record failed"; }
cat "$T/rec.err"
grep -qF "$bare" <<<"$out" || die "program output changed under the shim: '$out' vs '$bare'"
$GPDQ "$T/k.gpdb" processes 1
$GPDQ "$T/k.gpdb" kernel-count axpy 15
$GPDQ "$T/k.gpdb" kernel-count scale 10
$GPDQ "$T/k.gpdb" kernel-under axpy step
$GPDQ "$T/k.gpdb" kernel-under scale step
$GPDQ "$T/k.gpdb" only-under GKER step
$GPDQ "$T/k.gpdb" metric-total GKER:COUNT 25
$GPDQ "$T/k.gpdb" metric-total GXCOPY:H2D 3145728
$GPDQ "$T/k.gpdb" metric-total GXCOPY:D2H 131072
$GPDQ "$T/k.gpdb" metric-total GXCOPY:D2D 262144
$GPDQ "$T/k.gpdb" metric-total GXCOPY:COUNT 6
$GPDQ "$T/k.gpdb" only-under GXCOPY init
$GPDQ "$T/k.gpdb" metric-total GMSET:COUNT 1
$GPDQ "$T/k.gpdb" metric-total GMSET:DEV 4096
$GPDQ "$T/k.gpdb" metric-positive GSYNC
$GPDQ "$T/k.gpdb" drops 0
"$GPUPROF" report "$T/k.gpdb" > "$T/report.txt" || die "report failed"
grep -q "step" "$T/report.txt" || die "report does not show step"
grep -q "axpy" "$T/report.txt" || die "report does not show axpy"
echo "PASS ocl-known"

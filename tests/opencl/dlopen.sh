#!/usr/bin/env bash
# (a) A program that reaches OpenCL only through dlopen(RTLD_LOCAL) +
# dlsym (tests/apps/ocl-dlopen.c: the ocl-known workload, libOpenCL not
# linked) under `gpuprof record`: the shim's loader layer sees every call;
# exact launches, copies, bytes, allocs and syncs under the right contexts.
OCLT=$(cd "$(dirname "$0")" && pwd)
source "$OCLT/../integration/lib.sh" "$1"
source "$OCLT/common.sh"
have_opencl
APP=$(app ocl-dlopen)
! readelf -d "$APP" | grep -q 'NEEDED.*libOpenCL' || die "ocl-dlopen links libOpenCL: it must use a private handle"
"$APP" > "$T/bare.txt" || die "bare run failed"
grep -qx "OPENCL_LAYERS=" "$T/bare.txt" || die "bare run sees OPENCL_LAYERS: $(head -1 "$T/bare.txt")"
GPUPROF_LOG=info "$GPUPROF" record -o "$T/d.gpdb" -- "$APP" > "$T/out.txt" 2> "$T/err.txt" \
  || { cat "$T/out.txt" "$T/err.txt"; die "record failed"; }
cat "$T/err.txt"
grep -qx "OPENCL_LAYERS=$SHIM_REAL" "$T/out.txt" || die "shim did not name itself in OPENCL_LAYERS: $(head -1 "$T/out.txt")"
grep -qxF "$(grep checksum "$T/bare.txt")" "$T/out.txt" || die "result changed under the shim"
[ "$(count_lines "$T/err.txt" "loader layer installed")" = 1 ] || die "expected one 'loader layer installed' line"
[ "$(count_lines "$T/err.txt" "loader layer not in use")" = 0 ] || die "unexpected fallback line"
known_checks "$T/d.gpdb"
echo "PASS opencl.dlopen"

#!/usr/bin/env bash
# (c) A normally linked program (ocl-known calls the cl* symbols, which
# the preloaded shim interposes) recorded with the loader layer in use:
# each call is recorded once (exact N, not 2N), by the layer.  Then the
# same with the layer off (GPUPROF_OPENCL_LAYER=0, the state of a loader
# without layer support): interposition records it, exact N again, with
# exactly one log line saying so.
OCLT=$(cd "$(dirname "$0")" && pwd)
source "$OCLT/../integration/lib.sh" "$1"
source "$OCLT/common.sh"
have_opencl
APP=$(app ocl-known)
grep -q 'NEEDED.*libOpenCL' <<<"$(readelf -d "$APP")" || die "ocl-known should link libOpenCL"
bare=$("$APP") || die "bare run failed"

GPUPROF_LOG=info "$GPUPROF" record -o "$T/layer.gpdb" -- "$APP" > "$T/out1.txt" 2> "$T/err1.txt" \
  || { cat "$T/err1.txt"; die "record (layer) failed"; }
cat "$T/err1.txt"
grep -qxF "$bare" "$T/out1.txt" || die "output changed under the shim"
[ "$(count_lines "$T/err1.txt" "loader layer installed")" = 1 ] || die "layer not installed"
[ "$(count_lines "$T/err1.txt" "loader layer not in use")" = 0 ] || die "unexpected fallback line"
known_checks "$T/layer.gpdb"

GPUPROF_OPENCL_LAYER=0 GPUPROF_LOG=info "$GPUPROF" record -o "$T/interp.gpdb" -- "$APP" \
  > "$T/out2.txt" 2> "$T/err2.txt" || { cat "$T/err2.txt"; die "record (interposition) failed"; }
cat "$T/err2.txt"
grep -qxF "$bare" "$T/out2.txt" || die "output changed under the shim (layer off)"
[ "$(count_lines "$T/err2.txt" "loader layer installed")" = 0 ] || die "layer installed although turned off"
[ "$(count_lines "$T/err2.txt" "loader layer not in use (GPUPROF_OPENCL_LAYER=0)")" = 1 ] \
  || die "expected exactly one fallback line"
known_checks "$T/interp.gpdb"
echo "PASS opencl.linked"

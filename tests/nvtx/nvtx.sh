#!/usr/bin/env bash
# NVTX ranges as calling contexts (shim/nvtx/, docs/NVTX.md), with
# nvtx-known (an OpenCL program built with the real NVTX v3 headers) on
# PoCL under `gpuprof record`; the shim makes NVTX load it as the
# injection (NVTX_INJECTION64_PATH, set by its constructor):
#   known  kernel counts under each range node exact (nested pushes, a
#          push inside a called function, a domain range with a registered
#          name, a start/end range ended on another thread, a wide name, 40
#          nested pushes of which 32 are kept, one pop too many), each node
#          between the right frames (tests/nvtx/check.py); the shim's NVTX
#          counters exact; `gpuprof report` shows the range nodes; the
#          program's output unchanged
#   off    GPUPROF_NVTX=0: no range node, the same kernels
# Usage: nvtx.sh BUILD_DIR MODE
source "$(dirname "$0")/../integration/lib.sh" "$1"
source "$(dirname "$0")/../opencl/common.sh"
MODE=$2
APP=$BUILD/tests/nvtx/nvtx-known
[ -x "$APP" ] || { echo "SKIP: nvtx-known not built (no NVTX headers or no OpenCL)"; exit 77; }
have_opencl
CHECK="$PY $(dirname "$0")/check.py"

bare=$("$APP") || die "the program fails without the shim"
[ "$bare" = "checksum 30720" ] || die "bare run printed '$bare'"
case $MODE in
known)
  out=$("$GPUPROF" record -o "$T/n.gpdb" -- "$APP" 2>"$T/rec.err") || { cat "$T/rec.err"; die "record failed"; }
  cat "$T/rec.err"
  echo "$out"
  [ "$(echo "$out" | head -1)" = "$bare" ] || die "program output changed under the shim"
  want="nvtx: kept=37 deep=8 unbalanced=1 end_unknown=0 starts_full=0 labels_full=0 nosite=0"
  echo "$out" | grep -qxF "$want" || die "NVTX counters: want '$want'"
  $CHECK "$T/n.gpdb"
  $GPDQ "$T/n.gpdb" kernel-count tick 30
  $GPDQ "$T/n.gpdb" drops 0
  "$GPUPROF" report "$T/n.gpdb" >"$T/report.txt" || die "report failed"
  for l in "<nvtx> outer" "<nvtx> inner" "<nvtx> io::load" "<nvtx> phase" "<nvtx> d31"; do
    grep -qF -- "$l" "$T/report.txt" || { cat "$T/report.txt"; die "report does not show '$l'"; }
  done
  ;;
off)
  out=$(GPUPROF_NVTX=0 "$GPUPROF" record -o "$T/o.gpdb" -- "$APP" 2>"$T/rec.err") ||
    { cat "$T/rec.err"; die "record failed"; }
  echo "$out"
  [ "$(echo "$out" | head -1)" = "$bare" ] || die "program output changed under the shim"
  echo "$out" | grep -q "^nvtx: kept=0 " || die "ranges kept with GPUPROF_NVTX=0"
  $CHECK "$T/o.gpdb" off
  $GPDQ "$T/o.gpdb" kernel-count tick 30
  ;;
*) die "unknown mode $MODE" ;;
esac
echo "PASS nvtx.$MODE"

#!/usr/bin/env bash
# NVTX ranges as calling contexts (shim/nvtx/, docs/NVTX.md), with
# nvtx-known (an OpenCL program built with the real NVTX v3 headers) on
# PoCL under `gpuprof record`; the shim makes NVTX load it as the
# injection (NVTX_INJECTION64_PATH, set by its constructor):
#   known  kernel counts under each range node exact (nested pushes, a
#          push inside a called function, a domain range with a registered
#          name, a start/end range ended on another thread, a wide name, 40
#          nested pushes of which 32 are kept, one pop too many, a range
#          of another thread while main's is open, a started range left
#          open by an exited thread), each node
#          between the right frames (tests/nvtx/check.py); the shim's NVTX
#          counters exact; `gpuprof report` shows the range nodes; the
#          program's output unchanged
#   off    GPUPROF_NVTX=0: no range node, the same kernels
#   other  NVTX_INJECTION64_PATH names another tool's library: the shim
#          leaves it, says so in one line; no range node, the same kernels
#   py     nvtx-py.py pushes ranges from Python around OpenCL copies (both
#          through ctypes and libnvtx-py.so): copy counts per range chain exact, each node
#          between the Python frames <module> and main
# Usage: nvtx.sh BUILD_DIR MODE
source "$(dirname "$0")/../integration/lib.sh" "$1"
source "$(dirname "$0")/../opencl/common.sh"
MODE=$2
APP=$BUILD/tests/nvtx/nvtx-known
[ -x "$APP" ] || { echo "SKIP: nvtx-known not built (no NVTX headers or no OpenCL)"; exit 77; }
have_opencl
CHECK="$PY $(dirname "$0")/check.py"

if [ "$MODE" != py ]; then
  bare=$("$APP") || die "the program fails without the shim"
  [ "$bare" = "checksum 32768" ] || die "bare run printed '$bare'"
fi
case $MODE in
known)
  out=$("$GPUPROF" record -o "$T/n.gpdb" -- "$APP" 2>"$T/rec.err") || { cat "$T/rec.err"; die "record failed"; }
  cat "$T/rec.err"
  echo "$out"
  [ "$(echo "$out" | head -1)" = "$bare" ] || die "program output changed under the shim"
  want="nvtx: kept=39 deep=8 unbalanced=1 end_unknown=1 starts_full=0 labels_full=0 nosite=0 same_string=1"
  grep -qxF "$want" <<<"$out" || die "NVTX counters: want '$want'"
  $CHECK "$T/n.gpdb"
  $GPDQ "$T/n.gpdb" kernel-count tick 32
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
  grep -q "^nvtx: kept=0 " <<<"$out" || die "ranges kept with GPUPROF_NVTX=0"
  $CHECK "$T/o.gpdb" off
  $GPDQ "$T/o.gpdb" kernel-count tick 32
  ;;
other)
  out=$(NVTX_INJECTION64_PATH=$T/libother-tool.so GPUPROF_LOG=info "$GPUPROF" record -o "$T/t.gpdb" -- "$APP" \
    2>"$T/rec.err") || { cat "$T/rec.err"; die "record failed"; }
  cat "$T/rec.err"
  echo "$out"
  [ "$(echo "$out" | head -1)" = "$bare" ] || die "program output changed under the shim"
  grep -q "NVTX_INJECTION64_PATH=$T/libother-tool.so is another tool's" "$T/rec.err" ||
    die "the shim did not say it leaves another tool's injection"
  grep -q "^nvtx: kept=0 " <<<"$out" || die "ranges kept while another tool is the injection"
  $CHECK "$T/t.gpdb" off
  ;;
py)
  LIB=$BUILD/tests/nvtx/libnvtx-py.so
  [ -e "$LIB" ] || { echo "SKIP: libnvtx-py.so not built"; exit 77; }
  GPUPROF_LOG=info "$GPUPROF" record -o "$T/p.gpdb" -- "$PY" "$(dirname "$0")/nvtx-py.py" "$LIB" >"$T/out.txt" 2>&1 ||
    { cat "$T/out.txt"; die "record failed"; }
  cat "$T/out.txt"
  grep -qx ok "$T/out.txt" || die "script did not finish"
  grep -q "NVTX ranges are recorded" "$T/out.txt" || die "the shim did not say it records NVTX ranges"
  $CHECK "$T/p.gpdb" py
  $GPDQ "$T/p.gpdb" drops 0
  ;;
*) die "unknown mode $MODE" ;;
esac
echo "PASS nvtx.$MODE"

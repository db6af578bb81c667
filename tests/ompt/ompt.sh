#!/usr/bin/env bash
# OpenMP target offload through OMPT (docs/OMPT.md), on the host offload
# plugin (target regions run on the CPU):
#   known  `gpuprof record` of omp-known with 7 loop iterations: every
#          kernel, transfer (bytes by direction), allocation and deletion
#          exactly once (no vendor back end sees them), each below the
#          `<omp target...>` context of its construct, below the function
#          that holds the construct (tests/ompt/check.py); the program's
#          output unchanged.  A host-only OpenMP program (omp-host, no
#          libomptarget) gets no tool from the shim
#   chain  the program's own tool (omp-tool.so in OMP_TOOL_LIBRARIES):
#          under `gpuprof record` it still sees every construct, submit and
#          data operation (the same counts as without the shim) and the
#          profile is still exact; with the shim preloaded but disabled
#          (GPUPROF_DISABLE=1) the runtime loads the tool itself
#   vendor a stand-in vendor back end (omp-vendor.so, chained) records every
#          kernel submit and host-to-device transfer inside OMPT's bracket,
#          as CUPTI would the CUDA plugin's driver calls: each counts once
#          (the vendor's record, below `<omp target>` of the right function),
#          the rest stays OMPT's; the table is exact
# Usage: ompt.sh BUILD_DIR MODE LLVM_DIR (empty: no offload runtime -> SKIP)
source "$(dirname "$0")/../integration/lib.sh" "$1"
MODE=$2
LLVM=${3:-}
APP=$BUILD/tests/ompt/omp-known
TOOL=$BUILD/tests/ompt/omp-tool.so
if [ -z "$LLVM" ] || [ ! -x "$APP" ]; then
  echo "SKIP: no OpenMP offload runtime with OMPT target callbacks (libomp-19-dev clang-19 clang-tools-19)"
  exit 77
fi
SRC=$(dirname "$0")/omp-known.c
# libomptarget opens "libomp.so" by name to connect to the runtime's tool
# interface (LLVM 19): without the runtime's folder on the search path it
# finds none and no target callback is ever made (docs/OMPT.md)
export LD_LIBRARY_PATH=$LLVM/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# a failed offload must fail the test, not fall back to the host silently
export OMP_TARGET_OFFLOAD=MANDATORY
LOOP=7
line_of() { grep -n "$1" "$SRC" | head -1 | cut -d: -f1; }
L1=$(line_of 'pragma omp target map(to : a)')
L2=$(line_of 'pragma omp target map(tofrom : c)')
CHECK="$PY $(dirname "$0")/check.py"

bare=$("$APP" $LOOP) || die "the program fails without the shim"
case $MODE in
known)
  out=$("$GPUPROF" record -o "$T/k.gpdb" -- "$APP" $LOOP 2>"$T/rec.err") || { cat "$T/rec.err"; die "record failed"; }
  cat "$T/rec.err"
  [ "$out" = "$bare" ] || die "program output changed under the shim: '$out' vs '$bare'"
  $CHECK "$T/k.gpdb" $LOOP "$L1" "$L2"
  $GPDQ "$T/k.gpdb" drops 0
  host=$(OMP_TOOL_VERBOSE_INIT=stdout "$GPUPROF" record -o "$T/h.gpdb" -- "$BUILD/tests/ompt/omp-host" 2>"$T/rec.err") ||
    { cat "$T/rec.err"; die "record of omp-host failed"; }
  echo "$host"
  grep -qx "sum 499500" <<<"$host" || die "omp-host's output changed"
  grep -q "Search for OMP tool in current address space... Failed" <<<"$host" ||
    die "the shim registered a tool with a host-only OpenMP program"
  ;;
chain)
  export OMP_TOOL_LIBRARIES=$TOOL
  own=$("$APP" $LOOP | grep '^tool:') || die "the tool does not run without the shim"
  [ "$own" = "tool: targets=$((LOOP + 5)) submits=$((LOOP + 1)) dataops=$((4 * LOOP + 11)) devices=yes" ] ||
    die "the tool alone saw '$own'"
  out=$("$GPUPROF" record -o "$T/c.gpdb" -- "$APP" $LOOP 2>"$T/rec.err") || { cat "$T/rec.err"; die "record failed"; }
  cat "$T/rec.err"
  echo "$out"
  grep -qxF "$own" <<<"$out" || die "the chained tool saw other counts: $(echo "$out" | grep '^tool:') vs '$own'"
  $CHECK "$T/c.gpdb" $LOOP "$L1" "$L2"
  off=$(GPUPROF_DISABLE=1 LD_PRELOAD=${LD_PRELOAD:+$LD_PRELOAD:}$SHIM "$APP" $LOOP | grep '^tool:') || die "no tool output with the shim disabled"
  [ "$off" = "$own" ] || die "with the shim disabled the tool saw '$off', alone '$own'"
  ;;
vendor)
  export OMP_TOOL_LIBRARIES=$BUILD/tests/ompt/omp-vendor.so
  out=$("$GPUPROF" record -o "$T/v.gpdb" -- "$APP" $LOOP 2>"$T/rec.err") || { cat "$T/rec.err"; die "record failed"; }
  cat "$T/rec.err"
  echo "$out"
  # kernels: LOOP + 1; host-to-device transfers: 1 + LOOP + 2 (enter data, update to)
  grep -qx "vendor: claimed=$((2 * LOOP + 4)) missed=0" <<<"$out" || die "the vendor did not claim every operation"
  $CHECK "$T/v.gpdb" $LOOP "$L1" "$L2" vendor
  ;;
*) die "unknown mode $MODE" ;;
esac
echo "PASS ompt.$MODE"

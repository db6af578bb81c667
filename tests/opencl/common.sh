# common.sh - sourced by the tests/opencl scripts after integration/lib.sh.

# The ICD loader must see only what a test sets.
unset OPENCL_LAYERS GPUPROF_OPENCL_LAYER
# An ASan-built shim preloaded into an uninstrumented program needs the ASan
# runtime first in LD_PRELOAD (scripts/test does the same for its list).
# (ldd's output is read whole: `ldd | grep -q` under pipefail fails when grep
# exits first and ldd dies of SIGPIPE)
if [[ "$(ldd "$SHIM" 2>/dev/null)" == *libasan* && "${LD_PRELOAD:-}" != *libasan* ]]; then
  LD_PRELOAD=$(gcc -print-file-name=libasan.so)${LD_PRELOAD:+:$LD_PRELOAD}
  export LD_PRELOAD
  export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
fi
# PoCL compiles kernels with LLVM, which leaks by design on a cold
# POCL_CACHE_DIR (a fresh clone): LeakSanitizer would report LLVM, not us.
# The shim's own allocations are checked by the unit tests' leak pass.
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
SHIM_REAL=$(realpath "$SHIM")

# known_checks DB: the exact profile of the ocl-known workload (5 steps of
# 3 axpy + 2 scale; tests/apps/ocl-known.c), recorded once, not twice.
known_checks() {
  local db=$1
  $GPDQ "$db" processes 1
  $GPDQ "$db" kernel-count axpy 15
  $GPDQ "$db" kernel-count scale 10
  $GPDQ "$db" kernel-under axpy step
  $GPDQ "$db" kernel-under scale step
  $GPDQ "$db" only-under GKER step
  $GPDQ "$db" metric-total GKER:COUNT 25
  $GPDQ "$db" metric-total GXCOPY:H2D 3145728
  $GPDQ "$db" metric-total GXCOPY:D2H 131072
  $GPDQ "$db" metric-total GXCOPY:D2D 262144
  $GPDQ "$db" metric-total GXCOPY:COUNT 6
  $GPDQ "$db" only-under GXCOPY init
  $GPDQ "$db" metric-total GMSET:COUNT 1
  $GPDQ "$db" metric-total GMSET:DEV 4096
  $GPDQ "$db" metric-total GMEM:COUNT 8
  $GPDQ "$db" metric-total GMEM:DEV 6815744
  $GPDQ "$db" metric-total GSYNC:COUNT 7
  $GPDQ "$db" drops 0
}

# count_lines FILE PATTERN: number of lines of FILE containing PATTERN (fixed string)
count_lines() { grep -cF -- "$2" "$1" || true; }

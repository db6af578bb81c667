#!/usr/bin/env bash
# Work handed to a native worker thread keeps its Python caller
# (docs/PYTHON.md "Work handed to a worker thread"): handoff.py calls
# handoff-lib.c through ctypes; its worker thread launches OpenCL kernels
# (PoCL) in gpd_hl_dispatch while the Python caller waits in engine_run.
# GPUPROF_TEST_HANDOFF (a test hook) names them as the dispatch function
# and the handoff function; handoff-check.py checks exact counts.
# PYTHON: a path, or a version (3.12: on PATH or pyenv, else SKIP).
#   handoff.sh BUILD PYTHON carried  the worker's kernels under the
#       caller's frames > <worker> > native path; none or two waiting
#       callers: native path only
#   handoff.sh BUILD PYTHON absent   the dispatch symbol is not in the
#       library: one log line, every worker kernel keeps its native path
source "$(dirname "$0")/../integration/lib.sh" "$1"
have_opencl
MODE=$3
want_python "$2"
PYDIR=$(cd "$(dirname "$0")" && pwd)
S=$PYDIR/handoff.py
LIB=$BUILD/lib/libgpd-handoff.so
[ -e "$LIB" ] || { echo "SKIP: $LIB not built"; exit 77; }
N=6
unset OPENCL_LAYERS
case $MODE in
carried) sym=gpd_hl_dispatch want=carried ;;
absent) sym=gpd_hl_no_such_function want=native ;;
*) die "unknown mode $MODE" ;;
esac
GPUPROF_TEST_HANDOFF="libgpd-handoff,$sym,engine_run,python/handoff.py" GPUPROF_LOG=info \
  "$GPUPROF" record -o "$T/p.gpdb" -- "$PYBIN" "$S" "$LIB" $N >"$T/out.txt" 2>&1 ||
  { cat "$T/out.txt"; die "record failed"; }
grep -qx ok "$T/out.txt" || { cat "$T/out.txt"; die "script did not finish"; }
found=$(grep -c "handoff: $sym found in libgpd-handoff.so" "$T/out.txt" || true)
absent=$(grep -c "handoff: libgpd-handoff.so has no $sym" "$T/out.txt" || true)
if [ "$MODE" = carried ]; then
  [ "$found" -eq 1 ] && [ "$absent" -eq 0 ] || { cat "$T/out.txt"; die "want one 'found' line, got $found (absent: $absent)"; }
else
  [ "$absent" -eq 1 ] && [ "$found" -eq 0 ] || { cat "$T/out.txt"; die "want one 'has no' line, got $absent (found: $found)"; }
fi
$PY "$PYDIR/handoff-check.py" "$T/p.gpdb" "$S" $N $want
$GPDQ "$T/p.gpdb" metric-total GKER:COUNT $((6 * N))
$GPDQ "$T/p.gpdb" drops 0
echo "PASS handoff $MODE"

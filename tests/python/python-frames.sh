#!/usr/bin/env bash
# Python frames in call paths (docs/PYTHON.md): ocl-py.py calls OpenCL
# through ctypes from known functions and lines (two paths, a generator, a
# recursive function, two threads, a ctypes callback called by libc's
# qsort); pyq.py checks the exact copy counts under each Python call path.
#   python-frames.sh BUILD PYTHON record   gpuprof record + saved report
#   python-frames.sh BUILD PYTHON live     node service: two processes
#       merged in the live tree, top's path names Python frames, then the same after a daemon
#       restart (profiles reloaded from the store)
#   python-frames.sh BUILD PYTHON unknown  an interpreter whose layout is
#       not known: one log line, native frames only, counts intact
source "$(dirname "$0")/../integration/lib.sh" "$1"
have_opencl
MODE=${3:-record}
want_python "$2"
PYDIR=$(cd "$(dirname "$0")" && pwd)
S=$PYDIR/ocl-py.py
N=5
PYQ="$PY $PYDIR/pyq.py"
unset OPENCL_LAYERS
line() { grep -n "# L:$1\$" "$S" | cut -d: -f1; }
case $MODE in
record)
  GPUPROF_LOG=info "$GPUPROF" record -o "$T/p.gpdb" -- "$PYBIN" "$S" $N >"$T/out.txt" 2>&1 ||
    { cat "$T/out.txt"; die "record failed"; }
  grep -qx ok "$T/out.txt" || { cat "$T/out.txt"; die "script did not finish"; }
  grep "python 3.1[12]: Python frames captured" "$T/out.txt" || die "shim did not say it captures Python frames"
  $PYQ "$T/p.gpdb" "$S" $N
  $GPDQ "$T/p.gpdb" drops 0
  # the saved report names Python frames "function (file:line)"
  "$GPUPROF" report "$T/p.gpdb" >"$T/report.txt"
  for want in "path_a ($S:$(line path_a))" "upload ($S:$(line upload))" "cmp ($S:$(line cmp))" \
    "gen_uploads ($S:$(line gen))"; do
    grep -qF "$want" "$T/report.txt" || { head -60 "$T/report.txt"; die "report lacks '$want'"; }
  done
  # read whole: `report | grep -q` under pipefail fails when grep exits first
  "$GPUPROF" report --json "$T/p.gpdb" > "$T/report.json" || die "report --json failed"
  grep -qF '"kind":"python"' "$T/report.json" || die "report --json has no python node"
  # the Python view (--python): the same counts under the same Python
  # frames, no native frame; folded stacks of function names, exact
  "$GPUPROF" report --python --json "$T/p.gpdb" >"$T/py.json" || die "report --python --json failed"
  $PYQ "$T/py.json" "$S" $N 1 python
  "$GPUPROF" report --python "$T/p.gpdb" >"$T/pyreport.txt"
  # (its tree: the idleness blame below keeps the trace's whole paths)
  sed -n '/^Calling context tree/,/^Processes/p' "$T/pyreport.txt" >"$T/pytree.txt"
  grep -q "<gpu copy>" "$T/pytree.txt" || die "report --python has no tree"
  grep -qE "ffi_call|_PyObject_MakeTpCall|qsort" "$T/pytree.txt" && die "native frames in report --python"
  grep -qF "cmp ($S:$(line cmp))" "$T/pyreport.txt" || die "report --python lacks cmp"
  "$GPUPROF" export --python --format folded --metric GXCOPY:COUNT -o "$T/py.folded" "$T/p.gpdb"
  printf '%s\n' "<module>;main;path_a;upload;<gpu copy> $N" "<module>;main;path_b;upload;<gpu copy> $((2 * N))" \
    "<module>;main;use_gen;use_gen.<locals>.<genexpr>;gen_uploads;upload;<gpu copy> $N" \
    "<module>;main;rec;rec;rec;rec;rec;upload;<gpu copy> 1" "<module>;main;via_callback;cmp;upload;<gpu copy> $N" \
    "Thread._bootstrap;Thread._bootstrap_inner;Thread.run;worker;upload;<gpu copy> $((2 * N))" |
    sort >"$T/want.folded"
  sort "$T/py.folded" | diff "$T/want.folded" - || die "export --python --format folded differs (want <, got >)"
  # exports give a Python frame its function, file and line apart
  "$GPUPROF" export --format speedscope -o "$T/s.json" "$T/p.gpdb"
  $PY -c 'import json,sys; fr=json.load(open(sys.argv[1]))["shared"]["frames"]
want={"name": "upload", "file": sys.argv[2], "line": int(sys.argv[3])}
sys.exit(0 if want in fr else "speedscope frames lack %s" % want)' "$T/s.json" "$S" "$(line upload)"
  ;;
live)
  start_daemon "$T/v.sock" "$T/v.gpdb"
  for i in 1 2; do
    preload_bg "$T/v.sock" "$T/app$i.out" "$PYBIN" "$S" $N; pid=$APID
    wait_exit "$pid" "python run $i"
    [ "$RC" -eq 0 ] || { cat "$T/app$i.out.err"; die "python run $i exited $RC"; }
    pids+=" $pid"
  done
  check_live() {
    "$GPUPROF" --socket "$T/v.sock" tree --json >"$T/tree.json" || return 1
    $PYQ "$T/tree.json" "$S" $N 2 &&
      "$GPUPROF" --socket "$T/v.sock" tree --python --json >"$T/pytree.json" &&
      $PYQ "$T/pytree.json" "$S" $N 2 python
  }
  wait_for "$WAIT" "both runs merged in the live tree" check_live
  # top's heaviest path names the Python frames (upload, innermost)
  "$GPUPROF" --socket "$T/v.sock" top -n 5 >"$T/top.txt"
  grep -qF "upload ($S:$(line upload))" "$T/top.txt" || { cat "$T/top.txt"; die "top's path has no Python frame"; }
  wait_for "$WAIT" "both profiles stored" db_has "$T/v.gpdb" $pids
  stop_daemon
  start_daemon "$T/v.sock" "$T/v.gpdb"
  wait_for "$WAIT" "the reloaded profiles merged in the live tree" check_live
  stop_daemon
  $PYQ "$T/v.gpdb" "$S" $N 2
  ;;
unknown)
  "$GPUPROF" record -o "$T/p.gpdb" -- "$PYBIN" "$S" $N >"$T/out.txt" 2>&1 ||
    { cat "$T/out.txt"; die "record failed"; }
  grep -qx ok "$T/out.txt" || { cat "$T/out.txt"; die "script did not finish"; }
  n=$(grep -c "frame layout unknown" "$T/out.txt" || true)
  [ "$n" -eq 1 ] || { cat "$T/out.txt"; die "want one 'frame layout unknown' line, got $n"; }
  $GPDQ "$T/p.gpdb" metric-total GXCOPY:COUNT $((7 * N + 1))
  k=$($GPDQ "$T/p.gpdb" sql "select count(*) from context where kind = 5")
  [ "$k" = "[[0]]" ] || die "Python frames from an unknown layout: $k"
  ;;
*) die "unknown mode $MODE" ;;
esac
echo "PASS python-frames $MODE $PYBIN"

#!/usr/bin/env bash
# Python frames in CPU samples (docs/PYTHON.md, "CPU samples"): cpu-py.py
# makes no GPU call, so its Python frames reach the profile only through
# the sampler's signal handler.  Under `gpuprof record --cpu-sampling
# 1000`: the shim says it captures Python frames, every sample under the
# Python function py_burn_a / py_burn_b is the main thread's and every one
# under py_burn_w the worker thread's (a threading.Thread), each burner's
# CPUTIME within a band of its own CPU time, and the report names them
# "function (file:line)".
#   cpu-sample.sh BUILD PYTHON
source "$(dirname "$0")/../integration/lib.sh" "$1"
PYBIN=$2
[ -x "$PYBIN" ] || { echo "SKIP: no $PYBIN"; exit 77; }
S=$(cd "$(dirname "$0")" && pwd)/cpu-py.py
GPUPROF_LOG=info "$GPUPROF" record --cpu-sampling 1000 -o "$T/p.gpdb" -- "$PYBIN" "$S" >"$T/out.txt" 2>"$T/err.txt" ||
  { cat "$T/out.txt" "$T/err.txt"; die "record failed"; }
cat "$T/out.txt"
grep -qx ok "$T/out.txt" || die "script did not finish"
grep "python 3.1[12]: Python frames captured" "$T/err.txt" || { cat "$T/err.txt"; die "shim did not say it captures Python frames"; }
$PY "$(dirname "$0")/../cpusamp/check.py" "$T/p.gpdb" workers "$T/out.txt"
"$GPUPROF" report --metric CPUTIME "$T/p.gpdb" >"$T/report.txt" || die "report failed"
ln=$(grep -n '^def py_burn_w' "$S" | cut -d: -f1)
grep -qF "py_burn_w ($S:$((ln + 1)))" "$T/report.txt" || { head -40 "$T/report.txt"; die "report lacks py_burn_w ($S:$((ln + 1)))"; }
echo "PASS python.cpusamp"

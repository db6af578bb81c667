#!/bin/sh
# test-cupti-graphs.sh - CUDA graph attribution through the real shim, its
# CUDA back end and a real daemon, on fake-cupti.c (no GPU, no driver):
# `gpuprof record -- graph-app 50`, then `gpuprof report --json`.  Checks
# (check-graphs.py): every kernel and memset of the 50 replays below
# replay()'s <graph replay>, under the function that created its node
# (layer_a: gpd_fake_k0 and _k1, layer_b: the memset, build_c: gpd_fake_k3),
# 50 of each; nothing else.  Args: BUILD_DIR APP FAKE_LIB.  77 when the
# CLI, daemon or shim is not built.
set -u
b=$1 app=$2 fake=$3
[ -x "$b/bin/gpuprof" ] && [ -x "$b/bin/gpuprofd" ] && [ -f "$b/lib/libgpuprof.so" ] && [ -x "$app" ] ||
  { echo "SKIP: gpuprof CLI/daemon/shim or graph-app not built"; exit 77; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
export GPUPROF_SOCKET="$tmp/sock" GPUPROF_CUPTI_PATH="$fake" GPUPROF_CUPTI_SELFTEST=1
"$b/bin/gpuprof" record -o "$tmp/g.gpdb" -- "$app" 50 >"$tmp/out" 2>"$tmp/err"; rc=$?
cat "$tmp/err"
[ $rc -eq 0 ] || { echo "FAIL: record rc=$rc"; exit 1; }
grep -q "gpuprof-cupti: graph nodes created=4 cloned=4 other-type=0 no-id=0 no-context=0 pushed=8 pushfail=0" "$tmp/err" ||
  { echo "FAIL: the back end's graph counters"; exit 1; }
"$b/bin/gpuprof" report --json "$tmp/g.gpdb" >"$tmp/r.json" || { echo "FAIL: report"; exit 1; }
python3 "$(dirname "$0")/check-graphs.py" "$tmp/r.json" 50

#!/usr/bin/env bash
# Backward under forward (docs/PYTHON.md "Backward under forward"):
# bwdfwd.py makes forward operations and runs backward through a stand-in
# libtorch_cpu.so (faketorch.cpp: PyTorch 2.x's autograd symbols and Node
# layout; kernels are OpenCL launches on PoCL); bwdfwd-check.py checks
# exact counts of where the kernels landed.
# PYTHON: a path, or a version (3.12: on PATH or pyenv, else SKIP).
#   bwdfwd.sh BUILD PYTHON linked     backward kernels under their forward
#       operation's Python line, below <backward>; two log lines (found)
#   bwdfwd.sh BUILD PYTHON intrusive  the same with the later 2.x Node (an
#       intrusive_ptr_target returned as an intrusive_ptr)
#   bwdfwd.sh BUILD PYTHON nonode     get_current_node not exported: one
#       "has no" line, backward kernels under the caller of backward()
#   bwdfwd.sh BUILD PYTHON tidmoved   a field added before thread_id_: one
#       layout line (the thread id read is 0), under the caller
#   bwdfwd.sh BUILD PYTHON handle     a Node with no reference count,
#       returned as a bare handle: one layout line, under the caller
# Each run also checks (faketorch.cpp ft_backward) that every node's
# reference count is back where it was after each backward pass.
source "$(dirname "$0")/../integration/lib.sh" "$1"
have_opencl
MODE=$3
want_python "$2"
PYDIR=$(cd "$(dirname "$0")" && pwd)
S=$PYDIR/bwdfwd.py G=$PYDIR/faketorch/torch/autograd/graph.py
LIB=$BUILD/lib/faketorch-$MODE/libtorch_cpu.so
[ -e "$LIB" ] || { echo "SKIP: $LIB not built"; exit 77; }
N=5
unset OPENCL_LAYERS GPUPROF_TEST_HANDOFF
GPUPROF_LOG=info "$GPUPROF" record -o "$T/p.gpdb" -- "$PYBIN" "$S" "$LIB" $N >"$T/out.txt" 2>&1 ||
  { cat "$T/out.txt"; die "record failed"; }
grep -qx ok "$T/out.txt" || { cat "$T/out.txt"; die "script did not finish"; }
count() { grep -c "$1" "$T/out.txt" || true; }
handoff=$(count "handoff: torch::autograd::Engine::thread_main found in libtorch_cpu.so")
found=$(count "backward: autograd sequence numbers and torch::autograd::get_current_node found in libtorch_cpu.so")
nosym=$(count "backward: libtorch_cpu.so has no torch::autograd::get_current_node (symbol _ZN5torch8autograd16get_current_nodeEv)")
layout=$(count "backward: libtorch's autograd Node is not laid out as in PyTorch 2.x")
lines="handoff $handoff found $found nosym $nosym layout $layout"
case $MODE in
linked | intrusive) want="handoff 1 found 1 nosym 0 layout 0" place=linked ;;
nonode) want="handoff 1 found 0 nosym 1 layout 0" place=caller ;;
tidmoved | handle) want="handoff 1 found 1 nosym 0 layout 1" place=caller ;;
*) die "unknown mode $MODE" ;;
esac
[ "$lines" = "$want" ] || { cat "$T/out.txt"; die "log lines: $lines, want $want"; }
$PY "$PYDIR/bwdfwd-check.py" "$T/p.gpdb" "$S" "$G" $N $place
$GPDQ "$T/p.gpdb" metric-total GKER:COUNT $((20 * N))
$GPDQ "$T/p.gpdb" drops 0
echo "PASS bwdfwd $MODE"

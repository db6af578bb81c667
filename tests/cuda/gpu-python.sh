#!/usr/bin/env bash
# gpu-python.sh - Python frames on the GPU machine (docs/PYTHON.md,
# docs/VALIDATION.md).  Run from a bundle folder that holds bin/, lib/,
# env.sh (scripts/bundle-gpu) and torch_pyframes.py, check-pyframes.py,
# bench-python.py next to this script:
#   BUNDLE=.device/python OUT=$OUT bash .device/python/gpu-python.sh
# (a) interpreter and torch versions; (b) a recorded PyTorch loop: kernels
# under step > Net.forward > torch.nn module frames with lines; (c)
# capture cost per call with Python 3.X (bench-python); (d) the loop's wall
# time bare / gpuprof with Python frames / gpuprof native only
# (GPUPROF_PYTHON=0), 3 interleaved rounds, same run.
set -u
B=$(cd "${BUNDLE:-$(dirname "$0")}" && pwd); O=${OUT:-/tmp/out}; mkdir -p "$O"
source "$B/env.sh"
export PYTHONUNBUFFERED=1
S=$B/torch_pyframes.py
{
  date -u; nvidia-smi -L
  echo "== (a) versions"
  python3 -VV; python3 -c 'import torch, sys; print("torch", torch.__version__, "cuda", torch.version.cuda)'
  echo "== (b) recorded loop"
  GPUPROF_LOG=info timeout 200 gpuprof record -o /tmp/py.gpdb -- python3 "$S" 30 3; echo "record rc=$?"
  gpuprof report --json /tmp/py.gpdb >"$O/pyframes.json"; echo "report rc=$?"
  python3 "$B/check-pyframes.py" "$O/pyframes.json" "$S"; echo "check rc=$?"
  gpuprof report --depth 40 /tmp/py.gpdb 2>&1 | grep -E "step \(|forward \(|_call_impl|<gpu kernel>" | head -40
  echo "== (c) capture cost per call (bench-python)"
  python3 "$B/bench-python.py" "$B/lib/libbench-python.so" 101
  echo "== (d) torch_pyframes.py 300 steps wall s, 3 rounds"
  for r in 1 2 3; do
    echo -n "bare:            "; python3 "$S" 300 10
    echo -n "gpuprof python:  "; timeout 120 gpuprof record -o /tmp/tp$r.gpdb -- python3 "$S" 300 10 2>/dev/null | grep torch_steps
    echo -n "gpuprof native:  "; GPUPROF_PYTHON=0 timeout 120 gpuprof record -o /tmp/tn$r.gpdb -- python3 "$S" 300 10 2>/dev/null | grep torch_steps
  done
  gpuprof report --json /tmp/tp1.gpdb | python3 -c 'import json,sys; d=json.load(sys.stdin); print("tp1 records/drops", [(p["records"], p["drops"]) for p in d["processes"]])'
} 2>&1 | tee "$O/gpu-python.log"

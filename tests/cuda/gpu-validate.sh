#!/bin/bash
# gpu-validate.sh - the GPU evidence of docs/VALIDATION.md, on the GPU machine
# (repo root, bundle/ from scripts/bundle-gpu).  Writes under ${OUT:-/tmp/out}:
# validate.log, known.json, torch.json.
#  (a) cuda-known under gpuprof record -> report --json -> check-report.py known
#  (b) PyTorch training steps under gpuprof record -> check-report.py torch
#  (c) overhead: launch-bound (µs/launch) bare / minimal CUPTI tracer /
#      gpuprof record; torch_train.py wall time bare / min tracer / gpuprof
set -u
B=$PWD/${BUNDLE:-bundle}; O=${OUT:-/tmp/out}; mkdir -p "$O"
source "$B/env.sh"
export PYTHONUNBUFFERED=1 GPUPROF_SOCKET=/tmp/gpd.sock
MT=$B/lib/libgpd-min-tracer.so
{
  date -u; nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader
  echo "== (a) cuda-known"
  cuda-known; echo "bare rc=$?"
  GPUPROF_CUPTI_SELFTEST=1 timeout 120 gpuprof record -o /tmp/known.gpdb -- cuda-known; echo "record rc=$?"
  gpuprof report --json /tmp/known.gpdb >"$O/known.json"; echo "report rc=$?"
  python3 tests/cuda/check-report.py known "$O/known.json"
  gpuprof report /tmp/known.gpdb 2>&1 | head -60
  echo "== (b) torch"
  GPUPROF_CUPTI_SELFTEST=1 timeout 200 gpuprof record -o /tmp/torch.gpdb -- python3 tests/cuda/torch_train.py 20 3; echo "record rc=$?"
  gpuprof report --json /tmp/torch.gpdb >"$O/torch.json"; echo "report rc=$?"
  python3 tests/cuda/check-report.py torch "$O/torch.json"
  gpuprof report /tmp/torch.gpdb 2>&1 | head -40
  ls -la /tmp/*.gpdb; ls /tmp/gpubins 2>/dev/null | head -3
  if [ -n "${SKIP_C:-}" ]; then echo "== (c) skipped (SKIP_C): see gpu-overhead.sh"; exit 0; fi
  echo "== (c) overhead: launch-bound µs/launch (best of 5 x 100000), 3 rounds"
  for r in 1 2 3; do
    echo -n "bare:       "; launch-bound 100000 5
    echo -n "min-tracer: "; CUDA_INJECTION64_PATH=$MT launch-bound 100000 5
    echo -n "gpuprof:    "; timeout 120 gpuprof record -o /tmp/lb$r.gpdb -- launch-bound 100000 5
  done
  echo "== (c) torch_train.py 500 steps wall s, 3 rounds"
  for r in 1 2 3; do
    echo -n "bare:       "; python3 tests/cuda/torch_train.py 500 10
    echo -n "min-tracer: "; CUDA_INJECTION64_PATH=$MT python3 tests/cuda/torch_train.py 500 10
    echo -n "gpuprof:    "; timeout 120 gpuprof record -o /tmp/tt$r.gpdb -- python3 tests/cuda/torch_train.py 500 10
  done
  gpuprof report --json /tmp/lb1.gpdb | python3 -c 'import json,sys; d=json.load(sys.stdin); print("lb1 records/drops", [(p["records"], p["drops"]) for p in d["processes"]])'
} 2>&1 | tee "$O/validate.log"

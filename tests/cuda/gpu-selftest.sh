#!/bin/bash
# gpu-selftest.sh - first check of the CUDA back end on a GPU machine,
# without the daemon: the back end linked with a counting stub shim
# (bundle/lib/libgpd-cupti-selftest.so).  Writes logs under ${OUT:-/tmp/out}.
# Usage (repo root, after scripts/bundle-gpu or a manual bundle/):
#   tests/cuda/gpu-selftest.sh
set -u
B=${BUNDLE:-bundle}; O=${OUT:-/tmp/out}; mkdir -p "$O"
export LD_LIBRARY_PATH=$PWD/$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
ST=$PWD/$B/lib/libgpd-cupti-selftest.so MT=$PWD/$B/lib/libgpd-min-tracer.so
{
  date -u; uname -a; nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader
  ls -la /usr/local/cuda/lib64/libcupti* 2>&1 | head -3
  echo "== cuda-known bare"; $B/bin/cuda-known; echo "rc=$?"
  echo "== cuda-known LD_PRELOAD stub (shim sets CUDA_INJECTION64_PATH itself)"
  GPUPROF_STUB_DUMP=1 LD_PRELOAD=$ST $B/bin/cuda-known 2>"$O/known-preload.err"; echo "rc=$?"
  grep -E "^gpuprof|STATUS" "$O/known-preload.err"
  echo "== cuda-known injection only (CUDA_INJECTION64_PATH, no preload)"
  CUDA_INJECTION64_PATH=$ST $B/bin/cuda-known 2>&1 | grep -v "^INVOKE\|^ACT\|^STRING"; echo "rc=$?"
  echo "== launch-bound (µs/launch, best of 5 x 100000)"
  echo -n "bare:       "; $B/bin/launch-bound 100000 5
  echo -n "min-tracer: "; CUDA_INJECTION64_PATH=$MT $B/bin/launch-bound 100000 5
  echo -n "stub-shim:  "; LD_PRELOAD=$ST $B/bin/launch-bound 100000 5 2>"$O/launch-stub.err"
  tail -2 "$O/launch-stub.err"
  echo "== torch"
  python3 -c 'import torch; print(torch.__version__, torch.cuda.get_device_name(0))'
  export PYTHONUNBUFFERED=1
  echo -n "bare: "; python3 tests/cuda/torch_train.py 50 5
  echo -n "min-tracer: "; CUDA_INJECTION64_PATH=$MT python3 tests/cuda/torch_train.py 50 5
  echo -n "stub-shim: "; LD_PRELOAD=$ST python3 tests/cuda/torch_train.py 50 5 2>"$O/torch-stub.err"
  grep -E "^gpuprof" "$O/torch-stub.err" | head -5
  echo -n "bare again: "; python3 tests/cuda/torch_train.py 50 5
} 2>&1 | tee "$O/selftest.log"

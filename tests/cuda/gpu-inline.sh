#!/bin/bash
# gpu-inline.sh - on the GPU machine (repo root, bundle/ from
# scripts/bundle-gpu): cuda-inline (nvcc -O2 -g) under gpuprof record, its
# report, and check-report.py inline (true physical frames with their
# inlined chains, no vendor frames below the API).  Writes under
# ${OUT:-/tmp/out}: inline.log, inline.json.
set -u
B=$PWD/${BUNDLE:-bundle}; O=${OUT:-/tmp/out}; mkdir -p "$O"
source "$B/env.sh"
{
  date -u; nvidia-smi -L
  echo "== cuda-inline bare"; cuda-inline; echo "bare rc=$?"
  rm -f /tmp/inline.gpdb*
  timeout 120 gpuprof record -o /tmp/inline.gpdb -- cuda-inline; echo "record rc=$?"
  gpuprof report --json /tmp/inline.gpdb >"$O/inline.json"; echo "report rc=$?"
  python3 tests/cuda/check-report.py inline "$O/inline.json"; echo "check rc=$?"
  gpuprof report /tmp/inline.gpdb 2>&1 | head -80
} 2>&1 | tee "$O/inline.log"

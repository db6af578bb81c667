#!/bin/sh
# bundle-suite.sh - the programs of the advisor's validation suite for a
# GPU machine, into a scripts/bundle-gpu bundle (docs/ADVISOR.md
# "Validation suite"): bundle-suite.sh BUNDLE_DIR.
#   BUNDLE_DIR/bin/advise-suite   tests/advisor/advise-suite.cu
#   BUNDLE_DIR/bin/pcsamp-known   tests/gpuanalysis/pcsamp-known.cu
# nvcc (NVCC, default /usr/local/cuda/bin/nvcc) -O3 -lineinfo for sm_90,
# the CUDA runtime linked statically (no libcudart needed there).
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$1
nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
mkdir -p "$out/bin"
for p in advisor/advise-suite gpuanalysis/pcsamp-known; do
  "$nvcc" -O3 -lineinfo -gencode arch=compute_90,code=sm_90 \
    -o "$out/bin/$(basename "$p")" "$root/tests/$p.cu"
done
ls -la "$out/bin/advise-suite" "$out/bin/pcsamp-known"

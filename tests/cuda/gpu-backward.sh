#!/usr/bin/env bash
# gpu-backward.sh - share of GPU time under the user's Python frames for
# public models (docs/PYTHON.md "Work handed to a worker thread",
# docs/VALIDATION.md).  Run from a bundle folder (scripts/bundle-gpu) that
# holds bin/, lib/, env.sh and, next to this script, gpu-backward.py and
# check-backward.py:
#   BUNDLE=.device/bw OUT=$OUT bash .device/bw/gpu-backward.sh [steps]
# Per model (GPT-2, BERT, ResNet-18): gpuprof record, report --json, the
# shares (check-backward.py: under the script's frames; of the backward
# kernels, under their forward operation's Python frame vs under the
# caller of backward(), docs/PYTHON.md "Backward under forward"), the
# Python view's heaviest folded stacks.
set -u
B=$(cd "${BUNDLE:-$(dirname "$0")}" && pwd); O=${OUT:-/tmp/out}; mkdir -p "$O"
source "$B/env.sh"
export PYTHONUNBUFFERED=1
S=$B/gpu-backward.py
STEPS=${1:-10}
rc=0
{
  date -u; nvidia-smi -L
  python3 -VV; python3 -c 'import torch, transformers, torchvision; print("torch", torch.__version__, "transformers", transformers.__version__, "torchvision", torchvision.__version__)'
  for m in gpt2 bert resnet18; do
    echo "== $m"
    GPUPROF_LOG=info timeout 300 gpuprof record -o "/tmp/bw-$m.gpdb" -- python3 "$S" "$m" "$STEPS" 2>&1 |
      grep -E "handoff|backward:|python 3|model |error|Error"
    gpuprof report --json "/tmp/bw-$m.gpdb" >"$O/bw-$m.json"; echo "report rc=$?"
    python3 "$B/check-backward.py" "$O/bw-$m.json" "$S" || rc=1
    gpuprof export --python --format folded --metric GKER -o "$O/bw-$m.folded" "/tmp/bw-$m.gpdb"
    sort -t' ' -k2 -gr "$O/bw-$m.folded" | head -5 | cut -c1-300
    COLUMNS=160 gpuprof report "/tmp/bw-$m.gpdb" 2>/dev/null | head -80 >"$O/bw-$m-report.txt"
  done
  echo "gpu-backward: rc=$rc"
} 2>&1 | tee "$O/gpu-backward.log"

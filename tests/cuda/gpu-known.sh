#!/usr/bin/env bash
# cupti.gpu-known (label gpu): on a machine with a CUDA GPU, cuda-known under
# `gpuprof record` gives exact launch counts, exact bytes per direction and
# kernel time only under the launching functions (tests/cuda/check-report.py).
# Without a usable GPU it reports SKIP (77): CI has none; the GPU evidence is
# in docs/VALIDATION.md.
set -u
B=$(cd "$1" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
"$B/bin/cuda-known" >/dev/null 2>&1
rc=$?
[ $rc -eq 2 ] && { echo "SKIP: no usable CUDA device"; exit 77; }
[ $rc -eq 0 ] || { echo "FAIL: cuda-known exited $rc bare"; exit 1; }
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
"$B/bin/gpuprof" record -o "$T/k.gpdb" -- "$B/bin/cuda-known" || { echo "FAIL: record"; exit 1; }
"$B/bin/gpuprof" report --json "$T/k.gpdb" > "$T/k.json" || { echo "FAIL: report"; exit 1; }
python3 "$HERE/check-report.py" known "$T/k.json"

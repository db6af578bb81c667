#!/bin/bash
# gpu-overhead.sh - where CUDA profiling overhead comes from, on the GPU
# machine (repo root, bundle/ from scripts/bundle-gpu).  Writes
# ${OUT:-/tmp/out}/overhead.log.  Each configuration runs in turn, R rounds:
#   bare                       no tool
#   cupti:all                  minimal CUPTI tracer, same callbacks + kinds as gpuprof
#   cupti:all,no-ts            ... without the timestamp callback
#   cupti:kernel               ... kernel activity only, callbacks on
#   cupti:kernel,no-cb         ... kernel activity only, no API callbacks
#   gpuprof                    gpuprof record, everything traced
#   gpuprof:coarse             gpuprof record, GPUPROF_CUDA_TRACE=coarse
# launch-bound: µs per empty-kernel launch (best of 5 x 100000);
# torch_train.py: wall s of 300 training steps after 10 warm-up steps.
set -u
B=$PWD/${BUNDLE:-bundle}; O=${OUT:-/tmp/out}; mkdir -p "$O"
source "$B/env.sh"
export PYTHONUNBUFFERED=1 GPUPROF_SOCKET=/tmp/gpd.sock
MT=$B/lib/libgpd-min-tracer.so
R=${R:-3}
run_cfg() { # NAME CMD...
  local name=$1; shift
  case $name in
    bare) "$@" ;;
    cupti:all) CUDA_INJECTION64_PATH=$MT "$@" ;;
    cupti:all,no-ts) MIN_TRACER_NOTS=1 CUDA_INJECTION64_PATH=$MT "$@" ;;
    cupti:kernel) MIN_TRACER_KINDS=kernel CUDA_INJECTION64_PATH=$MT "$@" ;;
    cupti:kernel,no-cb) MIN_TRACER_KINDS=kernel MIN_TRACER_NOCB=1 CUDA_INJECTION64_PATH=$MT "$@" ;;
    gpuprof) rm -f /tmp/o.gpdb*; timeout 300 gpuprof record -o /tmp/o.gpdb -- "$@" 2>/tmp/rec.err; grep -E "dropped" /tmp/rec.err ;;
    gpuprof:coarse) rm -f /tmp/o.gpdb*; GPUPROF_CUDA_TRACE=coarse timeout 300 gpuprof record -o /tmp/o.gpdb -- "$@" 2>/tmp/rec.err; grep -E "dropped" /tmp/rec.err ;;
  esac
}
CFGS=${CFGS:-"bare cupti:all cupti:all,no-ts cupti:kernel cupti:kernel,no-cb gpuprof gpuprof:coarse"}
TORCH_ARGS=${TORCH_ARGS:-"300 10"}   # steps warmup [batch width]
LB=${LB:-1}                          # 0: skip the launch-bound loop
{
  date -u; nvidia-smi -L
  [ "$LB" = 1 ] && echo "== launch-bound, us per launch"
  [ "$LB" = 1 ] && for r in $(seq $R); do for c in $CFGS; do
    printf '%-22s r%d: ' "$c" "$r"; run_cfg "$c" launch-bound 100000 5
  done; done
  echo "== torch_train.py $TORCH_ARGS, wall s"
  for r in $(seq $R); do for c in $CFGS; do
    printf '%-22s r%d: ' "$c" "$r"; run_cfg "$c" python3 tests/cuda/torch_train.py $TORCH_ARGS
  done; done
} 2>&1 | tee "$O/overhead.log"

#!/bin/bash
# gpu-torchcost.sh - gpuprof's own cost per GPU operation on the PyTorch
# loop, on the GPU machine (repo root; BUNDLE = the folder made by
# tests/cuda/bundle-torchcost.sh).  Writes $OUT/torchcost.log.
# Configurations (CFGS, run in turn, R interleaved rounds):
#   bare          no tool
#   cupti         minimal CUPTI tracer (bench/cuda/min-tracer.c), same
#                 callbacks and activity kinds as gpuprof
#   gpuprof       gpuprof record, full tracing
#   stats         gpuprof record, GPUPROF_SHIM_STATS=1 (per-phase counters)
#   nopy          gpuprof record, GPUPROF_PYTHON=0 (native frames only)
#   duty          gpuprof record, GPUPROF_CUDA_TRACE=$DUTY (default duty:10/0.2)
#   detached      gpuprof record, GPUPROF_CUDA_TRACE=detached
#   kineto        torch.profiler (Kineto), CPU + CUDA activities
# Each prints torch_steps_s (wall s of the timed steps).  Then, if set:
#   LONG=STEPS    full vs $LDUTY on a longer loop, per-context GPU time
#                 compared by check-duty.py (report --json of both)
#   ATTACH=A:D    detached, attached A ms after start for D ms
#                 (GPUPROF_CUDA_ATTACH), the on-demand shape
#   EXTRA=CMD     run at the end
set -u
B=$(cd "${BUNDLE:-.device/torchcost}" && pwd); O=${OUT:-/tmp/out}; mkdir -p "$O"
source "$B/env.sh"
export PYTHONUNBUFFERED=1
MT=$B/lib/libgpd-min-tracer.so
R=${R:-3}; ARGS=${TORCH_ARGS:-"300 10"}; DUTY=${DUTY:-duty:10/0.2}; LDUTY=${LDUTY:-$DUTY}
PY="python3 $B/torch_train.py $ARGS"
rec() { # ENV... -- record the loop, keep the stderr summary
  local n=$1; shift
  rm -f /tmp/o.gpdb*
  env "$@" timeout 300 gpuprof record -o /tmp/o.gpdb -- $PY 2>/tmp/rec.err
  grep -E "gpuprof-stats|dropped|duty|gpuprof-cupti" /tmp/rec.err | sed "s/^/    [$n] /"
  [ -n "${KEEP:-}" ] && cp /tmp/o.gpdb "$O/$n.gpdb" 2>/dev/null
}
run_cfg() {
  case $1 in
    bare) $PY ;;
    cupti) CUDA_INJECTION64_PATH=$MT $PY ;;
    gpuprof) rec gpuprof GPUPROF_X=1 ;;
    stats) rec stats GPUPROF_SHIM_STATS=1 ;;
    nopy) rec nopy GPUPROF_PYTHON=0 ;;
    duty) rec duty GPUPROF_CUDA_TRACE=$DUTY GPUPROF_CUPTI_SELFTEST=1 ;;
    detached) rec detached GPUPROF_CUDA_TRACE=detached GPUPROF_CUPTI_SELFTEST=1 ;;
    kineto) python3 "$B/torch_kineto.py" $ARGS ;;
  esac
}
CFGS=${CFGS:-"bare cupti gpuprof stats nopy"}
{
  date -u; nvidia-smi -L; python3 -c 'import sys, torch; print(sys.version.split()[0], torch.__version__)'
  echo "clocksource: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)"
  echo "perf: $(command -v perf || echo none)"
  echo "== torch_train.py $ARGS, wall s (torch_steps_s)"
  for r in $(seq "$R"); do for c in $CFGS; do
    printf '%-9s r%d: ' "$c" "$r"; run_cfg "$c" 2>&1 | grep -E "torch_steps_s|^    \[|Error|error" | head -40
  done; done
  if [ -n "${LONG:-}" ]; then
    # Per-context GPU time, duty-cycled vs full, on a longer steady loop.
    echo "== per-context GPU time: torch_train.py $LONG 10, full vs $LDUTY"
    for c in full duty; do
      rm -f /tmp/$c.gpdb*
      if [ $c = full ]; then e=GPUPROF_X=1; else e=GPUPROF_CUDA_TRACE=$LDUTY; fi
      env $e GPUPROF_CUPTI_SELFTEST=1 timeout 300 gpuprof record -o /tmp/$c.gpdb -- \
        python3 "$B/torch_train.py" $LONG 10 2>/tmp/$c.err | grep torch_steps_s
      grep -E "dropped|fraction" /tmp/$c.err | sed "s/^/    [$c] /"
      gpuprof report --json /tmp/$c.gpdb >"$O/$c.json" 2>/dev/null || echo "report $c failed"
    done
    f=$(sed -n 's/.*fraction f = \([0-9.]*\).*/\1/p' /tmp/duty.err | head -1)
    python3 "$B/check-duty.py" "$O/full.json" "$O/duty.json" "${f:-0}"
  fi
  if [ -n "${ATTACH:-}" ]; then
    # Detached, attached for a window (the on-demand shape without a
    # daemon request: GPUPROF_CUDA_ATTACH=AFTER_MS:DURATION_MS).
    echo "== detached, attach window $ATTACH: torch_train.py $LONG 10"
    rm -f /tmp/att.gpdb*
    GPUPROF_CUDA_TRACE=detached GPUPROF_CUDA_ATTACH=$ATTACH GPUPROF_CUPTI_SELFTEST=1 timeout 300 \
      gpuprof record -o /tmp/att.gpdb -- python3 "$B/torch_train.py" $LONG 10 2>/tmp/att.err | grep torch_steps_s
    grep -E "dropped|fraction|gpuprof-cupti: state" /tmp/att.err | sed "s/^/    [attach] /"
  fi
  [ -n "${EXTRA:-}" ] && eval "$EXTRA"
} 2>&1 | tee "$O/torchcost.log"

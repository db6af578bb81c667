#!/bin/bash
# policy.sh - what the node's default collection policy costs, on the GPU
# machine (issue: always on under every job).  Run from a bundle made by
# tests/cuda/bundle-torchcost.sh (bin/gpuprofd, bin/gpuprof,
# lib/libgpuprof.so, torch-turns.py, torch_train.py, gpt2_train.py,
# check-duty.py):
#   cd BUNDLE && bash policy.sh PART
# PART (one per device call, each well inside 10 minutes):
#   turns   GPT-2 from a transformers config (gpt2_train.py: 4 layers,
#           random weights, AdamW) in interleaved turns (torch-turns.py):
#           bare, node (attached as the job prolog attaches: LD_PRELOAD +
#           GPUPROF_SOCKET of a gpuprofd with its built-in policy, no
#           GPUPROF_* variable), node@b05 / node@b3 (the same with
#           [collect] budget = 0.5 % / 3 %), full (gpuprof record, full
#           tracing); then torch_train.py with bare and node.  Prints, per
#           configuration, the median per-step ratio to the same round's
#           bare with a 95 % interval; each daemon's `gpuprof ps --json`
#           (mode, estimated overhead) at the end.
#   ttcost  where the default policy's cost on torch_train.py comes from:
#           interleaved turns of bare, bare, node, node with
#           GPUPROF_CUDA_TRACE=detached (the shim attached, CUPTI never
#           subscribed: no windows), node with GPUPROF_PYTHON=0 (windows
#           without the Python frame walk); BUDGET_TTC s of turns (150).
#   accuracy  GPT-2 for DUR s (60) under the default policy's daemon, then
#           the same number of steps under full tracing: per-context GPU
#           time of the default's windows (scaled by the shim's window
#           fraction) against full tracing (check-duty.py).
# Env: STEPS_GPT2 (steps per turn, 40), STEPS_TT (400), BUDGET_GPT2 (s
# of turns, 330), BUDGET_TT (80), CFG_GPT2 (the GPT-2 configurations,
# "bare bare node node@b05 node@b3 full"), PROCS_TT (processes per
# torch_train.py configuration, 1: several put the per-process spread
# into the bootstrap interval), DUR (60), ACC_CONF (accuracy: a
# gpuprofd.conf for the default-policy daemon), CFG_TTC (ttcost: the
# configurations after "bare bare node", default
# "node+GPUPROF_CUDA_TRACE=detached node+GPUPROF_PYTHON=0"), OUT (results).
set -u
B=$(cd "$(dirname "$0")" && pwd)
O=${OUT:-/tmp/out}
mkdir -p "$O"
export PYTHONUNBUFFERED=1
part=${1:-turns}
conf() { # conf NAME BUDGET: a gpuprofd.conf with [collect] budget
  printf '[collect]\nbudget = %s\n' "$2" >"$O/$1.conf"
}
case $part in
turns)
  conf b05 0.5%
  conf b3 3%
  date -u
  nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
  echo "== GPT-2 (transformers config, 4 layers), turns of ${STEPS_GPT2:-40} steps"
  python3 "$B/torch-turns.py" --bundle "$B" --worker "python3 $B/gpt2_train.py 0 20" \
    --steps "${STEPS_GPT2:-40}" --procs 1 --budget "${BUDGET_GPT2:-330}" --parallel-start \
    --node-conf "b05=$O/b05.conf" --node-conf "b3=$O/b3.conf" --out "$O/gpt2" \
    ${CFG_GPT2:-bare bare node node@b05 node@b3 full} 2>&1 | grep -v '^round '
  echo "== torch_train.py, turns of ${STEPS_TT:-400} steps"
  python3 "$B/torch-turns.py" --bundle "$B" --steps "${STEPS_TT:-400}" --procs "${PROCS_TT:-1}" \
    --budget "${BUDGET_TT:-80}" --parallel-start --out "$O/tt" bare bare node 2>&1 | grep -v '^round '
  for d in "$O"/gpt2/node-* "$O"/tt/node-*; do
    echo "== $d/log (last lines)"
    tail -n 15 "$d/log"
  done
  tar czf "$O/turns.tgz" -C "$O" --exclude='*.gpdb*' --exclude='gpubins' gpt2 tt 2>/dev/null
  ;;
ttcost)
  date -u
  echo "== torch_train.py, turns of ${STEPS_TT:-400} steps: where the node's cost comes from"
  python3 "$B/torch-turns.py" --bundle "$B" --steps "${STEPS_TT:-400}" --procs 1 \
    --budget "${BUDGET_TTC:-150}" --parallel-start --out "$O/ttc" bare bare node \
    ${CFG_TTC:-node+GPUPROF_CUDA_TRACE=detached node+GPUPROF_PYTHON=0} 2>&1 | grep -v '^round '
  tar czf "$O/ttcost.tgz" -C "$O" --exclude='*.gpdb*' --exclude='gpubins' ttc 2>/dev/null
  ;;
accuracy)
  dur=${DUR:-60}
  A=$O/acc
  mkdir -p "$A/state"
  GPUPROF_LOG=info "$B/bin/gpuprofd" --foreground --socket "$A/s" --db "$A/node.gpdb" \
    --state-dir "$A/state" ${ACC_CONF:+--config "$ACC_CONF"} >"$A/daemon.log" 2>&1 &
  dpid=$!
  for _ in $(seq 600); do [ -S "$A/s" ] && break; sleep 0.1; done
  # steps in DUR s: the bare step time of a short run first
  st=${STEP_US:-$(python3 "$B/gpt2_train.py" 60 20 2>/dev/null | sed -n 's/.*median_us \([0-9.]*\).*/\1/p')}
  n=$(python3 -c "print(max(100, int($dur / ($st * 1e-6))))")
  echo "== GPT-2: $n steps (~$dur s at ${st} us per step): default policy, then full tracing"
  LD_PRELOAD="$B/lib/libgpuprof.so" GPUPROF_SOCKET="$A/s" \
    python3 "$B/gpt2_train.py" "$n" 20 >"$A/node.out" 2>"$A/node.err"
  cat "$A/node.out"; grep -E "fraction|windows|duty" "$A/node.err" | head -5
  GPUPROF_SOCKET="$A/s" "$B/bin/gpuprof" ps --all
  kill -TERM $dpid; wait $dpid
  "$B/bin/gpuprof" record -o "$A/full.gpdb" -- python3 "$B/gpt2_train.py" "$n" 20 >"$A/full.out" 2>"$A/full.err"
  cat "$A/full.out"
  "$B/bin/gpuprof" report --json "$A/full.gpdb" >"$A/full.json"
  "$B/bin/gpuprof" report --json "$A/node.gpdb" >"$A/node.json"
  python3 -c "import sqlite3,sys;print(sqlite3.connect(sys.argv[1]).execute(\"select reason from backend where api='cuda'\").fetchone())" "$A/node.gpdb"
  grep -i governor "$A/daemon.log" | tail -5
  # the window fraction: the shim's backend line in the store (launch-counted when it has one)
  f=$(python3 -c "import sqlite3,re,sys;r=sqlite3.connect(sys.argv[1]).execute(\"select reason from backend where api='cuda'\").fetchone();m=r and (re.search(r'f_launch = ([0-9.]+)',r[0]) or re.search(r'fraction f = ([0-9.]+)',r[0]));print(m.group(1) if m else '')" "$A/node.gpdb")
  echo "== per-context GPU time: default policy (f=${f:-?}) vs full tracing"
  python3 "$B/check-duty.py" "$A/full.json" "$A/node.json" "${f:-1}"
  tail -n 20 "$A/daemon.log"
  tar czf "$O/acc.tgz" -C "$O" acc/daemon.log acc/node.err acc/full.err acc/node.json acc/full.json 2>/dev/null
  ;;
*)
  echo "policy.sh: PART is turns or accuracy" >&2
  exit 2
  ;;
esac

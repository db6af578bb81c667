#!/bin/bash
# gpu-suite.sh - the advisor's validation suite on a GPU machine (issue 25,
# docs/ADVISOR.md "Validation suite"): gpu-suite.sh BUNDLE.
# BUNDLE: a scripts/bundle-gpu bundle (bin/gpuprofd, bin/gpuprof,
# lib/libgpuprof.so, env.sh) with bin/advise-suite and bin/pcsamp-known
# added by tests/advisor/bundle-suite.sh.  Steps:
#  1. bare timings: every pair's bad and fixed kernel, ROUNDS (5)
#     alternating rounds in one process, TIME_MS (20) ms of kernels per
#     variant and round (advise-suite time) -> timings.txt;
#  2. per pair, one process recorded with GPUPROF_PC_SAMPLING=1: the bad
#     variant for RUN_MS (50) ms of kernels, then the fixed one
#     (advise-suite run CASE both) -> CASE.gpdb, CASE.run.txt (the medians
#     under sampling: the sampling overhead per kernel);
#  3. nvdisasm -c -g on every stored gpubin (gpubins/HASH.nvdisasm: what
#     `gpuprof advise` reads offline), the profiles checkpointed;
#  4. `gpuprof advise --kernels 0 --top 12 --json` per pair (ADV: another
#     gpuprof) -> CASE.advise.json, and the text of the bad kernel's top 3;
#  5. the calling-context check: pcsamp-known (tests/gpuanalysis) recorded
#     with PC sampling TWOSITE_RUNS (5) times -> twosite/runN.gpdb and
#     `gpuprof report --gpu-detail --json` of each (known(): hot() called
#     from two sites with 3:1 work);
#  6. tests/advisor/eval-suite.py on the result.
# Step 2 starts no new record once BUDGET_S (180) seconds have passed,
# step 5 none after TWOSITE_BUDGET_S (210).  Writes ${OUT:-/tmp/out}/log.txt
# and suite.tgz (the folder suite/: everything eval-suite.py needs offline).
set -u
B=$(cd "$1" && pwd); O=${OUT:-/tmp/out}; F=$O/suite
HERE=$(cd "$(dirname "$0")" && pwd)
rm -rf "$F"; mkdir -p "$F/twosite"
source "$B/env.sh"
export PYTHONUNBUFFERED=1 GPUPROF_SOCKET=/tmp/gpd-suite.sock
NVD=$(command -v nvdisasm || ls /usr/local/cuda*/bin/nvdisasm 2>/dev/null | head -1)
export GPUPROF_NVDISASM=$NVD
S=$B/bin/advise-suite
ADV=${ADV:-$B/bin/gpuprof}
CASES=${CASES:-$("$S" list)}
T0=$(date +%s)
el() { echo $(($(date +%s) - T0)); }
disasm() { # DIR: nvdisasm text beside every gpubin of DIR/gpubins
  for g in "$1"/gpubins/*.gpubin; do
    [ -e "$g" ] || continue
    [ -s "${g%.gpubin}.nvdisasm" ] && continue
    "$NVD" -c -g "$g" >"${g%.gpubin}.nvdisasm" 2>/dev/null || "$NVD" -c "$g" >"${g%.gpubin}.nvdisasm"
  done
}
checkpoint() { # DB...: fold the WAL in, so that a profile is one file
  python3 - "$@" <<'PY'
import os, sqlite3, sys
for p in sys.argv[1:]:
    c = sqlite3.connect(p)
    c.execute("pragma wal_checkpoint(truncate)")
    c.close()
    for s in ("-wal", "-shm"):
        if os.path.exists(p + s) and os.path.getsize(p + s) == 0:
            os.unlink(p + s)
PY
}
{
  date -u; nvidia-smi -L
  nvidia-smi --query-gpu=driver_version,clocks.max.sm --format=csv,noheader
  "$NVD" --version | tail -1
  echo "cases:" $CASES
  echo "== [$(el) s] 1. bare timings, ${ROUNDS:-5} alternating rounds, ${TIME_MS:-20} ms per variant and round"
  timeout 150 "$S" time -r "${ROUNDS:-5}" -m "${TIME_MS:-20}" $CASES >"$F/timings.txt"
  echo "time rc=$?"
  for c in $CASES; do # a case that failed the shared process: alone
    grep -q "^speedup $c " "$F/timings.txt" && continue
    timeout 30 "$S" time -r "${ROUNDS:-5}" -m "${TIME_MS:-20}" "$c" >>"$F/timings.txt"
    echo "time $c alone rc=$?"
  done
  grep ^speedup "$F/timings.txt"
  echo "== [$(el) s] 2. records with PC sampling (bad then fixed, ${RUN_MS:-50} ms each)"
  for c in $CASES; do
    if [ "$(el)" -gt "${BUDGET_S:-180}" ]; then echo "budget spent: $c not recorded"; continue; fi
    rm -f "$F/$c.gpdb"*
    GPUPROF_PC_SAMPLING=1 timeout 60 gpuprof record -o "$F/$c.gpdb" -- "$S" run "$c" both "${RUN_MS:-50}" \
      >"$F/$c.run.txt" 2>"$F/$c.record.err"
    echo "[$(el) s] $c record rc=$? $(grep ^run "$F/$c.run.txt" | cut -d' ' -f3- | tr '\n' ' ')" \
      "$(grep -o 'GSAMP:DRP [0-9]*' "$F/$c.record.err" | head -1)"
  done
  echo "== [$(el) s] 3. nvdisasm, checkpoints"
  disasm "$F"
  ls -la "$F/gpubins"
  checkpoint "$F"/*.gpdb
  echo "== [$(el) s] 4. advise"
  for c in $CASES; do
    [ -e "$F/$c.gpdb" ] || continue
    (timeout 120 "$ADV" advise --kernels 0 --top 12 --json "$F/$c.gpdb" >"$F/$c.advise.json" 2>"$F/$c.advise.err"
     echo "$c advise rc=$?" >"$F/$c.advise.rc") &
    while [ "$(jobs -r | wc -l)" -ge 8 ]; do wait -n; done
  done
  wait
  for c in $CASES; do
    [ -e "$F/$c.gpdb" ] || continue
    cat "$F/$c.advise.rc"
    timeout 60 "$ADV" advise --kernel "${c}_bad(" --top 3 "$F/$c.gpdb" | grep -E "^==|^ +(GKER|active)|^ *[0-9]+\. Apply"
  done
  echo "== [$(el) s] 5. two call sites with 3:1 work (pcsamp-known), ${TWOSITE_RUNS:-5} runs"
  for r in $(seq 1 "${TWOSITE_RUNS:-5}"); do
    if [ "$(el)" -gt "${TWOSITE_BUDGET_S:-210}" ]; then echo "budget spent: run $r not recorded"; continue; fi
    GPUPROF_PC_SAMPLING=1 timeout 60 gpuprof record -o "$F/twosite/run$r.gpdb" -- "$B/bin/pcsamp-known" \
      "${TWOSITE_ITERS:-50}" >"$F/twosite/run$r.out" 2>"$F/twosite/run$r.record.err"
    echo "[$(el) s] twosite run $r record rc=$?"
  done
  disasm "$F/twosite"
  for r in $(seq 1 "${TWOSITE_RUNS:-5}"); do
    [ -e "$F/twosite/run$r.gpdb" ] || continue
    checkpoint "$F/twosite/run$r.gpdb"
    timeout 60 "$ADV" report --gpu-detail --json "$F/twosite/run$r.gpdb" >"$F/twosite/run$r.report.json" \
      2>"$F/twosite/run$r.report.err"
    echo "run $r report rc=$?"
  done
  echo "== [$(el) s] 6. eval-suite.py"
  python3 "$HERE/eval-suite.py" "$F" --twosite
  echo "eval rc=$?"
  echo "== [$(el) s] done"
} 2>&1 | tee "$O/log.txt"
cp "$O/log.txt" "$F/log.txt"
tar czf "$O/suite.tgz" -C "$O" suite && rm -rf "$F"
ls -la "$O"
[ "$(stat -c %s "$O/suite.tgz")" -lt $((16 << 20)) ] || echo "WARNING: suite.tgz is over 16 MiB: it will not come back"

#!/bin/bash
# gpu-sample.sh - second, short GPU run of issue 7 (docs/VALIDATION.md):
# gpu-sample.sh BUNDLE (as gpu-counts.sh).  1. SASS counts alone on
# pcsamp-known (self-test counters, the counts at the call instructions);
# 2. gpuprof sample --pid on a running pcsamp-known: two windows (the
# second with --counts), the daemon's store afterwards.
set -u
. tests/devices/gpu-wait.sh # waits with deadlines; run from the repo root
B=$(cd "$1" && pwd); O=${OUT:-/tmp/out}; F=$O/f; mkdir -p "$F"
source "$B/env.sh"
NVD=$(command -v nvdisasm || ls /usr/local/cuda*/bin/nvdisasm 2>/dev/null | head -1)
export GPUPROF_NVDISASM=$NVD
counts() { # DB: SASS execution counts at known's and known_calls' call sites
  python3 - "$1" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
rows = db.execute("""SELECT fs.text, s.pc, SUM(s.samples) FROM pcsample s
  JOIN string fs ON fs.profile_id = s.profile_id AND fs.id = s.func
  JOIN string ss ON ss.profile_id = s.profile_id AND ss.id = s.stall
  WHERE ss.text = 'sass:inst_executed' GROUP BY 1, 2 ORDER BY 1, 2""").fetchall()
print("sass count rows: %d" % len(rows))
for f, pc, v in rows:
    if pc in (0x70, 0xc0, 0x100, 0x160):
        print("  %s +0x%x: %d" % (f, pc, v))
s = db.execute("""SELECT COUNT(*), SUM(s.samples) FROM pcsample s JOIN string ss ON ss.profile_id = s.profile_id
  AND ss.id = s.stall WHERE ss.text != 'sass:inst_executed'""").fetchone()
print("PC sample rows %d, samples %s" % s)
PY
}
{
  date -u; nvidia-smi -L
  echo "== 1. SASS counts alone"
  GPUPROF_SASS_COUNTS=1 GPUPROF_CUPTI_SELFTEST=1 /usr/bin/time -f "record+counts wall %e s" \
    timeout 60 gpuprof record -o "$F/kc.gpdb" -- "$B/bin/pcsamp-known" 100 2>&1 | grep -E "wall|gpuprof-sass|WARN"
  counts "$F/kc.gpdb"
  echo "== 2. gpuprof sample --pid"
  D=/tmp/gpd7s; rm -rf $D; mkdir -p $D
  gpuprofd --foreground --socket $D/s --db $D/p.gpdb --state-dir $D/st >$D/d.log 2>&1 &
  DP=$!
  wait_until 10 "gpuprofd answering" daemon_up $D/s || exit 1
  LD_PRELOAD=$B/lib/libgpuprof.so GPUPROF_SOCKET=$D/s GPUPROF_CUPTI_SELFTEST=1 "$B/bin/pcsamp-known" 400000 >$D/app.out 2>&1 &
  P=$!
  wait_until 30 "pid $P registered" proc_listed $D/s $P || exit 1
  wait_until 30 "first kernels of $P" tree_metric_ge $D/s $P GKER:COUNT 1 || exit 1
  timeout 20 /usr/bin/time -f "window 1: %e s" gpuprof --socket $D/s sample --pid $P --duration 2s; echo "rc=$?"
  timeout 20 /usr/bin/time -f "window 2: %e s" gpuprof --socket $D/s sample --pid $P --duration 1s --counts; echo "rc=$?"
  wait_until 10 "PC samples of the windows in the live tree" tree_metric_ge $D/s $P GINST 1
  timeout 10 gpuprof --socket $D/s sample --pid $P --kind 2 --no-wait; echo "trace kind rc=$?"
  stop_proc $P 5
  stop_proc $DP 10
  grep -iE "control|PC sampling|SASS|warn|error" $D/d.log $D/app.out | head -20
  counts $D/p.gpdb
  python3 -c 'import sqlite3,sys; print("pcsample_stat", sqlite3.connect(sys.argv[1]).execute("select * from pcsample_stat").fetchall())' $D/p.gpdb
  timeout 30 gpuprof report --gpu-detail $D/p.gpdb 2>&1 | grep -E "GSAMP|hot|known|weights" | head -12
} 2>&1 | tee "$O/log.txt"

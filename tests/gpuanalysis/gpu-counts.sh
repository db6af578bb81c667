#!/bin/bash
# gpu-counts.sh - issue 7's remaining GPU evidence (docs/VALIDATION.md), on
# the GPU machine from the repo root: gpu-counts.sh BUNDLE.  BUNDLE holds
# bin/ (gpuprofd gpuprof pcsamp-known pcsamp-rec) lib/ env.sh and
# check-pcsamp.py + pcsamp-known.cu + pcsamp-rec.cu.  Writes
# ${OUT:-/tmp/out}/log.txt and counts.tgz (profiles, gpubins, reports).
#  1. cost: pcsamp-known bare / record / record + SASS counts / record +
#     PC sampling / record + PC sampling + SASS counts, two rounds;
#  2. call counts: the call-edge weights from SASS execution counts ->
#     check-pcsamp.py (known_calls 3:1 within 5 %), and the counts at the
#     call instructions themselves;
#  3. recursion: pcsamp-rec under PC sampling + counts, its GPU tree;
#  4. gpuprof sample --pid on a running process (a daemon of our own):
#     two windows (the second with --counts), samples only from them.
set -u
. tests/devices/gpu-wait.sh # waits with deadlines; run from the repo root
B=$(cd "$1" && pwd); O=${OUT:-/tmp/out}; F=$O/f; mkdir -p "$F"
source "$B/env.sh"
export PYTHONUNBUFFERED=1
NVD=$(command -v nvdisasm || ls /usr/local/cuda*/bin/nvdisasm 2>/dev/null | head -1)
export GPUPROF_NVDISASM=$NVD
N=${ITERS:-400}
calls() { # DB KERNEL: SASS execution counts at the call instructions
  python3 - "$@" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
rows = db.execute("""SELECT fs.text, s.pc, SUM(s.samples) FROM pcsample s
  JOIN string fs ON fs.profile_id = s.profile_id AND fs.id = s.func
  JOIN string ss ON ss.profile_id = s.profile_id AND ss.id = s.stall
  WHERE ss.text = 'sass:inst_executed' AND fs.text LIKE ? GROUP BY 1, 2 ORDER BY 1, 2""",
  ("%" + sys.argv[2] + "%",)).fetchall()
print("sass count rows for %s: %d" % (sys.argv[2], len(rows)))
for f, pc, v in rows:
    if pc in (0x70, 0xc0, 0x100, 0x160) or len(rows) < 40:
        print("  %s +0x%x: %d" % (f, pc, v))
PY
}
{
  date -u; nvidia-smi -L; nvidia-smi --query-gpu=driver_version,clocks.max.sm --format=csv,noheader
  echo "== 1. cost (pcsamp-known $N), two rounds"
  for r in 1 2; do
    /usr/bin/time -f "r$r bare wall %e s" "$B/bin/pcsamp-known" $N
    /usr/bin/time -f "r$r record wall %e s" timeout 120 gpuprof record -o "$F/k-rec-$r.gpdb" -- "$B/bin/pcsamp-known" $N
    GPUPROF_SASS_COUNTS=1 /usr/bin/time -f "r$r record+counts wall %e s" \
      timeout 120 gpuprof record -o "$F/k-c-$r.gpdb" -- "$B/bin/pcsamp-known" $N
    GPUPROF_PC_SAMPLING=1 /usr/bin/time -f "r$r record+pcsampling wall %e s" \
      timeout 120 gpuprof record -o "$F/k-pcs-$r.gpdb" -- "$B/bin/pcsamp-known" $N
    GPUPROF_PC_SAMPLING=1 GPUPROF_SASS_COUNTS=1 GPUPROF_CUPTI_SELFTEST=1 /usr/bin/time -f "r$r record+pcsampling+counts wall %e s" \
      timeout 120 gpuprof record -o "$F/k-pcsc-$r.gpdb" -- "$B/bin/pcsamp-known" $N 2>&1 | grep -E "wall|gpuprof-(sass|pcsamp)|warn|WARN"
  done
  echo "== 2. call counts"
  calls "$F/k-pcsc-1.gpdb" known
  calls "$F/k-c-1.gpdb" known
  for db in k-pcsc-1 k-pcs-1; do
    echo "-- $db"
    gpuprof report --gpu-detail --json "$F/$db.gpdb" >"$F/$db.json" 2>"$F/$db.notes"; cat "$F/$db.notes"
    python3 "$B/check-pcsamp.py" "$F/$db.json" "$B/pcsamp-known.cu"; echo "check rc=$?"
  done
  gpuprof report --gpu-detail "$F/k-pcsc-1.gpdb" 2>&1 | grep -E "known|hot|call at|note|weights" | head -30
  echo "== 3. recursion"
  GPUPROF_PC_SAMPLING=1 GPUPROF_SASS_COUNTS=1 timeout 120 gpuprof record -o "$F/rec.gpdb" -- "$B/bin/pcsamp-rec" 200 7
  calls "$F/rec.gpdb" recursive
  gpuprof report --gpu-detail "$F/rec.gpdb" >"$F/rec-report.txt" 2>&1
  grep -n -A25 "recursive_k" "$F/rec-report.txt" | head -45
  grep -E "note|weights|recursive" "$F/rec-report.txt" | head
  echo "== 4. gpuprof sample --pid on a running process"
  D=/tmp/gpd7; rm -rf $D; mkdir -p $D
  gpuprofd --foreground --socket $D/s --db $D/p.gpdb --state-dir $D/st >$D/d.log 2>&1 &
  DP=$!
  wait_until 10 "gpuprofd answering" daemon_up $D/s || exit 1
  LD_PRELOAD=$B/lib/libgpuprof.so GPUPROF_SOCKET=$D/s GPUPROF_CUPTI_SELFTEST=1 "$B/bin/pcsamp-known" 400000 >$D/app.out 2>&1 &
  P=$!
  wait_until 30 "pid $P registered" proc_listed $D/s $P || exit 1
  gpuprof --socket $D/s ps
  wait_until 30 "first kernels of $P" tree_metric_ge $D/s $P GKER:COUNT 1 || exit 1
  gpuprof --socket $D/s tree --pid $P --json | python3 -c 'import json,sys; m=json.load(sys.stdin)["tree"]["metrics"]; print("before: GINST", m.get("GINST",{}).get("incl",0), "GKER:COUNT", m.get("GKER:COUNT",{}).get("incl",0))'
  timeout 20 /usr/bin/time -f "sample window 1: %e s" gpuprof --socket $D/s sample --pid $P --duration 2s; echo "rc=$?"
  timeout 20 /usr/bin/time -f "sample window 2: %e s" gpuprof --socket $D/s sample --pid $P --duration 1s --counts --period 12; echo "rc=$?"
  wait_until 10 "PC samples of the windows in the live tree" tree_metric_ge $D/s $P GINST 1
  gpuprof --socket $D/s tree --pid $P --json | python3 -c 'import json,sys; m=json.load(sys.stdin)["tree"]["metrics"]; print("after: GINST", m.get("GINST",{}).get("incl",0), "GKER:COUNT", m.get("GKER:COUNT",{}).get("incl",0))'
  stop_proc $P 5; echo "app ended"
  kill -TERM $DP; wait $DP; echo "daemon rc=$?"
  grep -iE "control|PC sampling|SASS|warn|error" $D/d.log | head -20
  grep -iE "control|PC sampling|SASS|warn" $D/app.out | head -20
  calls $D/p.gpdb known
  python3 - $D/p.gpdb <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
print("pcsample rows", db.execute("select count(*), sum(samples) from pcsample s join string ss on ss.profile_id=s.profile_id and ss.id=s.stall where ss.text != 'sass:inst_executed'").fetchone())
print("pcsample_stat", db.execute("select * from pcsample_stat").fetchall())
PY
  cp $D/p.gpdb "$F/sample.gpdb"; cp -r $D/gpubins "$F/sample-gpubins" 2>/dev/null
  gpuprof report --gpu-detail $D/p.gpdb 2>&1 | grep -E "known|hot|GSAMP|note" | head -20
} 2>&1 | tee "$O/log.txt"
tar czf "$O/counts.tgz" -C "$O" f
ls -la "$O"

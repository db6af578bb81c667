#!/usr/bin/env bash
# gpuanalysis.report: `gpuprof report` on a profile recorded with PC sampling
# on an H100 (fixtures/h100: the store the daemon wrote, the gpubin it
# stored, CUDA 13's nvdisasm text of it; docs/VALIDATION.md).  Checks the
# GPU part below the kernels against the stored samples exactly
# (check-report-gpu.py), then bad input: no nvdisasm, a truncated binary,
# a missing binary, garbage in place of the binary -- a note each, the
# samples still counted, exit 0; SASS counts of another process weigh the
# call sites; the notes say how each call edge was weighed.   usage: test-report-gpu.sh GPUPROF FIXTURES
set -u
GPUPROF=$1; FIX=$(cd "$2" && pwd); HERE=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
setup() { rm -rf "$T/p"; mkdir -p "$T/p"; cp -r "$FIX/h100/." "$T/p/"; chmod -R u+w "$T/p"; }
H=c093beaf1608ac1626d8f4a117d40950
export GPUPROF_NVDISASM=0 # never a tool from PATH: the saved text or nothing

setup
"$GPUPROF" report --gpu-detail --json "$T/p/known.gpdb" >"$T/d.json" 2>"$T/d.err" || fail "report --json"
python3 "$HERE/check-report-gpu.py" detail "$T/d.json" "$T/p/known.gpdb" "$T/p/gpubins/$H.nvdisasm" || fail "detail"
"$GPUPROF" report --gpu-detail "$T/p/known.gpdb" >"$T/d.txt" || fail "report text"
grep -q "loop at pcsamp-known.cu:" "$T/d.txt" || fail "no loop line in the text report"
grep -q "GSAMP:UTIL" "$T/d.txt" || fail "no GSAMP:UTIL note"
# how each call edge into hot() was weighed: its call instruction's samples
grep -q "_Z5knownPKfiPf: call edges weighed by samples of the call instructions (equal cost per call, Zhou et al. 2021 section 6.3): call at 0x70 120 (25 %), call at 0xc0 354 (75 %)" "$T/d.err" ||
  fail "known()'s edge weights: $(cat "$T/d.err")"
grep -q "_Z11known_callsPKfiiPf: call edges weighed by samples .*: call at 0x100 2569 (81 %), call at 0x160 591 (19 %)" "$T/d.err" ||
  fail "known_calls()'s edge weights: $(cat "$T/d.err")"
"$GPUPROF" report "$T/p/known.gpdb" >"$T/c.txt" || fail "collapsed report"
grep -q "_Z3hotPKfif" "$T/c.txt" && fail "collapsed report shows GPU functions"
"$GPUPROF" report --json "$T/p/known.gpdb" >"$T/c.json" 2>/dev/null || fail "collapsed json"
python3 "$HERE/check-report-gpu.py" collapsed "$T/c.json" "$T/p/known.gpdb" || fail "collapsed"
"$GPUPROF" report --flat --metric GINST "$T/p/known.gpdb" >"$T/f.txt" || fail "flat"
grep -q "gpu-line pcsamp-known.cu:" "$T/f.txt" || fail "flat view has no GPU lines"
grep -Eq "gpu-fn +_Z3hotPKfif$" "$T/f.txt" || fail "flat view has no GPU function row"

# no nvdisasm text: functions flat, a note, same totals
setup; rm "$T/p/gpubins/$H.nvdisasm"
"$GPUPROF" report --gpu-detail --json "$T/p/known.gpdb" >"$T/n.json" 2>"$T/n.err" || fail "report without nvdisasm"
grep -q "nvdisasm not found" "$T/n.err" || fail "no note about nvdisasm: $(cat "$T/n.err")"
python3 "$HERE/check-report-gpu.py" flat "$T/n.json" "$T/p/known.gpdb" || fail "no-nvdisasm totals"

# truncated, garbage and missing binaries: a note, the samples kept
for how in truncate garbage missing; do
  setup
  case $how in
    truncate) head -c 3000 "$FIX/h100/gpubins/$H.gpubin" >"$T/p/gpubins/$H.gpubin" ;;
    garbage) head -c 20000 /dev/urandom >"$T/p/gpubins/$H.gpubin" ;;
    missing) rm "$T/p/gpubins/$H.gpubin" ;;
  esac
  "$GPUPROF" report --gpu-detail --json "$T/p/known.gpdb" >"$T/b.json" 2>"$T/b.err"; rc=$?
  [ $rc -eq 0 ] || fail "$how: exit $rc"
  grep -Eq "GPU binary $H (unreadable|not found)" "$T/b.err" || fail "$how: no note: $(cat "$T/b.err")"
  python3 "$HERE/check-report-gpu.py" unplaced "$T/b.json" "$T/p/known.gpdb" || fail "$how: totals"
done
# SASS counts from a process of their own whose binary id has no hash in
# that process (its CUBIN record missing): the report takes the hash the
# other processes of the profile give that id, and known_calls' call sites
# weigh their exact counts (960000 : 320000 -> its hot() contexts 3:1)
setup
python3 - "$T/p/known.gpdb" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
cub = db.execute("SELECT cubin_id FROM pcsample_cubin").fetchone()[0]
db.execute("INSERT INTO profile(id, pid, uid, gid, state) VALUES (2, 99999, 0, 0, 'exited')")
db.execute("INSERT INTO string VALUES (2, 1, 1, '_Z11known_callsPKfiiPf'), (2, 2, 4, 'sass:inst_executed')")
db.executemany("INSERT INTO pcsample VALUES (2, ?, 1, ?, 2, 0, ?, 0)",
               [(cub, 0x100, 960000), (cub, 0x160, 320000), (cub, 0x0, 320000)])
db.commit()
PY
"$GPUPROF" report --gpu-detail --json "$T/p/known.gpdb" >"$T/s.json" 2>"$T/s.err" || fail "report with counts"
grep -q "_Z11known_callsPKfiiPf: call-edge weights: exact execution counts" "$T/s.err" ||
  fail "counts of another process not used: $(cat "$T/s.err")"
grep -q "no GPU binary" "$T/s.err" && fail "counts without a binary: $(cat "$T/s.err")"
python3 "$HERE/check-pcsamp.py" "$T/s.json" "$HERE/pcsamp-known.cu" >"$T/s.out" || fail "split: $(cat "$T/s.out")"
grep -q "PASS: call-site ratio 3.000" "$T/s.out" || fail "split not 3:1: $(cat "$T/s.out")"
echo PASS

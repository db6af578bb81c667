#!/bin/bash
# gpu-counts2.sh - issue 7's SASS-count and `gpuprof sample --pid` evidence
# (docs/VALIDATION.md, 2026-11-24), on the GPU machine from the repo root:
# gpu-counts2.sh BUNDLE [PART...].  BUNDLE holds bin/ (gpuprofd gpuprof
# pcsamp-known sass-probe) lib/ env.sh check-pcsamp.py pcsamp-known.cu
# and gpu-wait.sh.  Parts (default: all):
#  probe   CUPTI's SASS Metrics API without gpuprof (sass-probe): does the
#          API give counts here at all, and in which of its variants
#          (the shim's differences: activity records, enabling in the
#          context-created callback, reading in an API callback);
#  counts  pcsamp-known under GPUPROF_SASS_COUNTS=1 with
#          GPUPROF_SASS_DEBUG=1 (where the counts go, stage by stage), the
#          counts at known_calls' call instructions in the store;
#  serial  counts with serialized kernel records (GKER kept?);
#  created counts enabled in the context-created callback (the old place);
#  both    PC sampling and counts in one process (samples kept?);
#  split   one recorded session, two processes: counts, then PC samples;
#          the report's known_calls split by the counts rule
#          (check-pcsamp.py: 3:1 within 5 %, hot line);
#  window  gpuprof sample --pid on `pcsamp-known --steps`: the window
#          starts, GINST live in `tree --gpu-detail`, the window ends; the
#          app's step times before, during and after;
#  torch   PyTorch (torch_train.py 300 10): bare / record / record + PC
#          sampling, 3 interleaved rounds, medians.
# Writes ${OUT:-/tmp/out}/log.txt and f.tgz.
set -u
B=$(cd "$1" && pwd); shift
O=${OUT:-/tmp/out}; F=$O/f; mkdir -p "$F"
. "$B/gpu-wait.sh"
source "$B/env.sh"
export PYTHONUNBUFFERED=1
NVD=$(command -v nvdisasm || ls /usr/local/cuda*/bin/nvdisasm 2>/dev/null | head -1)
export GPUPROF_NVDISASM=$NVD
PARTS=${*:-probe counts both split window torch}
has() { case " $PARTS " in *" $1 "*) return 0 ;; esac; return 1; }
N=${ITERS:-100}
calls() { # DB: SASS execution counts of known_calls and known at their call instructions
  python3 - "$1" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
rows = db.execute("""SELECT fs.text, s.pc, SUM(s.samples), COUNT(DISTINCT s.cubin_id) FROM pcsample s
  JOIN string fs ON fs.profile_id = s.profile_id AND fs.id = s.func
  JOIN string ss ON ss.profile_id = s.profile_id AND ss.id = s.stall
  WHERE ss.text = 'sass:inst_executed' GROUP BY 1, 2 ORDER BY 1, 2""").fetchall()
print("sass count rows: %d" % len(rows))
for f, pc, v, nc in rows:
    if pc in (0x70, 0xc0, 0x100, 0x160):
        print("  %s +0x%x: %d" % (f, pc, v))
cub = db.execute("""SELECT COUNT(*) FROM pcsample s JOIN string ss ON ss.profile_id = s.profile_id AND
  ss.id = s.stall WHERE ss.text = 'sass:inst_executed' AND s.cubin_id IN
  (SELECT cubin_id FROM pcsample_cubin c WHERE c.profile_id = s.profile_id)""").fetchone()[0]
print("count rows whose binary id has a stored binary: %d" % cub)
s = db.execute("""SELECT COUNT(*), SUM(s.samples) FROM pcsample s JOIN string ss ON ss.profile_id = s.profile_id
  AND ss.id = s.stall WHERE ss.text != 'sass:inst_executed'""").fetchone()
print("PC sample rows %d, samples %s" % s)
PY
}
{
  date -u; nvidia-smi -L; nvidia-smi --query-gpu=driver_version,clocks.max.sm --format=csv,noheader
  if has probe; then
    echo "== probe: the SASS Metrics API without gpuprof"
    for v in ${PROBES:-plain act ctxcb synccb act,ctxcb}; do
      LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:$B/lib/cupti timeout 60 \
        "$B/bin/sass-probe" 10 $v 2>&1 | grep -E "variant|sass-probe\[|activity|inside|-> [1-9]"; echo "probe $v rc=${PIPESTATUS[0]}"
    done
  fi
  if has counts; then
    echo "== counts: GPUPROF_SASS_COUNTS=1 GPUPROF_SASS_DEBUG=1"
    GPUPROF_SASS_COUNTS=1 GPUPROF_SASS_DEBUG=1 GPUPROF_CUPTI_SELFTEST=1 /usr/bin/time -f "record+counts wall %e s" \
      timeout 120 gpuprof record -o "$F/kc.gpdb" -- "$B/bin/pcsamp-known" $N 2>&1 | grep -vE "^gpuprof:  "
    calls "$F/kc.gpdb"
  fi
  if has serial; then
    echo "== counts with serialized kernel records (GPUPROF_SASS_KERNEL_ACTIVITY=serial)"
    GPUPROF_SASS_KERNEL_ACTIVITY=serial GPUPROF_SASS_COUNTS=1 GPUPROF_SASS_DEBUG=1 \
      timeout 120 gpuprof record -o "$F/kcs.gpdb" -- "$B/bin/pcsamp-known" $N 2>&1 | grep -E "decoded|strings|flush \(|GKER|known|WARN"
    calls "$F/kcs.gpdb"
  fi
  if has created; then
    echo "== counts, enabled in the context-created callback (the old place)"
    GPUPROF_SASS_ENABLE=created GPUPROF_SASS_COUNTS=1 GPUPROF_SASS_DEBUG=1 \
      timeout 120 gpuprof record -o "$F/kcc.gpdb" -- "$B/bin/pcsamp-known" $N 2>&1 | grep -E "decoded|strings|flush \("
    calls "$F/kcc.gpdb"
  fi
  if has both; then
    echo "== both: PC sampling and counts in one process"
    GPUPROF_PC_SAMPLING=1 GPUPROF_SASS_COUNTS=1 GPUPROF_SASS_DEBUG=1 GPUPROF_CUPTI_SELFTEST=1 \
      timeout 120 gpuprof record -o "$F/kpc.gpdb" -- "$B/bin/pcsamp-known" $N 2>&1 | grep -E "sass|pcsamp|WARN|PC sampling"
    calls "$F/kpc.gpdb"
    timeout 60 gpuprof report --gpu-detail --json "$F/kpc.gpdb" >"$F/kpc.json" 2>"$F/kpc.notes"; cat "$F/kpc.notes"
    python3 "$B/check-pcsamp.py" "$F/kpc.json" "$B/pcsamp-known.cu"; echo "check rc=$?"
  fi
  if has split; then
    echo "== split: one session, counts then PC samples; the report"
    timeout 240 gpuprof record -o "$F/ks.gpdb" -- sh -c \
      "GPUPROF_SASS_COUNTS=1 $B/bin/pcsamp-known $N && GPUPROF_PC_SAMPLING=1 $B/bin/pcsamp-known $((4 * N))" 2>&1 | grep -vE "^gpuprof:  "
    calls "$F/ks.gpdb"
    timeout 60 gpuprof report --gpu-detail --json "$F/ks.gpdb" >"$F/ks.json" 2>"$F/ks.notes"; cat "$F/ks.notes"
    python3 "$B/check-pcsamp.py" "$F/ks.json" "$B/pcsamp-known.cu"; echo "check rc=$?"
    timeout 60 gpuprof report --gpu-detail "$F/ks.gpdb" 2>&1 | grep -E "known|hot|call at|loop|weights|GSAMP" | head -24
  fi
  if has window; then
    echo "== window: gpuprof sample --pid on a running CUDA loop"
    D=/tmp/gpd7w; rm -rf $D; mkdir -p $D
    gpuprofd --foreground --socket $D/s --db $D/p.gpdb --state-dir $D/st >$D/d.log 2>&1 &
    DP=$!
    wait_until 10 "gpuprofd answering" daemon_up $D/s || exit 1
    LD_PRELOAD=$B/lib/libgpuprof.so GPUPROF_SOCKET=$D/s GPUPROF_CUPTI_SELFTEST=1 GPUPROF_LOG=info \
      "$B/bin/pcsamp-known" --steps ${STEPS_S:-24} >$D/app.out 2>$D/app.err &
    P=$!
    wait_until 30 "pid $P registered" proc_listed $D/s $P || exit 1
    wait_until 30 "first kernels of $P" tree_metric_ge $D/s $P GKER:COUNT 1 || exit 1
    # the app's own speed before the window: 2 000 steps (~1 ms each)
    wait_until 60 "2000 steps before the window" steps_after $D/app.out 0 2000 || exit 1
    T0=$(date +%s.%N); echo "window asked at $T0"
    timeout 30 gpuprof --socket $D/s sample --pid $P --duration 4s >$D/sample.out 2>&1 &
    SP=$!
    wait_until 20 "GINST live in tree --gpu-detail" tree_metric_ge $D/s $P GINST 1 && echo "GINST live at $(date +%s.%N)"
    gpuprof --socket $D/s tree --pid $P --gpu-detail 2>&1 | grep -E "known|gpu_stall|STL|GINST" | head -12
    wait $SP; RC=$?; T1=$(date +%s.%N); echo "sample rc=$RC at $T1"; cat $D/sample.out
    G1=$(gpuprof --socket $D/s tree --pid $P --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["tree"]["metrics"].get("GINST",{}).get("incl",0))')
    echo "GINST at the window's end: $G1"
    # after the window: 2 000 steps, then 2 000 more; GINST must not move
    wait_until 60 "2000 steps after the window" steps_after $D/app.out $T1 2000 || exit 1
    G2=$(gpuprof --socket $D/s tree --pid $P --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["tree"]["metrics"].get("GINST",{}).get("incl",0))')
    echo "GINST 2000 steps after the window: $G2"
    wait_until 60 "4000 steps after the window" steps_after $D/app.out $T1 4000 || exit 1
    G3=$(gpuprof --socket $D/s tree --pid $P --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["tree"]["metrics"].get("GINST",{}).get("incl",0))')
    echo "GINST 4000 steps after the window: $G3 (unchanged: nothing sampled after the window's end)"
    stop_proc $P 10; echo "app ended"
    stop_proc $DP 10; echo "daemon ended"
    grep -E "PC sampling|SASS|WARN|gpuprof-pcsamp" $D/app.err | head -12
    grep -iE "control|warn|error" $D/d.log | head -8
    python3 - $D/app.out $T0 $T1 <<'PY'
import re, statistics, sys
steps = [(float(m.group(1)), float(m.group(2))) for m in
         (re.match(r"step \d+ end ([0-9.]+) ms ([0-9.]+)", l) for l in open(sys.argv[1])) if m]
t0, t1 = float(sys.argv[2]), float(sys.argv[3])
ph = {"before": [d for t, d in steps if t < t0], "during": [d for t, d in steps if t0 + 0.5 < t < t1 - 0.2],
      "after": [d for t, d in steps if t > t1 + 0.5]}
for k, v in ph.items():
    print("steps %-6s n=%3d median %.3f ms (min %.3f max %.3f)" % (k, len(v), statistics.median(v) if v else 0,
          min(v) if v else 0, max(v) if v else 0))
PY
    cp $D/p.gpdb "$F/window.gpdb"; cp $D/app.out $D/app.err $D/d.log "$F/" 2>/dev/null
  fi
  if has torch; then
    echo "== torch: torch_train.py 300 10, wall s of the timed steps, 3 interleaved rounds"
    TT="$B/torch_train.py 300 10"
    for r in 1 2 3; do
      echo "bare r$r: $(timeout 120 python3 $TT 2>&1 | grep torch_steps_s)" | tee -a "$F/torch.txt"
      rm -f /tmp/t0.gpdb*
      echo "record r$r: $(timeout 120 gpuprof record -o /tmp/t0.gpdb -- python3 $TT 2>/dev/null | grep torch_steps_s)" | tee -a "$F/torch.txt"
      rm -f /tmp/t1.gpdb*
      echo "pcsamp r$r: $(GPUPROF_PC_SAMPLING=1 timeout 120 gpuprof record -o /tmp/t1.gpdb -- python3 $TT 2>/dev/null | grep torch_steps_s)" | tee -a "$F/torch.txt"
    done
    python3 - "$F/torch.txt" <<'PY'
import re, statistics, sys
v = {}
for l in open(sys.argv[1]):
    m = re.match(r"(\w+) r\d+: torch_steps_s ([0-9.]+)", l)
    if m:
        v.setdefault(m.group(1), []).append(float(m.group(2)))
b = statistics.median(v["bare"]) if v.get("bare") else 0
for k in ("bare", "record", "pcsamp"):
    if v.get(k):
        m = statistics.median(v[k])
        print("torch %-6s median %.3f s of %s%s" % (k, m, v[k], " = %.2fx bare" % (m / b) if b else ""))
PY
  fi
} 2>&1 | tee -a "$O/log.txt"
tar czf "$O/f.tgz" -C "$O" f
ls -la "$O"

#!/bin/bash
# gpu-pcsamp.sh - the PC-sampling evidence of docs/VALIDATION.md (issue 7),
# on the GPU machine from the repo root: gpu-pcsamp.sh BUNDLE.  BUNDLE holds
# scripts/bundle-gpu's bin/ lib/ env.sh plus bin/pcsamp-known, cubin/ (the
# test cubin nvcc built on the CI machine), check-pcsamp.py and
# pcsamp-known.cu.  Writes ${OUT:-/tmp/out}/log.txt and pcsamp.tgz (the
# nvdisasm fixtures, the recorded profile with its gpubins and their
# nvdisasm text, the reports).
set -u
B=$(cd "$1" && pwd); O=${OUT:-/tmp/out}; F=$O/f; mkdir -p "$F"
source "$B/env.sh"
export PYTHONUNBUFFERED=1 GPUPROF_SOCKET=/tmp/gpd.sock
NVD=$(command -v nvdisasm || ls /usr/local/cuda*/bin/nvdisasm 2>/dev/null | head -1)
export GPUPROF_NVDISASM=$NVD
T=${TORCH_STEPS:-300}
{
  date -u; nvidia-smi -L; nvidia-smi --query-gpu=driver_version,clocks.max.sm --format=csv,noheader
  echo "nvdisasm: $NVD"; "$NVD" --version | tail -1
  echo "== nvdisasm of the CI test cubin"
  "$NVD" -c -g "$B/cubin/pcsamp-known.sm_90.cubin" >"$F/pcsamp-known.sm_90.nvdisasm"; echo "rc=$?"
  "$NVD" -c "$B/cubin/pcsamp-known.sm_90.cubin" >"$F/pcsamp-known.sm_90.nolines.nvdisasm"; echo "rc=$?"
  head -40 "$F/pcsamp-known.sm_90.nvdisasm"
  echo "== known program: bare, then PC sampling"
  /usr/bin/time -f "bare wall %e s" "$B/bin/pcsamp-known" 400
  GPUPROF_PC_SAMPLING=1 GPUPROF_CUPTI_SELFTEST=1 /usr/bin/time -f "sampled wall %e s" \
    timeout 200 gpuprof record -o "$F/known.gpdb" -- "$B/bin/pcsamp-known" 400; echo "record rc=$?"
  for g in "$F"/gpubins/*.gpubin; do
    "$NVD" -c -g "$g" >"${g%.gpubin}.nvdisasm" 2>/dev/null || "$NVD" -c "$g" >"${g%.gpubin}.nvdisasm"
  done
  ls -la "$F" "$F/gpubins"
  python3 - "$F/known.gpdb" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
for t in ("pcsample", "pcsample_cubin", "pcsample_stat", "gpubin"):
    print(t, db.execute("select count(*) from %s" % t).fetchone())
print(db.execute("select * from pcsample_stat").fetchall())
print(db.execute("select text from string where kind=4 limit 50").fetchall())
PY
  gpuprof report --gpu-detail "$F/known.gpdb" | tee "$F/known-report.txt" | head -80
  gpuprof report --gpu-detail --json "$F/known.gpdb" >"$F/known.json"; echo "json rc=$?"
  python3 "$B/check-pcsamp.py" "$F/known.json" "$B/pcsamp-known.cu"; echo "check rc=$?"
  [ -n "${SKIP_TORCH:-}" ] && exit 0
  echo "== PyTorch: bare / record / record + PC sampling (torch_train.py $T 10), one run each, twice"
  for r in ${ROUNDS:-1 2}; do
    printf 'bare r%d: ' $r; python3 tests/cuda/torch_train.py $T 10
    printf 'record r%d: ' $r; rm -f /tmp/t0.gpdb*; timeout 300 gpuprof record -o /tmp/t0.gpdb -- python3 tests/cuda/torch_train.py $T 10
    printf 'record+pcsampling r%d: ' $r; rm -rf /tmp/t1.gpdb* /tmp/gpubins
    GPUPROF_PC_SAMPLING=1 GPUPROF_CUPTI_SELFTEST=1 timeout 300 gpuprof record -o /tmp/t1.gpdb -- python3 tests/cuda/torch_train.py $T 10
  done
  gpuprof report --flat --metric GINST /tmp/t1.gpdb 2>&1 | head -60 | tee "$F/torch-flat.txt"
  gpuprof report --metric GINST --depth 12 /tmp/t1.gpdb 2>&1 | tail -30
  gpuprof report --json /tmp/t1.gpdb >"$F/torch.json" 2>"$F/torch-notes.txt"; cat "$F/torch-notes.txt"
  python3 - "$F/torch.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
ks = {}
def walk(n):
    if n["kind"] == "kernel":
        m = n["metrics"]
        e = ks.setdefault(n["label"][:90], {})
        for k, v in m.items():
            if k.startswith("GINST") or k == "GKER":
                e[k] = e.get(k, 0) + v["incl"]
    for c in n.get("children", []):
        walk(c)
walk(doc["tree"])
top = sorted(ks.items(), key=lambda x: -x[1].get("GINST", 0))[:6]
for name, m in top:
    g = m.get("GINST", 0)
    st = sorted(((k, v) for k, v in m.items() if k.startswith("GINST:STL_") and k != "GINST:STL_ANY"), key=lambda x: -x[1])[:5]
    print("%-90s GINST %8.0f GKER %.3f s | %s" % (name, g, m.get("GKER", 0) / 1e9,
          ", ".join("%s %.0f%%" % (k[10:], 100 * v / g) for k, v in st if g)))
print("root GSAMP:", {k: v["incl"] for k, v in doc["tree"]["metrics"].items() if k.startswith("GSAMP")})
PY
} 2>&1 | tee "$O/log.txt"
cp /tmp/t1.gpdb "$F/torch.gpdb" 2>/dev/null
tar czf "$O/pcsamp.tgz" -C "$O" f
ls -la "$O"

#!/bin/bash
# gpu-advise.sh - the advisor's GPU-machine validation (docs/ADVISOR.md,
# docs/VALIDATION.md), run from the repo root: gpu-advise.sh BUNDLE.
# BUNDLE: a scripts/bundle-gpu bundle (bin/gpuprofd, lib/libgpuprof.so,
# env.sh) plus bin/gpuprof-advise (this tree's gpuprof) and
# bin/advise-suite (tests/advisor/advise-suite.cu for sm_90; its first
# five pairs were advise-defects.cu, the 'occupancy' case is 'chase').
# For each defect: the bad and the fixed variant timed bare (ROUNDS
# alternating rounds), the bad one recorded with PC sampling and advised.
# Then the PyTorch training loop recorded and advised.  Writes
# ${OUT:-/tmp/out}/log.txt and advise.tgz (profiles + gpubins with their
# nvdisasm text, reports).
set -u
B=$(cd "$1" && pwd); O=${OUT:-/tmp/out}; F=$O/f; mkdir -p "$F"
source "$B/env.sh"
export PYTHONUNBUFFERED=1 GPUPROF_SOCKET=/tmp/gpd-adv.sock
NVD=$(command -v nvdisasm || ls /usr/local/cuda*/bin/nvdisasm 2>/dev/null | head -1)
export GPUPROF_NVDISASM=$NVD
ADV=$B/bin/gpuprof-advise
D=$B/bin/advise-suite
CASES=${CASES:-coalesce spill chase diverge unroll}
{
  date -u; nvidia-smi -L; "$NVD" --version | tail -1
  echo "== bare timings (ms per launch), ${ROUNDS:-3} alternating rounds"
  for r in $(seq 1 "${ROUNDS:-3}"); do
    [ "${ROUNDS:-3}" = 0 ] && break
    for c in $CASES; do "$D" $c bad 40; "$D" $c fixed 40; done
  done | tee "$F/timings.txt"
  for c in $CASES; do
    echo "== $c: record the bad variant with PC sampling, advise"
    rm -rf "$F/$c"; mkdir -p "$F/$c"
    GPUPROF_PC_SAMPLING=1 timeout 120 gpuprof record -o "$F/$c/$c.gpdb" -- "$D" $c bad 10
    echo "record rc=$?"
    for g in "$F/$c"/gpubins/*.gpubin; do
      "$NVD" -c -g "$g" >"${g%.gpubin}.nvdisasm" 2>/dev/null || "$NVD" -c "$g" >"${g%.gpubin}.nvdisasm"
    done
    "$ADV" advise --kernels 1 --top 6 "$F/$c/$c.gpdb" | tee "$F/$c/advise.txt"
    "$ADV" advise --kernels 1 --top 12 --json "$F/$c/$c.gpdb" >"$F/$c/advise.json"
    echo "json rc=$?"
  done
  [ -n "${SKIP_TORCH:-}" ] && exit 0
  echo "== PyTorch training loop (tests/cuda/torch_train.py ${TORCH_STEPS:-100} 10) with PC sampling"
  rm -rf "$F/torch"; mkdir -p "$F/torch"
  GPUPROF_PC_SAMPLING=1 timeout 240 gpuprof record -o "$F/torch/torch.gpdb" -- \
    python3 tests/cuda/torch_train.py "${TORCH_STEPS:-100}" 10
  echo "record rc=$?"
  "$ADV" advise --kernels 3 --top 4 "$F/torch/torch.gpdb" | tee "$F/torch/advise.txt"
  "$ADV" advise --kernels 3 --top 12 --json "$F/torch/torch.gpdb" >"$F/torch/advise.json"
  echo "json rc=$?"
  # keep the binaries of the sampled kernels only, with their nvdisasm text
  python3 - "$F/torch" "$NVD" <<'PY'
import glob, json, os, sqlite3, subprocess, sys
d, nvd = sys.argv[1], sys.argv[2]
db = sqlite3.connect(d + "/torch.gpdb")
keep = {r[0] for r in db.execute("select distinct c.hash from pcsample s join pcsample_cubin c "
        "on c.profile_id = s.profile_id and c.cubin_id = s.cubin_id")}
print("sampled gpubins:", len(keep))
for g in glob.glob(d + "/gpubins/*.gpubin"):
    h = os.path.basename(g)[:-7]
    if h not in keep:
        os.unlink(g)
    else:
        subprocess.run("%s -c -g %s > %s.nvdisasm 2>/dev/null || %s -c %s > %s.nvdisasm"
                       % (nvd, g, g[:-7], nvd, g, g[:-7]), shell=True)
PY
  du -sh "$F/torch" "$F/torch/gpubins"
  "$ADV" advise --kernels 3 --top 4 "$F/torch/torch.gpdb" >/dev/null; echo "re-read rc=$?"
} 2>&1 | tee "$O/log.txt"
# two files back: the defects (profiles, gpubins, nvdisasm text, reports)
# and the PyTorch reports with the profile (its gpubins stay: too large)
(cd "$O" && tar czf defects.tgz --exclude=f/torch f && tar czf torch.tgz --exclude='*.gpubin' f/torch &&
  rm -rf f)
ls -la "$O"

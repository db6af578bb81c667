#!/bin/sh
# test-turns.sh BUILD_DIR - tests/cuda/torch-turns.py, the driver that
# resolves a tracing mode's cost on the GPU machine, without a GPU: its
# workers are tests/cupti/turns-worker.py (the TORCH_TURNS protocol with
# made-up times: duty:10/1 5 % slower per step and 2 % more in bursts of
# long runs, a +-5 % drift shared by all, +-1 % noise per turn), two
# bare and two duty:10/1 processes, the latter under the real `gpuprof
# record` (stdin/stdout passed through, a profile written at quit).
# Checks the rounds and long runs that came back and that the tables
# find the costs that were put in: median ratio and trimmed mean
# 1.03-1.07, bare half against half 0.97-1.03, the burst excess minus
# bare's 1.5-2.5 %, and a clear message for a worker that dies.  No timing is measured: every
# time is the worker's own number.
set -u
b=$1
here=$(cd "$(dirname "$0")" && pwd)
[ -x "$b/bin/gpuprof" ] && [ -x "$b/bin/gpuprofd" ] && [ -f "$b/lib/libgpuprof.so" ] ||
  { echo "SKIP: gpuprof CLI/daemon/shim not built"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: no python3"; exit 77; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
export TURNS_FAKE_COST=duty:10/1=1.05 TURNS_FAKE_SPIKE=duty:10/1=0.02 TURNS_FAKE_PROC=0.002
python3 "$here/../cuda/torch-turns.py" --bundle "$b" --worker "python3 $here/turns-worker.py" --rounds 20 \
  --procs 2 --long 1000 --long-rounds 2 --parallel-start --out "$tmp" bare duty:10/1 >"$tmp/out" 2>&1
rc=$?
cat "$tmp/out"
fail=0
[ $rc -eq 0 ] || { echo "FAIL: torch-turns.py rc=$rc"; fail=1; }
n=$(($(wc -l <"$tmp/turns.tsv") - 1))
[ "$n" -eq 80 ] || { echo "FAIL: $n turns, want 20 rounds x 4 processes = 80"; fail=1; }
n=$(wc -l <"$tmp/longs.tsv")
[ "$n" -eq 8 ] || { echo "FAIL: $n long runs, want 2 rounds x 4 = 8"; fail=1; }
for i in 0 1; do
  [ -f "$tmp/turns-duty_10_1-$i.gpdb" ] || { echo "FAIL: no profile of duty:10/1#$i (gpuprof record)"; fail=1; }
done
# "<cfg> <bare-us> <median> ..." of the first table (per-step mean)
med() { awk -v c="$1" '/^== per-step mean/ {t = 1} /^== median step/ {t = 0} t && $1 == c {print $3; exit}' "$tmp/out"; }
exc() { awk -v c="$1" '/^== long runs/ {t = 1} t && $1 == c {sub("%", "", $4); print $4; exit}' "$tmp/out"; }
within() { awk -v v="$2" -v lo="$3" -v hi="$4" 'BEGIN {exit !(v != "" && v + 0 >= lo && v + 0 <= hi)}' ||
  { echo "FAIL: $1 = '$2', want $3..$4"; fail=1; }; }
trm() { awk -v c="$1" '/^== per-step mean: 20 %-trimmed/ {t = 1} /^== long/ {t = 0} t && $1 == c {print $2; exit}' "$tmp/out"; }
within "duty:10/1 ratio" "$(med duty:10/1)" 1.03 1.07
within "duty:10/1 trimmed log ratio" "$(trm duty:10/1)" 1.03 1.07
within "bare half/half" "$(med 'bare(half/half)')" 0.97 1.03
within "duty:10/1 burst excess - bare (%)" "$(exc duty:10/1)" 1.5 2.5
within "bare burst excess - bare (%)" "$(exc bare)" -0.01 0.01
# a worker that never says ready: a clear message and a non-zero exit
printf '#!/bin/sh\nexit 3\n' >"$tmp/dead.sh"; chmod +x "$tmp/dead.sh"
python3 "$here/../cuda/torch-turns.py" --bundle "$b" --worker "$tmp/dead.sh" --rounds 2 --procs 1 --out "$tmp/d" \
  bare >"$tmp/dead.out" 2>&1 && { echo "FAIL: a dead worker gave rc 0"; fail=1; }
grep -q "did not get ready" "$tmp/dead.out" || { echo "FAIL: no message for a dead worker"; cat "$tmp/dead.out"; fail=1; }
[ $fail -eq 0 ] && echo PASS
exit $fail

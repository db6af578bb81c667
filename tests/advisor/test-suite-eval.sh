#!/usr/bin/env bash
# advisor.suite-eval: tests/advisor/eval-suite.py on a suite folder made
# from the stored H100 profiles (tests/advisor/fixtures/h100: three of the
# suite's pairs with their bad kernels, tests/gpuanalysis/fixtures/h100:
# pcsamp-known as one two-site run) and the bare timings of that run
# (docs/ADVISOR.md): advised again with this tree's gpuprof, every number
# of the table checked, then the stored-advice path and bad input.
#   usage: test-suite-eval.sh GPUPROF FIXTURES(tests/ directory)
set -u
GPUPROF=$1; TD=$(cd "$2" && pwd); EV=$TD/advisor/eval-suite.py
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
S=$T/suite; mkdir -p "$S/twosite"
cp -r "$TD/advisor/fixtures/h100/." "$S/"
cp -r "$TD/gpuanalysis/fixtures/h100/gpubins" "$S/twosite/"
cp "$TD/gpuanalysis/fixtures/h100/known.gpdb" "$S/twosite/run1.gpdb"
chmod -R u+w "$S"
cat >"$S/timings.txt" <<'TXT'
speedup coalesce 0.070700 0.026200 2.6985
speedup diverge 0.013300 0.007800 1.7051
speedup unroll 0.100800 0.029200 3.4521
speedup spill 0.476100 0.066900 7.1166
TXT
printf 'run coalesce bad 0.077770 20\nrun coalesce fixed 0.026200 20\n' >"$S/coalesce.run.txt"
cat >"$T/split.txt" <<'TXT'
# pair  half  family  right fix
coalesce  calibrate  coalescing  Global Memory Coalescing
spill     calibrate  local       Register Reuse
diverge   heldout    divergence  Warp Balance
unroll    heldout    latency     Code Reordering
TXT
python3 "$EV" "$S" --split "$T/split.txt" --gpuprof "$GPUPROF" --twosite --json "$T/e.json" >"$T/out" 2>&1 ||
  fail "eval rc=$?: $(cat "$T/out")"
cat "$T/out"
python3 - "$T/e.json" <<'PY' || fail "numbers"
import json, sys
d = json.load(open(sys.argv[1]))
r = {p["pair"]: p for p in d["pairs"]}
c, s, v, u = r["coalesce"], r["spill"], r["diverge"], r["unroll"]
# measured: the stored medians; the estimates: the fixture's advice
assert c["measured"] == 2.6985 and c["first"] == "Global Memory Coalescing" and c["right_first"], c
assert abs(c["estimate"] - 7.079) < 0.001 and c["rank"] == 1, c
assert abs(c["error"] - abs(c["estimate"] - 2.6985) / 2.6985) < 1e-12
assert abs(c["overhead"][0] - 1.1) < 1e-9 and abs(c["overhead"][1] - 1.0) < 1e-9, c["overhead"]
# spill_kernel<8> is not named spill_bad: no bad kernel, estimate 1.0
assert s["first"] == "-" and s["estimate"] == 1.0 and s["notes"] == "no bad kernel", s
assert abs(s["error"] - (7.1166 - 1) / 7.1166) < 1e-12
assert v["first"] == "Warp Balance" and v["right_first"] and abs(v["estimate"] - 1.282) < 0.001, v
# unroll's right fix named Code Reordering here: second, not first
assert u["first"] == "Loop Unrolling" and not u["right_first"] and u["rank"] == 2, u
assert abs(u["first_est"] - 1.060) < 0.001 and abs(u["estimate"] - 1.006) < 0.001, u
h, k = d["halves"]["heldout"], d["halves"]["calibrate"]
assert h["ranked"] == 2 and h["right_first"] == 1 and h["misses"] == ["unroll"], h
assert k["ranked"] == 2 and k["right_first"] == 1 and k["misses"] == ["spill"], k
assert abs(k["mae"] - (c["error"] + s["error"]) / 2) < 1e-12
assert len(d["twosite"]) == 1 and abs(d["twosite"][0] - 1552321 / 4579347) < 1e-9, d["twosite"]
PY
grep -q "^heldout   right fix first 1 of 2 pairs with a measured fix >= 1.3x (50 %)" "$T/out" || fail "heldout line"
grep -q "runs within 5 % of 3:1 (CALL-3/CALL-1): 0 of 1; median 0.339" "$T/out" || fail "twosite line"
grep -q "calls {'0x70': 24, '0xc0': 25, '0x170': 27})" "$T/out" || fail "call sites"
# the stored advice (as the GPU machine wrote it): the same table
for c in coalesce diverge unroll; do cp "$S/advised/$c.advise.json" "$S/"; done
grep -q "^heldout   right fix first 1 of 2" <<<"$(python3 "$EV" "$S" --split "$T/split.txt")" || fail "stored advice"
# bad input
python3 "$EV" "$T/nope" >/dev/null 2>&1; [ $? = 2 ] || fail "missing folder"
echo '{' >"$S/diverge.advise.json"
python3 "$EV" "$S" --split "$T/split.txt" | grep -A1 "^diverge" | grep -q "no bad kernel" || fail "bad json"
echo PASS

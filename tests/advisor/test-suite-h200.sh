#!/usr/bin/env bash
# advisor.suite-h200: the advisor validation suite's H200 run of
# 2026-12-02 04:38 UTC (docs/validation/2026-12-02-advisor-suite.tgz: 26
# pairs' PC samples, gpubins with nvdisasm text, bare timings, five
# pcsamp-known runs) advised again by this tree's gpuprof with
# eval-suite.py; every pair's first suggestion, the right fix's rank and
# estimate, each half's right-fix-first count and mean error, and the
# two-site split checked (docs/ADVISOR.md, "re-advised offline").  A
# changed estimator that moves them updates the numbers here and says why.
#   usage: test-suite-h200.sh GPUPROF SOURCE_DIR
set -u
GPUPROF=$1; SRC=$(cd "$2" && pwd)
TGZ=$SRC/docs/validation/2026-12-02-advisor-suite.tgz
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
[ -f "$TGZ" ] || fail "no $TGZ"
tar -xzf "$TGZ" -C "$T" || fail "unpack $TGZ"
python3 "$SRC/tests/advisor/eval-suite.py" "$T/suite" --gpuprof "$GPUPROF" --twosite \
  --json "$T/e.json" >"$T/out" 2>&1 || fail "eval rc=$?: $(cat "$T/out")"
cat "$T/out"
python3 - "$T/e.json" <<'PY' || fail "numbers"
import json, sys
d = json.load(open(sys.argv[1]))
# pair: (first suggestion, rank of the right fix (0: not suggested), its estimate)
want = {
    'coalesce': ('Global Memory Coalescing', 1, 7.078),
    'mvt': ('Global Memory Coalescing', 1, 2.333),
    'atomic': ('Memory Transaction Reduction', 1, 1.960),
    'vector': ('Code Reordering', 0, 1.000),
    'transpose': ('Memory Transaction Reduction', 1, 1.856),
    'smemaos': ('Memory Transaction Reduction', 1, 3.130),
    'spill': ('Register Reuse', 1, 7.460),
    'localarr': ('Register Reuse', 1, 12.748),
    'blocksize': ('Thread Increase', 1, 1.905),
    'gaussian': ('Thread Increase', 1, 3.384),
    'chase': ('Thread Increase', 1, 1.955),
    'regocc': ('Occupancy Increase', 1, 2.277),
    'smemocc': ('Occupancy Increase', 1, 2.508),
    'blockinc': ('Block Increase', 1, 1.888),
    'blockbal': ('Loop Unrolling', 0, 1.000),
    'diverge': ('Warp Balance', 1, 1.261),
    'tripcount': ('Warp Balance', 1, 1.358),
    'warpbal': ('Warp Balance', 1, 5.603),
    'unroll': ('Loop Unrolling', 1, 1.064),
    'kmeans': ('Loop Unrolling', 1, 1.713),
    'reorder': ('Code Reordering', 1, 1.095),
    'inline': ('Function Inlining', 1, 1.890),
    'fp64promo': ('Strength Reduction', 1, 1.171),
    'fdiv': ('Strength Reduction', 1, 1.084),
    'fastmath': ('Fast Math', 1, 3.329),
    'fastexp': ('Fast Math', 1, 2.777),
}
got = {p["pair"]: p for p in d["pairs"]}
assert sorted(got) == sorted(want), sorted(got)
for pair, (first, rank, est) in want.items():
    p = got[pair]
    assert p["first"] == first, (pair, p["first"])
    assert (p["rank"] or 0) == rank, (pair, p["rank"])
    assert abs(p["estimate"] - est) < 0.0006, (pair, p["estimate"])
h = d["halves"]
assert (h["calibrate"]["right_first"], h["calibrate"]["ranked"]) == (11, 11), h["calibrate"]
assert (h["heldout"]["right_first"], h["heldout"]["ranked"]) == (11, 12), h["heldout"]
assert abs(h["calibrate"]["mae"] - 0.3862) < 0.0001, h["calibrate"]["mae"]
assert abs(h["heldout"]["mae"] - 0.3366) < 0.0001, h["heldout"]["mae"]
assert h["calibrate"]["misses"] == [], h["calibrate"]["misses"]
assert h["heldout"]["misses"] == ["blockbal"], h["heldout"]["misses"]
# CALL-3 / CALL-1 per run: the apportioning by call-instruction samples
assert [round(x, 3) for x in d["twosite"]] == [0.579, 0.383, 0.275, 0.474, 0.290], d["twosite"]
print("PASS")
PY

#!/usr/bin/env bash
# advisor.suite-h200: the advisor validation suite's two H200 runs,
# 2026-12-02 04:38 UTC and 2026-12-03 16:38 UTC
# (docs/validation/2026-12-0{2,3}-advisor-suite.tgz: 26 pairs' PC samples,
# gpubins with nvdisasm text, bare timings, five pcsamp-known runs each)
# advised again by this tree's gpuprof with eval-suite.py; per run every
# pair's first suggestion, the right fix's rank and estimate, each half's
# right-fix-first count and mean error, and the two-site split checked
# (docs/ADVISOR.md, "re-advised offline").  A changed estimator that moves
# them updates the numbers here and says why.
#   usage: test-suite-h200.sh GPUPROF SOURCE_DIR
set -u
GPUPROF=$1; SRC=$(cd "$2" && pwd)
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
for RUN in 2026-12-02 2026-12-03; do
  TGZ=$SRC/docs/validation/$RUN-advisor-suite.tgz
  [ -f "$TGZ" ] || fail "no $TGZ"
  mkdir -p "$T/$RUN" && tar -xzf "$TGZ" -C "$T/$RUN" || fail "unpack $TGZ"
  python3 "$SRC/tests/advisor/eval-suite.py" "$T/$RUN/suite" --gpuprof "$GPUPROF" --twosite \
    --json "$T/$RUN.json" >"$T/$RUN.out" 2>&1 || fail "$RUN: eval rc=$?: $(cat "$T/$RUN.out")"
  echo "== $RUN"; cat "$T/$RUN.out"
  python3 - "$T/$RUN.json" "$RUN" <<'PY' || fail "$RUN: numbers"
import json, sys
d = json.load(open(sys.argv[1]))
# pair: (first suggestion, rank of the right fix (0: not suggested), its estimate)
want = {
    '2026-12-02': {
        'coalesce': ('Global Memory Coalescing', 1, 7.078),
        'mvt': ('Global Memory Coalescing', 1, 2.333),
        'atomic': ('Memory Transaction Reduction', 1, 15.283),
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
    },
    '2026-12-03': {
        'coalesce': ('Global Memory Coalescing', 1, 7.077),
        'mvt': ('Global Memory Coalescing', 1, 2.330),
        'atomic': ('Memory Transaction Reduction', 1, 15.550),
        'vector': ('Code Reordering', 0, 1.000),
        'transpose': ('Memory Transaction Reduction', 1, 1.853),
        'smemaos': ('Memory Transaction Reduction', 1, 3.134),
        'spill': ('Register Reuse', 1, 7.439),
        'localarr': ('Register Reuse', 1, 12.707),
        'blocksize': ('Thread Increase', 1, 1.904),
        'gaussian': ('Thread Increase', 1, 3.383),
        'chase': ('Thread Increase', 1, 1.955),
        'regocc': ('Occupancy Increase', 1, 2.275),
        'smemocc': ('Occupancy Increase', 1, 2.508),
        'blockinc': ('Block Increase', 1, 1.889),
        'blockbal': ('Loop Unrolling', 0, 1.000),
        'diverge': ('Warp Balance', 1, 1.257),
        'tripcount': ('Warp Balance', 1, 1.370),
        'warpbal': ('Warp Balance', 1, 5.583),
        'unroll': ('Loop Unrolling', 1, 1.064),
        'kmeans': ('Loop Unrolling', 1, 1.712),
        'reorder': ('Code Reordering', 1, 1.095),
        'inline': ('Function Inlining', 1, 1.889),
        'fp64promo': ('Strength Reduction', 1, 1.172),
        'fdiv': ('Strength Reduction', 1, 1.084),
        'fastmath': ('Fast Math', 1, 3.325),
        'fastexp': ('Fast Math', 1, 2.780),
    },
}[sys.argv[2]]
# calibrate right first / ranked, heldout right first / ranked, mean errors, misses
halves = {
    '2026-12-02': (11, 11, 11, 12, 0.3350, 0.3366, [], ['blockbal']),
    '2026-12-03': (11, 11, 11, 12, 0.3338, 0.3352, [], ['blockbal']),
}[sys.argv[2]]
# CALL-3 / CALL-1 per run: the apportioning by call-instruction samples
twosite = {
    '2026-12-02': [0.579, 0.383, 0.275, 0.474, 0.29],
    '2026-12-03': [0.238, 0.25, 0.342, 0.364, 0.286],
}[sys.argv[2]]
got = {p["pair"]: p for p in d["pairs"]}
assert sorted(got) == sorted(want), sorted(got)
for pair, (first, rank, est) in want.items():
    p = got[pair]
    assert p["first"] == first, (pair, p["first"])
    assert (p["rank"] or 0) == rank, (pair, p["rank"])
    assert abs(p["estimate"] - est) < 0.0006, (pair, p["estimate"])
h = d["halves"]
cf, cr, hf, hr, cm, hm, cmiss, hmiss = halves
assert (h["calibrate"]["right_first"], h["calibrate"]["ranked"]) == (cf, cr), h["calibrate"]
assert (h["heldout"]["right_first"], h["heldout"]["ranked"]) == (hf, hr), h["heldout"]
assert abs(h["calibrate"]["mae"] - cm) < 0.0001, h["calibrate"]["mae"]
assert abs(h["heldout"]["mae"] - hm) < 0.0001, h["heldout"]["mae"]
assert h["calibrate"]["misses"] == cmiss, h["calibrate"]["misses"]
assert h["heldout"]["misses"] == hmiss, h["heldout"]["misses"]
assert [round(x, 3) for x in d["twosite"]] == twosite, d["twosite"]
print("PASS", sys.argv[2])
PY
done
echo PASS

#!/usr/bin/env bash
# trace-browser-big.sh BUILD [N] - issue 24's viewer check at production
# size: bench-tracewrite's synthetic trace of N GPU operations (default
# 1 000 000, each with its launch, 43-frame call paths) as Chrome JSON,
# loaded into speedscope (viewer/, npm, offline) in headless Chromium by
# tests/trace/trace-browser.mjs (no error panel or alert, the CPU thread's
# and the GPU stream's profiles present, the stream drawn).  Prints the
# file's size, bytes per operation and the load's wall time and peak RSS
# of node + Chromium (GNU time).  Needs viewer/node_modules, Chromium and
# PoCL (the speedscope page comes from `gpuprof view` of a small record).
set -euo pipefail
BUILD=$(cd "${1:?usage: trace-browser-big.sh BUILD [N]}" && pwd)
N=${2:-1000000}
SRC=$(cd "$(dirname "$0")/.." && pwd)
T=$(mktemp -d /tmp/gpd-tbb.XXXXXX)
trap 'rm -rf "$T"' EXIT
"$BUILD/bin/gpuprof" record -o "$T/s.gpdb" -- "$BUILD/tests/apps/ocl-gap" 2 1 0 >/dev/null 2>&1
"$BUILD/bin/gpuprof" view --no-browser -o "$T/v.html" "$T/s.gpdb" >/dev/null
BENCH_KEEP=1 "$BUILD/bin/bench-tracewrite" --events "$N" --before 0 --dir "$T" >"$T/bench.out"
js=$(ls "$T"/bench-tracewrite.*.1)
sz=$(stat -c %s "$js")
echo "chrome json: $N operations, $sz bytes, $(python3 -c "print(f'{$sz/$N:.1f}')") B/operation"
set +e
/usr/bin/time -v node "$SRC/tests/trace/trace-browser.mjs" "$SRC/viewer" "$T/v.html" "$js" \
  "$T/shot.png" "CPU thread" "GPU 0 stream" 2>"$T/time.err"
rc=$?
set -e
grep -vE '^\s' "$T/time.err" | head -20
grep -E 'Elapsed|Maximum resident' "$T/time.err"
echo "trace-browser.mjs rc=$rc"
[ -n "${SHOT:-}" ] && cp "$T/shot.png" "$SHOT"
exit $rc

#!/usr/bin/env bash
# trace-browser-big.sh BUILD [N] - issue 24's viewer check at production
# size: bench-tracewrite's synthetic trace of N GPU operations (default
# 1 000 000, each with its launch, 43-frame call paths) as Chrome JSON,
# imported into speedscope (viewer/, npm, offline) in headless Chromium
# by tests/trace/trace-browser.mjs as a user does (the page `gpuprof view`
# wrote, opened from disk, its Import button's file chooser given the
# file), then checked (no error panel or alert, the CPU thread's and the
# GPU stream's profiles present, the stream drawn).  Prints the file's
# size, bytes per operation, the import's wall time (file chosen to
# profiles listed) and the whole run's wall time and peak RSS (GNU time:
# node's; Chromium's renderer is sampled from /proc every 5 s, its peak
# printed).  Needs viewer/node_modules, Chromium and PoCL (the speedscope
# page comes from `gpuprof view` of a small record).
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
# the largest RSS of a Chromium process under this script (the
# renderer), sampled
top=$$
( peak=0
  while :; do
    for p in $(ps -eo pid=,ppid=,comm= | awk -v top="$top" '
        { par[$1] = $2; comm[$1] = $3 }
        END { for (p in par) { q = p; while (q in par && q != top && q > 1) q = par[q];
                               if (q == top && comm[p] ~ /chrom/) print p } }'); do
      r=$(awk '/^VmRSS/ {print $2}' "/proc/$p/status" 2>/dev/null || echo 0)
      [ "${r:-0}" -gt "$peak" ] && peak=$r && echo "$peak" >"$T/chromium.rss"
    done
    sleep 5
  done ) &
sampler=$!
set +e
TRACE_BROWSER_LOAD_MS=${LOAD_MS:-900000} /usr/bin/time -v node "$SRC/tests/trace/trace-browser.mjs" "$SRC/viewer" "$T/v.html" "$js" \
  "$T/shot.png" "CPU thread" "GPU 0 stream" 2>"$T/time.err"
rc=$?
set -e
kill "$sampler" 2>/dev/null || true
echo "chromium peak RSS (sampled): $(cat "$T/chromium.rss" 2>/dev/null || echo '?') kB"
# (no match is no error: node's stderr is empty on success)
grep -vE '^\s' "$T/time.err" | head -20 || true
grep -E 'Elapsed|Maximum resident' "$T/time.err" || true
echo "trace-browser.mjs rc=$rc"
[ -n "${SHOT:-}" ] && cp "$T/shot.png" "$SHOT"
exit $rc

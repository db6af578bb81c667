#!/usr/bin/env bash
# The Chrome-format trace of a real run (ocl-gap under `gpuprof record`,
# with --launches: launch slices and flows must not upset the importer)
# opened in a real viewer: speedscope (npm, offline) in headless Chromium
# (trace-browser.mjs): no error page, a profile per CPU thread, GPU stream
# and the idle track, and the idle track drawn (its picture is known from
# the trace: cpu_think's 300 ms gap covers most of its range; the pixel
# count is checked against a pale and a nearly empty synthetic chart), and
# the same trace gzip-compressed (-o OUT.json.gz).  SKIP without node,
# viewer/node_modules or Chromium.  SHOT=path keeps the screenshot.
source "$(dirname "$0")/../integration/lib.sh" "$1"
have_opencl
APP=$(app ocl-gap)
SRC=$(cd "$HERE/../.." && pwd)
command -v node >/dev/null || { echo "SKIP: no node"; exit 77; }
[ -d "$SRC/viewer/node_modules/speedscope" ] && [ -d "$SRC/viewer/node_modules/playwright-core" ] ||
  { echo "SKIP: viewer/node_modules not installed (scripts/viewer)"; exit 77; }
"$GPUPROF" record -o "$T/g.gpdb" -- "$APP" 6 4 300 >/dev/null 2>"$T/rec.err" || { cat "$T/rec.err"; die "record failed"; }
"$GPUPROF" trace --format chrome --launches -o "$T/g.json" "$T/g.gpdb" 2>/dev/null || die "trace failed"
"$GPUPROF" view --no-browser -o "$T/v.html" "$T/g.gpdb" >/dev/null || die "view failed"
set +e
node "$HERE/../trace/trace-browser.mjs" "$SRC/viewer" "$T/v.html" "$T/g.json" "${SHOT:-$T/shot.png}" \
  "CPU thread" "GPU 0 stream" "GPU idle (blame)"
rc=$?
set -e
[ $rc = 77 ] && exit 77
[ $rc = 0 ] || die "speedscope did not show the trace"
# the same gzip-compressed (-o OUT.json.gz): speedscope inflates it on import
"$GPUPROF" trace --launches -o "$T/g.json.gz" "$T/g.gpdb" 2>/dev/null || die "trace .json.gz failed"
node "$HERE/../trace/trace-browser.mjs" "$SRC/viewer" "$T/v.html" "$T/g.json.gz" "$T/shot-gz.png" \
  "CPU thread" "GPU 0 stream" "GPU idle (blame)" || die "speedscope did not show the .json.gz trace"
echo "PASS trace.browser"

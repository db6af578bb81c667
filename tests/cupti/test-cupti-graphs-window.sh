#!/usr/bin/env bash
# test-cupti-graphs-window.sh - CUDA graphs built while tracing is
# detached (CUPTI finalized between duty windows), replayed inside a later
# window: the real shim, its CUDA back end and a real gpuprofd (compiled
# default configuration) on fake-cupti.c.  graph-app waits for a detached,
# finalized phase, builds its graph there (HOW: `capture`, stream capture
# through cudaStreamBeginCapture, or `create`, cudaGraphCreate and
# cudaGraphAdd*Node), instantiates it, then replays it 50 times inside one
# window.  Checks: the app saw the phases it needs (exit 0); the shim's
# graph counters (4 nodes created, 4 cloned, 8 records pushed); its
# summary says duty-cycled; the stored profile's report places every
# kernel and memset of the 50 replays below replay() > <graph replay>
# under the function that created its node, 50 of each, nothing else
# (check-graphs.py).
# Args: BUILD_DIR APP FAKE_LIB HOW [policy].  With `policy` no
# GPUPROF_CUDA_TRACE is set: the mode is the daemon's default policy
# (duty, 100 ms windows every 10 s), delivered in the Hello reply;
# otherwise GPUPROF_CUDA_TRACE=duty:100/0.5.
source "$(dirname "$0")/../integration/lib.sh" "$1"
APP=$2
FAKE=$3
HOW=$4
[ -x "$APP" ] || { echo "SKIP: graph-app not built"; exit 77; }
S=$T/gpd.sock
: >"$T/default.conf"
start_daemon "$S" "$T/g.db" --config "$T/default.conf"
export GPUPROF_CUPTI_PATH="$FAKE" GPUPROF_CUPTI_SELFTEST=1
unset GPUPROF_CUDA_TRACE
[ "${5:-}" = policy ] || export GPUPROF_CUDA_TRACE=duty:100/0.5
preload_bg "$S" "$T/app.out" "$APP" 50 "$HOW"
A=$APID
wait_exit "$A" "graph-app" 60
cat "$T/app.out.err"
[ "$RC" -eq 0 ] || die "graph-app exited $RC (3: no detached phase to build in, 4: no window to replay in)"
file_has "$T/app.out.err" "gpuprof-cupti: graph nodes created=4 cloned=4 other-type=0 no-id=0 no-context=0 pushed=8 pushfail=0" ||
  die "the back end's graph counters"
file_has "$T/app.out.err" "gpuprof-cupti: CUDA tracing duty-cycled: " || die "not duty-cycled"
stored() {
  [ -e "$T/g.db" ] && [ "$($GPDQ "$T/g.db" sql "select state from profile where pid=$A")" = '[["exited"]]' ]
}
wait_for "$WAIT" "the stored profile of $A" stored
stop_daemon # the symbols looked up after the exit are written by then
"$GPUPROF" report --json "$T/g.db" >"$T/r.json" || die "report"
$PY "$(dirname "$0")/check-graphs.py" "$T/r.json" 50 || die "placement"
echo "PASS: graph built while detached ($HOW${5:+, $5}), 50 replays in a window under the creating functions"

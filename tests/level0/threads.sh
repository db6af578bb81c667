#!/usr/bin/env bash
# Four threads, each launching on its own immediate list (half the
# launches with the application's event, half with one the shim puts in
# place), under `gpuprof record`: every launch counted once, every host
# synchronization counted, nothing dropped.
source "$(dirname "$0")/../integration/lib.sh" "$1"
source "$(dirname "$0")/common.sh"
LOOP=$(app l0-loop)
export ZE_ENABLE_ALT_DRIVERS=$FAKE
"$GPUPROF" record -o "$T/t.gpdb" -- "$LOOP" 500 2 4 >"$T/out.txt" 2>"$T/rec.err" ||
  { cat "$T/rec.err"; die "record failed"; }
grep -q "^launches 2000 " "$T/out.txt" || die "loop output: $(cat "$T/out.txt")"
gpdq_all "$T/t.gpdb" \
  "processes 1" \
  "kernel-count tiny 2000" \
  "metric-total GKER:COUNT 2000" \
  "metric-total GSYNC:COUNT 1000" \
  "drops 0"
echo "PASS level0.threads"

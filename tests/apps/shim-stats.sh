#!/bin/bash
# shim-stats.sh TEST_CAPTURE - GPUPROF_SHIM_STATS levels (shim/stats.c):
# =1 times every phase (capture and its parts appear with counts), =outer
# only the outermost ones (no capture line: a plain capture is inside no
# timed phase of a back end here, so nothing but the clock line), =0 none.
set -u
bin=$1
export GPUPROF_SOCKET=/nonexistent/gpuprofd.sock
fail() { echo "shim-stats: $*" >&2; exit 1; }
all=$(GPUPROF_SHIM_STATS=1 "$bin" 2>&1) || fail "test-capture failed under GPUPROF_SHIM_STATS=1: $all"
echo "$all" | grep -Eq '^gpuprof-stats: capture \(whole\) +n=[1-9]' || fail "=1: no capture line: $all"
echo "$all" | grep -Eq '^gpuprof-stats: unwind: replayed walk +n=[1-9]' || fail "=1: no replay line: $all"
echo "$all" | grep -q 'outer phases only' && fail "=1 says outer"
outer=$(GPUPROF_SHIM_STATS=outer "$bin" 2>&1) || fail "test-capture failed under =outer: $outer"
echo "$outer" | grep -q '^gpuprof-stats: clock read .* (outer phases only)$' || fail "=outer: no clock line: $outer"
echo "$outer" | grep -Eq '^gpuprof-stats: (capture|unwind|python|push)' && fail "=outer timed an inner phase: $outer"
off=$(GPUPROF_SHIM_STATS=0 "$bin" 2>&1) || fail "test-capture failed under =0"
echo "$off" | grep -q '^gpuprof-stats' && fail "=0 printed counters: $off"
echo "shim-stats: ok"

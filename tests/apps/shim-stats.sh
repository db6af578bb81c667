#!/bin/bash
# shim-stats.sh TEST_CAPTURE - GPUPROF_SHIM_STATS levels (shim/stats.c):
# =1 times every phase (capture and its parts appear with counts), =outer
# only the outermost ones (no capture line: a plain capture is inside no
# timed phase of a back end here, so nothing but the clock line), =floor
# the same with every capture after a thread's first returning the first
# one's node (two call sites, one node), =0 none.  =1 also counts the
# frames per replayed capture.
set -u
bin=$1
export GPUPROF_SOCKET=/nonexistent/gpuprofd.sock
fail() { echo "shim-stats: $*" >&2; exit 1; }
all=$(GPUPROF_SHIM_STATS=1 "$bin" 2>&1) || fail "test-capture failed under GPUPROF_SHIM_STATS=1: $all"
echo "$all" | grep -Eq '^gpuprof-stats: capture \(whole\) +n=[1-9]' || fail "=1: no capture line: $all"
echo "$all" | grep -Eq '^gpuprof-stats: unwind: replayed walk +n=[1-9]' || fail "=1: no replay line: $all"
grep -q 'outer phases only' <<<"$all" && fail "=1 says outer"
echo "$all" | grep -Eq '^gpuprof-stats: frames: native \(replayable walks\) +n=[1-9][0-9]* +total=[0-9]+ frames mean=([4-9]|[1-9][0-9])\.[0-9]+ frames$' ||
  fail "=1: no native frame count of 4 or more per replayed capture: $all"
fl=$(GPUPROF_SHIM_STATS=floor TEST_CAPTURE_FLOOR=1 "$bin" 2>&1) || fail "=floor: two call sites got two nodes: $fl"
grep -q '^gpuprof-stats: clock read .* (outer phases only; floor: call paths NOT captured' <<<"$fl" ||
  fail "=floor: no floor clock line: $fl"
echo "$fl" | grep -Eq '^gpuprof-stats: (capture|unwind|python|push|frames)' && fail "=floor timed an inner phase: $fl"
TEST_CAPTURE_FLOOR=1 "$bin" >/dev/null 2>&1
rc=$?
[ $rc = 3 ] || fail "without =floor the two call sites must get two nodes (exit 3), got exit $rc"
outer=$(GPUPROF_SHIM_STATS=outer "$bin" 2>&1) || fail "test-capture failed under =outer: $outer"
grep -q '^gpuprof-stats: clock read .* (outer phases only)$' <<<"$outer" || fail "=outer: no clock line: $outer"
echo "$outer" | grep -Eq '^gpuprof-stats: (capture|unwind|python|push)' && fail "=outer timed an inner phase: $outer"
off=$(GPUPROF_SHIM_STATS=0 "$bin" 2>&1) || fail "test-capture failed under =0"
grep -q '^gpuprof-stats' <<<"$off" && fail "=0 printed counters: $off"
echo "shim-stats: ok"

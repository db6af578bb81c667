#!/usr/bin/env bash
# The known-structure Level Zero program (tests/level0/l0-known.c) on the
# fake driver through Debian's real loader and its tracing layer, under
# `gpuprof record`: exact launch counts, bytes per copy direction,
# allocations, synchronizations, each under the function that made it;
# kernel time at least the time the fake kernels sleep (their device
# timestamps converted to the host clock); the module's native binary
# stored by hash; the application's output unchanged.
source "$(dirname "$0")/../integration/lib.sh" "$1"
source "$(dirname "$0")/common.sh"
export ZE_ENABLE_ALT_DRIVERS=$FAKE
bare=$("$APP" --native "$T/native.bin") || die "bare run failed"
mkdir -p "$T/prof"
out=$(GPUPROF_LOG=info "$GPUPROF" record -o "$T/prof/k.gpdb" -- "$APP" 2>"$T/rec.err") ||
  { cat "$T/rec.err"; die "record failed"; }
cat "$T/rec.err"
[ "$out" = "$bare" ] || die "program output changed under the shim: '$out' vs '$bare'"
db=$T/prof/k.gpdb
gpdq_all "$db" \
  "processes 1" \
  "kernel-count axpy 15" \
  "kernel-count scale 10" \
  "kernel-count norm 3" \
  "kernel-under axpy step" \
  "kernel-under scale step" \
  "kernel-under norm build_norm" \
  "metric-total GKER:COUNT 28" \
  "metric-total GXCOPY:H2D 3145728" \
  "metric-total GXCOPY:D2D 258048" \
  "metric-total GXCOPY:D2H 131072" \
  "metric-total GXCOPY:COUNT 6" \
  "only-under GXCOPY init" \
  "metric-total GMSET:COUNT 1" \
  "metric-total GMSET:DEV 4096" \
  "metric-total GMEM:COUNT 10" \
  "metric-total GMEM:DEV 6815744" \
  "metric-total GMEM:PIN 131072" \
  "metric-total GSYNC:COUNT 16" \
  "metric-positive GSYNC:EVT" \
  "metric-positive GSYNC:STR" \
  "metric-positive GSYNC:STRE" \
  "drops 0"
# Kernel time (ns): the fake kernels sleep 15 x 2 ms + 10 x 1 ms + 3 x
# 0.5 ms at least.  Device ticks read as ns, or converted with a wrong
# rate, offset or wrap, would give 40x less or a nonsense total.
gker=$($GPDQ "$db" sql "select sum(m.value) from metric m join metric_desc d on d.id=m.metric_id where d.name='GKER'")
echo "GKER total (ns): $gker"
$PY -c 'import json,sys; v=json.loads(sys.argv[1])[0][0]; sys.exit(0 if 41.5e6 <= v < 3600e9 else 1)' "$gker" ||
  die "kernel time $gker ns is not at least the 41.5 ms the fake kernels sleep"
# The module's native binary, byte for byte, stored once by content hash.
n=$(ls "$T/prof/gpubins" 2>/dev/null | grep -c "^[0-9a-f]\{32\}\.gpubin$" || true)
[ "$n" -eq 1 ] || die "expected 1 stored binary, found $n"
cmp "$T"/prof/gpubins/*.gpubin "$T/native.bin" || die "stored binary differs from the module's native binary"
rows=$($GPDQ "$db" sql "select kind from gpubin")
[ "$rows" = '[["zebin"]]' ] || die "gpubin rows: $rows"
"$GPUPROF" report "$db" > "$T/report.txt" || die "report failed"
grep -q "step" "$T/report.txt" && grep -q "axpy" "$T/report.txt" || die "report lacks step/axpy"
echo "PASS level0.known"

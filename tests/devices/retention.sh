#!/usr/bin/env bash
# devices.retention: the stored series are bounded: with [devices]
# max_rows = 20 and two GPUs sampled at 20 Hz, the device_sample table
# holds exactly the newest 20 rows once the daemon stopped (and never
# more than 20 plus one flush's rows while it runs).
source "$(dirname "$0")/../integration/lib.sh" "$1"
FAKE=$BUILD/tests/devices/libfake-nvml.so
[ -e "$FAKE" ] || { echo "SKIP: $FAKE not built"; exit 77; }
C=$T/gpuprofd.conf
printf '[devices]\ninterval_ms = 50\nnvml_library = %s\nsysman_library =\npapi_events =\nmax_rows = 20\n' "$FAKE" > "$C"
start_daemon "$T/d.sock" "$T/d.gpdb" --config "$C"
rounds() {
  "$GPUPROF" --socket "$T/d.sock" devices > "$T/out.txt" || return 1
  n=$(sed -n 's/^gpuprofd device monitoring: on, \([0-9]*\) samples$/\1/p' "$T/out.txt")
  echo "rounds: ${n:-?}"
  [ -n "$n" ] && [ "$n" -ge 160 ]
}
wait_for "$WAIT" "160 sampling rounds (8 s, 320 samples)" rounds
live=$($GPDQ "$T/d.gpdb" sql "select count(*) from device_sample")
echo "rows while running: $live"
[ "$live" != '[[0]]' ] || die "nothing stored"
$PY -c 'import sys, json; n = json.loads(sys.argv[1])[0][0]; sys.exit(0 if n <= 60 else 1)' "$live" ||
  die "device_sample holds $live rows while running (max_rows 20, a flush adds at most ~40)"
stop_daemon
n=$($GPDQ "$T/d.gpdb" sql "select count(*) from device_sample")
[ "$n" = '[[20]]' ] || die "device_sample holds $n rows after stop, want 20"
# the newest were kept: the rows span ~0.5 s and end at the stop, while
# the daemon sampled for 8 s or more (keeping the oldest would end >= 7 s ago)
$PY - "$T/d.gpdb" <<'PY' || die "the rows kept are not the newest"
import sqlite3, sys, time
lo, hi = sqlite3.connect(sys.argv[1]).execute("select min(t_ns), max(t_ns) from device_sample").fetchone()
age = time.clock_gettime_ns(time.CLOCK_MONOTONIC_RAW) - hi
print("kept rows span %.2f s, newest %.2f s old" % ((hi - lo) / 1e9, age / 1e9))
sys.exit(0 if age < 4e9 and hi - lo < 4e9 else 1)
PY
echo "PASS devices.retention"

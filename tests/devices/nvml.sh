#!/usr/bin/env bash
# devices.nvml: gpuprofd monitors two GPUs of a fake libnvidia-ml (fixed
# values, tests/devices/fake-nvml.c) at 10 Hz; `gpuprof devices`, its
# --prometheus output (parsed by prometheus_client) and the stored series
# show them exactly, with the processes on each GPU attributed to the
# profiled process and its job.  A user sees the node-level GPU rows but
# only their own processes' rows (and is told how many are hidden).
source "$(dirname "$0")/../integration/lib.sh" "$1"
FAKE=$BUILD/tests/devices/libfake-nvml.so
CHECK="$PY $HERE/../devices/check.py"
[ -e "$FAKE" ] || { echo "SKIP: $FAKE not built"; exit 77; }
$PY -c 'import prometheus_client.parser' 2>/dev/null ||
  { echo "SKIP: python3-prometheus-client is not installed (scripts/deps)"; exit 77; }
command -v setpriv >/dev/null || { echo "SKIP: no setpriv"; exit 77; }
C=$T/gpuprofd.conf
printf '[devices]\ninterval_ms = 100\nnvml_library = %s\nsysman_library =\npapi_events =\n' "$FAKE" > "$C"
export FAKE_NVML_PROCS=$T/procs
: > "$FAKE_NVML_PROCS"
chmod 0755 "$T"
start_daemon "$T/d.sock" "$T/d.gpdb" --config "$C"
chmod 0777 "$T/d.sock"
# A: profiled, root, job job-nvml; B: uid 65534, not profiled
preload_bg "$T/d.sock" "$T/a.out" env GPUPROF_JOB_ID=job-nvml sleep 100; A=$APID
run_bg "$T/b.out" setpriv --reuid=65534 --regid=65534 --clear-groups sleep 100; B=$BGPID
printf '0 %d 1073741824 25 5\n0 %d 536870912 10 2\n1 %d 268435456 30 7\n' "$A" "$B" "$A" > "$T/procs.tmp"
mv "$T/procs.tmp" "$FAKE_NVML_PROCS"
nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
prom_ok() { "$GPUPROF" --socket "$T/d.sock" devices --prometheus > "$T/p.txt" && $CHECK prom "$T/p.txt" root "$A" "$B"; }
wait_for "$WAIT" "root's --prometheus view with A attributed" prom_ok
"$GPUPROF" --socket "$T/d.sock" devices > "$T/root.txt" || die "gpuprof devices failed"
cat "$T/root.txt"
$CHECK text "$T/root.txt" root "$A" "$B" || die "root's text view"
nobody "$GPUPROF" --socket "$T/d.sock" devices --prometheus > "$T/np.txt" || die "devices as nobody"
$CHECK prom "$T/np.txt" nobody "$A" "$B" || { cat "$T/np.txt"; die "nobody's --prometheus view"; }
nobody "$GPUPROF" --socket "$T/d.sock" devices > "$T/nobody.txt" || die "devices as nobody"
$CHECK text "$T/nobody.txt" nobody "$A" "$B" || { cat "$T/nobody.txt"; die "nobody's text view"; }
# gpuprof top's header names both GPUs
"$GPUPROF" --socket "$T/d.sock" top > "$T/top.txt" || die "top failed"
head -3 "$T/top.txt"
grep -q "^GPU 0 Fake GPU A (nvml): util 37%, memory 2.00 GiB / 80.00 GiB, 123 W, 45 C, 2 processes$" "$T/top.txt" ||
  die "top header for GPU 0"
grep -qF 'GPU 1 Fake GPU B "sxm\5" (nvml): util 80%' "$T/top.txt" || die "top header for GPU 1"
store_ok() { $CHECK store "$T/d.gpdb" "$A"; }
wait_for "$WAIT" "series stored" store_ok
stop_daemon
store_ok || die "series after stop"
echo "PASS devices.nvml"

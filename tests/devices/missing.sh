#!/usr/bin/env bash
# devices.missing: without NVML (a library that is not there), with Sysman
# and PAPI switched off, the daemon runs and `gpuprof devices` says what is
# missing and why (text, --prometheus, top's header); with interval_ms = 0
# it says monitoring is off.
source "$(dirname "$0")/../integration/lib.sh" "$1"
C=$T/gpuprofd.conf
printf '[devices]\ninterval_ms = 50\nnvml_library = %s\nsysman_library =\npapi_events =\n' "$T/no-libnvidia-ml.so.1" > "$C"
start_daemon "$T/d.sock" "$T/d.gpdb" --config "$C"
says_why() {
  "$GPUPROF" --socket "$T/d.sock" devices > "$T/out.txt" || return 1
  grep -q "nvml    off  cannot load $T/no-libnvidia-ml.so.1: $T/no-libnvidia-ml.so.1: cannot open shared object file" "$T/out.txt"
}
wait_for "$WAIT" "devices names the missing NVML" says_why
cat "$T/out.txt"
grep -q '^  sysman  off  ' "$T/out.txt" || die "sysman line"
grep -q '^  papi    off  disabled (\[devices\] papi_events = "")$' "$T/out.txt" || die "papi line"
grep -q "^no GPU is monitored: nvml: cannot load $T/no-libnvidia-ml.so.1" "$T/out.txt" || die "no-GPU line"
"$GPUPROF" --socket "$T/d.sock" devices --prometheus > "$T/p.txt" || die "--prometheus"
grep -q '^gpuprof_devices_backend_up{api="nvml",reason="cannot load .*"} 0$' "$T/p.txt" || die "backend_up nvml 0"
if $PY -c 'import prometheus_client.parser' 2>/dev/null; then
  $PY -c 'import sys; from prometheus_client.parser import text_string_to_metric_families as p; list(p(open(sys.argv[1]).read()))' "$T/p.txt" ||
    die "--prometheus output does not parse"
fi
"$GPUPROF" --socket "$T/d.sock" top > "$T/top.txt" || die "top"
grep -q "^GPUs: none monitored (nvml: cannot load" "$T/top.txt" || die "top header"
stop_daemon
printf '[devices]\ninterval_ms = 0\n' > "$C"
start_daemon "$T/d.sock" "$T/d.gpdb" --config "$C"
"$GPUPROF" --socket "$T/d.sock" devices > "$T/off.txt" || die "devices (off)"
cat "$T/off.txt"
grep -q '^gpuprofd device monitoring: off, 0 samples$' "$T/off.txt" || die "off line"
grep -q '^  nvml    off  disabled (\[devices\] interval_ms = 0)$' "$T/off.txt" || die "off reason"
stop_daemon
echo "PASS devices.missing"

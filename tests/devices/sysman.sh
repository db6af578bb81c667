#!/usr/bin/env bash
# devices.sysman: gpuprofd monitors the GPU of a fake Level Zero driver
# (tests/devices/fake-sysman.c) through Debian's real loader and Sysman at
# 10 Hz: exact utilization (37 %), memory (4 of 16 GiB), power (250 W),
# temperature, clocks, PCIe rates in `gpuprof devices`, --prometheus and
# the store, with the process on the GPU attributed to its job.
source "$(dirname "$0")/../integration/lib.sh" "$1"
FAKE=$BUILD/tests/devices/libfake-sysman.so
[ -e "$FAKE" ] || { echo "SKIP: $FAKE not built (no Level Zero headers)"; exit 77; }
ldconfig -p | grep 'libze_loader\.so\.1 ' >/dev/null || { echo "SKIP: no Level Zero loader"; exit 77; }
C=$T/gpuprofd.conf
printf '[devices]\ninterval_ms = 100\nnvml_library =\npapi_events =\n' > "$C"
export ZE_ENABLE_ALT_DRIVERS=$FAKE FAKE_SYSMAN_PROCS=$T/procs
: > "$FAKE_SYSMAN_PROCS"
start_daemon "$T/d.sock" "$T/d.gpdb" --config "$C"
preload_bg "$T/d.sock" "$T/a.out" env -u ZE_ENABLE_ALT_DRIVERS GPUPROF_JOB_ID=job-sysman sleep 100; A=$APID
printf '%d 3221225472\n' "$A" > "$T/procs.tmp"
mv "$T/procs.tmp" "$FAKE_SYSMAN_PROCS"
P='api="sysman",gpu="0",uuid="000102030405060708090a0b0c0d0e0f",name="Fake Xe GPU"'
prom_ok() {
  "$GPUPROF" --socket "$T/d.sock" devices --prometheus > "$T/p.txt" || return 1
  grep -q "^gpuprof_gpu_process_memory_used_bytes{$P,pid=\"$A\",uid=\"0\",job=\"job-sysman(claimed)\",exe=\"sleep\"} 3221225472$" "$T/p.txt" &&
    grep -q "^gpuprof_gpu_utilization_percent{" "$T/p.txt" # rates need a second sample
}
wait_for "$WAIT" "the process on the Sysman GPU attributed to job-sysman, rates sampled" prom_ok
for want in "gpuprof_gpu_utilization_percent{$P} 37" "gpuprof_gpu_memory_used_bytes{$P} 4294967296" \
    "gpuprof_gpu_memory_total_bytes{$P} 17179869184" "gpuprof_gpu_power_watts{$P} 250" \
    "gpuprof_gpu_temperature_celsius{$P} 55.5" "gpuprof_gpu_sm_clock_hertz{$P} 1550000000" \
    "gpuprof_gpu_memory_clock_hertz{$P} 1200000000" "gpuprof_gpu_pcie_tx_bytes_per_second{$P} 4096000" \
    "gpuprof_gpu_pcie_rx_bytes_per_second{$P} 8192000" \
    'gpuprof_devices_backend_up{api="sysman",reason="1 device (libze_loader.so.1)"} 1' \
    "gpuprof_gpu_job_memory_used_bytes{$P,job=\"job-sysman(claimed)\"} 3221225472"; do
  grep -qxF "$want" "$T/p.txt" || { cat "$T/p.txt"; die "--prometheus lacks: $want"; }
done
if $PY -c 'import prometheus_client.parser' 2>/dev/null; then
  $PY -c 'import sys; from prometheus_client.parser import text_string_to_metric_families as p; list(p(open(sys.argv[1]).read()))' "$T/p.txt" ||
    die "--prometheus output does not parse"
fi
"$GPUPROF" --socket "$T/d.sock" devices > "$T/out.txt" || die "gpuprof devices"
cat "$T/out.txt"
grep -E "^0 +sysman +Fake Xe GPU +37% +- +4.00 GiB / 16.00 GiB +250.0 W +56 C +1550 +1200 " "$T/out.txt" >/dev/null ||
  die "the GPU row"
grep -E "^0 +sysman +$A +0 job-sysman\(claimed\) .* sleep +3.00 GiB" "$T/out.txt" >/dev/null || die "the process row"
stored() {
  $GPDQ "$T/d.gpdb" sql "select s.util_gpu, s.mem_used, s.mem_total, s.power_w, s.temp_c, s.clock_sm_mhz, s.pcie_tx_bps, d.name from device_sample s join device d on d.id=s.device where d.api='sysman' and s.util_gpu is not null order by s.t_ns desc limit 1" > "$T/row.txt" &&
    grep -qxF '[[37.0, 4294967296, 17179869184, 250.0, 55.5, 1550, 4096000, "Fake Xe GPU"]]' "$T/row.txt"
}
wait_for "$WAIT" "the sample stored" stored
stop_daemon
echo "PASS devices.sysman"

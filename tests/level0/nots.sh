#!/usr/bin/env bash
# A Level Zero driver without zeDeviceGetGlobalTimestamps and
# zeEventQueryKernelTimestamp: the application runs to the same result,
# and `gpuprof ps` says Level Zero is off because the device cannot be timed.
source "$(dirname "$0")/../integration/lib.sh" "$1"
source "$(dirname "$0")/common.sh"
run_disabled "$FAKE_NOTS" "zeDeviceGetGlobalTimestamps failed"
echo "PASS level0.nots"

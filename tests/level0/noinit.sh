#!/usr/bin/env bash
# A Level Zero driver whose zeInit fails: the application sees the same
# failure and output as without the shim, and `gpuprof ps` says why Level
# Zero is off for it.
source "$(dirname "$0")/../integration/lib.sh" "$1"
source "$(dirname "$0")/common.sh"
run_disabled "$FAKE_NOINIT" "zeInit failed"
echo "PASS level0.noinit"

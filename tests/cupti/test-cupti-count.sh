#!/bin/sh
# test-cupti-count.sh SHIM APP APP2 - run count-app check and count-app2
# check (tests/cupti/count-app.c: one stand-in libcudart, and two) with
# libgpuprof.so preloaded after whatever LD_PRELOAD already holds (the
# ASan runtime in scripts/test's preloaded pass); no daemon listens.
shim=$1
shift
for app in "$@"; do
  env LD_PRELOAD="${LD_PRELOAD:+$LD_PRELOAD:}$shim" GPUPROF_SOCKET="$(dirname "$app")/no-daemon" "$app" check ||
    exit 1
done

#!/bin/sh
# test-cupti-count.sh SHIM APP APP2 APP3 - run count-app, count-app2 and count-app3
# check (tests/cupti/count-app.c: one stand-in libcudart, two, and a second loaded late) with
# libgpuprof.so preloaded after whatever LD_PRELOAD already holds (the
# ASan runtime in scripts/test's preloaded pass); no daemon listens.
shim=$1
shift
for app in "$@"; do
  env LD_PRELOAD="${LD_PRELOAD:+$LD_PRELOAD:}$shim" GPUPROF_SOCKET="$(dirname "$app")/no-daemon" "$app" check ||
    exit 1
done

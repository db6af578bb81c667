#!/bin/sh
# test-cupti-count.sh SHIM APP - run count-app check (tests/cupti/count-app.c)
# with libgpuprof.so preloaded after whatever LD_PRELOAD already holds (the
# ASan runtime in scripts/test's preloaded pass); no daemon listens.
shim=$1 app=$2
exec env LD_PRELOAD="${LD_PRELOAD:+$LD_PRELOAD:}$shim" GPUPROF_SOCKET="$(dirname "$app")/no-daemon" "$app" check

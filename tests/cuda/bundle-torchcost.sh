#!/bin/sh
# bundle-torchcost.sh BUILD OUT - copy a Release build made like
# scripts/bundle-gpu's (RPATH $ORIGIN/../lib) into OUT (bin/, lib/,
# env.sh) with its non-system libraries, plus the scripts of
# tests/cuda/gpu-torchcost.sh.  OUT is meant to be /work/main/.device/NAME
# (git-ignored), carried to the GPU machine by the device tool.
# OLD_SHIM=FILE: another libgpuprof.so (built the same way): OUT/old/lib
# is a copy of OUT/lib with it in place of the new one (RPATH $ORIGIN/../lib
# then finds the old shim from old/lib), for the before/after configurations
# (old, outer_old, stats_old, BENCH).
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$1 out=$2
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib"
for f in bin/gpuprofd bin/gpuprof bin/launch-bound; do cp "$build/$f" "$out/bin/"; done
for f in lib/libgpuprof.so lib/libgpd-min-tracer.so; do cp "$build/$f" "$out/lib/"; done
# the cudart launch counters' bench (tests/cupti/count-app.c, its stand-in libcudart)
if [ -e "$build/tests/fake-cudart/count-app" ]; then
  mkdir -p "$out/fake-cudart" && cp -P "$build"/tests/fake-cudart/count-app "$build"/tests/fake-cudart/libcudart.so* "$out/fake-cudart/"
fi
for f in "$build"/bin/bench-* "$build"/lib/libbench-*.so; do [ -e "$f" ] && cp "$f" "$out/$(basename "$(dirname "$f")")/"; done
system='^(linux-vdso|ld-linux|libc\.so|libm\.so|libpthread|libdl\.so|librt\.so|libresolv|libutil|libstdc\+\+|libgcc_s|libcuda\.so|libcudart|libcupti|libnvidia)'
for f in "$out"/bin/* "$out"/lib/*.so; do
  ldd "$f" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}'
done | sort -u | while read -r name path; do
  echo "$name" | grep -Eq "$system" && continue
  [ -e "$out/lib/$name" ] || cp -L "$path" "$out/lib/$name"
done
if [ -n "${OLD_SHIM:-}" ]; then
  mkdir -p "$out/old"
  cp -a "$out/lib" "$out/old/lib"
  cp "$OLD_SHIM" "$out/old/lib/libgpuprof.so"
fi
cp "$root"/bench/bench-torchloop.py "$root"/bench/cuda/policy.sh "$root"/bench/cuda/step-phase.py "$root"/tests/cuda/gpu-subsets.sh "$out/"
cp "$root"/tests/cuda/gpu-torchcost.sh "$root"/tests/cuda/torch-turns.py "$root"/tests/cuda/torch_train.py "$root"/tests/cuda/gpt2_train.py "$root"/tests/cuda/torch_kineto.py \
  "$root"/tests/cuda/check-duty.py "$root"/tests/devices/gpu-wait.sh "$out/"
cat >"$out/env.sh" <<'ENV'
B=$(cd "$(dirname "${BASH_SOURCE:-$0}")" && pwd)
export PATH=$B/bin:$PATH
export GPUPROF_SHIM=$B/lib/libgpuprof.so GPUPROF_DAEMON=$B/bin/gpuprofd
ENV
du -sh "$out"

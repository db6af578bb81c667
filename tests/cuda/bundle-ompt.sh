#!/usr/bin/env bash
# bundle-ompt.sh - add OpenMP offload to bundle/ (made by scripts/bundle-gpu)
# for tests/cuda/gpu-ompt.sh on the GPU machine (docs/OMPT.md):
#   bundle/ompt/bin/omp-known-sm90   tests/ompt/omp-known.c for NVPTX sm_90
#                                    (Debian's clang 19, /usr/local/cuda's ptxas)
#   bundle/ompt/bin/omp-known-host   the same for the host offload plugin
#   bundle/ompt/lib/omp-tool.so      the chained test tool
#   bundle/ompt/lib/                 LLVM 19's libomp and libomptarget (its
#                                    CUDA plugin is built in)
#   build-ompt-llvm/llvm-libs.tar.xz  what libomptarget loads that is not
#                                    glibc/libstdc++/libgcc: libLLVM and its
#                                    dependencies, 41 MiB compressed, too much
#                                    to carry with bundle/ in one run call
#                                    (64 MiB): it is carried alone first and
#                                    unpacked there (docs/OMPT.md, "GPU")
# Usage (here, repo root): scripts/bundle-gpu && tests/cuda/bundle-ompt.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
LLVM=${LLVM:-/usr/lib/llvm-19}
CUDA=${CUDA:-/usr/local/cuda}
out=$root/bundle/ompt
[ -d "$root/bundle" ] || { echo "bundle-ompt: run scripts/bundle-gpu first" >&2; exit 1; }
rm -rf "$out"; mkdir -p "$out/bin" "$out/lib"
src=$root/tests/ompt/omp-known.c
flags=(-fopenmp -O1 -g -fno-omit-frame-pointer -fno-inline)
"$LLVM/bin/clang" "${flags[@]}" -fopenmp-targets=nvptx64-nvidia-cuda \
  -Xopenmp-target=nvptx64-nvidia-cuda -march=sm_90 --cuda-path="$CUDA" \
  --libomptarget-nvptx-bc-path="$LLVM/lib" "$src" -o "$out/bin/omp-known-sm90"
# the same with the device code kept as LLVM IR, compiled by libomptarget's
# JIT at run time (CUDA 13's ptxas makes cubins that LLVM 19's loader
# refuses: docs/OMPT.md "GPU")
"$LLVM/bin/clang" "${flags[@]}" -fopenmp-targets=nvptx64-nvidia-cuda \
  -Xopenmp-target=nvptx64-nvidia-cuda -march=sm_90 -fopenmp-target-jit --cuda-path="$CUDA" \
  "$src" -o "$out/bin/omp-known-jit"
# the sm_90 image's ELF header, for the diagnosis on the GPU machine
tmp=$(mktemp -d)
(cd "$tmp" && "$LLVM/bin/clang" "${flags[@]}" -fopenmp-targets=nvptx64-nvidia-cuda \
  -Xopenmp-target=nvptx64-nvidia-cuda -march=sm_90 --cuda-path="$CUDA" \
  --libomptarget-nvptx-bc-path="$LLVM/lib" --save-temps "$src" -o k &&
  readelf -h k.nvptx64.sm_90.img >"$out/sm90-elf-header.txt" 2>&1 &&
  python3 "$root/tests/cuda/ompt-cubin-abi7.py" k.nvptx64.sm_90.img k "$out/bin/omp-known-sm90abi7")
rm -rf "$tmp"
"$LLVM/bin/clang" "${flags[@]}" -fopenmp-targets=x86_64-pc-linux-gnu "$src" -o "$out/bin/omp-known-host"
"$LLVM/bin/clang" -shared -fPIC -O1 "$root/tests/ompt/omp-tool.c" -o "$out/lib/omp-tool.so"
cp -L "$LLVM/lib/libomp.so.5" "$out/lib/libomp.so.5" # gpu-ompt.sh links libomp.so to it there
cp -L "$LLVM/lib/libomptarget.so.19.1" "$out/lib/"
system='^(linux-vdso|ld-linux|libc\.so|libm\.so|libpthread|libdl\.so|librt\.so|libstdc\+\+|libgcc_s|libcuda\.so|libomp\.so)'
llvm=$root/build-ompt-llvm
# the archive is made once (xz of ~150 MiB); REPACK=1 makes it again
if [ -n "${REPACK:-}" ] || [ ! -e "$llvm/llvm-libs.tar.xz" ]; then
  rm -rf "$llvm"; mkdir -p "$llvm/lib"
  ldd "$out/lib/libomptarget.so.19.1" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | while read -r name path; do
    echo "$name" | grep -Eq "$system" && continue
    cp -L "$path" "$llvm/lib/$name"
  done
  tar -C "$llvm" -cf - lib | xz -6 -T2 >"$llvm/llvm-libs.tar.xz" # python3 unpacks it there
  rm -rf "$llvm/lib"
fi
cp "$root/tests/ompt/check.py" "$root/tests/integration/gpdq.py" "$out/"
cp "$root/tests/cuda/gpu-ompt.sh" "$out/"
# the constructs' lines (the kernels' names end in them)
echo "L1=$(grep -n 'pragma omp target map(to : a)' "$src" | cut -d: -f1)" >"$out/lines.sh"
echo "L2=$(grep -n 'pragma omp target map(tofrom : c)' "$src" | cut -d: -f1)" >>"$out/lines.sh"
du -sh "$out" "$llvm"

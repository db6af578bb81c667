#!/usr/bin/env bash
# soak-bundle.sh [BUILD_DIR] [OUT_DIR]: a self-contained folder that runs
# bench/bench-soak.sh on another machine (issue 23's soak, docs/PERFORMANCE.md
# "The issue's soak on a bigger machine").
#
# Configures BUILD_DIR (default build-rel/) as a Release build whose programs
# carry RPATH $ORIGIN/../lib (DT_RPATH, so it also serves the libraries' own
# dependencies), builds only what the soak runs and assembles OUT_DIR
# (default .device/soak/, ignored by git):
#   OUT/bin/      gpuprofd gpuprof test-daemon-client store-bigdebug
#   OUT/lib/      every non-system shared library they load (ldd: all but
#                 glibc's own libraries), copied by their soname
#   OUT/offsets   store-bigdebug's call sites (f_* symbols + 4, hex), so the
#                 machine needs no nm
#   OUT/bench-soak.sh
# Run there: bash OUT/bench-soak.sh OUT [PROCS] [OPS] [SECS] (it needs bash,
# python3 with its sqlite3 module, setpriv when run as root, coreutils, awk).
# Checks before it ends: the bundle's size (< 40 MiB), that every program
# resolves all its libraries from OUT/lib alone, and prints the bundle.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-rel}
out=${2:-$root/.device/soak}
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release \
  '-DCMAKE_BUILD_RPATH=$ORIGIN/../lib' \
  -DCMAKE_EXE_LINKER_FLAGS=-Wl,--disable-new-dtags \
  -DCMAKE_SHARED_LINKER_FLAGS=-Wl,--disable-new-dtags >"$build.configure.log" 2>&1 ||
  { cat "$build.configure.log"; exit 1; }
cmake --build "$build" -j"${JOBS:-2}" --target gpuprofd gpuprof_cli test-daemon-client store-bigdebug
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib"
cp "$build/bin/gpuprofd" "$build/bin/gpuprof" "$out/bin/"
for t in test-daemon-client store-bigdebug; do
  f=$(find "$build" -type f -perm -u+x -name "$t" -print -quit)
  [ -n "$f" ] || { echo "soak-bundle: $t not built under $build" >&2; exit 1; }
  cp "$f" "$out/bin/"
done
cp "$root/bench/bench-soak.sh" "$out/"
nm "$out/bin/store-bigdebug" | while read -r addr type name; do
  if [ "$type" = T ] && [ "${name#f_}" != "$name" ]; then printf '%x\n' $((16#$addr + 4)); fi
done >"$out/offsets"
[ -s "$out/offsets" ] || { echo "soak-bundle: no f_* symbols in store-bigdebug" >&2; exit 1; }
# Non-system dependencies, transitively (ldd resolves the whole tree).
system='^(linux-vdso|ld-linux|libc\.so|libm\.so|libpthread|libdl\.so|librt\.so|libresolv|libutil)'
for f in "$out"/bin/*; do
  ldd "$f" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}'
done | sort -u | while read -r name path; do
  echo "$name" | grep -Eq "$system" && continue
  [ -e "$out/lib/$name" ] || cp -L "$path" "$out/lib/$name"
done
chmod -R a+rX "$out"
# Every program's libraries from OUT/lib or glibc: none from elsewhere.
bad=0
for f in "$out"/bin/*; do
  readelf -d "$f" | grep -q 'RPATH.*\$ORIGIN/../lib' || { echo "soak-bundle: $f has no RPATH \$ORIGIN/../lib" >&2; bad=1; }
  ldd "$f" | awk '$2 == "=>" {print $1, $3}' | while read -r name path; do
    echo "$name" | grep -Eq "$system" && continue
    [ "$(readlink -f "$path")" = "$(readlink -f "$out/lib/$name")" ] ||
      { echo "soak-bundle: $f loads $name from $path, not from the bundle" >&2; exit 1; }
  done || bad=1
done
kib=$(du -sk "$out" | cut -f1)
[ "$kib" -lt $((40 * 1024)) ] || { echo "soak-bundle: $out is $kib KiB (limit 40 MiB)" >&2; bad=1; }
echo "soak-bundle: $out, $kib KiB"
ls -l "$out/bin" "$out/lib"
exit "$bad"

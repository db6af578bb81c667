#!/bin/sh
# install_layout.sh - `cmake --install <build> --prefix /usr` into a DESTDIR
# gives the documented layout (docs/SERVICE.md "Install layout"), nothing
# else outside usr/ and etc/, no test helpers, no build-tree RUNPATH, and
# the installed units pass systemd-analyze verify.
. "$(dirname "$0")/lib.sh"
need_cmd cmake
D=$T/dest
DESTDIR=$D cmake --install "$GPD_BUILD_DIR" --prefix /usr >"$T/install.out" 2>&1 ||
  fail "cmake --install: $(cat "$T/install.out")"
echo "installed files:"
( cd "$D" && find . \( -type f -o -type l \) | sort ) | tee "$T/files"

for f in usr/lib/systemd/system/gpuprofd.service usr/lib/systemd/system/gpuprofd.socket \
         usr/lib/tmpfiles.d/gpuprofd.conf etc/gpuprofd/gpuprofd.conf \
         usr/share/gpuprofd/slurm/gpuprof-taskprolog.sh usr/share/gpuprofd/slurm/gpuprof-prolog.sh \
         usr/share/gpuprofd/slurm/README.md usr/share/gpuprofd/attach.sh \
         usr/share/doc/gpuprofd/SERVICE.md usr/share/doc/gpuprofd/FORMATS.md; do
  [ -f "$D/$f" ] || fail "missing /$f"
done
for f in usr/share/gpuprofd/attach.sh usr/share/gpuprofd/slurm/gpuprof-taskprolog.sh \
         usr/share/gpuprofd/slurm/gpuprof-prolog.sh; do
  [ -x "$D/$f" ] || fail "/$f not executable"
done
cmp -s "$D/etc/gpuprofd/gpuprofd.conf" "$GPD_SRC_DIR/systemd/gpuprofd.conf" ||
  fail "/etc/gpuprofd/gpuprofd.conf differs from systemd/gpuprofd.conf"
# Nothing outside usr/ and etc/; no test helpers.
( cd "$D" && ls -A ) | grep -Evx 'usr|etc' && fail "files outside /usr and /etc"
grep -E '/(notify-helper|test-[a-z-]+)$' "$T/files" && fail "test helpers installed"
ok "service files, conf, scripts, docs"

missing=""
for p in "$GPUPROFD:usr/sbin/gpuprofd" "$GPUPROF:usr/bin/gpuprof" \
         "$SHIM:usr/lib/gpuprofd/libgpuprof.so"; do
  built=${p%%:*}; inst=${p#*:}
  if [ -e "$built" ]; then
    [ -f "$D/$inst" ] || fail "built $(basename "$built") but /$inst is not installed"
    if command -v readelf >/dev/null 2>&1 &&
       readelf -d "$D/$inst" | grep -E 'R(UN)?PATH' | grep -qF "$GPD_BUILD_DIR"; then
      fail "/$inst keeps a RUNPATH into the build tree"
    fi
  else
    missing="$missing $(basename "$built")"
  fi
done

# The installed units verify, with ExecStart pointed into the DESTDIR.
if command -v systemd-analyze >/dev/null 2>&1 && [ -x "$D/usr/sbin/gpuprofd" ]; then
  mkdir -p "$T/u"
  sed "s|/usr/sbin/gpuprofd|$D/usr/sbin/gpuprofd|" "$D/usr/lib/systemd/system/gpuprofd.service" \
    >"$T/u/gpuprofd.service"
  cp "$D/usr/lib/systemd/system/gpuprofd.socket" "$T/u/"
  ( cd "$T/u" && systemd-analyze verify ./gpuprofd.socket ./gpuprofd.service ) >"$T/v.out" 2>&1 ||
    fail "verify installed units: $(cat "$T/v.out")"
  [ ! -s "$T/v.out" ] || fail "verify warnings: $(cat "$T/v.out")"
  ok "installed units verify"
fi
[ -z "$missing" ] || skip "layout ok, but not built yet:$missing"
ok "binaries installed"
exit 0

#!/bin/sh
# units_verify.sh - systemd-analyze verify on gpuprofd.service/.socket (no
# warnings allowed), the tmpfiles entry applied to a scratch root, and the
# settings the docs promise.  verify insists that ExecStart= exists, so a
# copy of the units points at the built daemon (or a stub if the daemon is
# not built yet: the units, not the binary, are under test here).
. "$(dirname "$0")/lib.sh"
need_cmd systemd-analyze
U=$GPD_SRC_DIR/systemd
mkdir -p "$T/units"
if [ -x "$GPUPROFD" ]; then
  exe=$GPUPROFD
else
  exe=$T/gpuprofd; printf '#!/bin/sh\nexit 0\n' >"$exe"; chmod +x "$exe"
fi
sed "s|/usr/sbin/gpuprofd|$exe|" "$U/gpuprofd.service" >"$T/units/gpuprofd.service"
cp "$U/gpuprofd.socket" "$T/units/"
grep -q "^ExecStart=$exe --foreground --config /etc/gpuprofd/gpuprofd.conf\$" \
  "$T/units/gpuprofd.service" || fail "ExecStart rewrite did not apply"

( cd "$T/units" && systemd-analyze verify ./gpuprofd.socket ./gpuprofd.service ) \
  >"$T/verify.out" 2>&1
rc=$?
cat "$T/verify.out"
[ $rc = 0 ] || fail "systemd-analyze verify exit $rc"
[ ! -s "$T/verify.out" ] || fail "systemd-analyze verify printed warnings"
ok "systemd-analyze verify: clean"

# The settings docs/SERVICE.md relies on (a silent edit would break them).
for kv in Type=notify 'ExecReload=/bin/kill -HUP $MAINPID' KillSignal=SIGTERM \
          StateDirectory=gpuprofd RuntimeDirectory=gpuprofd RuntimeDirectoryPreserve=yes \
          ProtectSystem=strict ProtectHome=read-only PrivateTmp=yes NoNewPrivileges=yes \
          RestrictAddressFamilies=AF_UNIX MemoryDenyWriteExecute=yes \
          CapabilityBoundingSet=CAP_DAC_READ_SEARCH Wants=gpuprofd.socket; do
  grep -qxF "$kv" "$U/gpuprofd.service" || fail "gpuprofd.service lacks '$kv'"
done
grep -q '^TimeoutStopSec=' "$U/gpuprofd.service" || fail "no TimeoutStopSec="
for kv in ListenStream=/run/gpuprofd/gpuprofd.sock SocketMode=0666 DirectoryMode=0755 \
          WantedBy=sockets.target; do
  grep -qxF "$kv" "$U/gpuprofd.socket" || fail "gpuprofd.socket lacks '$kv'"
done
ok "unit settings"

# tmpfiles: apply to a scratch root and look at the result.
if command -v systemd-tmpfiles >/dev/null 2>&1; then
  mkdir -p "$T/root"
  systemd-tmpfiles --root="$T/root" --create "$U/gpuprofd.tmpfiles" >"$T/tmpf.out" 2>&1 ||
    fail "systemd-tmpfiles: $(cat "$T/tmpf.out")"
  [ "$(stat -c %a "$T/root/run/gpuprofd")" = 755 ] || fail "/run/gpuprofd not 0755"
  [ "$(stat -c %a "$T/root/var/lib/gpuprofd")" = 750 ] || fail "/var/lib/gpuprofd not 0750"
  ok "tmpfiles"
fi
exit 0

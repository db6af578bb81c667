#!/bin/sh
# taskprolog.sh - systemd/slurm/gpuprof-taskprolog.sh prints the export
# lines Slurm expects (keeping an existing LD_PRELOAD, never twice, nothing
# when opted out or when the shim is missing, always exit 0), and
# systemd/attach.sh sets the same environment when sourced or run.
. "$(dirname "$0")/lib.sh"
TP=$GPD_SRC_DIR/systemd/slurm/gpuprof-taskprolog.sh
AT=$GPD_SRC_DIR/systemd/attach.sh
SH=$T/lib/libgpuprof.so
mkdir -p "$T/lib"; : >"$SH"

check() { # name expected actual
  [ "$2" = "$3" ] || fail "$1: got [$3] want [$2]"
}
out=$(env -u LD_PRELOAD -u GPUPROF_SOCKET GPUPROF_SHIM="$SH" sh "$TP"); rc=$?
check "unset" "export LD_PRELOAD=$SH" "$out"; check "rc" 0 $rc
out=$(env -u GPUPROF_SOCKET GPUPROF_SHIM="$SH" LD_PRELOAD=/opt/x.so sh "$TP")
check "existing" "export LD_PRELOAD=$SH:/opt/x.so" "$out"
out=$(env -u GPUPROF_SOCKET GPUPROF_SHIM="$SH" LD_PRELOAD="/a.so /b.so" sh "$TP")
check "space list" "export LD_PRELOAD=$SH:/a.so /b.so" "$out"
out=$(env -u GPUPROF_SOCKET GPUPROF_SHIM="$SH" LD_PRELOAD="/x.so:$SH" sh "$TP")
check "already attached" "" "$out"
out=$(env -u LD_PRELOAD GPUPROF_SHIM="$SH" GPUPROF_SOCKET=/tmp/s.sock sh "$TP")
check "socket" "export LD_PRELOAD=$SH
export GPUPROF_SOCKET=/tmp/s.sock" "$out"
out=$(env -u LD_PRELOAD GPUPROF_SHIM="$SH" GPUPROF_ATTACH=0 sh "$TP")
check "opt-out" "" "$out"
out=$(env -u LD_PRELOAD -u GPUPROF_SOCKET GPUPROF_SHIM="$T/missing.so" sh "$TP"); rc=$?
check "missing shim" "" "$out"; check "missing shim rc" 0 $rc
ok "taskprolog"

# Every line the TaskProlog prints must be one Slurm understands.
env GPUPROF_SHIM="$SH" LD_PRELOAD=/x.so GPUPROF_SOCKET=/s sh "$TP" |
  grep -Ev '^(export [A-Z_]+=.*|unset [A-Z_]+|print .*)$' && fail "non-Slurm line"

# attach.sh sourced ...
out=$(env -u LD_PRELOAD -u GPUPROF_SOCKET GPUPROF_SHIM="$SH" sh -c ". '$AT'; echo \"\$LD_PRELOAD|\$GPUPROF_SOCKET\"")
check "attach sourced" "$SH|/run/gpuprofd/gpuprofd.sock" "$out"
out=$(env GPUPROF_SHIM="$SH" LD_PRELOAD=/y.so GPUPROF_SOCKET=/s sh -c ". '$AT'; . '$AT'; echo \"\$LD_PRELOAD|\$GPUPROF_SOCKET\"")
check "attach twice" "$SH:/y.so|/s" "$out"
# ... and run as a wrapper (exports reach the command).
out=$(env -u LD_PRELOAD -u GPUPROF_SOCKET GPUPROF_SHIM="$SH" sh "$AT" sh -c 'echo "$LD_PRELOAD|$GPUPROF_SOCKET"')
check "attach wrapper" "$SH|/run/gpuprofd/gpuprofd.sock" "$out"
out=$(env -u LD_PRELOAD GPUPROF_SHIM="$T/missing.so" sh "$AT" sh -c 'echo "[${LD_PRELOAD:-}]"')
check "attach missing shim" "[]" "$out"
ok "attach.sh"
exit 0

#!/bin/sh
# pids.sh - what one user learns of another's processes (issue 23).
# Root's process R is profiled (a client speaking the real protocol) and
# on a fake NVML GPU.  gpdsec1 asks tree, top, trace and sample for R and
# for a pid nobody profiles: every answer is byte-identical but for the
# pid itself (exit 1, "no profiled process N"), and gpdsec1's `devices`,
# `top` and `ps` (with and without --all) say nothing of other users'
# process rows (not even how many).
# Skips (77) unless root.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd setpriv
id gpdsec1 >/dev/null 2>&1 || useradd -M gpdsec1 || fail "useradd gpdsec1"
G="$T/bin/gpuprof"
start_daemon_nvml
$PY "$HOSTILE" hello "$S" /opt/secret/app rootjob "$T/release" >"$T/h.out" 2>&1 &
R=$!
track $R
wait_for "$T/h.out" '^(profile|refused)' 100 || fail "hello: $(cat "$T/h.out")"
printf '0 %d 1073741824 25 5\n' "$R" >"$T/procs.tmp" && mv "$T/procs.tmp" "$T/procs"
NONE=4000001
[ -e /proc/$NONE ] && NONE=4000003

ask() { # name pid -> $T/name.pid.out with the pid replaced by N, then the exit status
  _o=$T/$1.$2.out
  case $1 in
  tree) as gpdsec1 "$G" --socket "$S" tree --pid "$2" >"$_o" 2>&1 ;;
  top) as gpdsec1 "$G" --socket "$S" top --pid "$2" >"$_o" 2>&1 ;;
  trace) as gpdsec1 "$G" --socket "$S" trace --pid "$2" --duration 1ms -o /tmp/gpd-never.json >"$_o" 2>&1 ;;
  sample) as gpdsec1 "$G" --socket "$S" sample --pid "$2" --duration 1s >"$_o" 2>&1 ;;
  policy) as gpdsec1 "$G" --socket "$S" policy --pid "$2" >"$_o" 2>&1 ;;
  esac
  echo "rc $?" >>"$_o"
  sed -i "s/\b$2\b/N/g" "$_o"
}
for c in tree top trace sample policy; do
  ask $c "$R"
  ask $c $NONE
  cmp -s "$T/$c.$R.out" "$T/$c.$NONE.out" ||
    fail "$c: root's pid and no pid answered differently: [$(cat "$T/$c.$R.out")] vs [$(cat "$T/$c.$NONE.out")]"
  grep -qx "gpuprof: no profiled process N" "$T/$c.$R.out" && grep -qx "rc 1" "$T/$c.$R.out" ||
    fail "$c: $(cat "$T/$c.$R.out")"
  ok "$c: $(head -1 "$T/$c.$R.out") for both"
done
# root itself still gets its process
"$G" --socket "$S" tree --pid "$R" >"$T/root.tree" 2>&1 || fail "root's tree --pid: $(cat "$T/root.tree")"

see() {
  as gpdsec1 "$G" --socket "$S" devices >"$T/u.dev" 2>&1 && "$G" --socket "$S" devices >"$T/r.dev" 2>&1 &&
    grep -q rootjob "$T/r.dev"
}
_n=100
until see; do
  _n=$((_n - 1))
  [ $_n -gt 0 ] || fail "root never saw its GPU row: $(cat "$T/r.dev")"
  sleep 0.1
done
grep -Eq "rootjob|secret|other users|not shown" "$T/u.dev" && fail "gpdsec1 learns of root's rows: $(cat "$T/u.dev")"
as gpdsec1 "$G" --socket "$S" top >"$T/u.top" 2>&1 || fail "top: $(cat "$T/u.top")"
grep -q "^GPU 0 .*, 0 processes$" "$T/u.top" || fail "top's header counts root's process for gpdsec1: $(head -3 "$T/u.top")"
as gpdsec1 "$G" --socket "$S" ps --all >"$T/u.ps" 2>&1 || fail "ps: $(cat "$T/u.ps")"
as gpdsec1 "$G" --socket "$S" ps >"$T/u.ps2" 2>&1 || fail "ps: $(cat "$T/u.ps2")"
for f in "$T/u.ps" "$T/u.ps2"; do
  [ "$(sed 1d "$f")" = "(no processes visible)" ] || fail "gpdsec1's ps shows root's rows: [$(cat "$f")]"
done
ok "gpdsec1's devices, top and ps say nothing of root's process"
touch "$T/release"
exit 0

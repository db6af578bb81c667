# common.sh - sourced by the tests/level0 scripts after integration/lib.sh.
# Sets APP (l0-known) and the fake drivers FAKE, FAKE_NOINIT, FAKE_NOTS
# (absolute paths, as ZE_ENABLE_ALT_DRIVERS wants them).
APP=$(app l0-known)
FAKE=$BUILD/tests/level0/libfake-ze.so
FAKE_NOINIT=$BUILD/tests/level0/libfake-ze-noinit.so
FAKE_NOTS=$BUILD/tests/level0/libfake-ze-nots.so
for f in "$FAKE" "$FAKE_NOINIT" "$FAKE_NOTS"; do
  [ -e "$f" ] || { echo "SKIP: $f not built"; exit 77; }
done
# The loader must see only what a test sets.
unset ZE_ENABLE_TRACING_LAYER ZE_ENABLE_VALIDATION_LAYER ZE_ENABLE_LOADER_INTERCEPT GPUPROF_LEVEL0
# An ASan-built shim preloaded into an uninstrumented program needs the ASan
# runtime first in LD_PRELOAD (as tests/opencl/common.sh does).  ldd's
# output is read whole: `ldd | grep -q` under pipefail fails whenever grep
# quits before ldd has written everything (SIGPIPE).
shim_deps=$(ldd "$SHIM" 2>/dev/null || true)
if [[ "$shim_deps" == *libasan* ]] && [[ "${LD_PRELOAD:-}" != *libasan* ]]; then
  LD_PRELOAD=$(gcc -print-file-name=libasan.so)${LD_PRELOAD:+:$LD_PRELOAD}
  export LD_PRELOAD
  export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
fi

# disabled_reason SOCK PID: prints the "level0 disabled: ..." line that
# `gpuprof ps` shows under PID's row (fails when there is none).
disabled_reason() {
  "$GPUPROF" --socket "$1" ps --all >"$T/ps.out" || return 1
  cat "$T/ps.out"
  awk -v p="$2" '$1 == p { f = 1; next }
    f && /level0 disabled: / { print; found = 1; exit }
    f && $1 ~ /^[0-9]+$/ { exit }
    END { exit !found }' "$T/ps.out" >"$T/reason.txt"
}

# run_disabled DRIVER WHY: the application on DRIVER under the shim, against
# a live daemon: same output and exit status as without the shim, and
# `gpuprof ps` names Level Zero as disabled for it, with WHY in the reason.
run_disabled() {
  local drv=$1 why=$2
  local bare
  bare=$(ZE_ENABLE_ALT_DRIVERS=$drv "$APP") || die "bare run failed"
  start_daemon "$T/d.sock" "$T/d.gpdb"
  ZE_ENABLE_ALT_DRIVERS=$drv preload_bg "$T/d.sock" "$T/app.out" "$APP"
  local pid=$APID
  wait_exit "$pid" "application"
  [ "$RC" -eq 0 ] || { cat "$T/app.out.err"; die "application exited $RC under the shim"; }
  [ "$(cat "$T/app.out")" = "$bare" ] || die "output changed under the shim: '$(cat "$T/app.out")' vs '$bare'"
  wait_for "$WAIT" "gpuprof ps says why Level Zero is off" disabled_reason "$T/d.sock" "$pid"
  grep -qF "$why" "$T/reason.txt" || die "reason does not say '$why': $(cat "$T/reason.txt")"
  grep -qE "^ *$pid .* -level0 " "$T/ps.out" || die "BACKENDS column of $pid does not show -level0"
  echo "ps: $(cat "$T/reason.txt")"
  stop_daemon
}

# gpdq_all DB CHECK...: the gpdq.py checks (each one string: "kernel-count
# axpy 15") in one Python process (a process per check costs ~1 s on a
# loaded 2-core machine); stops at the first that fails.
gpdq_all() {
  local db=$1; shift
  printf '%s\n' "$@" >"$T/checks.txt"
  $PY -c '
import importlib.util, shlex, sys
gpdq_py, db, checks = sys.argv[1:4]
spec = importlib.util.spec_from_file_location("gpdq", gpdq_py)
g = importlib.util.module_from_spec(spec)
spec.loader.exec_module(g)
for line in open(checks):
    if line.strip():
        sys.argv = [gpdq_py, db] + shlex.split(line)
        g.main()
' "$HERE/gpdq.py" "$db" "$T/checks.txt"
}

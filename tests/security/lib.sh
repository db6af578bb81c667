# lib.sh - helpers for the hostile-client tests (sourced, POSIX sh), on top
# of tests/service/lib.sh (T, track, fail, ok, skip, wait_for, cleanup trap).
#
# Everything a test user touches is copied under $T (world-readable) so
# that a private build tree does not stand in the way; the socket
# directory is 0777 like /tmp.
. "$GPD_SRC_DIR/tests/service/lib.sh"
PY=/usr/bin/python3
[ -x "$PY" ] || skip "$PY not installed"
need_file "$GPUPROFD"
need_file "$GPUPROF"
chmod 0755 "$T"
mkdir -p "$T/bin" "$T/sock" "$T/state"
chmod 0777 "$T/sock"
cp "$GPUPROFD" "$GPUPROF" "$GPD_SRC_DIR/tests/security/hostile.py" "$T/bin/"
chmod -R a+rX "$T/bin"
S=$T/sock/gpd.sock
HOSTILE=$T/bin/hostile.py
DLOG=$T/d.log

# start_daemon CONFIG_TEXT [PREFIX...]: write $T/gpuprofd.conf, start the
# daemon in the background (PREFIX runs before it, e.g. a ulimit wrapper),
# wait until the socket exists.  Sets D (its pid).
start_daemon() {
  printf '%s\n' "$1" >"$T/gpuprofd.conf"
  shift
  env -u GPUPROF_STATE_DIR -u GPUPROF_LOG "$@" "$T/bin/gpuprofd" --foreground --socket "$S" \
    --config "$T/gpuprofd.conf" --state-dir "$T/state" >"$DLOG" 2>&1 &
  D=$!
  track $D
  wait_listen "$S"
}

# wait_listen SOCKET: wait (30 s deadline) until daemon $D listens on
# SOCKET; fails when it exits first or the deadline passes.
wait_listen() {
  wait_cmd 300 _listening "$1" || fail "daemon did not listen: $(cat "$DLOG")"
}
_listening() {
  kill -0 $D 2>/dev/null || fail "daemon exited: $(cat "$DLOG")"
  [ -S "$1" ]
}

# start_daemon_nvml: start_daemon with the fake NVML of the device tests
# (tests/devices/fake-nvml.c) sampled every 100 ms; the processes on its
# GPUs are the lines of $T/procs ("GPU PID BYTES SM% MEM%").  Skips (77)
# when the fake is not built.
start_daemon_nvml() {
  need_file "$GPD_BUILD_DIR/tests/devices/libfake-nvml.so"
  cp "$GPD_BUILD_DIR/tests/devices/libfake-nvml.so" "$T/bin/"
  chmod a+rX "$T/bin/libfake-nvml.so"
  : >"$T/procs"
  chmod 0644 "$T/procs"
  start_daemon "[devices]
interval_ms = 100
nvml_library = $T/bin/libfake-nvml.so
sysman_library =
papi_events =" FAKE_NVML_PROCS="$T/procs"
}

# ps_within TENTHS [USER]: `gpuprof ps --all` (as USER if given) until it
# succeeds; 1 if it never does within the bound.
ps_within() {
  _n=$1
  while [ "$_n" -gt 0 ]; do
    if [ $# -ge 2 ]; then
      as "$2" "$T/bin/gpuprof" --socket "$S" ps --all >"$T/ps.out" 2>&1 && return 0
    else
      "$T/bin/gpuprof" --socket "$S" ps --all >"$T/ps.out" 2>&1 && return 0
    fi
    sleep 0.1
    _n=$((_n - 1))
  done
  return 1
}

as() { # user cmd...
  _u=$1
  shift
  setpriv --reuid="$(id -u "$_u")" --regid="$(id -g "$_u")" --init-groups env HOME=/ "$@"
}

# as_bg USER cmd... &: as `as`, but replacing the subshell that `&` made
# (exec), so that $! is the command's own pid (to kill it, or to move it
# into a cgroup).
as_bg() {
  _u=$1
  shift
  exec setpriv --reuid="$(id -u "$_u")" --regid="$(id -g "$_u")" --init-groups env HOME=/ "$@"
}

# lines PATTERN: how many lines of the daemon log match (grep -E).
lines() { grep -Ec -- "$1" "$DLOG"; }

# cpu_ticks PID: utime + stime of PID in clock ticks (/proc/PID/stat).
cpu_ticks() {
  sed 's/^.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'
}

# lib.sh - helpers for the integration tests (sourced).
# Usage: source lib.sh BUILD_DIR   -> sets GPUPROF GPUPROFD SHIM T (temp dir), traps cleanup.
set -euo pipefail
BUILD=$(cd "$1" && pwd)
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
GPUPROF=$BUILD/bin/gpuprof
GPUPROFD=$BUILD/bin/gpuprofd
SHIM=$BUILD/lib/libgpuprof.so
GPDQ="python3 $HERE/gpdq.py"
for f in "$GPUPROF" "$GPUPROFD" "$SHIM"; do
  [ -e "$f" ] || { echo "SKIP: $f not built"; exit 77; }
done
T=$(mktemp -d /tmp/gpd-it.XXXXXX)
export POCL_CACHE_DIR=${POCL_CACHE_DIR:-/tmp/gpd-pocl-cache}
DAEMON_PID=
cleanup() {
  [ -n "$DAEMON_PID" ] && kill -9 "$DAEMON_PID" 2>/dev/null || true
  jobs -p | xargs -r kill -9 2>/dev/null || true
  [ -n "${KEEP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT

die() { echo "FAIL: $*"; exit 1; }

# app NAME: path of a test program built by the tree
app() {
  local p
  p=$(find "$BUILD" -type f -perm -u+x -name "$1" -print -quit)
  [ -n "$p" ] || { echo "SKIP: test program $1 not built"; exit 77; }
  echo "$p"
}

have_opencl() {
  clinfo -l 2>/dev/null | grep -q "Device" || { echo "SKIP: no OpenCL platform"; exit 77; }
}

# start_daemon SOCK DB [args...]: gpuprofd in the background; waits for the socket.
start_daemon() {
  local sock=$1 db=$2; shift 2
  "$GPUPROFD" --foreground --socket "$sock" --db "$db" --state-dir "$T/state" "$@" \
    >>"$T/daemon.log" 2>&1 &
  DAEMON_PID=$!
  for _ in $(seq 1 100); do
    [ -S "$sock" ] && "$GPUPROF" --socket "$sock" ps >/dev/null 2>&1 && return 0
    kill -0 "$DAEMON_PID" 2>/dev/null || { cat "$T/daemon.log"; die "gpuprofd exited at start"; }
    sleep 0.05
  done
  cat "$T/daemon.log"; die "gpuprofd did not answer on $sock"
}

# stop_daemon: SIGTERM (drain + persist), wait.
stop_daemon() {
  kill -TERM "$DAEMON_PID"
  local rc=0
  wait "$DAEMON_PID" || rc=$?
  DAEMON_PID=
  [ $rc -eq 0 ] || { cat "$T/daemon.log"; die "gpuprofd exited with $rc after SIGTERM"; }
}

# preload SOCK CMD...: run a command with the shim against socket SOCK
preload() {
  local sock=$1; shift
  LD_PRELOAD="${LD_PRELOAD:+$LD_PRELOAD:}$SHIM" GPUPROF_SOCKET=$sock "$@"
}

# preload_bg SOCK OUTFILE CMD...: same in the background; APID = the
# application's own pid (env execs it), as the daemon sees it.
preload_bg() {
  local sock=$1 out=$2; shift 2
  env LD_PRELOAD="${LD_PRELOAD:+$LD_PRELOAD:}$SHIM" GPUPROF_SOCKET="$sock" "$@" >"$out" 2>&1 &
  APID=$!
}

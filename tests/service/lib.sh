# lib.sh - shared helpers for the service shell tests (sourced, POSIX sh).
#
# Environment set by tests/service.cmake:
#   GPD_SRC_DIR    source tree          GPD_BUILD_DIR  build tree
#   GPD_BIN_DIR    ${build}/bin          GPD_LIB_DIR    ${build}/lib
#   GPD_TEST_BIN   directory of the test-only helpers (notify-helper)
# Exit codes: 0 pass, 1 fail, 77 skip.

set -u
: "${GPD_SRC_DIR:?}" "${GPD_BUILD_DIR:?}"
GPD_BIN_DIR=${GPD_BIN_DIR:-$GPD_BUILD_DIR/bin}
GPD_LIB_DIR=${GPD_LIB_DIR:-$GPD_BUILD_DIR/lib}
SVC_DIR=$GPD_SRC_DIR/tests/service
GPUPROFD=$GPD_BIN_DIR/gpuprofd
GPUPROF=$GPD_BIN_DIR/gpuprof
SHIM=$GPD_LIB_DIR/libgpuprof.so

T=$(mktemp -d /tmp/gpd-svc-XXXXXX)
_pids=""
_cleanup() {
  for p in $_pids; do kill "$p" 2>/dev/null; done
  for p in $_pids; do wait "$p" 2>/dev/null; done
  rm -rf "$T"
}
trap _cleanup EXIT
trap 'exit 1' INT TERM

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
ok() { echo "ok: $*"; }
track() { _pids="$_pids $1"; }

need_cmd() { command -v "$1" >/dev/null 2>&1 || skip "$1 not installed"; }
need_file() { [ -e "$1" ] || skip "$1 not built yet"; }
need_root() { [ "$(id -u)" = 0 ] || skip "needs root"; }

# wait_cmd TENTHS CMD...: poll until CMD succeeds; 1 if it never does
# within TENTHS tenths of a second (a liveness bound, not a timing
# assertion).
wait_cmd() {
  _n=$1
  shift
  while [ "$_n" -gt 0 ]; do
    "$@" && return 0
    sleep 0.1
    _n=$((_n - 1))
  done
  return 1
}

# wait_for FILE PATTERN [TENTHS=300]: until grep -E PATTERN FILE matches.
wait_for() { wait_cmd "${3:-300}" grep -Eq -- "$2" "$1" 2>/dev/null; }

# wait_gone PID [TENTHS=300]: until the process is gone.
wait_gone() { wait_cmd "${2:-300}" _gone "$1"; }
_gone() { ! kill -0 "$1" 2>/dev/null; }

# start_notify_listener SOCK LOG: a test-owned NOTIFY_SOCKET.
start_notify_listener() {
  need_cmd python3
  python3 "$SVC_DIR/notify-listen.py" "$1" "$2" 300 &
  track $!
  wait_for "$2" '^# listening' || fail "notify listener did not start"
}

# unix_get SOCK: connect, print what the server says.
unix_get() {
  python3 - "$1" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(30)
s.connect(sys.argv[1])
data = b""
while True:
    b = s.recv(4096)
    if not b:
        break
    data += b
sys.stdout.write(data.decode())
PY
}

# lib.sh - helpers for the integration tests (sourced by bash scripts).
# Usage: source lib.sh BUILD_DIR -> sets GPUPROF GPUPROFD SHIM GPDQ T (a
# private temp dir), starts a watchdog and traps cleanup.
#
# Rules the helpers keep for every test:
#  - nothing is checked after a fixed sleep: wait_for polls a condition
#    until it holds or a deadline ($GPD_IT_WAIT s, default 3/4 of the watchdog: an ASan run
#    at a load of 18 took 9x its quiet time; the deadline costs nothing
#    when the condition holds) passes, then fails saying what it saw;
#  - every process the test starts, directly or through the daemon, gpuprof
#    record, PoCL or setsid, carries GPD_IT_TAG=<unique> in its environment
#    and is killed with SIGKILL when the script exits, fails or is
#    interrupted, or when the watchdog ($GPD_IT_LIMIT s, default 150, below
#    CTest's TIMEOUT) fires.
set -euo pipefail
# GPD_IT_TRACE=1: trace every command with its time (finding slow steps)
[ -z "${GPD_IT_TRACE:-}" ] || { PS4='+ ${EPOCHREALTIME} '; set -x; }
BUILD=$(cd "$1" && pwd)
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
GPUPROF=$BUILD/bin/gpuprof
GPUPROFD=$BUILD/bin/gpuprofd
SHIM=$BUILD/lib/libgpuprof.so
# Debian's python3 (a python3 earlier in PATH may be a slow wrapper, e.g. pyenv's)
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
GPDQ="$PY $HERE/gpdq.py"
WAIT=${GPD_IT_WAIT:-$(( ${GPD_IT_LIMIT:-150} * 3 / 4 ))}
for f in "$GPUPROF" "$GPUPROFD" "$SHIM"; do
  [ -e "$f" ] || { echo "SKIP: $f not built"; exit 77; }
done
# shellcheck source=procs.sh
source "$HERE/procs.sh"
export GPD_IT_TAG="gpd-it-$$-${EPOCHREALTIME//[.,]/}"
T=$(mktemp -d /tmp/gpd-it.XXXXXX)
export POCL_CACHE_DIR=${POCL_CACHE_DIR:-/tmp/gpd-pocl-cache}
DAEMON_PID=
cleanup() {
  local rc=$?
  trap "" INT TERM # a late watchdog or ^C must not cut the cleanup short
  trap - EXIT
  [ -z "${WATCHDOG_PID:-}" ] || kill -TERM "$WATCHDOG_PID" 2>/dev/null || true
  [ -z "$DAEMON_PID" ] || kill -9 "$DAEMON_PID" 2>/dev/null || true
  jobs -p | xargs -r kill -9 2>/dev/null || true
  gpd_procs_kill "GPD_IT_TAG=$GPD_IT_TAG" ||
    { echo "cleanup: processes left after SIGKILL:"; gpd_procs_describe $(gpd_procs_marked "GPD_IT_TAG=$GPD_IT_TAG"); }
  wait 2>/dev/null || true # reap them
  if [ $rc -ne 0 ] && [ $rc -ne 77 ] && [ -s "$T/daemon.log" ]; then
    echo "--- daemon.log (last 40 lines)"; tail -40 "$T/daemon.log"
  fi
  [ -n "${KEEP:-}" ] || rm -rf "$T"
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

die() { echo "FAIL: $*"; exit 1; }

# Watchdog: past the limit, kill what the test started (so that the
# script's foreground command returns) and TERM the script, whose EXIT trap
# cleans up.  cleanup ends it with SIGTERM (quietly: no "Killed" note); its
# sleep carries the tag and dies with the rest.
(
  trap 'exit 0' TERM
  sleep "${GPD_IT_LIMIT:-150}" &
  wait $! || exit 0
  echo "FAIL: watchdog: test still running after ${GPD_IT_LIMIT:-150} s"
  gpd_procs_kill "GPD_IT_TAG=$GPD_IT_TAG" || true
  kill -TERM $$ 2>/dev/null
) &
WATCHDOG_PID=$!

# now_ms: milliseconds of the real-time clock (no fork).
now_ms() { local t=${EPOCHREALTIME//[.,]/}; echo $((t / 1000)); }

# wait_for SECONDS WHAT CMD...: runs CMD (in this shell, output to
# $T/wait.out) every 0.1 s until it succeeds, or fails the test after
# SECONDS, naming WHAT and showing CMD's last output.  CMD may call die.
wait_for() {
  local secs=$1 what=$2; shift 2
  local t=${EPOCHREALTIME//[.,]/}
  local end=$((t + secs * 1000000))
  while :; do
    if "$@" >"$T/wait.out" 2>&1; then return 0; fi
    t=${EPOCHREALTIME//[.,]/}
    if [ "$t" -ge "$end" ]; then
      echo "FAIL: $what: not within $secs s; last check ($*) said:"
      tail -c 3000 "$T/wait.out"
      exit 1
    fi
    sleep 0.1
  done
}

# wait_exit PID WHAT [SECONDS]: waits (with a deadline) for a background
# child of this shell to end and sets RC to its exit status.
wait_exit() {
  local pid=$1 what=$2 secs=${3:-$WAIT}
  wait_for "$secs" "$what ends" not_alive "$pid"
  RC=0
  wait "$pid" 2>/dev/null || RC=$?
}
not_alive() { ! kill -0 "$1" 2>/dev/null; }

# app NAME: path of a test program built by the tree
app() {
  local p
  p=$(find "$BUILD" -type f -perm -u+x -name "$1" -print -quit)
  [ -n "$p" ] || { echo "SKIP: test program $1 not built"; exit 77; }
  echo "$p"
}

have_opencl() {
  grep -q "Device" <<<"$(clinfo -l 2>/dev/null)" || { echo "SKIP: no OpenCL platform"; exit 77; }
}

# start_daemon SOCK DB [args...]: gpuprofd in the background; waits until
# it answers `gpuprof ps` on SOCK.
# PYBIN for a python given as a path, or as a version (3.12: python3.12
# on PATH or a pyenv install, not pyenv's shim); SKIP when there is none.
want_python() {
  PYBIN=$1
  if [[ $PYBIN != /* ]]; then
    PYBIN=$(command -v "python$1" 2>/dev/null | grep -v /shims/ ||
      ls -d "$HOME"/.pyenv/versions/"$1"*/bin/"python$1" 2>/dev/null | tail -1 || true)
  fi
  [ -n "$PYBIN" ] && [ -x "$PYBIN" ] || { echo "SKIP: no python $1"; exit 77; }
}

start_daemon() {
  local sock=$1 db=$2; shift 2
  "$GPUPROFD" --foreground --socket "$sock" --db "$db" --state-dir "$T/state" "$@" \
    >>"$T/daemon.log" 2>&1 &
  DAEMON_PID=$!
  wait_for "$WAIT" "gpuprofd answers on $sock" daemon_answers "$sock"
}
daemon_answers() {
  kill -0 "$DAEMON_PID" 2>/dev/null || { tail -20 "$T/daemon.log"; die "gpuprofd exited at start"; }
  [ -S "$1" ] && "$GPUPROF" --socket "$1" ps
}

# kill_daemon: SIGKILL the daemon and reap it.
kill_daemon() {
  kill -9 "$DAEMON_PID"
  wait_exit "$DAEMON_PID" "gpuprofd after SIGKILL"
  DAEMON_PID=
}

# stop_daemon: SIGTERM (drain + persist), wait (with a deadline) for exit 0.
stop_daemon() {
  kill -TERM "$DAEMON_PID"
  wait_exit "$DAEMON_PID" "gpuprofd after SIGTERM"
  DAEMON_PID=
  [ "$RC" -eq 0 ] || { cat "$T/daemon.log"; die "gpuprofd exited with $RC after SIGTERM"; }
}

# ps_state SOCK PID: prints the STATE column of `gpuprof ps` for PID
# (running/exited/error); fails when PID is not listed.
ps_state() {
  "$GPUPROF" --socket "$1" ps >"$T/ps.state" || return 1
  awk -v p="$2" '$1 == p { print $5; f = 1 } END { exit !f }' "$T/ps.state"
}
# ps_is SOCK PID STATE: succeeds when `gpuprof ps` lists PID in STATE.
ps_is() { [ "$(ps_state "$1" "$2")" = "$3" ]; }

# live_count SOCK PID: GKER:COUNT of PID's live tree (0 when none).
live_count() {
  "$GPUPROF" --socket "$1" tree --pid "$2" --json >"$T/live.json" || return 1
  $PY -c 'import json,sys; t=json.load(open(sys.argv[1]))["tree"]; print(int(t["metrics"].get("GKER:COUNT",{}).get("incl",0)))' "$T/live.json"
}
# live_count_ge SOCK PID N: succeeds when PID's live tree counts >= N launches.
live_count_ge() {
  local n
  n=$(live_count "$1" "$2") || return 1
  echo "live GKER:COUNT of $2: $n (want >= $3)"
  [ "$n" -ge "$3" ]
}

# db_pids DB: pids of the profiles stored in DB (space separated; empty
# when the database does not exist yet).
db_pids() {
  [ -e "$1" ] || return 0
  $GPDQ "$1" sql "select pid from profile order by id" | tr -d '[]' | tr ',' ' '
}
# db_has DB PID...: succeeds when every PID has a stored profile.
db_has() {
  local db=$1 left p; shift
  left=" $(db_pids "$db") "
  echo "stored: $left"
  for p in "$@"; do [[ $left == *" $p "* ]] || return 1; done
}
# db_lacks DB PID...: succeeds when no PID has a stored profile.
db_lacks() {
  local db=$1 left p; shift
  left=" $(db_pids "$db") "
  echo "stored: $left"
  for p in "$@"; do [[ $left != *" $p "* ]] || return 1; done
}

# db_exited DB PID KERNEL N: succeeds when PID's stored profile says
# 'exited' and counts N launches of KERNEL (the last flush is written).
db_exited() {
  local st
  [ -e "$1" ] || { echo "no $1 yet"; return 1; }
  st=$($GPDQ "$1" sql "select state from profile where pid=$2") || return 1
  echo "stored state of $2: $st"
  [ "$st" = '[["exited"]]' ] && $GPDQ "$1" kernel-count "$3" "$4" "$2"
}

# preload SOCK CMD...: runs a command in the foreground with the shim
# against socket SOCK.
preload() {
  local sock=$1; shift
  LD_PRELOAD="${LD_PRELOAD:+$LD_PRELOAD:}$SHIM" GPUPROF_SOCKET=$sock "$@"
}

# preload_bg SOCK OUTFILE CMD...: same in the background, stdout to OUTFILE
# and stderr to OUTFILE.err; APID = the application's own pid (env execs it), as the
# daemon sees it.
preload_bg() {
  local sock=$1 out=$2; shift 2
  env LD_PRELOAD="${LD_PRELOAD:+$LD_PRELOAD:}$SHIM" GPUPROF_SOCKET="$sock" "$@" >"$out" 2>"$out.err" &
  APID=$!
}

# run_bg OUTFILE CMD...: a background command (not preloaded); BGPID = its pid.
run_bg() {
  local out=$1; shift
  "$@" >"$out" 2>&1 &
  BGPID=$!
}

# file_has FILE REGEX: succeeds when FILE has a line matching REGEX (grep -E).
file_has() { grep -qE -- "$2" "$1"; }

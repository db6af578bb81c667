# procs.sh - find and kill the processes a test run started (sourced by
# lib.sh and scripts/test; bash).
#
# A test exports a marker NAME=VALUE into its environment before it starts
# anything; every process started below it inherits the marker through
# fork and exec, whatever process group or session it moves to (setsid,
# gpuprof record's private daemon, PoCL's helpers, LD_PRELOAD children,
# setpriv'd second users).  /proc/PID/environ shows the environment a
# process was exec'd with, so the shell that exported the marker and its
# forked subshells do not carry it; only what they exec'd does.

# gpd_procs_marked NAME=VALUE: pids of the live processes whose environment
# holds exactly NAME=VALUE (zombies have none), one per line.
gpd_procs_marked() {
  local files f p
  files=(/proc/[0-9]*/environ)
  # grep is started after the list is made, so it never lists itself
  grep -lzxF -- "$1" "${files[@]}" 2>/dev/null | while IFS= read -r f; do
    p=${f#/proc/}
    p=${p%/environ}
    [ "$p" = "$$" ] || [ "$p" = "${BASHPID:-}" ] || echo "$p"
  done
  return 0
}

# gpd_procs_describe PID...: "PID exe: command line" per live process.
gpd_procs_describe() {
  local p exe cmd
  for p in "$@"; do
    exe=$(readlink "/proc/$p/exe" 2>/dev/null) || exe=?
    cmd=$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null) || cmd=
    echo "  $p $exe: $cmd"
  done
}

# gpd_procs_kill NAME=VALUE: SIGKILL every process carrying the marker,
# again until none is left (a process may fork while we look) or 10 s have
# passed.  Returns 0 when none is left, 1 otherwise.
gpd_procs_kill() {
  local pids end=$(( ${EPOCHSECONDS:-$(date +%s)} + 10 ))
  while :; do
    pids=$(gpd_procs_marked "$1")
    [ -n "$pids" ] || return 0
    # shellcheck disable=SC2086
    kill -9 $pids 2>/dev/null || true
    [ "${EPOCHSECONDS:-$(date +%s)}" -lt "$end" ] || return 1
    sleep 0.05
  done
}

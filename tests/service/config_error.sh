#!/bin/sh
# config_error.sh - gpuprofd with a bad config refuses to start: non-zero
# exit and "FILE:LINE: 'key = value': reason" on stderr.
. "$(dirname "$0")/lib.sh"
need_file "$GPUPROFD"
mkdir -p "$T/state"

run_bad() { # name conf-text expected-substring
  printf '%b' "$2" >"$T/$1.conf"
  env -u GPUPROF_STATE_DIR timeout 30 "$GPUPROFD" --foreground --config "$T/$1.conf" \
    --socket "$T/$1.sock" --state-dir "$T/state" >"$T/$1.out" 2>&1
  rc=$?
  cat "$T/$1.out"
  [ $rc = 124 ] && fail "$1: daemon kept running with a bad config"
  [ $rc != 0 ] || fail "$1: daemon exited 0 with a bad config"
  grep -qF -- "$T/$1.conf:$3" "$T/$1.out" || fail "$1: no '$T/$1.conf:$3' in output"
  ok "$1: exit $rc, file:line reported"
}
run_bad pow2 '# gpuprofd\n[shm]\nring_slots = 1000\n' "3: 'ring_slots = 1000': not a power of two"
run_bad unknown '[daemon]\nlog_level = info\nflavour = mild\n' "3: 'flavour = mild': unknown key 'flavour' in [daemon]"
run_bad syntax '[store]\nthis is not ini\n' "2: 'this is not ini': syntax error"
# A config file named explicitly must exist.
env -u GPUPROF_STATE_DIR timeout 30 "$GPUPROFD" --foreground --config "$T/missing.conf" \
  --socket "$T/m.sock" --state-dir "$T/state" >"$T/m.out" 2>&1
rc=$?
[ $rc != 0 ] && [ $rc != 124 ] || fail "missing explicit config: exit $rc"
grep -qF "$T/missing.conf" "$T/m.out" || fail "missing config not named: $(cat "$T/m.out")"
ok "missing explicit config refused"
exit 0

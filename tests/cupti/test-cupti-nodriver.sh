#!/bin/sh
# test-cupti-nodriver.sh - a real CUDA program (nvcc-built cuda-known) on a
# machine with no CUDA driver runs exactly as without gpuprof (same exit
# code, same stdout) and the CUDA back end reports itself disabled.
#   stub   PROG SELFTEST_LIB : LD_PRELOAD the back end with the stub shim;
#                              its STATUS line must say disabled + reason.
#   record PROG BUILD_DIR    : under `gpuprof record -o FILE -- PROG`; the
#                              profile's backend table must hold CUDA,
#                              enabled=0, a reason.  77 if not built.
# Exits 77 too when a CUDA driver IS present (this test is for its absence).
set -u
mode=$1 prog=$2 arg=$3
[ -x "$prog" ] || { echo "SKIP: $prog not built"; exit 77; }
if ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
  echo "SKIP: a CUDA driver is installed; this test checks its absence"; exit 77
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$prog" >"$tmp/bare.out" 2>"$tmp/bare.err"; bare_rc=$?
echo "bare: rc=$bare_rc stdout: $(cat "$tmp/bare.out")"
fail=0
case $mode in
stub)
  [ -f "$arg" ] || { echo "SKIP: $arg not built"; exit 77; }
  LD_PRELOAD="${LD_PRELOAD:+$LD_PRELOAD:}$arg" "$prog" >"$tmp/shim.out" 2>"$tmp/shim.err"; rc=$?
  cat "$tmp/shim.err"
  grep -Eq 'gpuprof-stub: STATUS api=2 enabled=0 code=-?[0-9]+ why=.+' "$tmp/shim.err" ||
    { echo "FAIL: no 'disabled' STATUS with a reason"; fail=1; }
  n=$(grep -c 'gpuprof-stub: STATUS' "$tmp/shim.err")
  [ "$n" -eq 1 ] || { echo "FAIL: $n STATUS lines, want 1"; fail=1; }
  ;;
record)
  cli=$arg/bin/gpuprof
  [ -x "$cli" ] && [ -x "$arg/bin/gpuprofd" ] && [ -f "$arg/lib/libgpuprof.so" ] ||
    { echo "SKIP: gpuprof CLI/daemon/shim not built"; exit 77; }
  export GPUPROF_SOCKET="$tmp/sock"
  "$cli" record -o "$tmp/p.gpdb" -- "$prog" >"$tmp/shim.out" 2>"$tmp/shim.err"; rc=$?
  cat "$tmp/shim.err"
  if [ ! -f "$tmp/p.gpdb" ]; then
    echo "FAIL: no profile written"; fail=1
  else
    row=$(sqlite3 "$tmp/p.gpdb" "SELECT enabled || '|' || coalesce(reason,'') FROM backend WHERE lower(api) LIKE '%cuda%'")
    echo "backend row: $row"
    case $row in
      0\|?*) ;;
      *) echo "FAIL: profile does not say CUDA was disabled with a reason"; fail=1 ;;
    esac
  fi
  # live: `gpuprof ps` shows the back end disabled, and why
  "$arg/bin/gpuprofd" --foreground --socket "$tmp/live.sock" --db "$tmp/live.gpdb" --state-dir "$tmp" 2>/dev/null &
  dp=$!
  # deadlines, not fixed sleeps (a loaded 2-core CI machine, ASan): the
  # socket within 60 s, then ps polled until the program's STATUS record
  # is drained (it ran before: the monitor reads its ring soon after)
  end=$(($(date +%s) + 60))
  while [ ! -S "$tmp/live.sock" ] && [ "$(date +%s)" -lt "$end" ]; do sleep 0.05; done
  [ -S "$tmp/live.sock" ] || { echo "FAIL: gpuprofd made no socket within 60 s"; kill "$dp"; exit 1; }
  LD_PRELOAD="${LD_PRELOAD:+$LD_PRELOAD:}$arg/lib/libgpuprof.so" GPUPROF_SOCKET="$tmp/live.sock" "$prog" >/dev/null 2>&1
  end=$(($(date +%s) + 60))
  while :; do
    "$cli" --socket "$tmp/live.sock" ps >"$tmp/ps.txt" 2>&1
    grep -Eq '^ +[0-9]+ .* -cuda ' "$tmp/ps.txt" && grep -Eq 'cuda disabled: .+' "$tmp/ps.txt" && break
    [ "$(date +%s)" -lt "$end" ] || break
    sleep 0.1
  done
  kill "$dp"; wait "$dp"
  cat "$tmp/ps.txt"
  grep -Eq '^ +[0-9]+ .* -cuda ' "$tmp/ps.txt" || { echo "FAIL: ps does not mark cuda disabled (60 s)"; fail=1; }
  grep -Eq 'cuda disabled: .+' "$tmp/ps.txt" || { echo "FAIL: ps does not say why cuda is disabled (60 s)"; fail=1; }
  ;;
*) echo "usage"; exit 2 ;;
esac
[ "$rc" -eq "$bare_rc" ] || { echo "FAIL: exit code $rc, bare $bare_rc"; fail=1; }
cmp -s "$tmp/bare.out" "$tmp/shim.out" || { echo "FAIL: stdout differs:"; cat "$tmp/shim.out"; fail=1; }
[ $fail -eq 0 ] && echo PASS
exit $fail

#!/usr/bin/env bash
# bench-record-load.sh BUILD_DIR [ROUNDS] [BUSY]: ring-full drops of
# `gpuprof record` while BUSY (default 3) busy loops saturate the CPU, in
# one run, for four ways of draining the rings:
#
#   before   the daemon gives ring slots back only after the writer
#            committed them (symbolization + SQLite transaction), the shim
#            drops a record at once when its ring is full (what `gpuprof
#            record` did until 2026-11-24)
#   release  --release-on-consume only (the monitor gives slots back as it
#            consumes them)
#   wait     the shim's bounded wait for room only (GPUPROF_RECORD=1)
#   both     what `gpuprof record` does now
#
# Workloads: ocl-loop 20000 (20 100 launches of `tiny`: an exact count) and
# clpeak --kernel-latency when installed, each with the default rings
# (65 536 slots) and with 1 024-slot rings (a stand-in for a producer
# faster than this machine's PoCL, or a longer consumer stall).  Prints one
# row per (workload, rings, mode): drops and launches counted, summed over
# ROUNDS (default 3) runs, and the median wall time.  The daemon is
# switched through GPUPROF_DAEMON (a wrapper that drops
# --release-on-consume and adds a config with the ring size); the shim
# through GPUPROF_RECORD_WAIT_MS=0.
set -uo pipefail
b=$(cd "${1:?usage: bench-record-load.sh BUILD_DIR [ROUNDS] [BUSY]}" && pwd)
rounds=${2:-3}
busy=${3:-3}
top=$(cd "$(dirname "$0")/.." && pwd)
export POCL_CACHE_DIR=${POCL_CACHE_DIR:-$b/pocl-cache}
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
cat >"$tmp/gpuprofd" <<EOF
#!/usr/bin/env bash
args=()
for a in "\$@"; do
  [ "\$a" = --release-on-consume ] && [ -n "\${BENCH_COMMIT_RELEASE:-}" ] && continue
  args+=("\$a")
done
exec "$b/bin/gpuprofd" --config "\$BENCH_CONF" "\${args[@]}"
EOF
chmod +x "$tmp/gpuprofd"
loop=$b/bin/ocl-loop
works=("ocl-loop" "$loop 20000 100")
command -v clpeak >/dev/null && works+=("clpeak" "clpeak --kernel-latency")
for _ in $(seq "$busy"); do
  (while :; do :; done) &
  pids+=($!)
done
echo "# $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $busy busy loops, load $(cut -d' ' -f1 /proc/loadavg), $rounds rounds"
printf '%-9s %6s  %-8s %7s %12s %9s\n' workload rings mode drops launches "wall s"
for ((w = 0; w < ${#works[@]}; w += 2)); do
  for slots in 65536 1024; do
    printf '[shm]\nring_slots = %s\n' "$slots" >"$tmp/d.conf"
    for mode in before release wait both; do
      drops=0 launches=0 walls=()
      for r in $(seq "$rounds"); do
        rm -f "$tmp"/r.gpdb*
        t0=$(date +%s.%N)
        env GPUPROF_DAEMON="$tmp/gpuprofd" BENCH_CONF="$tmp/d.conf" \
          BENCH_COMMIT_RELEASE=$([ $mode = before ] || [ $mode = wait ] && echo 1) \
          GPUPROF_RECORD_WAIT_MS=$([ $mode = before ] || [ $mode = release ] && echo 0 || echo 500) \
          "$b/bin/gpuprof" record -o "$tmp/r.gpdb" -- ${works[w + 1]} >/dev/null 2>"$tmp/err" ||
          { echo "record failed:"; cat "$tmp/err"; exit 1; }
        walls+=("$(echo "$(date +%s.%N) - $t0" | bc)")
        d=$(sed -n 's/.* \([0-9]*\) dropped records.*/\1/p' "$tmp/err")
        n=$(/usr/bin/python3 - "$tmp/r.gpdb" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
print(int(db.execute("SELECT COALESCE(SUM(value), 0) FROM metric WHERE metric_id = "
                     "(SELECT id FROM metric_desc WHERE name = 'GKER:COUNT')").fetchone()[0]))
PY
)
        drops=$((drops + ${d:-0}))
        launches=$((launches + n))
      done
      med=$(printf '%s\n' "${walls[@]}" | sort -n | sed -n "$(((rounds + 1) / 2))p")
      printf '%-9s %6s  %-8s %7s %12s %9.2f\n' "${works[w]}" "$slots" "$mode" "$drops" "$launches" "$med"
    done
  done
done
echo "(ocl-loop: $((20100 * rounds)) launches expected per row)"

#!/usr/bin/env bash
# bench-soak.sh BUILD_DIR [PROCS] [OPS] [SECS]: victims beside an attacker.
#
# PROCS victim processes (test-daemon-client victim: kernel pairs pushed
# as the shim pushes, a full ring drops) at OPS pairs/s each for SECS
# seconds, against one gpuprofd, in two scenarios:
#   quiet    nothing else
#   attack   at the same time, as another uid (nobody, when run as root):
#            a correlation flood (invocations that are never matched, 200 000/s
#            for SECS), a process naming 20 000 call sites in a
#            20 000-function -g binary (tests' store-bigdebug), and a writer
#            slowed to one flush per 1.5 s of extra wait
#            (GPUPROF_TEST_WRITER_DELAY_MS=1500)
# Prints one row per scenario: records the victims dropped (ring full),
# kernels stored vs pushed, the writer's mean / longest flush (snapshot to
# release, from its stop line), the largest journal seen (sampled every
# 0.5 s), the daemon's peak RSS (VmHWM) and the symbolizer's count.
# Defaults: 4 x 20 000 x 10 (the issue's soak is 16 x 100 000 x 600);
# SOAK_SCENARIOS="quiet" runs one of them.
set -uo pipefail
b=$(cd "${1:?usage: bench-soak.sh BUILD_DIR [PROCS] [OPS] [SECS]}" && pwd)
procs=${2:-4} ops=${3:-20000} secs=${4:-10}
client=$(find "$b" -type f -perm -u+x -name test-daemon-client -print -quit)
big=$b/tests/apps/store-bigdebug
[ -n "$client" ] && [ -x "$big" ] || { echo "bench-soak: build test-daemon-client and store-bigdebug first"; exit 1; }
top=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
chmod 755 "$tmp"
dpid=
cleanup() { [ -z "$dpid" ] || kill -9 "$dpid" 2>/dev/null; jobs -p | xargs -r kill -9 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
as=()
[ "$(id -u)" = 0 ] && command -v setpriv >/dev/null && as=(setpriv --reuid=65534 --regid=65534 --clear-groups)
nm "$big" | while read -r addr type name; do
  if [ "$type" = T ] && [ "${name#f_}" != "$name" ]; then printf '%x\n' $((16#$addr + 4)); fi
done > "$tmp/offsets"
q() { python3 "$top/tests/integration/gpdq.py" "$1" sql "$2" | tr -d '[]'; }

run() { # scenario
  local sc=$1 d=$tmp/$1 env=()
  mkdir -p "$d"
  chmod 755 "$d"
  [ "$sc" = attack ] && env=(GPUPROF_TEST_WRITER_DELAY_MS=1500)
  env "${env[@]}" GPUPROF_LOG=info "$b/bin/gpuprofd" --foreground --socket "$d/s" --db "$d/p.gpdb" \
    --state-dir "$d/state" >"$d/log" 2>&1 &
  dpid=$!
  for _ in $(seq 1 200); do [ -S "$d/s" ] && break; sleep 0.05; done
  local apids=()
  if [ "$sc" = attack ]; then
    mkfifo "$d/f.in" "$d/a.in"
    "${as[@]}" "$client" "$d/s" flood $((200000 * secs)) 200000 <"$d/f.in" >"$d/flood.out" 2>&1 &
    apids+=($!)
    "${as[@]}" "$client" "$d/s" frames "$big" "$tmp/offsets" <"$d/a.in" >"$d/frames.out" 2>&1 &
    apids+=($!)
    exec {fi}>"$d/f.in" {ai}>"$d/a.in"
  fi
  local vpids=()
  for i in $(seq 1 "$procs"); do
    "$client" "$d/s" victim $((ops * secs)) "$ops" >"$d/v$i.out" 2>&1 &
    vpids+=($!)
  done
  local jmax=0 hwm=0
  while kill -0 "${vpids[@]}" 2>/dev/null; do
    local j; j=$(du -sb "$d/journal" 2>/dev/null | cut -f1)
    [ "${j:-0}" -gt "$jmax" ] && jmax=$j
    sleep 0.5
  done
  wait "${vpids[@]}"
  # stored: every victim profile exited (bounded wait)
  for _ in $(seq 1 600); do
    [ "$(q "$d/p.gpdb" "select count(*) from profile where state='exited'")" -ge "$procs" ] 2>/dev/null && break
    sleep 0.1
  done
  hwm=$(awk '/VmHWM/ {print $2}' "/proc/$dpid/status")
  if [ "$sc" = attack ]; then
    exec {fi}>&- {ai}>&-
    wait "${apids[@]}" 2>/dev/null
  fi
  kill -TERM "$dpid"; wait "$dpid"; dpid=
  local drops=0 ids=()
  for i in $(seq 1 "$procs"); do
    read -r _ id _ dr < "$d/v$i.out"
    drops=$((drops + dr)); ids+=("$id")
  done
  local kc; kc=$(q "$d/p.gpdb" "select coalesce(sum(m.value),0) from metric m join metric_desc x on x.id=m.metric_id where x.name='GKER:COUNT' and m.profile_id in ($(IFS=,; echo "${ids[*]}"))")
  local wr; wr=$(grep -o 'snapshot to ring release [0-9.]* ms mean, [0-9.]* ms max' "$d/log" | sed 's/snapshot to ring release //')
  local sy; sy=$(grep -o 'symbolizer: [0-9]* call sites' "$d/log" | grep -o '[0-9]*' || echo 0)
  printf '| %s | %d x %d/s x %d s | %d of %d | %.0f of %d | %s | %.1f MiB | %.0f MiB | %s |\n' "$sc" "$procs" "$ops" "$secs" \
    "$drops" $((2 * procs * ops * secs + 5 * procs)) "${kc:-0}" $((procs * ops * secs)) "${wr:-?}" \
    "$(echo "$jmax / 1048576" | bc -l)" "$(echo "${hwm:-0} / 1024" | bc -l)" "${sy:-0}"
}

echo "# bench-soak — $(date -u +%Y-%m-%dT%H:%MZ) — $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg)"
echo "| scenario | victims | records dropped | kernels stored | writer flush (mean, max) | journal peak | daemon RSS peak | call sites symbolized |"
echo "|---|---|---|---|---|---|---|---|"
for sc in ${SOAK_SCENARIOS:-quiet attack}; do run "$sc"; done

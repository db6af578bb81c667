#!/usr/bin/env bash
# Several processes x several threads into one daemon at once: each
# process's profile is exact and the node merge equals the sum.
source "$(dirname "$0")/lib.sh" "$1"
have_opencl
APP=$(app ocl-mt)
P=3; TH=4; K=25
start_daemon "$T/m.sock" "$T/m.gpdb"
pids=()
for i in $(seq 1 $P); do
  preload_bg "$T/m.sock" "$T/app$i.out" "$APP" $TH $K
  pids+=($APID)
done
for p in "${pids[@]}"; do
  wait_exit "$p" "app $p"
  [ "$RC" -eq 0 ] || { cat "$T"/app*.out.err; die "app $p exited $RC"; }
done
for i in $(seq 1 $P); do grep -q "sum $((TH*K*64))" "$T/app$i.out" || die "app $i output wrong: $(cat "$T/app$i.out")"; done
# live view: every process listed as exited, with all its launches
all_counted() {
  local p
  for p in "${pids[@]}"; do
    ps_is "$T/m.sock" "$p" exited || { echo "pid $p not listed as exited"; cat "$T/ps.state"; return 1; }
    live_count_ge "$T/m.sock" "$p" $((TH*K)) || return 1
  done
}
wait_for "$WAIT" "every process counted by the daemon" all_counted
# node merge (live, from the daemon's memory) == sum of the per-process trees
"$GPUPROF" --socket "$T/m.sock" tree --json > "$T/tree.json" || die "live tree failed"
merged=$($PY -c 'import json,sys; t=json.load(open(sys.argv[1]))["tree"]; print(int(t["metrics"].get("GKER:COUNT",{}).get("incl",0)))' "$T/tree.json")
sum=0
for p in "${pids[@]}"; do
  n=$(live_count "$T/m.sock" "$p") || die "live tree --pid $p failed"
  echo "live pid $p: GKER:COUNT $n"
  [ "$n" -eq $((TH*K)) ] || die "pid $p live count $n, expected $((TH*K))"
  sum=$((sum + n))
done
echo "live node merge GKER:COUNT $merged, sum of processes $sum"
[ "$merged" -eq "$sum" ] && [ "$sum" -eq $((P*TH*K)) ] || die "node merge $merged != sum $sum"
stop_daemon
$GPDQ "$T/m.gpdb" processes $P
for p in "${pids[@]}"; do $GPDQ "$T/m.gpdb" kernel-count mt $((TH*K)) "$p"; done
$GPDQ "$T/m.gpdb" kernel-count mt $((P*TH*K))
$GPDQ "$T/m.gpdb" kernel-under mt worker_launches
$GPDQ "$T/m.gpdb" drops 0
echo "PASS multiproc"

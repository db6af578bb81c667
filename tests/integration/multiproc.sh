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
for p in "${pids[@]}"; do wait "$p" || die "app $p failed"; done
for i in $(seq 1 $P); do grep -q "sum $((TH*K*64))" "$T/app$i.out" || die "app $i output wrong"; done
sleep 0.5
# live view: every process listed, node-merged tree from the daemon's memory
"$GPUPROF" --socket "$T/m.sock" ps | tee "$T/ps.txt"
for p in "${pids[@]}"; do grep -qw "$p" "$T/ps.txt" || die "pid $p missing from ps"; done
# node merge (live, from the daemon's memory) == sum of the per-process trees
root_count() { # JSON FILE -> root inclusive GKER:COUNT
  python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["tree"]; print(int(t["metrics"].get("GKER:COUNT",{}).get("incl",0)))' "$1"
}
"$GPUPROF" --socket "$T/m.sock" tree --json > "$T/tree.json" || die "live tree failed"
merged=$(root_count "$T/tree.json")
sum=0
for p in "${pids[@]}"; do
  "$GPUPROF" --socket "$T/m.sock" tree --pid "$p" --json > "$T/tree-$p.json" || die "live tree --pid $p failed"
  n=$(root_count "$T/tree-$p.json")
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

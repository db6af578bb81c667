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
  preload "$T/m.sock" "$APP" $TH $K > "$T/app$i.out" 2>&1 &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || die "app $p failed"; done
for i in $(seq 1 $P); do grep -q "sum $((TH*K*64))" "$T/app$i.out" || die "app $i output wrong"; done
sleep 0.5
# live view: every process listed, node-merged tree from the daemon's memory
"$GPUPROF" --socket "$T/m.sock" ps | tee "$T/ps.txt"
for p in "${pids[@]}"; do grep -qw "$p" "$T/ps.txt" || die "pid $p missing from ps"; done
"$GPUPROF" --socket "$T/m.sock" tree --json > "$T/tree.json" || die "live tree failed"
python3 - "$T/tree.json" $((P*TH*K)) <<'PY' || die "live node merge wrong"
import json, sys
t = json.load(open(sys.argv[1])); want = float(sys.argv[2])
def walk(n):
    if isinstance(n, dict):
        yield n
        for v in n.values():
            yield from walk(v)
    elif isinstance(n, list):
        for v in n: yield from walk(v)
tot = 0
for n in walk(t):
    ex = n.get("excl") if isinstance(n.get("excl"), dict) else None
    if ex and "GKER:COUNT" in ex:
        v = ex["GKER:COUNT"]; tot += v["value"] if isinstance(v, dict) else v
print("live merged GKER:COUNT", tot, "want", want)
sys.exit(0 if tot == want else 1)
PY
stop_daemon
$GPDQ "$T/m.gpdb" processes $P
for p in "${pids[@]}"; do $GPDQ "$T/m.gpdb" kernel-count mt $((TH*K)) "$p"; done
$GPDQ "$T/m.gpdb" kernel-count mt $((P*TH*K))
$GPDQ "$T/m.gpdb" kernel-under mt worker_launches
$GPDQ "$T/m.gpdb" drops 0
echo "PASS multiproc"

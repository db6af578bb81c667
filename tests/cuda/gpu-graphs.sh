#!/usr/bin/env bash
# gpu-graphs.sh - issue 28's CUDA graphs check on the GPU machine (repo
# root, bundle/ from scripts/bundle-gpu; docs/CUDA.md "CUDA graphs").
# Writes under ${OUT:-/tmp/out}: gpu-graphs.log, graphs.json.
#  (a) versions;
#  (b) tests/cuda/gpu-graphs.py under the CUDA back end with the counting
#      stand-in for the shim (no daemon): graph nodes seen created /
#      cloned, activities that carry a graph node id;
#  (c) the same run under `gpuprof record` (real shim and daemon), its
#      report checked by gpu-graphs.py check: every graph kernel of the
#      torch.cuda.graph replays under its capture-time Net.forward line,
#      REPLAYS x the eager count; the explicit-API graph's kernels and
#      memsets under add_a / add_b / add_memset; after cuGraphExecUpdate,
#      where the updated launches went.  Prints the counts per capture-time
#      Python frame and PASS or FAIL (exit status 1 on FAIL);
#  (d) under a node gpuprofd's default policy (trace windows, CUPTI
#      finalized between them): torch.cuda.graph captures every 50 ms for
#      DUTY_S s (40), each replayed 20 times: every traced kernel below
#      replay() under its capture-time Net.forward line (graphs captured
#      between windows included).  ONLY_DUTY=1: (d) alone.
set -u
B=$PWD/${BUNDLE:-bundle}; O=${OUT:-/tmp/out}; mkdir -p "$O"
source "$B/env.sh"
export PYTHONUNBUFFERED=1
R=${REPLAYS:-50}
G=$PWD/tests/cuda/gpu-graphs.py
DB=/tmp/gpd-graphs.gpdb; rm -f "$DB"
{
  date -u; nvidia-smi -L
  if [ -z "${ONLY_DUTY:-}" ]; then
  echo "== (a) versions"
  python3 -VV; python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'
  echo "== (b) stand-in shim (GPUPROF_CUPTI_SELFTEST counters, GPUPROF_STUB_DUMP records)"
  GPUPROF_STUB_DUMP=1 LD_PRELOAD=$B/lib/libgpd-cupti-selftest.so timeout 300 python3 "$G" run "$R" \
    >"$O/stub.out" 2>"$O/stub.err"
  grep -hE "^(torch|explicit)|gpuprof-stub: status|graph nodes|disabled" "$O/stub.out" "$O/stub.err"
  # graph-run activities whose node a GRAPHNODE record named (created, or a copy of a named one)
  awk '/^GRAPHNODE /{split($2,a,"="); split($3,n,"="); split($4,o,"="); id[a[2]]=1; orig[a[2]]=o[2]}
       /^ACT .* graph=[1-9]/{split($NF,g,"="); act[g[2]]++}
       END{for (k in act) {t+=act[k]; ok=0; x=k; for (h=0;h<8 && (x in id);h++) {if (orig[x]=="0") {ok=1; break}; x=orig[x]}
             if (ok) named+=act[k]; else {un+=act[k]; if (shown++<5) print "  unnamed graph node", k, act[k], "activities"}}
           printf "graph-run activities %d, of graph nodes named by a GRAPHNODE record (created or a copy of one): %d, unnamed: %d\n", t, named, un}' "$O/stub.err"
  echo "== (c) gpuprof record + report"
  GPUPROF_CUPTI_SELFTEST=1 timeout 300 gpuprof record -o "$DB" -- python3 "$G" run "$R" 2>&1 |
    grep -E "^(torch|explicit)|graph nodes|error|warn" | head -20
  echo "record rc=${PIPESTATUS[0]}"
  gpuprof report --json "$DB" >"$O/graphs.json"; echo "report rc=$?"
  gpuprof report --depth 80 "$DB" 2>&1 | grep -E "<graph replay>|Net.forward \(|add_(a|b|memset)2? \(|replay" | head -30
  python3 "$G" check "$O/graphs.json" "$R"
  echo "check rc=$?"
  fi
  echo "== (d) the node's default policy (attached as the job prolog attaches: LD_PRELOAD + GPUPROF_SOCKET,"
  echo "   no GPUPROF_* variable): ${DUTY_S:-40} s of captures (one per 50 ms, each replayed 20 times)"
  N=/tmp/gpd-graphs-node; rm -rf "$N"; mkdir -p "$N/state"
  GPUPROF_LOG=info gpuprofd --foreground --socket "$N/s" --db "$N/node.gpdb" --state-dir "$N/state" >"$N/daemon.log" 2>&1 &
  D=$!
  end=$(($(date +%s) + 60))
  until [ -S "$N/s" ]; do
    [ "$(date +%s)" -lt "$end" ] || { echo "duty: FAIL: no daemon socket after 60 s"; cat "$N/daemon.log"; break; }
    kill -0 $D 2>/dev/null || { echo "duty: FAIL: gpuprofd exited"; cat "$N/daemon.log"; break; }
    sleep 0.1
  done
  LD_PRELOAD=$B/lib/libgpuprof.so GPUPROF_SOCKET=$N/s python3 "$G" run-duty "${DUTY_S:-40}" >"$N/app.out" 2>"$N/app.err" &
  A=$!
  wait $A; echo "run-duty rc=$? pid $A"; cat "$N/app.out"; grep -iE "window|duty|graph|error" "$N/app.err" | head -5
  kill -TERM $D; wait $D
  grep -iE "governor|window" "$N/daemon.log" | tail -3
  gpuprof report --json --pid "$A" "$N/node.gpdb" >"$O/graphs-duty.json"; echo "report rc=$?"
  gpuprof report --depth 60 --pid "$A" "$N/node.gpdb" 2>&1 | grep -E "<graph replay>|Net.forward \(|capture \(" | head -12
  python3 -c "import sqlite3,sys;print(sqlite3.connect(sys.argv[1]).execute(\"select reason from backend where api='cuda'\").fetchone())" "$N/node.gpdb"
  python3 "$G" check-duty "$O/graphs-duty.json" "$A" | sed 's/^/duty: /'
} 2>&1 | tee "$O/gpu-graphs.log"
{ [ -n "${ONLY_DUTY:-}" ] || grep -q "^PASS" "$O/gpu-graphs.log"; } && grep -q "^duty: PASS" "$O/gpu-graphs.log"

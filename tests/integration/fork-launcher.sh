#!/usr/bin/env bash
# Job attach: a launcher (in Slurm job 4242) forks four workers doing
# OpenCL work; all four appear with the launcher's job id, live in
# `gpuprof ps --job` and `gpuprof tree --job`, and in the store.  Then the
# workers exec another OpenCL program: the exec'd images are profiled too.
source "$(dirname "$0")/lib.sh" "$1"
have_opencl
L=$(app fork-launcher); S=$(app ocl-steady)
K=20
start_daemon "$T/f.sock" "$T/f.gpdb"
SLURM_JOB_ID=4242 SLURM_STEP_ID=0 preload "$T/f.sock" "$L" 4 $K > "$T/l.out" 2>&1 || { cat "$T/l.out"; die "launcher failed"; }
cat "$T/l.out"
wpids=$(sed -n 's/^worker [0-9]* pid \([0-9]*\) .*/\1/p' "$T/l.out")
[ "$(echo "$wpids" | wc -w)" -eq 4 ] || die "expected 4 workers"
# every worker listed with job 4242, and the job's live tree counts all launches
job_live() {
  "$GPUPROF" --socket "$T/f.sock" ps --job 4242 | tee "$T/ps.txt"
  # (SLURM_JOB_ID without Slurm's cgroup: a claimed job, "4242(claimed)")
  for p in $wpids; do grep -E "^ *$p +.* 4242(\(claimed\))? " "$T/ps.txt" >/dev/null || { echo "worker $p not listed"; return 1; }; done
  "$GPUPROF" --socket "$T/f.sock" tree --job 4242 --json > "$T/tree.json" || return 1
  n=$($PY -c 'import json,sys; t=json.load(open(sys.argv[1])); print(int(t["tree"]["metrics"].get("GKER:COUNT",{}).get("incl",0)), len([p for p in t["processes"] if p["job_id"]=="4242"]))' "$T/tree.json")
  echo "tree --job 4242: GKER:COUNT and processes = $n"
  # (PoCL's linker and the launcher itself carry the job too)
  [ "${n%% *}" -eq $((4 * K)) ] && [ "${n##* }" -ge 4 ]
}
wait_for "$WAIT" "job 4242 live: 4 workers, $((4 * K)) launches" job_live
cat "$T/ps.txt"
echo "tree --job 4242: GKER:COUNT and processes = $n"
"$GPUPROF" --socket "$T/f.sock" ps --job 999 > "$T/ps999.txt"
grep -q ocl "$T/ps999.txt" && die "job filter lets other jobs through: $(cat "$T/ps999.txt")"
# fork + exec
SLURM_JOB_ID=4243 preload "$T/f.sock" "$L" 4 $K "$S" 5 0 > "$T/e.out" 2>&1 || { cat "$T/e.out"; die "launcher with exec failed"; }
grep -c "^done 5 sum 320" "$T/e.out" | grep -qx 4 || { cat "$T/e.out"; die "exec'd workers did not all finish"; }
# the daemon has the four exec'd images, all finished
execd_listed() {
  "$GPUPROF" --socket "$T/f.sock" ps --job 4243 | tee "$T/ps2.txt"
  [ "$(grep -cE " exited .*ocl-steady *$" "$T/ps2.txt")" -eq 4 ]
}
wait_for "$WAIT" "job 4243: 4 exec'd images listed as exited" execd_listed
stop_daemon
for p in $wpids; do
  $GPDQ "$T/f.gpdb" kernel-count inc $K "$p"
  job=$($GPDQ "$T/f.gpdb" sql "select job_id from profile where pid=$p")
  [ "$job" = '[["4242"]]' ] || die "worker $p stored job $job"
done
$GPDQ "$T/f.gpdb" kernel-count tick 20
$GPDQ "$T/f.gpdb" sql "select count(*) from profile where job_id='4243' and exe like '%ocl-steady'" | grep -qx '\[\[4\]\]' || die "exec'd images not profiled under job 4243"
echo "PASS fork-launcher"

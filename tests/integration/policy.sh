#!/usr/bin/env bash
# policy.sh - the node's collection policy end to end without a GPU: a real
# daemon with a [collect] configuration, the real shim in ctl-app (whose
# test back end records each CONTROL_POLICY and, with CTL_COST, reports
# known counters as the CUDA back end would), the real CLI.
#  1. a bad [collect] line: the daemon refuses to start, file:line;
#  2. delivery in Hello: the shim's own report of what it received, the
#     sections that matched (conf < exe < uid < job) and why;
#  3. the governor: known counters -> the exact period for a 1 % budget,
#     sent to the process; ps and top show the estimate and how;
#  4. `policy set` reaches the running process (3 % -> period_min);
#  5. a deep dive shows in ps while it runs;
#  6. access: another uid reads the node's policy, not this process's
#     (the same error as a pid that does not exist), and cannot set.
source "$(dirname "$0")/lib.sh" "$1"
CTL=$(app ctl-app)
S=$T/gpd.sock
chmod 0755 "$T"
ME=$(id -u)

# 1: refused at start, with the line of the bad key
printf '[collect]\nbudget = 1%%\n[collect "uid=%s"]\nwindow_ms = 15s\n' "$ME" >"$T/bad.conf"
set +e
"$GPUPROFD" --foreground --socket "$T/bad.sock" --db "$T/bad.db" --state-dir "$T/state" --config "$T/bad.conf" \
  >"$T/bad.log" 2>&1
rc=$?
set -e
[ "$rc" -eq 78 ] || { cat "$T/bad.log"; die "bad [collect]: exit $rc, not 78"; }
file_has "$T/bad.log" "^gpuprofd: $T/bad.conf:4: \[collect \"uid=$ME\"\]: window_ms \(15000\) must be shorter than period_ms \(10000\)$" ||
  { cat "$T/bad.log"; die "bad [collect]: no file:line message"; }

cat >"$T/p.conf" <<EOF
[collect]
budget = 1%
window_ms = 10
period_ms = 3s
[collect "exe=*/ctl-app"]
window_ms = 10
[collect "uid=$ME"]
period_max_ms = 30s
[collect "job=pjob"]
mode = duty
EOF
start_daemon "$S" "$T/p.db" --config "$T/p.conf"

# 2: Hello.  The governor's input (tests/daemon/test-policy.c's numbers):
# c_window 0.25, 10 ms switching per window, c_between 0.00075 -> 1352 ms
A_OUT=$T/a.ctl
SLURM_JOB_ID=pjob CTL_COST=30100000000,100000000,10,1499000,4000,100000000 \
  preload_bg "$S" "$T/a.out" "$CTL" "$A_OUT" run
A=$APID
app_ready() { file_has "$1" '^ready'; }
wait_for "$WAIT" "ctl-app ready" app_ready "$T/a.out"
has_policy() { "$GPUPROF" --socket "$S" policy --pid "$A" >"$T/pol" 2>&1 && file_has "$T/pol" "^  shim: duty"; }
wait_for "$WAIT" "the shim's report of its policy" has_policy
cat "$T/pol"
RULE="\[collect\] < \[collect \"exe=\*/ctl-app\"\] < \[collect \"uid=$ME\"\] < \[collect \"job=pjob\"\]"
file_has "$T/pol" "^  rule: $RULE$" || die "rule"
file_has "$T/pol" "^  why: mode=duty \(\[collect \"job=pjob\"\]\), window_ms=10 \(\[collect \"exe=\*/ctl-app\"\]\), period_ms=3000 \(\[collect\]\), period_min_ms=500 \(default\), period_max_ms=30000 \(\[collect \"uid=$ME\"\]\)" ||
  die "why"
file_has "$T/pol" "^  shim: duty 10 ms / [0-9]+ ms \(daemon\): in Hello: duty 10 ms / 3000 ms, budget 1.00 %, cpu 0 Hz, pc 0 ms / 300 s$" ||
  die "what the shim received in Hello"

# 3: the governor sends the period for 1 %, and says what it estimates
governed() { grep -q '^policy mode=duty window=10 period=1352 budget=100$' "$A_OUT"; }
wait_for "$WAIT" "the governor's period" governed
est() { "$GPUPROF" --socket "$S" policy --pid "$A" --json >"$T/pol.json" && grep -q '"overhead": 0.00999' "$T/pol.json"; }
wait_for "$WAIT" "the estimate at the new period" est
$PY - "$T/pol.json" "$A" <<'PY' || die "policy --json"
import json, sys
j = json.load(open(sys.argv[1]))
p = j["procs"][0]
assert p["pid"] == int(sys.argv[2]), p
assert p["policy"]["period_ms"] == 1352 and p["policy"]["window_ms"] == 10, p["policy"]
assert p["policy"]["budget_pct"] == 1.0 and p["policy"]["governed"], p["policy"]
assert abs(p["overhead"] - (12.5 / 1352 + 0.00075)) < 1e-6, p["overhead"]
assert p["overhead_how"].startswith("measured: window vs between (c_window 0.250, switch 10.0 ms/window, c_between 0.00075)"), p
cuda = [b for b in p["backends"] if b["api"] == "cuda"][0]
assert cuda["source"] == "daemon" and cuda["mode"] == "duty:10/1.352" and cuda["windows"] == 10, cuda
print("policy --json: period 1352 ms, overhead %.5f" % p["overhead"])
PY
"$GPUPROF" --socket "$S" ps --all >"$T/ps"
cat "$T/ps"
file_has "$T/ps" "^ +collect: duty:10/1.352; overhead ~1.00 % \(measured: window vs between" || die "ps: no collect line"
"$GPUPROF" --socket "$S" top >"$T/top"
file_has "$T/top" "^collection overhead \(estimated\): mean 1.00 %, max 1.00 % over 1 process$" ||
  { cat "$T/top"; die "top: no node total"; }

# 4: a change at run time reaches the process: the policy's own period
# first, then the governor's for 3 % (427 ms -> period_min 500)
"$GPUPROF" --socket "$S" policy set budget=3% --job pjob >"$T/set" 2>&1 || { cat "$T/set"; die "policy set"; }
file_has "$T/set" "^budget=3% for job=pjob: sent to 1 running process\(es\)$" || { cat "$T/set"; die "set: reply"; }
set3() { grep -q '^policy mode=duty window=10 period=500 budget=300$' "$A_OUT"; }
wait_for "$WAIT" "the new budget's period" set3
grep -q '^policy mode=duty window=10 period=3000 budget=300$' "$A_OUT" || { cat "$A_OUT"; die "set: not sent"; }
"$GPUPROF" --socket "$S" policy set window_ms=5s >"$T/set2" 2>&1 && die "a window longer than the period was set"
file_has "$T/set2" "window_ms \(5000\) must be shorter than period_ms \(3000\)" || { cat "$T/set2"; die "set: bad value"; }
"$GPUPROF" --socket "$S" policy set nosuch=1 >"$T/set3" 2>&1 && die "an unknown key was set"
file_has "$T/set3" "unknown policy key 'nosuch'" || { cat "$T/set3"; die "set: bad key"; }

# 5: a deep dive (a PC sampling window someone asked for) is shown
"$GPUPROF" --socket "$S" sample --pid "$A" --duration 60s --no-wait >"$T/s1" 2>&1 || { cat "$T/s1"; die "sample"; }
"$GPUPROF" --socket "$S" ps --all >"$T/ps2"
file_has "$T/ps2" "^ +deep dive: over budget until [0-9]{2}:[0-9]{2}:[0-9]{2}$" || { cat "$T/ps2"; die "ps: no deep dive"; }
"$GPUPROF" --socket "$S" sample --pid "$A" --stop >/dev/null 2>&1 || die "sample --stop"
"$GPUPROF" --socket "$S" ps --all >"$T/ps3"
file_has "$T/ps3" "deep dive" && { cat "$T/ps3"; die "ps: deep dive after the stop"; }

# 6: another uid
"$GPUPROF" --socket "$S" policy --pid 999999 >"$T/nopid" 2>&1 && die "policy of no such pid"
file_has "$T/nopid" '^gpuprof: no profiled process 999999$' || { cat "$T/nopid"; die "no such pid: message"; }
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
  id gpdtest1 >/dev/null 2>&1 || useradd -M gpdtest1 || die "useradd gpdtest1"
  other() { setpriv --reuid=gpdtest1 --regid="$(id -g gpdtest1)" --init-groups env HOME=/ "$GPUPROF" --socket "$S" "$@"; }
  other policy >"$T/o1" 2>&1 || { cat "$T/o1"; die "another uid cannot read the node's policy"; }
  file_has "$T/o1" '^node default: mode duty, window 10 ms every 3000 ms \(governed\), budget 1.00 %' || die "o1"
  other policy --pid "$A" >"$T/o2" 2>&1 && die "another uid read this process's policy"
  file_has "$T/o2" "^gpuprof: no profiled process $A$" || { cat "$T/o2"; die "other uid: not the no-such-pid text"; }
  other policy set budget=50% >"$T/o3" 2>&1 && die "another uid set the policy"
  file_has "$T/o3" '^gpuprof: permission denied: policy set needs root or the admin group$' || { cat "$T/o3"; die "o3"; }
  other policy set mode=full --job pjob >/dev/null 2>&1 && die "another uid set a job's policy"
  grep -q '^policy mode=full' "$A_OUT" && die "a refused set reached the process"
  echo "other uid: node policy readable; process policy and set refused"
else
  echo "note: not root: the second-uid check is left out"
fi
echo "PASS: collection policy"

#!/usr/bin/env bash
# test-cupti-pcrotate.sh - rotating PC-sampling windows of the node policy
# (daemon/pcrotate.c): the real shim and its CUDA back end on
# fake-cupti.c, whose GetData hands back FAKE_CUPTI_PCS_SAMPLES=5 samples
# of one stall reason at each call while a context is enabled, under a
# real gpuprofd with [collect] pc_window_ms = 200, pc_period_s = 1 (the
# smallest period) and busy-app processes (a launch every 2 ms):
#  1. A and B: each gets >= 2 windows in turn, and the daemon never starts
#     a window while another is open (one per node: never two on a GPU);
#  2. C, whose PC-sampling hardware another tool holds
#     (FAKE_CUPTI_PCS_BUSY): once it reports busy it is skipped
#     (pc_rot_skipped >= 1) while A and B go on;
#  3. `ps`, `policy --pid` and `tree` say "PC samples estimated from N
#     rotating windows (X s of Y s)" and the tree its error bound; no
#     rotating window starts while a `gpuprof sample` window (a deep dive)
#     runs in C (6 of C's duty windows long), and the rotation resumes;
#  4. exact counts: after `policy set pc_window_ms=0` and the open window
#     closed, A's and B's fake enables equal the windows the daemon
#     counted for each, and the PC samples stored for A equal what its
#     fake handed out; the applications unharmed.
# Args: BUILD_DIR BUSY_APP FAKE_LIB.
source "$(dirname "$0")/../integration/lib.sh" "$1"
APP=$2
FAKE=$3
[ -x "$APP" ] || { echo "SKIP: busy-app not built"; exit 77; }
S=$T/gpd.sock
cat >"$T/rot.conf" <<'CONF'
[daemon]
log_level = info
[collect]
mode = duty
window_ms = 100
period_ms = 500
period_min_ms = 500
governor = 0
pc_window_ms = 200
pc_period_s = 1
CONF
start_daemon "$S" "$T/rot.db" --config "$T/rot.conf"

export GPUPROF_CUPTI_PATH="$FAKE" GPUPROF_CUPTI_SELFTEST=1 FAKE_CUPTI_PCS_SAMPLES=5
FAKE_CUPTI_STATS="$T/a.stats" preload_bg "$S" "$T/a.out" "$APP" "$T/stop" 120
A=$APID
FAKE_CUPTI_STATS="$T/b.stats" preload_bg "$S" "$T/b.out" "$APP" "$T/stop" 120
B=$APID
touch "$T/pcs-held"
FAKE_CUPTI_STATS="$T/c.stats" FAKE_CUPTI_PCS_BUSY="$T/pcs-held" preload_bg "$S" "$T/c.out" "$APP" "$T/stop" 120
C=$APID
apps_ready() { file_has "$T/a.out" '^ready$' && file_has "$T/b.out" '^ready$' && file_has "$T/c.out" '^ready$'; }
wait_for "$WAIT" "busy-apps ready" apps_ready

# rot PID: "windows=N window_ns=X skipped=S busy=TEXT" of PID's CUDA back end
rot() {
  "$GPUPROF" --socket "$S" policy --pid "$1" --json >"$T/pol.json" || return 1
  $PY - "$T/pol.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))["procs"][0]
c = [b for b in p["backends"] if b["api"] == "cuda"][0]
print("windows=%d window_ns=%d skipped=%d busy=%s" % (c["pc_rot_windows"], c["pc_rot_window_ns"],
                                                     c["pc_rot_skipped"], c["busy"]))
PY
}
field() { sed -nE "s/.*$1=([0-9]+).*/\\1/p"; }

# 1 + 2: A and B rotate, C is skipped once busy
rotated() {
  local a b c
  a=$(rot "$A") && b=$(rot "$B") && c=$(rot "$C") || return 1
  echo "A: $a / B: $b / C: $c"
  [ "$(echo "$a" | field windows)" -ge 2 ] && [ "$(echo "$b" | field windows)" -ge 2 ] &&
    [ "$(echo "$c" | field skipped)" -ge 1 ]
}
wait_for "$WAIT" "A and B rotate, C skipped" rotated
c=$(rot "$C")
grep -qE 'busy=busy: held by another tool \(CUPTI_ERROR_HARDWARE_BUSY\)' <<<"$c" || die "C skipped but not busy: $c"

# 3: what ps, policy --pid and tree say
"$GPUPROF" --socket "$S" ps >"$T/ps"
cat "$T/ps"
[ "$(grep -cE '^ +PC samples estimated from [1-9][0-9]* rotating windows? \([0-9.]+ s of [0-9.]+ s\), next in [0-9]+ s$' "$T/ps")" -eq 2 ] ||
  die "ps: no rotating-window line for A and B"
file_has "$T/ps" '^ +busy: held by another tool \(CUPTI_ERROR_HARDWARE_BUSY\).*; PC samples estimated from [1-9][0-9]* rotating windows? \([0-9.]+ s of [0-9.]+ s\), [1-9][0-9]* skipped busy, 0 refused, next in [0-9]+ s$' ||
  die "ps: C's line"
"$GPUPROF" --socket "$S" policy --pid "$A" >"$T/pol"
file_has "$T/pol" '^    [1-9][0-9]* rotating PC-sampling windows? \([0-9.]+ s\), 0 due turns skipped while busy$' ||
  { cat "$T/pol"; die "policy --pid: no rotating windows"; }
"$GPUPROF" --socket "$S" tree --pid "$A" >"$T/tree"
file_has "$T/tree" "^ +PC samples estimated from [1-9][0-9]* rotating windows? " || { cat "$T/tree"; die "tree: no estimate"; }
file_has "$T/tree" "^  PC samples are estimates from rotating windows: a stall share from [1-9][0-9]* samples is within \+-[0-9.]+ percentage points" ||
  { cat "$T/tree"; die "tree: no error bound"; }

# never two windows open at once: started / ended lines of the daemon log
$PY - "$T/daemon.log" <<'PY' || die "two rotating windows open at once"
import re, sys
open_w, n = None, 0
for line in open(sys.argv[1]):
    m = re.search(r"rotating PC-sampling window (\d+) of pid (\d+) (started|ended|closed|given up|lost|refused|not sent)", line)
    if not m:
        continue
    wid, what = m.group(1), m.group(3)
    if what == "started":
        if open_w is not None:
            sys.exit("window %s started while %s was open" % (wid, open_w))
        open_w, n = wid, n + 1
    elif wid == open_w:
        open_w = None
print("%d windows, one at a time" % n)
PY

# a deep dive takes precedence: no rotating window starts while a
# `gpuprof sample` window runs (acked: the daemon knows it is on), however
# many duty windows its process runs meanwhile; the rotation goes on after
# it.  In C: A's and B's counts stay exact (C's enables are all refused)
started() { grep -c 'rotating PC-sampling window [0-9]* of pid [0-9]* started' "$T/daemon.log"; }
duty_windows() { "$GPUPROF" --socket "$S" policy --pid "$C" --json | $PY -c '
import json, sys
print([b for b in json.load(sys.stdin)["procs"][0]["backends"] if b["api"] == "cuda"][0]["windows"])'; }
"$GPUPROF" --socket "$S" sample --pid "$C" --duration 100s --no-wait >"$T/s1" 2>&1 || { cat "$T/s1"; die "sample"; }
S1=$(started)
D1=$(duty_windows)
dived() { local d; d=$(duty_windows) || return 1; echo "C's duty windows: $d (from $D1)"; [ "$d" -ge $((D1 + 6)) ]; }
wait_for "$WAIT" "6 more duty windows of C during the deep dive" dived
S2=$(started)
[ "$S2" -eq "$S1" ] || die "$((S2 - S1)) rotating windows started during a deep dive"
"$GPUPROF" --socket "$S" sample --pid "$C" --stop >"$T/s2" 2>&1 || { cat "$T/s2"; die "sample --stop"; }
resumed() { local n; n=$(started); echo "started $n (from $S2)"; [ "$n" -gt "$S2" ]; }
wait_for "$WAIT" "the rotation resumes after the deep dive" resumed

# 4: stop the rotation, wait for the open window to close, then exact counts
"$GPUPROF" --socket "$S" policy set pc_window_ms=0 >"$T/set" 2>&1 || { cat "$T/set"; die "policy set"; }
closed() {
  local s e
  s=$(grep -c 'rotating PC-sampling window [0-9]* of pid [0-9]* started' "$T/daemon.log")
  e=$(grep -cE 'rotating PC-sampling window [0-9]* of pid [0-9]* (ended|closed|given up|lost|refused|not sent)' "$T/daemon.log")
  echo "started $s, closed $e"
  [ "$s" -eq "$e" ]
}
wait_for "$WAIT" "the open window closed" closed
WA=$(rot "$A" | field windows)
WB=$(rot "$B" | field windows)
NS=$(rot "$A" | field window_ns)
[ "$NS" -eq $((WA * 200000000)) ] || die "A: window_ns $NS for $WA windows of 200 ms"
touch "$T/stop"
for p in "$A" "$B" "$C"; do
  wait_exit "$p" "busy-app $p"
  [ "$RC" -eq 0 ] || die "busy-app $p exited $RC"
done
for x in a b c; do
  cat "$T/$x.out" "$T/$x.stats"
  file_has "$T/$x.out" '^launches [0-9]+ sum [0-9]+$' || die "$x: no result"
done
read -r _ _ _ _ _ _ _ PEA _ PRA _ PSA <"$T/a.stats" || die "no stats of A"
read -r _ _ _ _ _ _ _ PEB _ PRB _ _ <"$T/b.stats" || die "no stats of B"
read -r _ _ _ _ _ _ _ PEC _ PRC _ _ <"$T/c.stats" || die "no stats of C"
echo "A: $WA windows, $PEA enables, $PSA samples; B: $WB windows, $PEB enables; C: $PEC enables, $PRC refused"
[ "$PRA" -eq 0 ] && [ "$PEA" -eq "$WA" ] || die "A: $PEA PC-sampling enables ($PRA refused) for $WA windows"
[ "$PRB" -eq 0 ] && [ "$PEB" -eq "$WB" ] || die "B: $PEB PC-sampling enables ($PRB refused) for $WB windows"
[ "$PRC" -ge 1 ] && [ "$PEC" -eq "$PRC" ] || die "C: $PEC enables, $PRC refused (all should be)"
[ "$PSA" -ge 5 ] || die "A's fake handed out $PSA samples"
stored_a() {
  [ -e "$T/rot.db" ] || return 1
  local st n
  st=$($GPDQ "$T/rot.db" sql "select state from profile where pid=$A") || return 1
  n=$($GPDQ "$T/rot.db" sql "select coalesce(sum(samples),0) from pcsample where profile_id in (select id from profile where pid=$A)") || return 1
  echo "A stored: $st, $n samples"
  [ "$st" = '[["exited"]]' ] && [ "$n" = "[[$PSA]]" ]
}
wait_for "$WAIT" "A's $PSA PC samples stored" stored_a
stop_daemon
echo "PASS: $WA + $WB rotating windows one at a time, C skipped while busy; A's $PSA samples stored; enables = windows"

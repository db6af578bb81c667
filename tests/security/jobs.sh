#!/bin/sh
# jobs.sh - job ids that cannot be forged (issue 23).  A real cgroup in
# Slurm's cgroup/v1 layout, /sys/fs/cgroup/freezer/slurm/uid_U/job_J/step_0,
# holds gpdsec2's program V (the shim preloaded into sleep) - what
# slurmstepd does for a job's task.  gpdsec1's process A (a client speaking
# the real protocol) claims job J in its Hello.
#  - root's `ps --job J` lists V only; `ps --all` shows A's job as
#    "J(claimed)" and V's as "J";
#  - gpdsec1's `ps --job J` lists its own A, marked "(claimed)";
#  - root's `trace --job J --duration 1s` targets V only: done in < 8 s
#    (A never answers: it must not hold the window), A's pid not in it.
# Skips (77) unless root and the freezer hierarchy takes a new cgroup.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd setpriv
need_file "$SHIM"
for u in gpdsec1 gpdsec2; do
  id "$u" >/dev/null 2>&1 || useradd -M "$u" || fail "useradd $u"
done
U2=$(id -u gpdsec2)
J=$((7000000 + $$))
CGR=/sys/fs/cgroup/freezer/slurm
CG=$CGR/uid_$U2/job_$J/step_0
[ -d /sys/fs/cgroup/freezer ] || skip "no cgroup v1 freezer hierarchy"
# what a killed earlier run left (empty cgroups only: rmdir refuses others)
for d in "$CGR/uid_$U2"/job_*/step_0; do rmdir "$d" "${d%/step_0}" 2>/dev/null; done
mkdir -p "$CG" 2>/dev/null || skip "cannot create $CG"
cg_cleanup() {
  for p in $(cat "$CG/cgroup.procs" 2>/dev/null); do kill "$p" 2>/dev/null; done
  _cleanup # kills and reaps the tracked processes: no zombie keeps the cgroup busy
  wait_cmd 50 rmdir "$CG" 2>/dev/null || echo "jobs.sh: $CG still busy after 5 s: left behind" >&2
  rmdir "$CGR/uid_$U2/job_$J" "$CGR/uid_$U2" 2>/dev/null
  rmdir "$CGR" 2>/dev/null # only when no other test's job is left
}
trap cg_cleanup EXIT
cp "$SHIM" "$T/bin/"
chmod a+rX "$T/bin"/*
G="$T/bin/gpuprof"
start_daemon ""

# V: into the job's cgroup first, then exec the profiled program (the
# claimed SLURM_JOB_ID says the same; the cgroup is what counts)
mkfifo -m 0644 "$T/go"
as_bg gpdsec2 sh -c 'read _ <"$1" || exit 3
  exec env LD_PRELOAD="${LD_PRELOAD:+$LD_PRELOAD:}$2" GPUPROF_SOCKET="$3" SLURM_JOB_ID="$4" sleep 120' sh "$T/go" "$T/bin/libgpuprof.so" "$S" "$J" &
V=$!
track $V
echo "$V" >"$CG/cgroup.procs" || fail "cannot move $V into $CG"
echo go >"$T/go" # V's start gate: it reads this line, then execs
as_bg gpdsec1 $PY "$HOSTILE" hello "$S" /bin/evil "$J" "$T/release" >"$T/h.out" 2>&1 &
A=$!
track $A
wait_for "$T/h.out" '^(profile|refused)' 100 || fail "hello: $(cat "$T/h.out")"
_n=100
until "$G" --socket "$S" ps --all 2>&1 | grep -q "^ *$V .* running"; do
  _n=$((_n - 1))
  [ $_n -gt 0 ] || fail "V never registered: $(cat "$DLOG")"
  sleep 0.1
done
"$G" --socket "$S" ps --all --job "$J" >"$T/rj.out" 2>&1 || fail "root ps --job: $(cat "$T/rj.out")"
cat "$T/rj.out"
grep -Eq "^ *$V +gpdsec2 +$J +" "$T/rj.out" || fail "root's ps --job $J lacks V"
grep -Eq "^ *$A " "$T/rj.out" && fail "root's ps --job $J lists the claimed process A"
"$G" --socket "$S" ps --all >"$T/ra.out" 2>&1
grep -Eq "^ *$A +gpdsec1 +$J\(claimed\) " "$T/ra.out" || fail "A not shown as claimed: $(cat "$T/ra.out")"
ok "root's ps --job $J: V only; A shown as '$J(claimed)'"
as gpdsec1 "$G" --socket "$S" ps --all --job "$J" >"$T/aj.out" 2>&1
grep -Eq "^ *$A +gpdsec1 +$J\(claimed\) " "$T/aj.out" || fail "gpdsec1 does not see its own claim: $(cat "$T/aj.out")"
grep -Eq "^ *$V " "$T/aj.out" && fail "gpdsec1 sees V"
ok "gpdsec1's ps --job $J: its own claimed process"

t0=$(date +%s%N)
"$G" --socket "$S" trace --job "$J" --duration 1s --format chrome -o "$T/t.json" >"$T/tr.out" 2>&1 ||
  fail "root's trace --job $J: $(cat "$T/tr.out")"
t1=$(date +%s%N)
ms=$(((t1 - t0) / 1000000))
cat "$T/tr.out"
[ $ms -lt 8000 ] || fail "trace --job $J took $ms ms: a claimed process held the window"
grep -q "\"pid\":$A[,}]" "$T/t.json" && fail "the claimed process is in the trace"
ok "trace --job $J in $ms ms, without A"
touch "$T/release"
exit 0

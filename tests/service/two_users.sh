#!/bin/sh
# two_users.sh - access control end to end.  As root: two test users
# (gpdtest1, gpdtest2; created with useradd -M if missing) each run a
# registered process (sleep under LD_PRELOAD=libgpuprof.so) against one
# daemon; `gpuprof ps --all` (the sleeps use no GPU API) as each user lists
# only their own pid, as root both;
# `gpuprof tree --pid <other's pid>` as gpdtest1 exits 1 with "permission
# denied".  Skips (77) unless root and the daemon, CLI and shim are built.
. "$(dirname "$0")/lib.sh"
need_root
need_file "$GPUPROFD"
need_file "$GPUPROF"
need_file "$SHIM"
need_cmd setpriv
for u in gpdtest1 gpdtest2; do
  id "$u" >/dev/null 2>&1 || useradd -M "$u" || fail "useradd $u"
done

# Everything the users touch lives under $T, world-readable; the socket
# directory is 0777 like /tmp.  Binaries and shim are copied so that a
# private build tree (/root/...) does not stand in the way.
chmod 0755 "$T"
mkdir -p "$T/bin" "$T/lib" "$T/sock" "$T/state"
chmod 0777 "$T/sock"
cp "$GPUPROFD" "$GPUPROF" "$T/bin/"; cp "$SHIM" "$T/lib/"
chmod -R a+rX "$T/bin" "$T/lib"
S=$T/sock/gpd.sock
: >"$T/gpuprofd.conf"

env -u GPUPROF_STATE_DIR "$T/bin/gpuprofd" --foreground --socket "$S" \
  --config "$T/gpuprofd.conf" --state-dir "$T/state" >"$T/d.out" 2>&1 &
D=$!; track $D
i=0; while [ ! -S "$S" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
[ -S "$S" ] || fail "daemon did not listen: $(cat "$T/d.out")"

as() { # user cmd...  (setpriv execs: $! is the command's own pid)
  _u=$1; shift
  setpriv --reuid="$(id -u "$_u")" --regid="$(id -g "$_u")" --init-groups \
    env HOME=/ GPUPROF_SOCKET="$S" "$@"
}
# In the background, exec: $! is then the registered process's own pid
# (a backgrounded function would otherwise be a subshell of its own).
as_bg() { _u=$1; shift; exec setpriv --reuid="$(id -u "$_u")" --regid="$(id -g "$_u")" --init-groups \
  env HOME=/ GPUPROF_SOCKET="$S" "$@"; }
as_bg gpdtest1 env LD_PRELOAD="$T/lib/libgpuprof.so" sleep 120 &
P1=$!; track $P1
as_bg gpdtest2 env LD_PRELOAD="$T/lib/libgpuprof.so" sleep 120 &
P2=$!; track $P2

# Wait until root sees both registrations.
i=0
while [ $i -lt 300 ]; do
  "$T/bin/gpuprof" --socket "$S" ps --all >"$T/ps.root" 2>&1
  grep -qw "$P1" "$T/ps.root" && grep -qw "$P2" "$T/ps.root" && break
  sleep 0.1; i=$((i + 1))
done
cat "$T/ps.root"
grep -qw "$P1" "$T/ps.root" && grep -qw "$P2" "$T/ps.root" ||
  fail "root does not see both pids $P1 $P2: $(cat "$T/ps.root"; cat "$T/d.out")"
ok "root sees $P1 and $P2"

as gpdtest1 "$T/bin/gpuprof" --socket "$S" ps --all >"$T/ps.1" 2>&1 || fail "ps as gpdtest1: $(cat "$T/ps.1")"
grep -qw "$P1" "$T/ps.1" || fail "gpdtest1 does not see its own pid: $(cat "$T/ps.1")"
grep -qw "$P2" "$T/ps.1" && fail "gpdtest1 sees gpdtest2's pid: $(cat "$T/ps.1")"
as gpdtest2 "$T/bin/gpuprof" --socket "$S" ps --all >"$T/ps.2" 2>&1 || fail "ps as gpdtest2: $(cat "$T/ps.2")"
grep -qw "$P2" "$T/ps.2" || fail "gpdtest2 does not see its own pid: $(cat "$T/ps.2")"
grep -qw "$P1" "$T/ps.2" && fail "gpdtest2 sees gpdtest1's pid: $(cat "$T/ps.2")"
ok "each user sees only their own process"

as gpdtest1 "$T/bin/gpuprof" --socket "$S" tree --pid "$P2" >"$T/tree.1" 2>&1
rc=$?
cat "$T/tree.1"
[ $rc = 1 ] || fail "tree --pid <other's pid> as gpdtest1: exit $rc, want 1"
grep -qx "gpuprof: no profiled process $P2" "$T/tree.1" || fail "not answered as no such pid: $(cat "$T/tree.1")"
as gpdtest1 "$T/bin/gpuprof" --socket "$S" tree --pid "$P1" >"$T/tree.own" 2>&1 ||
  fail "tree --pid <own pid> as gpdtest1 failed: $(cat "$T/tree.own")"
ok "tree of another user's pid: exit 1, no profiled process (as for no pid); own pid ok"
exit 0

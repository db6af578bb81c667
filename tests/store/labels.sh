#!/usr/bin/env bash
# Labels per user: gpdtest2 announces gpdtest1's module build-id with a
# crafted file of its own (same code and offsets, another function name)
# BEFORE gpdtest1 runs.  gpdtest1's stored contexts and frames and its node
# in the live tree (as root, who sees both merged, and as gpdtest1) keep
# gpdtest1's own label; gpdtest2's label stays with gpdtest2.
source "$(dirname "$0")/../integration/lib.sh" "$1"
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (two users)"; exit 77; }
command -v setpriv >/dev/null || { echo "SKIP: no setpriv"; exit 77; }
for u in gpdtest1 gpdtest2; do id "$u" >/dev/null 2>&1 || useradd -M "$u" || die "useradd $u"; done
CLIENT=$(app store-client); HON=$(app store-label-honest); CRA=$(app store-label-crafty)
off=$(nm "$HON" | awk '/ honest_target_function$/ {print $1}')
off2=$(nm "$CRA" | awk '/ crafty_target_function$/ {print $1}')
[ -n "$off" ] && [ "$off" = "$off2" ] || die "label programs differ in layout ($off / $off2)"
chmod 0755 "$T"; mkdir -p "$T/bin" "$T/sock"; chmod 0777 "$T/sock"
cp "$CLIENT" "$HON" "$CRA" "$T/bin/"; chmod -R a+rX "$T/bin"
BID=0123456789abcdef0123456789abcdef01234567
S=$T/sock/d.sock
start_daemon "$S" "$T/d.gpdb"
as() { local u=$1; shift; setpriv --reuid="$(id -u "$u")" --regid="$(id -g "$u")" --clear-groups "$@"; }
stored() { $GPDQ "$T/d.gpdb" sql "select count(*) from profile where uid=$1 and state='exited'"; }
wait_stored() {
  for _ in $(seq 1 200); do [ "$(stored "$1")" = "[[1]]" ] && return 0; sleep 0.05; done
  cat "$T/daemon.log"; die "profile of uid $1 not stored"
}
U1=$(id -u gpdtest1); U2=$(id -u gpdtest2)
# the forger first: with one global context table it would label first
as gpdtest2 "$T/bin/store-client" label "$S" "$T/bin/store-label-crafty" $BID "$off" || die "client 2"
wait_stored "$U2"
as gpdtest1 "$T/bin/store-client" label "$S" "$T/bin/store-label-honest" $BID "$off" || die "client 1"
wait_stored "$U1"
# a context is stored by module + offset first; the symbolizer thread's
# result comes with a later flush (docs/DAEMON.md, "symbolizer")
symbolized() {
  [ "$($GPDQ "$T/d.gpdb" sql "select count(*) from context where kind=1 and label like '0x%'")" = "[[0]]" ] &&
    [ "$($GPDQ "$T/d.gpdb" sql "select count(distinct uid) from frame")" = "[[2]]" ]
}
wait_for "$WAIT" "both stored contexts symbolized" symbolized
l1=$($GPDQ "$T/d.gpdb" sql "select label from context where uid=$U1 and kind=1")
l2=$($GPDQ "$T/d.gpdb" sql "select label from context where uid=$U2 and kind=1")
f1=$($GPDQ "$T/d.gpdb" sql "select function from frame where uid=$U1")
echo "stored: uid $U1 $l1 $f1; uid $U2 $l2"
[ "$l1" = '[["honest_target_function"]]' ] || die "gpdtest1's stored label is $l1"
[ "$l2" = '[["crafty_target_function"]]' ] || die "gpdtest2's stored label is $l2"
grep -q crafty <<<"$f1" && die "gpdtest1's frames hold the forged name"
# live: root sees both users merged, each node labelled by its owner
"$GPUPROF" --socket "$S" tree > "$T/root.txt" || die "tree as root"
grep -q honest_target_function "$T/root.txt" || { cat "$T/root.txt"; die "root's live tree lost gpdtest1's label"; }
grep -q crafty_target_function "$T/root.txt" || { cat "$T/root.txt"; die "root's live tree lost gpdtest2's node"; }
setpriv --reuid="$U1" --regid="$(id -g gpdtest1)" --clear-groups "$GPUPROF" --socket "$S" tree > "$T/u1.txt" 2>&1 ||
  { cat "$T/u1.txt"; die "tree as gpdtest1"; }
grep -q honest_target_function "$T/u1.txt" || { cat "$T/u1.txt"; die "gpdtest1's live tree lost its label"; }
grep -q crafty "$T/u1.txt" && { cat "$T/u1.txt"; die "gpdtest1 sees the forged label"; }
stop_daemon
echo "PASS labels"

#!/usr/bin/env bash
# Disk full: the database on a 2 MiB tmpfs that fills up.  The daemon says
# so once in its log and in `gpuprof ps` (the processes' error text), frees
# the region (memfd + mapping) of every process that ended, keeps their
# profiles in memory, and writes them all when space returns: nothing is
# lost, every kernel counted once.
source "$(dirname "$0")/../integration/lib.sh" "$1"
CLIENT=$(find "$BUILD" -type f -perm -u+x -name test-daemon-client -print -quit)
[ -n "$CLIENT" ] || { echo "SKIP: test-daemon-client not built"; exit 77; }
M=$T/small; mkdir -p "$M"
mount -t tmpfs -o size=2m tmpfs "$M" 2>/dev/null || { echo "SKIP: cannot mount a tmpfs"; exit 77; }
trap 'umount -l "$M" 2>/dev/null; cleanup' EXIT
export GPUPROF_LOG=info
DB=$M/d.gpdb
start_daemon "$T/d.sock" "$DB"
dd if=/dev/zero of="$M/fill" bs=4k 2>/dev/null || true   # until ENOSPC
n=0
while ! grep -q "store: writes to .* fail" "$T/daemon.log"; do
  [ $n -lt 400 ] || { cat "$T/daemon.log"; die "no write failed after $n processes"; }
  "$CLIENT" "$T/d.sock" honest 5 || die "client $n failed"
  n=$((n + 1))
done
for _ in $(seq 1 40); do "$CLIENT" "$T/d.sock" honest 5 || die "client failed"; n=$((n + 1)); done
echo "$n processes ran, writes failing"
memfds() { find /proc/"$DAEMON_PID"/fd -lname '/memfd:*' 2>/dev/null | wc -l; }
for _ in $(seq 1 200); do [ "$(memfds)" -eq 0 ] && break; sleep 0.05; done
[ "$(memfds)" -eq 0 ] || die "$(memfds) memfds still open after every process ended"
[ "$(grep -c memfd /proc/"$DAEMON_PID"/maps)" -eq 0 ] || die "regions still mapped"
"$GPUPROF" --socket "$T/d.sock" ps > "$T/ps.txt" || die "ps failed"
grep -q "not stored yet" "$T/ps.txt" || { cat "$T/ps.txt"; die "ps does not show the store state"; }
[ "$(grep -c "store: writes to .* fail" "$T/daemon.log")" -eq 1 ] || die "more than one failure line"
[ "$(grep -c "ERROR" "$T/daemon.log")" -le 2 ] || { grep ERROR "$T/daemon.log" | head; die "errors logged per flush"; }
rm -f "$M/fill"
q() { $GPDQ "$DB" sql "$1"; }
for _ in $(seq 1 300); do
  [ "$(q "select count(*) from profile where state='exited'")" = "[[$n]]" ] && break; sleep 0.05
done
[ "$(q "select count(*) from profile where state='exited'")" = "[[$n]]" ] ||
  die "$(q "select count(*) from profile where state='exited'") of $n profiles stored after space returned"
grep -q "store: writes to .* work again" "$T/daemon.log" || die "no recovery line"
k=$(q "select sum(m.value) from metric m join metric_desc d on d.id=m.metric_id where d.name='GKER:COUNT'")
[ "$k" = "[[$((5 * n)).0]]" ] || die "kernels stored: $k, want $((5 * n))"
[ "$(q "select count(*) from profile where error is not null")" = "[[0]]" ] || die "retry note stored as an error"
"$GPUPROF" --socket "$T/d.sock" ps | grep -q "not stored yet" && die "ps still shows the store state"
stop_daemon
echo "PASS disk-full"

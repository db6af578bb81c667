#!/usr/bin/env bash
# GPU binaries are bounded per uid and removed with their profiles:
# retention_max_bytes = 4M (a uid's share: 2 MiB), the database and its
# gpubins on a 64 MiB tmpfs.  One user (nobody) runs 29 processes, each
# uploading four distinct 1 MiB binaries (116 MiB): uploads past its share
# are refused (logged), removed profiles take their binaries along (no
# file without a row, no row without a profile that sent it), the store
# settles within 4 MiB and the disk never fills; then another user's
# (uid 1) process stores its binary and keeps its profile.
source "$(dirname "$0")/../integration/lib.sh" "$1"
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (two users, a tmpfs)"; exit 77; }
command -v setpriv >/dev/null || { echo "SKIP: no setpriv"; exit 77; }
CLIENT=$(app store-client)
chmod 0755 "$T"
mkdir -p "$T/bin" "$T/sock"
chmod 0777 "$T/sock"
cp "$CLIENT" "$T/bin/"
chmod -R a+rX "$T/bin"
M=$T/small
mkdir -p "$M"
mount -t tmpfs -o size=64m tmpfs "$M" 2>/dev/null || { echo "SKIP: cannot mount a tmpfs"; exit 77; }
trap 'umount -l "$M" 2>/dev/null; cleanup' EXIT
mkdir -m 0700 "$M/prof"
DB=$M/prof/d.gpdb
printf '[daemon]\nlog_level = info\n[store]\nretention_max_bytes = 4M\nflush_interval_ms = 100\n' > "$T/q.conf"
S=$T/sock/d.sock
start_daemon "$S" "$DB" --config "$T/q.conf"
as() { local u=$1; shift; setpriv --reuid="$u" --regid="$u" --clear-groups env HOME=/ "$@"; }
q() { $GPDQ "$DB" sql "$1" | tr -d '[] '; }
disk() { du -sb "$M/prof" | cut -f1; }
max=0
for i in $(seq 1 29); do
  as 65534 "$T/bin/store-client" bins "$S" 4 1048576 "$i" > "$T/c$i.out" || die "client $i failed"
  d=$(disk); [ "$d" -le "$max" ] || max=$d
done
sent=$(cat "$T"/c*.out | grep -c "^BIN ")
[ "$sent" -eq 116 ] || die "$sent binaries sent, want 116"
settled() {
  local n total
  n=$(grep -c "pid [0-9]* ended" "$T/daemon.log" || true)
  total=$(q "select (select page_count - freelist_count from pragma_page_count, pragma_freelist_count)
    * (select page_size from pragma_page_size) + (select coalesce(sum(size), 0) from gpubin)")
  d=$(disk); [ "$d" -le "$max" ] || max=$d
  echo "processes ended: $n of 29; store (pages in use + binaries): $total bytes"
  [ "$n" -ge 29 ] && [ "$total" -le $((4 << 20)) ]
}
wait_for "$WAIT" "the store settles within 4 MiB" settled
cat "$T/wait.out"
grep -q "refused: uid 65534 is at" "$T/daemon.log" || die "no refusal logged"
stored=$(grep -c "stored gpubin" "$T/daemon.log" || true)
removed=$(grep -c "retention removed profile" "$T/daemon.log" || true)
files=$(find "$M/prof/gpubins" -name '*.gpubin' | wc -l)
echo "116 binaries (116 MiB) sent: $stored stored, $removed profiles removed, $files files left;" \
  "disk use at most $max bytes"
[ "$(q "select count(*) from gpubin")" = "$files" ] || die "$files files, $(q "select count(*) from gpubin") rows"
for f in "$M"/prof/gpubins/*.gpubin; do
  [ -e "$f" ] || continue
  h=$(basename "$f" .gpubin)
  [ "$(q "select count(*) from gpubin_ref r join profile p on p.id = r.profile_id where r.hash = '$h'")" -ge 1 ] ||
    die "file $h: no stored profile sent it"
done
[ "$(q "select count(*) from gpubin_ref r where not exists (select 1 from profile p where p.id = r.profile_id)")" = 0 ] ||
  die "references of removed profiles left"
[ "$removed" -ge 10 ] || die "only $removed profiles removed"
[ "$max" -le $((16 << 20)) ] || die "disk use reached $max bytes"
grep -q "disk is full\|database or disk" "$T/daemon.log" && die "the disk filled"

# another user stores fine, and keeps its profile
as 1 "$T/bin/store-client" bins "$S" 1 1048576 1000 > "$T/v.out" || die "uid 1's client failed"
h=$(awk '/^BIN/ { print $2 }' "$T/v.out")
victim_stored() {
  grep -q "stored gpubin $h" "$T/daemon.log" &&
    [ "$(q "select count(*) from gpubin_ref r join profile p on p.id = r.profile_id where r.hash = '$h' and p.uid = 1")" = 1 ]
}
wait_for "$WAIT" "uid 1's binary $h stored" victim_stored
[ -f "$M/prof/gpubins/$h.gpubin" ] || die "uid 1's binary file missing"
stop_daemon
echo "PASS gpubin-quota"

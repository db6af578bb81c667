#!/usr/bin/env bash
# GPU binaries are written safely: links planted at the names the daemon
# writes (the old fixed temp name and the final name) are never followed
# (their targets stay unchanged), the gpubins folder is the daemon's own
# private directory (a link or another user's folder there is refused),
# and several uploads of one binary at once all succeed.
source "$(dirname "$0")/../integration/lib.sh" "$1"
CLIENT=$(app store-client)
export GPUPROF_LOG=info
mkdir -p "$T/prof"
H=$("$CLIENT" hash "$T/expected.bin")
echo "binary $H"

# planted links inside an existing gpubins folder (made by root here, as
# only the owner can write into it)
mkdir -m 0700 "$T/prof/gpubins"
echo victim-final > "$T/victim-final"; echo victim-tmp > "$T/victim-tmp"
ln -s "$T/victim-final" "$T/prof/gpubins/$H.gpubin"
ln -s "$T/victim-tmp" "$T/prof/gpubins/$H.gpubin.tmp"
start_daemon "$T/d.sock" "$T/prof/d.gpdb"
"$CLIENT" gpubin "$T/d.sock" 4 > "$T/c.out" || die "client failed: $(cat "$T/c.out")"
grep -qx "SENT $H" "$T/c.out" || die "client: $(cat "$T/c.out")"
# all four uploads complete and are stored (log lines), within 20 s
for _ in $(seq 1 400); do
  n=$(grep -c "stored gpubin $H\|gpubin $H .* was stored before" "$T/daemon.log" || true)
  [ "$n" -ge 4 ] && break
  sleep 0.05
done
[ "$n" -eq 4 ] || { cat "$T/daemon.log"; die "$n of 4 concurrent uploads stored"; }
grep -i "warn.*gpubin" "$T/daemon.log" && die "an upload failed"
[ "$(cat "$T/victim-final")" = victim-final ] || die "final-name link followed"
[ "$(cat "$T/victim-tmp")" = victim-tmp ] || die "temp-name link followed"
[ -f "$T/prof/gpubins/$H.gpubin" ] && [ ! -L "$T/prof/gpubins/$H.gpubin" ] || die "final file is not a regular file"
cmp "$T/prof/gpubins/$H.gpubin" "$T/expected.bin" || die "stored binary differs"
[ "$(stat -c %a "$T/prof/gpubins/$H.gpubin")" = 600 ] || die "binary mode $(stat -c %a "$T/prof/gpubins/$H.gpubin")"
left=$(ls -A "$T/prof/gpubins" | grep -v "^$H.gpubin\(.tmp\)\?$" || true)
[ -z "$left" ] || die "temporary files left: $left"
stop_daemon

# the gpubins folder is a link to elsewhere: refused, nothing written there
mkdir -p "$T/p2" "$T/elsewhere"
ln -s "$T/elsewhere" "$T/p2/gpubins"
: > "$T/daemon.log"
start_daemon "$T/d2.sock" "$T/p2/d.gpdb"
"$CLIENT" gpubin "$T/d2.sock" 1 > "$T/c2.out" || die "client 2 failed"
for _ in $(seq 1 400); do grep -q "symbolic link" "$T/daemon.log" && break; sleep 0.05; done
grep -q "gpubins: is a symbolic link" "$T/daemon.log" || { cat "$T/daemon.log"; die "linked gpubins folder not refused"; }
[ -z "$(ls -A "$T/elsewhere")" ] || die "written through the linked folder: $(ls "$T/elsewhere")"
stop_daemon

# a gpubins folder of another user (or writable by others): refused
mkdir -p "$T/p3/gpubins"; chown 65534 "$T/p3/gpubins"
: > "$T/daemon.log"
start_daemon "$T/d3.sock" "$T/p3/d.gpdb"
"$CLIENT" gpubin "$T/d3.sock" 1 > "$T/c3.out" || die "client 3 failed"
for _ in $(seq 1 400); do grep -q "owned by uid" "$T/daemon.log" && break; sleep 0.05; done
grep -q "gpubins is owned by uid 65534" "$T/daemon.log" || { cat "$T/daemon.log"; die "foreign gpubins folder not refused"; }
[ -z "$(ls -A "$T/p3/gpubins")" ] || die "written into the foreign folder"
stop_daemon
echo "PASS gpubin-files"

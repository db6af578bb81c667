#!/bin/bash
# safe-open.sh SYMRES EXE - the symbolizer opens client-named module paths
# safely (daemon/symbols.c): as the process owner (a 0600 or 0640 root file
# is not symbolized for user gpdsym1 but is for root, in the same process,
# in either order), only regular files (a FIFO answers at once with no
# frames), never through a symlink planted by another user (gpdsym2).
# EXE: a binary with debug info and a function phase_c.  Needs root (77).
set -u
SYMRES=$1 EXE=$2
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root"; exit 77; }
command -v useradd >/dev/null || { echo "SKIP: no useradd"; exit 77; }
for u in gpdsym1 gpdsym2; do
  id "$u" >/dev/null 2>&1 || useradd -M "$u" || { echo "FAIL: useradd $u"; exit 1; }
done
U1=$(id -u gpdsym1) G1=$(id -g gpdsym1)
T=$(mktemp -d /tmp/gpd-symsafe.XXXXXX)
trap 'rm -rf "$T"' EXIT
chmod 0755 "$T"
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
OFF=$(printf '0x%x' $((0x$(nm "$EXE" | awk '$3 == "phase_c" {print $1}') + 4)))
[ "$OFF" != 0x4 ] || { echo "FAIL: no phase_c in $EXE"; exit 1; }
cp "$EXE" "$T/root-only"; chmod 0600 "$T/root-only"
cp "$EXE" "$T/root-group"; chown root:root "$T/root-group"; chmod 0640 "$T/root-group"
cp "$EXE" "$T/public"; chmod 0644 "$T/public"
mkfifo "$T/fifo"; chmod 0666 "$T/fifo"
ln -s "$T/public" "$T/link-other"; chown -h gpdsym2 "$T/link-other"
ln -s "$T/public" "$T/link-own"; chown -h gpdsym1 "$T/link-own"
ln -s public "$T/link-root"
mkdir "$T/dir"

# run SYMRES ARGS... with a deadline (a blocked open would hang here)
res() { timeout 20 "$SYMRES" "$@"; local rc=$?; [ $rc = 0 ] || fail "symres $* exited $rc"; }
first() { # uid path -> the outermost function or "none"
  awk -v u="$1" '$1 == u && ($3 == "none" || $3 == "0") {print ($3 == "none" ? "none" : substr($4, 1, index($4, "|") - 1)); exit}'
}
want() { # label got expected
  if [ "$2" = "$3" ]; then echo "ok   $1: $2"; else fail "$1: got '$2', want '$3'"; fi
}

out=$(res -u "$U1" -g "$G1" -p "$T/root-only" "$OFF" -u 0 -g 0 "$OFF" -u "$U1" -g "$G1" "$OFF")
want "0600 root file for gpdsym1 (first)" "$(echo "$out" | sed -n 1p | awk '{print $3}')" none
want "0600 root file for root" "$(echo "$out" | first 0)" phase_c
want "0600 root file for gpdsym1 (after root, cached)" "$(echo "$out" | tail -1 | awk '{print $3}')" none
out=$(res -u 0 -g 0 -p "$T/root-only" "$OFF" -u "$U1" -g "$G1" "$OFF")
want "0600 root file for gpdsym1 (root first)" "$(echo "$out" | first "$U1")" none
out=$(res -u "$U1" -g "$G1" -p "$T/root-group" "$OFF")
want "0640 root:root file for gpdsym1" "$(echo "$out" | first "$U1")" none
out=$(res -u "$U1" -g "$G1" -p "$T/public" "$OFF")
want "0644 file for gpdsym1" "$(echo "$out" | first "$U1")" phase_c
start=$(date +%s%N)
out=$(res -u "$U1" -g "$G1" -p "$T/fifo" 0x10 -u 0 -g 0 0x10)
ms=$((($(date +%s%N) - start) / 1000000))
want "FIFO for gpdsym1" "$(echo "$out" | first "$U1")" none
want "FIFO for root" "$(echo "$out" | first 0)" none
[ "$ms" -lt 10000 ] || fail "FIFO took $ms ms"
out=$(res -u "$U1" -g "$G1" -p "$T/link-other" "$OFF" -u 0 -g 0 "$OFF")
want "symlink of gpdsym2 for gpdsym1" "$(echo "$out" | first "$U1")" none
want "symlink of gpdsym2 for root" "$(echo "$out" | first 0)" none
out=$(res -u "$U1" -g "$G1" -p "$T/link-own" "$OFF")
want "gpdsym1's own symlink for gpdsym1" "$(echo "$out" | first "$U1")" phase_c
out=$(res -u "$U1" -g "$G1" -p "$T/link-root" "$OFF")
want "root's symlink (soname style) for gpdsym1" "$(echo "$out" | first "$U1")" phase_c
out=$(res -u "$U1" -g "$G1" -p "$T/dir" "$OFF" -p "relative/path" "$OFF" -p "$T/missing" "$OFF")
want "directory, relative and missing paths" "$(echo "$out" | awk '{print $3}' | tr '\n' ' ')" "none none none "
[ $fails = 0 ] && echo PASS || { echo "FAILED: $fails"; exit 1; }

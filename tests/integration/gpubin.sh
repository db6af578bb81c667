#!/usr/bin/env bash
# GPU binaries: handed to the shim at module load, sent once per content
# hash in 1 MiB chunks, stored as gpubins/<hash>.gpubin beside the profile,
# listed in the gpubin table and by `gpuprof report`.  The program ends
# right after handing them over: the shim's exit sends what is queued.
source "$(dirname "$0")/lib.sh" "$1"
APP=$(app gpubin-send)
mkdir -p "$T/exp" "$T/prof"
"$GPUPROF" record -o "$T/prof/g.gpdb" -- "$APP" "$T/exp" > "$T/out.txt" 2>&1 || { cat "$T/out.txt"; die "record failed"; }
grep -qx "gpubin 0 0 0" "$T/out.txt" || { cat "$T/out.txt"; die "gpd_shim_gpubin failed"; }
ls -la "$T/prof/gpubins" || die "no gpubins folder beside the profile"
n=$(ls "$T/prof/gpubins" | grep -c "^[0-9a-f]\{32\}\.gpubin$" || true)
[ "$n" -eq 2 ] || die "expected 2 stored binaries, found $n"
for f in big small; do
  m=""
  for g in "$T"/prof/gpubins/*.gpubin; do cmp -s "$g" "$T/exp/$f.bin" && m=$g; done
  [ -n "$m" ] || die "$f.bin not stored byte for byte"
  echo "$f.bin stored as $(basename "$m")"
done
rows=$($GPDQ "$T/prof/g.gpdb" sql "select kind, size, path from gpubin order by size")
echo "gpubin rows: $rows"
grep -q '"cubin", 4096, "gpubins/' <<<"$rows" || die "small binary row missing"
grep -q "\"cubin\", $(( (5<<20)/2 + 123 )), \"gpubins/" <<<"$rows" || die "big binary row missing"
"$GPUPROF" report "$T/prof/g.gpdb" > "$T/report.txt"
grep -qi "gpubins/" "$T/report.txt" || { cat "$T/report.txt"; die "report does not list the GPU binaries"; }
# a second profile beside the first, loading the same binaries: nothing is
# stored twice, and its own table lists them too
"$GPUPROF" record -o "$T/prof/h.gpdb" -- "$APP" "$T/exp" > "$T/out2.txt" 2>&1 || { cat "$T/out2.txt"; die "second record failed"; }
[ "$(ls "$T/prof/gpubins" | wc -l)" -eq 2 ] || die "binaries stored twice: $(ls "$T/prof/gpubins")"
n2=$($GPDQ "$T/prof/h.gpdb" sql "select count(*) from gpubin")
[ "$n2" = "[[2]]" ] || die "second profile lists $n2 binaries, expected 2"
echo "PASS gpubin"

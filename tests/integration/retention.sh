#!/usr/bin/env bash
# Retention: the store is bounded by age and by size; the oldest finished
# profiles go first; a running process's profile is never removed.
source "$(dirname "$0")/lib.sh" "$1"
have_opencl
APP=$(app ocl-steady)
db_pids() { $GPDQ "$1" sql "select pid from profile order by id" | tr -d '[]' | tr ',' ' '; }

# 1. by age: profiles finished more than 2 s ago are removed
printf '[store]\nretention_max_age_s = 2\nflush_interval_ms = 100\n' > "$T/age.conf"
start_daemon "$T/a.sock" "$T/a.gpdb" --config "$T/age.conf"
preload_bg "$T/a.sock" "$T/long.out" sleep 30; long=$APID
old=()
for i in 1 2 3; do preload_bg "$T/a.sock" "$T/o$i.out" "$APP" 3 0; wait $APID; old+=($APID); done
sleep 3.5
preload_bg "$T/a.sock" "$T/new.out" "$APP" 3 0; wait $APID; new=$APID
sleep 0.5
left=$(db_pids "$T/a.gpdb")
echo "stored pids: $left (old: ${old[*]}, new: $new, running: $long)"
for p in "${old[@]}"; do echo " $left " | grep -qw "$p" && die "profile of $p (finished > 2 s ago) kept"; done
echo " $left " | grep -qw "$new" || die "newest profile $new removed"
echo " $left " | grep -qw "$long" || die "running process $long removed"
kill $long; stop_daemon

# 2. by size: a bound smaller than one profile leaves only what runs
printf '[store]\nretention_max_bytes = 1\nflush_interval_ms = 100\n' > "$T/size.conf"
start_daemon "$T/b.sock" "$T/b.gpdb" --config "$T/size.conf"
preload_bg "$T/b.sock" "$T/long2.out" sleep 30; long=$APID
for i in 1 2 3 4 5; do preload_bg "$T/b.sock" "$T/s$i.out" "$APP" 3 0; wait $APID; done
sleep 0.5
left=$(db_pids "$T/b.gpdb")
echo "stored pids with a 1-byte bound: $left (running: $long)"
[ "$(echo $left)" = "$long" ] || die "expected only the running process $long, got: $left"
kill $long; stop_daemon
echo "PASS retention"

#!/usr/bin/env bash
# Retention: the store is bounded by age and by size; the oldest finished
# profiles go first; a running process's profile is never removed.
source "$(dirname "$0")/lib.sh" "$1"
have_opencl
APP=$(app ocl-steady)
A=10 # max age (s): a young profile is looked for while younger than this,
     # so A bounds how long storing may take on a loaded machine

# 1. by age: profiles finished more than A s ago are removed
printf '[daemon]\nlog_level = info\n[store]\nretention_max_age_s = %d\nflush_interval_ms = 100\n' $A > "$T/age.conf"
start_daemon "$T/a.sock" "$T/a.gpdb" --config "$T/age.conf"
preload_bg "$T/a.sock" "$T/long.out" sleep 300; long=$APID
wait_for "$WAIT" "profile of the running process $long stored" db_has "$T/a.gpdb" "$long"
old=()
for i in 1 2 3; do
  preload_bg "$T/a.sock" "$T/o$i.out" "$APP" 3 0; o=$APID
  wait_exit "$o" "app $o"
  [ "$RC" -eq 0 ] || { cat "$T/o$i.out.err"; die "app $o exited $RC"; }
  # stored (and younger than A s, so it must be there)
  wait_for $A "finished profile of $o stored" db_exited "$T/a.gpdb" "$o" tick 3
  old+=("$o")
done
wait_for $((A + WAIT)) "profiles of ${old[*]} removed once older than $A s" db_lacks "$T/a.gpdb" "${old[@]}"
db_has "$T/a.gpdb" "$long" || die "running process $long removed: $(cat "$T/wait.out")"
preload_bg "$T/a.sock" "$T/new.out" "$APP" 3 0; new=$APID
wait_exit "$new" "app $new"
wait_for $A "newest profile $new stored" db_exited "$T/a.gpdb" "$new" tick 3
db_has "$T/a.gpdb" "$long" || die "running process $long removed"
db_lacks "$T/a.gpdb" "${old[@]}" || die "old profiles came back"
echo "stored pids: $(db_pids "$T/a.gpdb") (old: ${old[*]}, new: $new, running: $long)"
kill "$long"; stop_daemon

# 2. by size: a bound smaller than one profile leaves only what runs
: > "$T/daemon.log"
printf '[daemon]\nlog_level = info\n[store]\nretention_max_bytes = 1\nflush_interval_ms = 100\n' > "$T/size.conf"
start_daemon "$T/b.sock" "$T/b.gpdb" --config "$T/size.conf"
preload_bg "$T/b.sock" "$T/long2.out" sleep 300; long=$APID
wait_for "$WAIT" "profile of the running process $long stored" db_has "$T/b.gpdb" "$long"
apps=()
for i in 1 2 3 4 5; do
  preload_bg "$T/b.sock" "$T/s$i.out" "$APP" 3 0; a=$APID
  wait_exit "$a" "app $a"
  [ "$RC" -eq 0 ] || { cat "$T/s$i.out.err"; die "app $a exited $RC"; }
  apps+=("$a")
done
# each app registered, at least 5 profiles removed, and only the running one left
only_running_left() {
  local p
  for p in "${apps[@]}"; do file_has "$T/daemon.log" "registered pid $p\b" || { echo "$p not registered"; return 1; }; done
  local removed
  removed=$(grep -c "retention removed profile" "$T/daemon.log" || true)
  echo "profiles removed: $removed; stored pids: $(db_pids "$T/b.gpdb")"
  [ "$removed" -ge 5 ] && [ "$(echo $(db_pids "$T/b.gpdb"))" = "$long" ]
}
wait_for "$WAIT" "with a 1-byte bound only the running process $long stored" only_running_left
cat "$T/wait.out"
kill "$long"; stop_daemon
echo "PASS retention"

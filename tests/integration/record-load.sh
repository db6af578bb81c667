#!/usr/bin/env bash
# `gpuprof record` loses nothing while the CPU is saturated: ocl-loop
# (N launches of `tiny` + 100 of warm-up) recorded with 2 busy loops beside
# it and 1 024-slot rings (given to the private daemon through
# GPUPROF_DAEMON, a wrapper adding a config): the application fills its
# ring (~3 slots per launch) far faster than a starved monitor drains it,
# so the daemon's release on consume and the shim's bounded wait for room
# must carry it (without them: tens of thousands of drops,
# bench/bench-record-load.sh).  0 dropped records, exactly N + 100 launches
# of tiny, one process.  The shim's stats (GPUPROF_SHIM_STATS) say how
# often it waited.  N = 10000, 3000 in an ASan build (several times slower).
source "$(dirname "$0")/lib.sh" "$1"
have_opencl
LOOP=$(app ocl-loop)
N=10000
grep -q '^GPD_ASAN:BOOL=ON' "$BUILD/CMakeCache.txt" 2>/dev/null && N=3000
BUSY=()
for _ in 1 2; do
  (trap 'exit 0' TERM; while :; do :; done) &
  BUSY+=($!)
done
cat >"$T/gpuprofd" <<EOS
#!/usr/bin/env bash
exec "$GPUPROFD" --config "$T/small.conf" "\$@"
EOS
chmod +x "$T/gpuprofd"
printf '[shm]\nring_slots = 1024\n' >"$T/small.conf"
rc=0
GPUPROF_DAEMON=$T/gpuprofd GPUPROF_SHIM_STATS=1 \
  "$GPUPROF" record -o "$T/r.gpdb" -- "$LOOP" $N 100 >"$T/out" 2>"$T/err" || rc=$?
kill -TERM "${BUSY[@]}"
wait "${BUSY[@]}" 2>/dev/null || true
[ $rc -eq 0 ] || { cat "$T/out" "$T/err"; die "record exited $rc"; }
grep -h 'launches\|dropped\|waited for room' "$T/out" "$T/err"
$GPDQ "$T/r.gpdb" processes 1
$GPDQ "$T/r.gpdb" drops 0
$GPDQ "$T/r.gpdb" kernel-count tiny $((N + 100))
echo "PASS record-load"

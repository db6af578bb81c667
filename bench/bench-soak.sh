#!/usr/bin/env bash
# bench-soak.sh BUILD_DIR [PROCS] [OPS] [SECS]: victims beside an attacker
# (issue 23, "Done means": 16 processes x 100 000 ops/s for 10 minutes).
#
# PROCS victim processes (test-daemon-client victim, as the user running
# this: one op = one kernel INVOKE + ACTIVITY pushed as the shim pushes,
# never waiting, a full ring drops) at OPS ops/s each for SECS seconds,
# against one gpuprofd, in two scenarios:
#   quiet    nothing else
#   attack   at the same time, as another uid (nobody, when run as root):
#            - correlation flood: INVOKEs whose activities never come,
#              200 000/s for SECS;
#            - symbolization: three processes naming 20 000 call sites each
#              in a 20 000-function -g binary (tests/apps/store-bigdebug);
#            - retention limit: the store is capped (SOAK_RETAIN, default
#              8M) and the attacker fills it with short processes of
#              20 000 ops each, one after the other, for SECS;
#            - forged job id: every attacker process claims the victims' job
#              id (test-daemon-client's Hello says job42 for all);
#            - big live traces: an attacker process as busy as one victim,
#              traced live (`gpuprof trace --pid P --duration 5s`) over and
#              over for SECS.
# Prints, per scenario, one row per victim (ops pushed, records dropped,
# kernels stored, the writer's lag for that process: seconds from its exit
# until its profile is stored exited with every kernel, polled every
# 0.25 s) and one summary row: drops in total, the writer's flush (snapshot
# to ring release, mean and longest, from its stop line), its longest hold
# of the daemon lock, the journal's peak, the daemon's peak RSS (VmHWM),
# and for the attack: store size, attacker profiles the retention deleted,
# live traces written / asked, attacker processes an admin's
# `ps --all --job job42` lists.
# Needs only the build's bin/ and tests/apps (test-daemon-client is found
# anywhere under BUILD_DIR; a lib/ beside bin/ goes with the attacker's
# copies; an `offsets` file in BUILD_DIR replaces nm), python3 with its
# sqlite3 module, awk and coreutils; runs from the folder that
# bench/soak-bundle.sh makes. Each scenario takes SECS plus the settle
# (at most SOAK_SETTLE) plus a few seconds.
# Defaults: 16 x 100 000 x 600; SOAK_SCENARIOS="quiet" runs one of them.
# Environment: SOAK_SCENARIOS (default "quiet attack"), SOAK_MONITORS (the
# daemon's [monitor] threads, default 1; up to 8), SOAK_SETTLE (seconds the
# watch waits after the last victim's exit for its profile to be stored,
# default 120), SOAK_RETAIN (the store's cap, default 8M), SOAK_KEEP
# (non-empty: keep the scenarios' folders, printed at the end), SOAK_OUT
# (a file: the header, every table and a last line "# bench-soak done" are
# appended to it as well as printed, and each scenario's daemon log is
# copied to SOAK_OUT.SCENARIO.log; for a run started with
# `setsid nohup ... &` and collected later).
set -uo pipefail
b=$(cd "${1:?usage: bench-soak.sh BUILD_DIR [PROCS] [OPS] [SECS]}" && pwd)
procs=${2:-16} ops=${3:-100000} secs=${4:-600}
retain=${SOAK_RETAIN:-8M} monitors=${SOAK_MONITORS:-1} settle=${SOAK_SETTLE:-120} sout=${SOAK_OUT:-}
# say LINE...: printed, and appended to SOAK_OUT when set
say() { printf '%s\n' "$@"; [ -z "$sout" ] || printf '%s\n' "$@" >>"$sout"; }
client=$(find "$b" -type f -perm -u+x -name test-daemon-client -print -quit)
big=$(find "$b" -type f -perm -u+x -name store-bigdebug -print -quit)
[ -n "$client" ] && [ -n "$big" ] && [ -x "$b/bin/gpuprofd" ] && [ -x "$b/bin/gpuprof" ] ||
  { say "bench-soak: needs bin/gpuprofd, bin/gpuprof, test-daemon-client and store-bigdebug under $b"; exit 1; }
python3 -c "import sqlite3" 2>/dev/null || { say "bench-soak: needs python3 with its sqlite3 module"; exit 1; }
tmp=$(mktemp -d)
chmod 755 "$tmp"
# the attacker runs copies it can read (a private build tree stands in the
# way), beside the libraries a bundle's programs find at $ORIGIN/../lib
mkdir -p "$tmp/bin"
cp "$client" "$big" "$b/bin/gpuprof" "$tmp/bin/"
[ ! -d "$b/lib" ] || [ -e "$b/CMakeCache.txt" ] || cp -r "$b/lib" "$tmp/lib"
chmod -R a+rX "$tmp"
client=$tmp/bin/test-daemon-client big=$tmp/bin/store-bigdebug gp=$tmp/bin/gpuprof
dpid=
cleanup() {
  local rc=$?
  [ "$rc" = 0 ] || say "# bench-soak ended early (status $rc)"
  [ -z "$dpid" ] || kill -9 "$dpid" 2>/dev/null
  jobs -p | xargs -r kill -9 2>/dev/null
  [ -n "${SOAK_KEEP:-}" ] || rm -rf "$tmp"
}
trap cleanup EXIT
as=()
if [ "$(id -u)" = 0 ]; then
  command -v setpriv >/dev/null || { say "bench-soak: run as root, needs setpriv for the attacker's uid"; exit 1; }
  as=(setpriv --reuid=65534 --regid=65534 --clear-groups)
fi
if [ -s "$b/offsets" ]; then
  cp "$b/offsets" "$tmp/offsets"
else
  nm "$big" 2>/dev/null | while read -r addr type name; do
    if [ "$type" = T ] && [ "${name#f_}" != "$name" ]; then printf '%x\n' $((16#$addr + 4)); fi
  done >"$tmp/offsets"
fi
[ -s "$tmp/offsets" ] || { say "bench-soak: no f_* symbols in $big (nm missing? a bundle has them in offsets)"; exit 1; }
chmod a+r "$tmp/offsets"

# watch DIR DB DPID SETTLE OUT...: until every victim's profile is stored exited
# with all its kernels or removed by the retention (DIR/log says so), or
# SETTLE s after the last exit: per victim "ID DROPS KERNELS LAG" (KERNELS
# "removed", LAG until then, for a removed one), then "JOURNAL_PEAK
# RSS_PEAK_KB STORE_PEAK" (the store: the database file, its WAL and
# gpubins/, sampled every 0.25 s)
watch() {
  python3 - "$@" <<'PY'
import os, sqlite3, sys, time
d, db, dpid, settle, outs = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), sys.argv[5:]
done, stored, jmax, hwm, smax, last_exit = {}, {}, 0, 0, 0, None
removed, logpos = set(), 0
def du(p):
    t = 0
    for r, _, fs in os.walk(p):
        for f in fs:
            try: t += os.lstat(os.path.join(r, f)).st_size
            except OSError: pass
    return t
def kernels(c, pid):
    return c.execute("select coalesce(sum(m.value),0), (select state from profile where id=?1) from metric m "
                     "join metric_desc x on x.id=m.metric_id where x.name='GKER:COUNT' and m.profile_id=?1",
                     (pid,)).fetchone()
while True:
    now = time.monotonic()
    jmax = max(jmax, du(os.path.join(d, "journal")))
    sz = du(os.path.join(d, "gpubins"))
    for f in (db, db + "-wal"):
        try: sz += os.stat(f).st_size
        except OSError: pass
    smax = max(smax, sz)
    try:
        for l in open("/proc/%s/status" % dpid):
            if l.startswith("VmHWM:"): hwm = int(l.split()[1])
    except OSError: pass
    for o in outs:
        if o in done: continue
        try: w = open(o).read().split()
        except OSError: continue
        if len(w) >= 4 and w[0] == "DONE":
            done[o] = (int(w[1]), int(w[3]), now)
            last_exit = now
    try:
        with open(os.path.join(d, "log"), "rb") as lf:
            lf.seek(logpos)
            chunk = lf.read()
            end = chunk.rfind(b"\n") + 1
            logpos += end
        for l in chunk[:end].decode(errors="replace").splitlines():
            w = l.split("retention removed profile ")
            if len(w) > 1 and w[1].split() and w[1].split()[0].isdigit():
                removed.add(int(w[1].split()[0]))
    except OSError:
        pass
    for o, (pid, dr, t) in done.items():
        if o not in stored and pid in removed:
            stored[o] = ("removed", now - t)
    if done and os.path.exists(db):
        try:
            c = sqlite3.connect("file:%s?mode=ro" % db, uri=True, timeout=10)
            for o, (pid, dr, t) in done.items():
                if o in stored: continue
                k, st = kernels(c, pid)
                n = int(open(o + ".n").read())
                if st == "exited" and int(k) >= n - dr:  # a dropped record loses at most one kernel
                    stored[o] = (str(int(k)), now - t)
            c.close()
        except sqlite3.Error:
            pass
    if len(stored) == len(outs) or (last_exit and len(done) == len(outs) and now - last_exit > settle):
        break
    time.sleep(0.25)
for o in outs:
    pid, dr, _ = done.get(o, (0, -1, 0))
    k, lag = stored.get(o, ("-1", -1.0))
    print(pid, dr, k, "%.2f" % lag)
print(jmax, hwm, smax)
PY
}

run() { # scenario
  local sc=$1 d=$tmp/$1 start=$SECONDS
  say "# $sc: started $(date -u +%H:%M:%SZ), load $(cut -d' ' -f1-3 /proc/loadavg)"
  mkdir -p "$d/att"
  chmod 755 "$d"
  chmod 1777 "$d/att"
  printf '[store]\nretention_max_bytes = %s\n[monitor]\nthreads = %s\n' "$retain" "$monitors" >"$d/conf"
  GPUPROF_LOG=info GPUPROF_LOG_TIME=1 "$b/bin/gpuprofd" --foreground --socket "$d/s" --db "$d/p.gpdb" --state-dir "$d/state" \
    --config "$d/conf" >"$d/log" 2>&1 &
  dpid=$!
  for _ in $(seq 1 200); do [ -S "$d/s" ] && break; sleep 0.05; done
  [ -S "$d/s" ] || { say "bench-soak: daemon did not start: $(cat "$d/log")"; exit 1; }
  local apids=() fill=0 traced=0 asked=0
  if [ "$sc" = attack ]; then
    mkfifo "$d/f.in" "$d/a.in"
    "${as[@]}" "$client" "$d/s" flood $((200000 * secs)) 200000 <"$d/f.in" >"$d/flood.out" 2>&1 &
    apids+=($!)
    for k in 1 2 3; do
      "${as[@]}" "$client" "$d/s" frames "$big" "$tmp/offsets" <"$d/a.in" >"$d/frames$k.out" 2>&1 &
      apids+=($!)
    done
    "${as[@]}" "$client" "$d/s" victim $((ops * secs)) "$ops" >"$d/busy.out" 2>&1 &
    local busy=$!
    apids+=($busy)
    exec {fi}>"$d/f.in" {ai}>"$d/a.in"
    ( # retention: short processes one after the other
      end=$((SECONDS + secs)) n=0
      while [ $SECONDS -lt $end ]; do "${as[@]}" "$client" "$d/s" honest 20000 >/dev/null 2>&1; n=$((n + 1)); done
      echo "$n" >"$d/fill.n"
    ) &
    apids+=($!)
    ( # big live traces of the attacker's own busy process
      end=$((SECONDS + secs - 5)) k=0 ok=0
      while [ $SECONDS -lt $end ] && kill -0 "$busy" 2>/dev/null; do
        k=$((k + 1))
        "${as[@]}" "$gp" --socket "$d/s" trace --pid "$busy" --duration 5s -o "$d/att/t.pftrace" \
          >>"$d/trace.err" 2>&1 && ok=$((ok + 1))
        rm -f "$d/att/t.pftrace"
      done
      echo "$ok $k" >"$d/trace.n"
    ) &
    apids+=($!)
  fi
  local outs=()
  for i in $(seq 1 "$procs"); do
    echo $((ops * secs)) >"$d/v$i.out.n"
    "$client" "$d/s" victim $((ops * secs)) "$ops" >"$d/v$i.out" 2>&1 &
    outs+=("$d/v$i.out")
  done
  local jobrows=-1
  if [ "$sc" = attack ]; then
    sleep $((secs / 2 > 0 ? secs / 2 : 1))
    jobrows=$("$b/bin/gpuprof" --socket "$d/s" ps --all --job job42 2>&1 | awk '$2 == "nobody" || $2 == "65534"' | wc -l)
  fi
  watch "$d" "$d/p.gpdb" "$dpid" "$settle" "${outs[@]}" >"$d/watch.out"
  if [ "$sc" = attack ]; then
    exec {fi}>&- {ai}>&-
    wait "${apids[@]}" 2>/dev/null
    fill=$(cat "$d/fill.n" 2>/dev/null || echo 0)
    read -r traced asked <"$d/trace.n" 2>/dev/null || true
  fi
  local t0=$SECONDS
  kill -TERM "$dpid"
  wait "$dpid"
  dpid=
  local stop=$((SECONDS - t0))
  local drops=0 i=0 jmax hwm smax row
  say "### $sc: $procs victims x $ops ops/s x $secs s ($(date -u +%H:%M:%SZ))" \
    "| victim | profile | ops pushed | records dropped | kernels stored | writer lag (exit to stored) |" \
    "|---|---|---|---|---|---|"
  while read -r id dr k lag; do
    i=$((i + 1))
    row=$(printf '| %d | %s | %d | %s | %s | %s s |' "$i" "$id" $((ops * secs)) "$dr" "$k" "$lag")
    # a finished profile the retention removed before the watch saw it stored
    [ "$k" != removed ] || row=$(printf '| %d | %s | %d | %s | removed by retention | %s s (exit to removal) |' \
      "$i" "$id" $((ops * secs)) "$dr" "$lag")
    say "$row"
    drops=$((drops + (dr > 0 ? dr : 0)))
  done < <(head -n "$procs" "$d/watch.out")
  read -r jmax hwm smax < <(tail -1 "$d/watch.out")
  local wr lk size left
  wr=$(grep -o 'snapshot to ring release [0-9.]* ms mean, [0-9.]* ms max' "$d/log" | sed 's/snapshot to ring release //')
  lk=$(grep -o 'hold of the daemon lock [0-9.]* ms' "$d/log" | grep -o '[0-9.]* ms')
  size=$(du -sbc "$d/p.gpdb" "$d/p.gpdb-wal" "$d/gpubins" 2>/dev/null | tail -1 | cut -f1)
  left=$(python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); print(c.execute("select count(*) from profile where uid=65534").fetchone()[0])' "$d/p.gpdb")
  say "" \
    "| scenario | records dropped (all victims) | writer flush (mean, max) | longest lock hold | journal peak | daemon RSS peak | store at the end, peak | attacker: fill processes, profiles left, profiles retention removed (any uid) | live traces written / asked | attacker rows in ps --job job42 |" \
    "|---|---|---|---|---|---|---|---|---|---|"
  say "$(awk -v sc="$sc" -v dr="$drops" -v wr="${wr:-?}" -v lk="${lk:-?}" -v j="${jmax:-0}" -v h="${hwm:-0}" \
    -v sz="${size:-0}" -v sm="${smax:-0}" -v cap="$retain" -v f="${fill:-0}" -v l="$left" \
    -v rm="$(grep -c 'retention removed profile' "$d/log")" -v t="${traced:-0} / ${asked:-0}" -v jr="$jobrows" \
    'BEGIN {printf "| %s | %d | %s | %s | %.1f MiB | %.0f MiB | %.1f, %.1f MiB (cap %s) | %s, %s, %s | %s | %s |\n",
      sc, dr, wr, lk, j / 1048576, h / 1024, sz / 1048576, sm / 1048576, cap, f, l, rm, t, jr}')" ""
  say "longest monitor pass: $(grep -o 'monitor: longest pass [0-9.]* ms' "$d/log" | grep -o '[0-9.]* ms'); retention's longest stretch without a flush point: $(grep -o 'without a flush point [0-9.]* ms' "$d/log" | grep -o '[0-9.]* ms'); victims' uid over its journal budget: $(grep -o 'journal: uid 0 has.*(\([0-9]*\) spans so' "$d/log" | tail -1 | grep -o '([0-9]* spans' | tr -d '(') " \
    "" "daemon: exited $stop s after SIGTERM; scenario took $((SECONDS - start)) s" ""
  [ -z "$sout" ] || cp "$d/log" "$sout.$sc.log"
}

say "# bench-soak — $(date -u +%Y-%m-%dT%H:%M:%SZ) — $(uname -n): $(nproc) cores ($(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)), $(awk '/^MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo), load $(cut -d' ' -f1-3 /proc/loadavg)" \
  "# $procs victims x $ops ops/s x $secs s; scenarios: ${SOAK_SCENARIOS:-quiet attack}; [monitor] threads $monitors; cap $retain; settle $settle s; attacker uid $([ ${#as[@]} -gt 0 ] && echo 65534 || id -u); build $b" ""
for sc in ${SOAK_SCENARIOS:-quiet attack}; do run "$sc"; done
say "# bench-soak done — $(date -u +%Y-%m-%dT%H:%M:%SZ), load $(cut -d' ' -f1-3 /proc/loadavg)"
[ -z "${SOAK_KEEP:-}" ] || echo "bench-soak: kept $tmp"

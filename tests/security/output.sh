#!/bin/sh
# output.sh - what another user's data and files can do to root's gpuprof
# (issue 23: terminal escapes, Prometheus, -o through links, hostile .gpdb).
#
# 1. gpdsec1 registers a process (a hostile client speaking the real
#    protocol) whose exe is /bin/x ESC[2J ESC[H ESC]0;pwned BEL CR LF and a
#    forged ps line, and whose job id is job-\xff\xfe ESC[31m; a fake NVML
#    puts it on GPU 0.  Root's
#    `ps`, `devices`, an Error naming the job, and `report` of a .gpdb whose
#    labels, exe and job hold the same bytes: valid UTF-8 without a control
#    byte, the bytes shown as \xNN; `report --json` is valid JSON with the
#    same text; `devices --prometheus` parses (prometheus_client) with the
#    job label `job-\xff\xfe\x1b[31m`.
# 2. In a sticky shared directory gpdsec1 plants a link to root's file, a
#    link to /dev/null and a FIFO under the names root writes with -o
#    (export, trace, merge): each refused with a clear error, exit 1, the
#    link's target untouched, nothing left behind; a plain -o is written
#    with mode 0644 (umask 022).
# 3. A .gpdb whose `context` is a view over an endless recursive CTE: every
#    reading command exits 1 within 10 s naming the view; a legitimate
#    20 000-context profile read with GPUPROF_READ_TIMEOUT=0.001 stops with
#    the deadline's message.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd setpriv
$PY -c 'import prometheus_client.parser' 2>/dev/null || skip "python3-prometheus-client not installed (scripts/deps)"
id gpdsec1 >/dev/null 2>&1 || useradd -M gpdsec1 || fail "useradd gpdsec1"
cp "$GPD_SRC_DIR/tests/security/textcheck.py" "$T/bin/"
chmod a+rX "$T/bin/textcheck.py"
CHECK="$PY $T/bin/textcheck.py"
G="$T/bin/gpuprof"
EXE='/bin/x\x1b[2J\x1b[H\x1b]0;pwned\x07\r\n    1 root FORGED'
JOB='job-\xff\xfe\x1b[31m'
# the same as sanitized text: what root must see
EXE_SHOWN='/bin/x\x1b[2J\x1b[H\x1b]0;pwned\x07\x0d\x0a    1 root FORGED'
JOB_SHOWN='job-\xff\xfe\x1b[31m'

# ---- 1. terminal and Prometheus ----
start_daemon_nvml
as_bg gpdsec1 $PY "$HOSTILE" hello "$S" "$EXE" "$JOB" "$T/release" >"$T/h.out" 2>&1 &
HP=$!
track $HP
wait_for "$T/h.out" '^(profile|refused)' 100 || fail "hostile hello: $(cat "$T/h.out")"
grep -q '^profile [1-9]' "$T/h.out" || fail "hostile hello refused: $(cat "$T/h.out")"
printf '0 %d 1073741824 25 5\n' "$HP" >"$T/procs.tmp" && mv "$T/procs.tmp" "$T/procs"

"$G" --socket "$S" ps --all >"$T/ps.out" 2>&1 || fail "root ps: $(cat "$T/ps.out")"
$CHECK text "$T/ps.out" "$EXE_SHOWN" "$JOB_SHOWN" || fail "root's ps: $(od -c "$T/ps.out" | head -20)"
grep -q "^ *1 root FORGED" "$T/ps.out" && fail "a newline in the exe forged a line: $(cat "$T/ps.out")"
ok "ps: exe and job shown escaped"
prom_ok() {
  "$G" --socket "$S" devices --prometheus >"$T/p.txt" 2>&1 && $CHECK prom "$T/p.txt" job "$JOB_SHOWN(claimed)" >"$T/pc.out"
}
_n=100
until prom_ok; do
  _n=$((_n - 1))
  [ $_n -gt 0 ] || fail "--prometheus: $(cat "$T/pc.out"; head -c 3000 "$T/p.txt")"
  sleep 0.1
done
ok "devices --prometheus parses, job label $(cat "$T/pc.out")"
"$G" --socket "$S" devices >"$T/dev.out" 2>&1 || fail "devices: $(cat "$T/dev.out")"
$CHECK text "$T/dev.out" 'job-\xff\xfe\x1b[' || fail "devices text"
ok "devices text escaped"
# an Error reply that repeats the job id; and a live trace naming it
"$G" --socket "$S" trace -o "$T/tr.json" --job "$(printf 'j\033]0;t\007\377')" --duration 1s >"$T/err.out" 2>&1 &&
  fail "trace of a missing job succeeded"
$CHECK text "$T/err.out" 'j\x1b]0;t\x07\xff' || fail "error text: $(od -c "$T/err.out" | head)"
ok "error text escaped"
touch "$T/release"

mkgpdb() { # FILE SQL
  $PY - "$1" "$GPD_SRC_DIR/tests/cli/fixture.sql" "$2" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.executescript(open(sys.argv[2]).read())
c.executescript(sys.argv[3])
c.commit()
PY
}
BAD="X'6b1b5b324a1b5d303b70776e656407ff0d'" # k ESC[2J ESC]0;pwned BEL \xff CR
mkgpdb "$T/lab.gpdb" "UPDATE context SET label = CAST($BAD AS TEXT) WHERE label LIKE 'axpy_kernel%';
UPDATE frame SET function = CAST($BAD AS TEXT) WHERE function = 'solve';
UPDATE profile SET exe = CAST(X'2f62696e2f781b5b324a' AS TEXT), job_id = CAST(X'6a6f622dfffe' AS TEXT);"
"$G" report "$T/lab.gpdb" >"$T/rep.out" 2>&1 || fail "report: $(cat "$T/rep.out")"
$CHECK text "$T/rep.out" 'k\x1b[2J\x1b]0;pwned\x07\xff\x0d' '/bin/x\x1b[2J' 'job-\xff\xfe' ||
  fail "report: $(od -c "$T/rep.out" | grep -m3 033)"
"$G" report --json "$T/lab.gpdb" >"$T/rep.json" 2>&1 || fail "report --json"
$CHECK json "$T/rep.json" label "$(printf 'k\033[2J\033]0;pwned\a\\xff\r')" || fail "report --json"
ok "report and report --json escaped"

# ---- 2. -o never through another user's link or FIFO ----
mkdir -m 1777 "$T/shared"
printf 'precious\n' >"$T/victim"
mkgpdb "$T/ok.gpdb" ""
as gpdsec1 ln -s "$T/victim" "$T/shared/out.folded" || fail "plant link"
as gpdsec1 ln -s /dev/null "$T/shared/t.json" || fail "plant link"
as gpdsec1 ln -s "$T/victim" "$T/shared/m.gpdb" || fail "plant link"
as gpdsec1 mkfifo -m 0666 "$T/shared/fifo.folded" || fail "plant FIFO"
refused() { # what OUTFILE cmd...
  _what=$1 _out=$2
  shift 2
  timeout 20 "$G" "$@" >"$T/o.out" 2>&1
  _rc=$?
  [ $_rc = 1 ] || fail "$_what: exit $_rc, want 1: $(cat "$T/o.out")"
  grep -q "refusing to write $_out: it " "$T/o.out" || fail "$_what: no clear error: $(cat "$T/o.out")"
  [ "$(cat "$T/victim")" = precious ] || fail "$_what: victim overwritten"
  ok "$_what refused: $(cat "$T/o.out" | tail -1)"
}
refused "export -o link" "$T/shared/out.folded" export --format folded -o "$T/shared/out.folded" "$T/ok.gpdb"
[ -L "$T/shared/out.folded" ] || fail "link replaced"
refused "trace -o link to /dev/null" "$T/shared/t.json" trace --format chrome -o "$T/shared/t.json" "$T/ok.gpdb"
[ -c /dev/null ] && [ -L "$T/shared/t.json" ] || fail "/dev/null or the link changed"
# merge reads the current format only (tests/merge/gpdb.py writes it)
$PY - "$T/v2.gpdb" "$GPD_SRC_DIR/tests/merge" <<'PY' || fail "make v2.gpdb"
import sys
sys.path.insert(0, sys.argv[2])
import gpdb
gpdb.write(sys.argv[1], [dict(id=1, pid=10, uid=0, job="77", rank=0, values={(3, 0): 5.0})],
           [(0, 1, 0, 1, "main"), (0, 3, 1, 3, "kern")])
PY
refused "merge -o link" "$T/shared/m.gpdb" merge -o "$T/shared/m.gpdb" "$T/v2.gpdb"
refused "export -o FIFO" "$T/shared/fifo.folded" export --format folded -o "$T/shared/fifo.folded" "$T/ok.gpdb"
[ -p "$T/shared/fifo.folded" ] || fail "FIFO replaced"
(umask 022 && "$G" export --format folded -o "$T/shared/own.folded" "$T/ok.gpdb") >"$T/o.out" 2>&1 ||
  fail "plain export -o: $(cat "$T/o.out")"
[ "$(stat -c %a "$T/shared/own.folded")" = 644 ] || fail "mode $(stat -c %a "$T/shared/own.folded"), want 644"
grep -q axpy_kernel "$T/shared/own.folded" || fail "plain export -o: empty"
ls -A "$T/shared" | grep -q '^\.' && fail "temporary files left: $(ls -A "$T/shared")"
ok "plain -o written, 0644, no temporary file left"

# ---- 3. a hostile .gpdb ----
$PY - "$T/ok.gpdb" "$T/view.gpdb" <<'PY' || fail "make view.gpdb"
import shutil, sqlite3, sys
shutil.copy(sys.argv[1], sys.argv[2])
c = sqlite3.connect(sys.argv[2])
cols = [r[1] for r in c.execute("PRAGMA table_info(context)")]
c.execute("DROP TABLE context")
c.execute("CREATE VIEW context AS WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT "
          + ", ".join("n AS %s" % x for x in cols) + " FROM r")
c.commit()
PY
chmod 0644 "$T/view.gpdb"
hostile() { # what cmd...
  _what=$1
  shift
  _t0=$(date +%s)
  timeout 10 "$@" >"$T/v.out" 2>&1
  _rc=$?
  [ $_rc = 1 ] || fail "$_what: exit $_rc (124: hung), want 1: $(tail -3 "$T/v.out")"
  grep -q "view.gpdb: refused: it has a view 'context'" "$T/v.out" || fail "$_what: $(cat "$T/v.out")"
}
cd "$T" || fail "cd"
hostile "report" "$G" report view.gpdb
hostile "report --json" "$G" report --json view.gpdb
hostile "report --flat" "$G" report --flat view.gpdb
hostile "report --stats" "$G" report --stats view.gpdb
hostile "export folded" "$G" export --format folded view.gpdb
hostile "export speedscope" "$G" export --format speedscope view.gpdb
hostile "export pprof" "$G" export --format pprof -o "$T/v.pb.gz" view.gpdb
hostile "view" "$G" view --no-browser -o "$T/v.html" view.gpdb
hostile "trace" "$G" trace -o "$T/v.pftrace" view.gpdb
hostile "advise" "$G" advise view.gpdb
cp "$T/v2.gpdb" "$T/v2view.gpdb"
$PY -c 'import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute("DROP TABLE context"); c.execute("CREATE VIEW context AS WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT n AS uid, n AS id, n AS parent, n AS kind, n AS module, n AS build_id, n AS offset, n AS label, n AS raw_name FROM r"); c.commit()' "$T/v2view.gpdb" || fail "v2view"
mv "$T/v2view.gpdb" "$T/view.gpdb"
hostile "merge" "$G" merge -o "$T/vm.gpdb" view.gpdb
hostile "merge as gpdsec1" setpriv --reuid="$(id -u gpdsec1)" --regid="$(id -g gpdsec1)" --init-groups "$G" merge -o /tmp/gpd-never-written.gpdb view.gpdb
ok "every reader refuses the view at once"
$PY - "$T/ok.gpdb" "$T/big.gpdb" <<'PY' || fail "make big.gpdb"
import shutil, sqlite3, sys
shutil.copy(sys.argv[1], sys.argv[2])
c = sqlite3.connect(sys.argv[2])
c.executemany("INSERT INTO context VALUES (?, 1, 1, '/opt/app/bin/app', NULL, ?, ?, NULL)",
              ((i, i, "f%d" % i) for i in range(1000, 21000)))
c.commit()
PY
GPUPROF_READ_TIMEOUT=0.001 timeout 10 "$G" report big.gpdb >"$T/b.out" 2>&1 && fail "deadline: report succeeded"
grep -q "big.gpdb: reading stopped after 0.001 s (GPUPROF_READ_TIMEOUT)" "$T/b.out" || fail "deadline: $(cat "$T/b.out")"
$PY - "$T/v2.gpdb" "$T/big2.gpdb" <<'PY' || fail "make big2.gpdb"
import shutil, sqlite3, sys
shutil.copy(sys.argv[1], sys.argv[2])
c = sqlite3.connect(sys.argv[2])
c.executemany("INSERT INTO context(uid, id, parent, kind, offset, label) VALUES (0, ?, 1, 1, ?, 'f')",
              ((i, i) for i in range(1000, 21000)))
c.commit()
PY
GPUPROF_READ_TIMEOUT=0.001 timeout 10 "$G" merge -o "$T/bm.gpdb" big2.gpdb >"$T/b.out" 2>&1 && fail "deadline: merge succeeded"
grep -q "reading stopped after 0.001 s" "$T/b.out" || fail "deadline (merge): $(cat "$T/b.out")"
"$G" report big.gpdb >"$T/b.out" 2>&1 || fail "big.gpdb without a short deadline: $(tail -3 "$T/b.out")"
ok "deadline: a 20 000-context profile stops at 1 ms, reads with the default"
exit 0

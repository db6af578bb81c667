#!/usr/bin/env bash
# merge.traces: `gpuprof merge` carries the trace tables (docs/FORMATS.md,
# "Merged profiles").  Two real recordings of ocl-gap (PoCL, CPU sampling
# on) with different launch counts are merged; every input profile's
# trace_event, trace_launch, trace_cpu_sample, trace_stat,
# cpu_sample_stat, trace_duty and trace_window rows are in the merged file under its renumbered profile
# id, exactly as many, and nothing else; `gpuprof trace` of the merged
# file decodes with the schema and shows both processes' tracks (the
# kernels of both, each launch's flow, every CPU sample), and its Chrome
# form has each process's kernels under its own pid.
source "$(dirname "$0")/../integration/lib.sh" "$1"
have_opencl
APP=$(app ocl-gap)
DEC=$(app trace-decode)
# ocl-gap A B GAP_MS: 2A+1 ka on one stream, 2B+1 kb on the other; two
# fills and one read (each with a launch flow like the kernels); two
# buffers made and freed, nine clFinish: trace_event rows = kernels + 16
GPUPROF_CPU_SAMPLING=1000 "$GPUPROF" record -o "$T/a.gpdb" -- "$APP" 3 2 40 >"$T/a.out" 2>"$T/a.err" ||
  { cat "$T/a.err"; die "record a failed"; }
GPUPROF_CPU_SAMPLING=1000 "$GPUPROF" record -o "$T/b.gpdb" -- "$APP" 2 5 40 >"$T/b.out" 2>"$T/b.err" ||
  { cat "$T/b.err"; die "record b failed"; }
# the tracing-window tables (trace_duty, trace_window, trace_duty_launch) are written only
# for duty-cycled or on-demand CUDA processes, which need a GPU: b's
# ocl-gap profile gets a duty summary and three windows here (the rows a
# `duty:10/100` CUDA run stores, docs/FORMATS.md), so that the merge's
# carrying of them is checked like the other tables
$PY - "$T/b.gpdb" <<'PYEOF' || die "could not add the window rows"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
(pid,) = db.execute("SELECT id FROM profile WHERE exe LIKE '%ocl-gap'").fetchone()
db.execute("INSERT INTO trace_duty VALUES (?, 1, 1, 1000, 901000, 1, 3, 30000)", (pid,))
db.executemany("INSERT INTO trace_window VALUES (?, ?, ?)", [(pid, s, s + 10000) for s in (1000, 101000, 201000)])
db.execute("INSERT INTO trace_duty_launch VALUES (?, 2500, 200)", (pid,))  # counted launches
db.commit()
PYEOF
"$GPUPROF" merge -o "$T/m.gpdb" "$T/a.gpdb" "$T/b.gpdb" 2>"$T/merge.err" || { cat "$T/merge.err"; die "merge failed"; }
cat "$T/merge.err"

# per input profile (input order = merged ids 1..n): the rows of every
# trace table, counted and compared whole
$PY - "$T/a.gpdb" "$T/b.gpdb" "$T/m.gpdb" <<'PYEOF' || die "trace tables not carried exactly"
import sqlite3, sys
TABLES = {"trace_event": "profile_id", "trace_launch": "profile_id", "trace_stat": "profile_id",
          "trace_cpu_sample": "profile", "cpu_sample_stat": "profile_id",
          "trace_duty": "profile_id", "trace_window": "profile_id", "trace_duty_launch": "profile_id"}
m = sqlite3.connect("file:%s?mode=ro" % sys.argv[3], uri=True)
def rows(db, t, pid):
    col = TABLES[t]
    cols = [c[1] for c in db.execute("PRAGMA table_info(%s)" % t) if c[1] != col]
    return sorted(db.execute("SELECT %s FROM %s WHERE %s = ?" % (", ".join(cols), t, col), (pid,)).fetchall())
new = 0
total = dict.fromkeys(TABLES, 0)
for path in sys.argv[1:3]:
    db = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
    for old, pid, exe in db.execute("SELECT id, pid, exe FROM profile ORDER BY id").fetchall():
        new += 1
        got = m.execute("SELECT pid FROM profile WHERE id = ?", (new,)).fetchone()
        assert got == (pid,), "merged profile %d is pid %s, want %d" % (new, got, pid)
        for t in TABLES:
            want, have = rows(db, t, old), rows(m, t, new)
            total[t] += len(want)
            print("%s profile %d (pid %d, %s) -> %d: %s %d rows, merged %d" %
                  (path.split("/")[-1], old, pid, exe.split("/")[-1], new, t, len(want), len(have)))
            assert want == have, "%s of %s profile %d differs in the merged file" % (t, path, old)
        if exe.endswith("ocl-gap"):
            ev = db.execute("SELECT COUNT(*) FROM trace_event WHERE profile_id = ?", (old,)).fetchone()[0]
            a, b = (3, 2) if path.endswith("a.gpdb") else (2, 5)
            assert ev == 2 * a + 1 + 2 * b + 1 + 16, "ocl-gap %d %d: %d trace events" % (a, b, ev)
            assert len(rows(db, "trace_cpu_sample", old)) > 0, "no CPU samples in %s" % path
            nw = len(rows(db, "trace_window", old))
            assert nw == (3 if path.endswith("b.gpdb") else 0), "%s: %d windows" % (path, nw)
for t in TABLES:
    n = m.execute("SELECT COUNT(*) FROM %s" % t).fetchone()[0]
    print("merged %s: %d rows, inputs %d" % (t, n, total[t]))
    assert n == total[t], "%s: %d rows in the merged file, %d in the inputs" % (t, n, total[t])
PYEOF

# the merged file's trace, decoded with the Perfetto schema
"$GPUPROF" trace -o "$T/m.pftrace" "$T/m.gpdb" 2>"$T/tr.err" || { cat "$T/tr.err"; die "trace of the merged file failed"; }
cat "$T/tr.err"
"$DEC" "$T/m.pftrace" >"$T/dec.txt" || { tail "$T/dec.txt"; die "trace-decode rejected the merged trace"; }
dec=$(<"$T/dec.txt")
grep -q '^ok$' <<<"$dec" || die "no ok from trace-decode"
# both processes' tracks (stream tracks share names: counts add up)
[ "$(grep -c '^track ocl-gap (profile' <<<"$dec")" = 2 ] || die "not two ocl-gap process tracks: $(grep '^track' <<<"$dec")"
grep -qP '^slices GPU 0 stream \d+\tka\t12$' <<<"$dec" || die "not 7 + 5 ka slices: $(grep -P '\tka\t' <<<"$dec")"
grep -qP '^slices GPU 0 stream \d+\tkb\t16$' <<<"$dec" || die "not 5 + 11 kb slices: $(grep -P '\tkb\t' <<<"$dec")"
grep -qx 'flows 34' <<<"$dec" || die "flows: $(grep flows <<<"$dec") (want 28 kernels + 6 memsets/reads)"
ns=$($GPDQ "$T/m.gpdb" sql "select count(*) from trace_cpu_sample" | tr -d '[]')
got=0
while IFS=$'\t' read -r _ _ n; do got=$((got + n)); done < <(grep -P '^instants CPU thread \d+\tcpu sample: ' <<<"$dec")
[ "$got" = "$ns" ] || die "$got CPU sample instants in the merged trace, $ns rows"
grep -q "$ns CPU samples" "$T/tr.err" || die "gpuprof trace does not count $ns CPU samples"

# Chrome JSON: each process's kernels under its own pid
"$GPUPROF" trace --format chrome -o "$T/m.json" "$T/m.gpdb" 2>/dev/null || die "chrome trace of the merged file failed"
pa=$($GPDQ "$T/a.gpdb" sql "select pid from profile where exe like '%ocl-gap'" | tr -d '[]')
pb=$($GPDQ "$T/b.gpdb" sql "select pid from profile where exe like '%ocl-gap'" | tr -d '[]')
$PY - "$T/m.json" "$pa" "$pb" <<'PYEOF' || die "chrome trace of the merged file"
import collections, json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
x = collections.Counter((e["pid"], e["name"]) for e in ev if e["ph"] == "X" and e["name"] in ("ka", "kb"))
pa, pb = int(sys.argv[2]), int(sys.argv[3])
print("chrome kernels per (pid, name): %s" % dict(x))
assert x == {(pa, "ka"): 7, (pa, "kb"): 5, (pb, "ka"): 5, (pb, "kb"): 11}, x
PYEOF
echo "PASS merge.traces"

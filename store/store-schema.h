/* store-schema.h - the SQL schema of a gpuprof profile store (`*.gpdb`,
 * docs/FORMATS.md): made by the daemon's store (store/schema.c, which adds
 * the daemon-only tables and the upgrades) and by `gpuprof merge`
 * (analyzer/), so that both make the same tables.
 * Format 2: context and frame rows per uid.
 */
#ifndef GPD_STORE_SCHEMA_H
#define GPD_STORE_SCHEMA_H

/** CREATE TABLE IF NOT EXISTS statements of every table of format 2. */
#define GPD_STORE_SCHEMA \
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);" \
    "CREATE TABLE IF NOT EXISTS metric_desc(id INTEGER PRIMARY KEY, name TEXT NOT NULL," \
    "  unit TEXT NOT NULL, description TEXT NOT NULL);" \
    "CREATE TABLE IF NOT EXISTS profile(id INTEGER PRIMARY KEY," \
    "  pid INTEGER NOT NULL, ppid INTEGER, uid INTEGER NOT NULL, gid INTEGER NOT NULL," \
    "  exe TEXT, argv TEXT, hostname TEXT, job_id TEXT, step_id TEXT, rank INTEGER," \
    "  local_rank INTEGER, start_ns INTEGER, end_ns INTEGER, state TEXT NOT NULL," \
    "  records INTEGER NOT NULL DEFAULT 0, drops INTEGER NOT NULL DEFAULT 0, error TEXT," \
    "  proc_start INTEGER);" \
    "CREATE TABLE IF NOT EXISTS backend(profile_id INTEGER NOT NULL, api TEXT NOT NULL," \
    "  enabled INTEGER NOT NULL, code INTEGER, reason TEXT, PRIMARY KEY(profile_id, api));" \
    "CREATE TABLE IF NOT EXISTS module(profile_id INTEGER NOT NULL, id INTEGER NOT NULL," \
    "  path TEXT NOT NULL, build_id TEXT, base INTEGER, size INTEGER," \
    "  PRIMARY KEY(profile_id, id));" \
    "CREATE TABLE IF NOT EXISTS string(profile_id INTEGER NOT NULL, id INTEGER NOT NULL," \
    "  kind INTEGER NOT NULL, text TEXT NOT NULL, PRIMARY KEY(profile_id, id));" \
    "CREATE TABLE IF NOT EXISTS context(uid INTEGER NOT NULL, id INTEGER NOT NULL," \
    "  parent INTEGER NOT NULL, kind INTEGER NOT NULL, module TEXT, build_id TEXT," \
    "  offset INTEGER, label TEXT, raw_name TEXT, PRIMARY KEY(uid, id));" \
    "CREATE TABLE IF NOT EXISTS frame(uid INTEGER NOT NULL, context_id INTEGER NOT NULL," \
    "  depth INTEGER NOT NULL, function TEXT, file TEXT, line INTEGER, inlined INTEGER NOT NULL," \
    "  PRIMARY KEY(uid, context_id, depth));" \
    "CREATE TABLE IF NOT EXISTS cct_local(profile_id INTEGER NOT NULL," \
    "  local_id INTEGER NOT NULL, context_id INTEGER NOT NULL," \
    "  PRIMARY KEY(profile_id, local_id)) WITHOUT ROWID;" \
    "CREATE TABLE IF NOT EXISTS metric(profile_id INTEGER NOT NULL," \
    "  context_id INTEGER NOT NULL, metric_id INTEGER NOT NULL, value REAL NOT NULL," \
    "  PRIMARY KEY(profile_id, context_id, metric_id)) WITHOUT ROWID;" \
    "CREATE TABLE IF NOT EXISTS gpubin(hash TEXT PRIMARY KEY, kind TEXT NOT NULL," \
    "  size INTEGER NOT NULL, path TEXT NOT NULL, profile_id INTEGER);" \
    "CREATE TABLE IF NOT EXISTS pending(profile_id INTEGER NOT NULL, seq INTEGER NOT NULL," \
    "  rec BLOB NOT NULL, PRIMARY KEY(profile_id, seq)) WITHOUT ROWID;" \
    "CREATE TABLE IF NOT EXISTS ring_cursor(profile_id INTEGER NOT NULL," \
    "  ring INTEGER NOT NULL, pos INTEGER NOT NULL, PRIMARY KEY(profile_id, ring)) WITHOUT ROWID;"

/** The GPU PC-sample tables (store/pcsample-write.c; carried by `gpuprof merge`). */
#define GPD_PCSAMPLE_SCHEMA \
    "CREATE TABLE IF NOT EXISTS pcsample(profile_id INTEGER NOT NULL, cubin_id INTEGER NOT NULL," \
    "  func INTEGER NOT NULL, pc INTEGER NOT NULL, stall INTEGER NOT NULL," \
    "  device INTEGER NOT NULL, samples INTEGER NOT NULL, latency INTEGER NOT NULL," \
    "  PRIMARY KEY(profile_id, cubin_id, func, pc, stall, device)) WITHOUT ROWID;" \
    "CREATE TABLE IF NOT EXISTS pcsample_cubin(profile_id INTEGER NOT NULL," \
    "  cubin_id INTEGER NOT NULL, hash TEXT NOT NULL, PRIMARY KEY(profile_id, cubin_id)) WITHOUT ROWID;" \
    "CREATE TABLE IF NOT EXISTS pcsample_stat(profile_id INTEGER NOT NULL, device INTEGER NOT NULL," \
    "  period_log2 INTEGER, sm_count INTEGER, clock_khz INTEGER, total INTEGER NOT NULL," \
    "  dropped INTEGER NOT NULL, non_user INTEGER NOT NULL, lost_keys INTEGER NOT NULL," \
    "  PRIMARY KEY(profile_id, device)) WITHOUT ROWID;"

/** The trace tables (store/trace-write.c: GPU activities, their launches and
 *  per-profile counts; store/cpusample-write.c: CPU-time samples and their
 *  totals; docs/FORMATS.md; carried by `gpuprof merge`).  trace_cpu_sample
 *  names its profile column `profile`. */
#define GPD_TRACE_SCHEMA \
    "CREATE TABLE IF NOT EXISTS trace_event(profile_id INTEGER NOT NULL, start_ns INTEGER NOT NULL," \
    "  stream INTEGER NOT NULL, corr INTEGER NOT NULL, end_ns INTEGER NOT NULL," \
    "  device INTEGER NOT NULL, op INTEGER NOT NULL, subkind INTEGER NOT NULL," \
    "  node INTEGER NOT NULL, name INTEGER NOT NULL, bytes INTEGER NOT NULL," \
    "  PRIMARY KEY(profile_id, start_ns, stream, corr)) WITHOUT ROWID;" \
    "CREATE TABLE IF NOT EXISTS trace_launch(profile_id INTEGER NOT NULL, ts_ns INTEGER NOT NULL," \
    "  tid INTEGER NOT NULL, corr INTEGER NOT NULL, node INTEGER NOT NULL, op INTEGER NOT NULL," \
    "  PRIMARY KEY(profile_id, ts_ns, tid, corr)) WITHOUT ROWID;" \
    "CREATE TABLE IF NOT EXISTS trace_stat(profile_id INTEGER PRIMARY KEY," \
    "  events INTEGER NOT NULL, dropped INTEGER NOT NULL, refused INTEGER NOT NULL);" \
    "CREATE TABLE IF NOT EXISTS trace_cpu_sample(profile INTEGER NOT NULL, tid INTEGER NOT NULL," \
    "  ts_ns INTEGER NOT NULL, node INTEGER NOT NULL);" \
    "CREATE INDEX IF NOT EXISTS trace_cpu_sample_pt ON trace_cpu_sample(profile, tid, ts_ns);" \
    "CREATE TABLE IF NOT EXISTS cpu_sample_stat(profile_id INTEGER PRIMARY KEY, samples INTEGER NOT NULL," \
    "  cputime_ns INTEGER NOT NULL, trace_rows INTEGER NOT NULL, trace_dropped INTEGER NOT NULL," \
    "  unknown INTEGER NOT NULL);"

/** Duty-cycled / on-demand tracing windows per process (store/tracewin-write.c
 *  writes them, `gpuprof merge` carries them, cli/report-duty.c reads them;
 *  docs/FORMATS.md).  trace_duty_launch: the kernel launches the back end
 *  counted, all and inside windows (the launch fraction). */
#define GPD_TRACEWIN_SCHEMA                                                                        \
  "CREATE TABLE IF NOT EXISTS trace_duty(profile_id INTEGER PRIMARY KEY, api INTEGER NOT NULL,"    \
  "  duty INTEGER NOT NULL, t0_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL,"                      \
  "  final INTEGER NOT NULL, windows INTEGER NOT NULL, window_ns INTEGER NOT NULL);"               \
  "CREATE TABLE IF NOT EXISTS trace_window(profile_id INTEGER NOT NULL, start_ns INTEGER NOT NULL," \
  "  end_ns INTEGER NOT NULL, PRIMARY KEY(profile_id, start_ns)) WITHOUT ROWID;"                   \
  "CREATE TABLE IF NOT EXISTS trace_duty_launch(profile_id INTEGER PRIMARY KEY,"                   \
  "  launches INTEGER NOT NULL, launches_in INTEGER NOT NULL);"

#endif

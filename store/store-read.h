/* store-read.h - the read side of the saved-profile format (.gpdb,
 * docs/FORMATS.md): every SQL statement that cli/ and analyzer/ run
 * against a profile file is here, behind typed functions.
 *
 * store/ owns the .gpdb format.  Its files are named after the noun they
 * read or write, and their functions start with gpd_store_<noun>_:
 *   file-read.c     gpd_store_file_*     open a profile (guarded, its shards
 *                                        attached), meta, read
 *                                        transactions, WAL side files
 *   file-table.c    gpd_store_file_has_* which tables and columns a file
 *                                        has (below file- and shard-read.c)
 *   shard-read.c    gpd_store_shard_*    a sharded merged file's shards
 *   profile-read.c  gpd_store_profile_*  profile and backend rows
 *   context-read.c  gpd_store_context_*  context and frame rows
 *   metric-read.c   gpd_store_metric_*   metric values: `metric` rows, a
 *                                        merged file's pmetric / stat
 *   gpubin-read.c   gpd_store_gpubin_*   GPU binaries
 *   pcsample-read.c gpd_store_pcsample_* PC samples and their statistics
 *   trace-read.c    gpd_store_trace_*    trace rows (trace-row-read.h: the
 *                                        row decoders)
 *   duty-read.c     gpd_store_duty_*     duty-cycle windows
 *   merge-read.c    gpd_store_merge_*    what `gpuprof merge` reads of an
 *                                        input, table by table
 *   merged-write.c  gpd_store_merged_*   a merged file being written
 *                                        (merged-write.h)
 * Writers are store/<noun>-write.c with gpd_store_<noun>_* as well; the
 * daemon's side (schema, migrations, its writers) has its own headers
 * beside this one; store-open.h is the guarded opener below all.
 *
 * Conventions: a reader takes a connection from gpd_store_file_open (one
 * connection per thread), returns 0 or a negative code (-errno, or
 * GPD_ESTORE when SQLite failed), and where it takes `label, err, errn`
 * writes a message naming label (the file) into err on failure.  Rows are
 * handed to a callback as a typed struct whose strings (never NULL unless
 * said) live until the callback returns; a callback's negative return
 * stops the reading and is returned.  A pid of 0 selects every process.
 */
#ifndef GPD_STORE_READ_H
#define GPD_STORE_READ_H

#include <stddef.h>
#include <stdint.h>

#include "gpuprof/trace-row.h"

struct sqlite3;

/** Newest format this tree reads; 3 is a merged file (format 2 + pmetric
 *  and stat tables, its `metric` table empty; docs/FORMATS.md). */
#define GPD_STORE_FORMAT_MERGED 3

/* ---- file-read.c ---- */

/** Open the saved profile at path read-only (store-open.h: no links,
 *  schema checked, a deadline; the file a link resolves to is opened), a
 *  busy timeout for a daemon that is writing, and attach its shards
 *  (gpd_store_shard_attach).  Every reader of saved profiles opens them
 *  through this.  *db is NULL on failure.  0, GPD_ESTORE, -EINVAL, -E2BIG
 *  or -errno with err set (naming the main file or the shard at fault). */
int gpd_store_file_open(const char *path, struct sqlite3 **db, char *err, size_t errn);
/** Check the SQLite header of the profile open at fd (size: its st_size):
 *  magic, and the page count where it is valid (a shorter file was
 *  truncated).  *wal: the file is in WAL mode.  0, GPD_ESTORE or -errno
 *  with err naming label. */
int gpd_store_file_check_header(int fd, uint64_t size, int *wal, const char *label, char *err, size_t errn);
/** Open the profile at path (the file a link resolves to) as
 *  gpd_store_file_open does, tuned for reading it whole (a memory mapping,
 *  a larger cache, no mutex: one thread): the merge's inputs.  immutable
 *  = 1 (a WAL file without a -wal: everything is in the main file): no
 *  -shm or -wal is created beside someone's file.  Same returns. */
int gpd_store_file_open_input(const char *path, int immutable, struct sqlite3 **db, char *err, size_t errn);
/** Close db (NULL: nothing). */
void gpd_store_file_close(struct sqlite3 *db);
/** Around a read-only connection to path: which of <path>-wal (1) and
 *  <path>-shm (2) existed before it opened; after it closed, remove those
 *  it made (an empty log nobody wrote: a live daemon keeps them, so they
 *  existed before). */
unsigned gpd_store_file_wal_before(const char *path);
void gpd_store_file_wal_after(const char *path, unsigned before);
/* file-table.c: */
/** 1 if db's main file has a table `name`. */
int gpd_store_file_has_table(struct sqlite3 *db, const char *name);
/** 1 if table has a column named col. */
int gpd_store_file_has_column(struct sqlite3 *db, const char *table, const char *col);
/** Start / end one read transaction: the rows read in between are of one
 *  commit of a writing daemon.  end after a failed begin is harmless. */
int gpd_store_file_begin(struct sqlite3 *db, const char *label, char *err, size_t errn);
void gpd_store_file_end(struct sqlite3 *db);

/** A file's `meta` rows that say what it is. */
typedef struct gpd_store_meta_s {
  int has_format;  /* a `format` row */
  char format[64]; /* its value (cut), "" when none */
  int version;     /* format_version; 0 when none was written (format 1) */
} gpd_store_meta_t;
/** Read m from db.  0, or GPD_ESTORE with err naming label (no meta
 *  table: "not a gpuprof profile", or unreadable). */
int gpd_store_file_meta(struct sqlite3 *db, gpd_store_meta_t *m, const char *label, char *err, size_t errn);

/* ---- shard-read.c ---- */

/** The tables a sharded merged file splits over its shard files. */
#define GPD_STORE_SHARD_NTABLES 4
extern const char *const gpd_store_shard_tables[GPD_STORE_SHARD_NTABLES]; /* context, frame, stat, pmetric */
/** 1 if name may name a shard: 1..200 of [A-Za-z0-9._-], no leading '.',
 *  no "..", so no '/' (a plain name in the main file's directory). */
int gpd_store_shard_name_ok(const char *name);
/** The most shards a reader attaches (SQLite's bound on attached files;
 *  0 when it cannot say). */
int gpd_store_shard_max(void);
/** If db's main file (at path) has a `shard` table: attach each shard it
 *  lists (read-only, with db's open flags) from the directory of path's
 *  target, after checking its name (gpd_store_shard_name_ok), that it is
 *  a regular file (lstat) of the recorded size and that its shard_of row
 *  holds this file's nonce and its place; then create TEMP VIEWs named
 *  context, frame, stat and pmetric over main's and the shards' rows
 *  (UNION ALL, range order = key order).  At most
 *  sqlite3_limit(SQLITE_LIMIT_ATTACHED) shards.  *nshards (may be NULL)
 *  gets their count (0: not sharded).  Single thread per db.  0,
 *  GPD_ESTORE, -EINVAL, -E2BIG, -ENOMEM or -errno with err set. */
int gpd_store_shard_attach(struct sqlite3 *db, const char *path, int *nshards, char *err, size_t errn);

/* ---- profile-read.c ---- */

/** One `profile` row (a process).  rank / local_rank: -1 when NULL;
 *  used_gpu: a back end reported its state or some metric was recorded. */
typedef struct gpd_store_profile_s {
  uint64_t id;
  int pid, rank, local_rank, used_gpu;
  uint32_t uid, gid;
  const char *exe, *hostname, *job_id, *step_id, *state, *error;
  uint64_t start_ns, end_ns, records, drops;
} gpd_store_profile_t;
/** One `backend` row of a profile: the state a GPU API's back end
 *  reported. */
typedef struct gpd_store_backend_s {
  const char *api, *reason;
  int enabled, code;
} gpd_store_backend_t;
/** Call fn for each profile of process pid (0: all), in id order; when fn
 *  returns 0 and backend is not NULL, then backend for each of its
 *  backend rows (api order); fn's 1 skips them.  0 or < 0 with err set. */
int gpd_store_profile_each(struct sqlite3 *db, int pid, int (*fn)(void *c, const gpd_store_profile_t *p),
                           int (*backend)(void *c, const gpd_store_backend_t *b), void *c, const char *label,
                           char *err, size_t errn);
/** 1 when a process of the profile file path used CUDA (an enabled
 *  `cuda` back end row), else 0 (also when it cannot be read). */
int gpd_store_profile_has_cuda(const char *path);

/* ---- context-read.c ---- */

/** One calling context (a `context` row). */
typedef struct gpd_store_context_s {
  uint64_t id, parent, offset;
  int kind;
  const char *module, *label, *raw_name;
} gpd_store_context_t;
/** One source frame of a context (a `frame` row); inlined: 0/1. */
typedef struct gpd_store_frame_s {
  uint64_t context;
  uint32_t depth, line;
  int inlined;
  const char *function, *file;
} gpd_store_frame_t;
/** Contexts labelled for the users of the profiles of pid (0: all; a
 *  file from before per-user labels has one label per context: all). */
int gpd_store_context_each(struct sqlite3 *db, int pid, int (*fn)(void *c, const gpd_store_context_t *x), void *c,
                           const char *label, char *err, size_t errn);
/** Frames as gpd_store_context_each selects contexts, by context and
 *  depth. */
int gpd_store_context_frames(struct sqlite3 *db, int pid, int (*fn)(void *c, const gpd_store_frame_t *f), void *c,
                             const char *label, char *err, size_t errn);

/* ---- metric-read.c ---- */

/** A value callback: context id, metric id (GPD_M_*), value. */
typedef int (*gpd_store_value_fn)(void *c, int64_t ctx, uint32_t metric, double v);
/** Bytes of one pmetric record: context id i64, metric id u32, value f64
 *  (little-endian, packed); of one stat.vals record: profile id u32,
 *  value f64. */
#define GPD_STORE_PMETRIC_REC 20
#define GPD_STORE_CVAL_REC 12
/** Call fn for each record of a pmetric blob b[0..n).  0, -EINVAL (not
 *  whole records) or fn's first error. */
int gpd_store_metric_decode(const uint8_t *b, size_t n, gpd_store_value_fn fn, void *c);
/** Call fn with the values of pid's profiles (0: all) summed per (context,
 *  metric): of `metric` rows, or of a merged file (merged = 1: stat.sum
 *  for all, else the pid's pmetric blobs).  0, or < 0 with err set. */
int gpd_store_metric_sums(struct sqlite3 *db, int pid, int merged, gpd_store_value_fn fn, void *c,
                          const char *label, char *err, size_t errn);
/** Call fn for profile's `metric` rows of metric m1 or m2, by context id
 *  (as SQLite orders signed integers).  0, -EIO or fn's error. */
int gpd_store_metric_of_profile(struct sqlite3 *db, uint64_t profile, uint32_t m1, uint32_t m2,
                                gpd_store_value_fn fn, void *c);
/** Call fn(c, id, name) for each metric_desc row (name NULL when NULL).
 *  0, fn's error, or GPD_ESTORE with err naming label. */
int gpd_store_metric_descs(struct sqlite3 *db, int (*fn)(void *c, int64_t id, const char *name), void *c,
                           const char *label, char *err, size_t errn);
/** Where a statistic's extreme lies: rank (-1: not an MPI rank), else
 *  hostname (NULL: unknown) and pid. */
typedef struct gpd_store_at_s {
  int rank, pid;
  const char *hostname;
} gpd_store_at_t;
/** One `stat` row of a merged file (docs/ANALYZER.md). */
typedef struct gpd_store_stat_s {
  uint64_t context;
  double n, sum, mean, stddev, cv, min, max;
  gpd_store_at_t at_min, at_max;
} gpd_store_stat_t;
/** The `top` stat rows of metric whose sum is at least `fraction` of the
 *  metric's total, highest coefficient of variation first.  0, or
 *  GPD_ESTORE with err set (not a merged file: no statistics). */
int gpd_store_metric_imbalance(struct sqlite3 *db, unsigned metric, double fraction, unsigned top,
                               int (*fn)(void *c, const gpd_store_stat_t *s), void *c, const char *label, char *err,
                               size_t errn);

/* ---- gpubin-read.c ---- */

/** A GPU binary a profile loaded (`gpubin` row; hash: 32 hex digits when
 *  the daemon wrote it, not checked here). */
typedef struct gpd_store_gpubin_s {
  const char *hash, *kind, *path;
  uint64_t size;
} gpd_store_gpubin_t;
/** Each GPU binary, by hash (a file without the table: none).  0 or
 *  fn's error with err set. */
int gpd_store_gpubin_each(struct sqlite3 *db, int (*fn)(void *c, const gpd_store_gpubin_t *g), void *c,
                          const char *label, char *err, size_t errn);

/* ---- pcsample-read.c ---- */

/** PC samples summed per (kernel function, GPU binary hash, pc, stall
 *  reason); func / hash / stall may be NULL (a dangling string id). */
typedef struct gpd_store_pcsample_s {
  const char *func, *hash, *stall;
  int64_t pc;
  double samples;
} gpd_store_pcsample_t;
/** The PC samples of pid's profiles (0: all), by function, hash, pc.
 *  guess_hash = 1: a binary id with no hash in its own process takes the
 *  hash the other processes agree on for that id (SASS counts come from a
 *  process of their own that may not have pushed the binary, docs/
 *  ANALYZER-GPU.md); else "" for it.  0, GPD_ESTORE with err set (no
 *  sample tables), or fn's error. */
int gpd_store_pcsample_each(struct sqlite3 *db, int pid, int guess_hash,
                            int (*fn)(void *c, const gpd_store_pcsample_t *s), void *c, char *err, size_t errn);
/** pcsample_stat over pid's profiles: sums of samples and drops, the
 *  largest period (log2 cycles), SM count and clock (kHz), the samples of
 *  keys past the daemon's bound. */
typedef struct gpd_store_pcstat_s {
  double total, dropped, clock_khz, lost_keys;
  int period_log2, sm_count;
} gpd_store_pcstat_t;
/** 1 with *s filled, 0 when there is no pcsample_stat row or table. */
int gpd_store_pcsample_stat(struct sqlite3 *db, int pid, gpd_store_pcstat_t *s);
/** 1 if db has the PC-sample tables (pcsample, pcsample_cubin,
 *  pcsample_stat: a daemon older than PC sampling did not make them). */
int gpd_store_pcsample_has(struct sqlite3 *db);

/* ---- trace-read.c ---- */

/** A trace being read: which trace tables the file has. */
typedef struct gpd_store_trace_reader_s {
  struct sqlite3 *db;
  int has_trace;  /* trace_event and trace_launch (from before traces: 0) */
  int cpu_sample; /* trace_cpu_sample's profile column: 0 none, 1 profile_id, 2 profile */
} gpd_store_trace_reader_t;
/** Look at db's trace tables into *tr. */
void gpd_store_trace_read_init(gpd_store_trace_reader_t *tr, struct sqlite3 *db);
/** Rows of profile in trace_event / trace_launch (0 when unreadable). */
int64_t gpd_store_trace_read_count_events(const gpd_store_trace_reader_t *tr, uint64_t profile);
int64_t gpd_store_trace_read_count_launches(const gpd_store_trace_reader_t *tr, uint64_t profile);
/** profile's trace_event rows by start; 0, -EIO or fn's error. */
int gpd_store_trace_read_events(const gpd_store_trace_reader_t *tr, uint64_t profile,
                                int (*fn)(void *c, const gpd_trace_row_t *e), void *c);
/** profile's trace_launch rows by host time; 0 or fn's error. */
int gpd_store_trace_read_launches(const gpd_store_trace_reader_t *tr, uint64_t profile,
                                  int (*fn)(void *c, const gpd_trace_lrow_t *l), void *c);
/** profile's CPU samples (thread, time ns, context id); 0 or fn's error. */
int gpd_store_trace_read_cpu_samples(const gpd_store_trace_reader_t *tr, uint64_t profile,
                                     int (*fn)(void *c, uint32_t tid, uint64_t ts, uint64_t node), void *c);
/** Add profile's trace_stat counts (records dropped, refused) to *dropped,
 *  *refused. */
void gpd_store_trace_read_stat(const gpd_store_trace_reader_t *tr, uint64_t profile, uint64_t *dropped,
                               uint64_t *refused);

/* ---- duty-read.c ---- */

/** A duty-cycled process's windows (a trace_duty row with duty = 1):
 *  the schedule's origin and the run's end (ns), windows and their total
 *  length (ns); api: its back end; final: the run ended. */
typedef struct gpd_store_duty_s {
  uint64_t profile, t0, end, windows, window_ns;
  int pid, api, final;
} gpd_store_duty_t;
/** 1 when pid (0: any) has a duty-cycled profile, else 0 (also a store
 *  from before duty windows). */
int gpd_store_duty_any(struct sqlite3 *db, int pid);
/** Each duty-cycled profile of pid (0: all) by profile id (a store from
 *  before duty windows: none).  0 or fn's error. */
int gpd_store_duty_each(struct sqlite3 *db, int pid, int (*fn)(void *c, const gpd_store_duty_t *d), void *c);
/** The start (ns) of each stored window of profile, by start.  0, -EIO or
 *  fn's error. */
int gpd_store_duty_windows(struct sqlite3 *db, uint64_t profile, int (*fn)(void *c, uint64_t start), void *c);
/** The counted kernel launches of profile (trace_duty_launch): 1 with
 *  *launches, *inside (launches inside windows) set, 0 when none. */
int gpd_store_duty_launches(struct sqlite3 *db, uint64_t profile, int64_t *launches, int64_t *inside);

/* ---- merge-read.c ---- */

struct sqlite3_stmt;
/** An input of `gpuprof merge` and the profiles it contributes: those of
 *  job job_id (NULL: any) and user uid (-1: any).  label, err, errn: as
 *  everywhere here. */
typedef struct gpd_store_merge_s {
  struct sqlite3 *db;
  const char *job_id;
  int64_t uid;
  const char *label;
  char *err;
  size_t errn;
} gpd_store_merge_t;
/* The statements below come prepared, the selection bound; the caller
 * reads their rows with gpd_store_merge_step and the row codec
 * (analyzer.h gpd_mtable_row_encode), then gpd_store_merge_done.  cols: a
 * table's column list (docs/FORMATS.md) in the order the codec carries
 * them.  0, or GPD_ESTORE with err set. */
/** The selected profile rows, by id. */
int gpd_store_merge_profiles(const gpd_store_merge_t *m, const char *cols, struct sqlite3_stmt **st);
/** The rows of table whose profile column (the first of cols) is a
 *  selected profile. */
int gpd_store_merge_rows(const gpd_store_merge_t *m, const char *table, const char *cols, struct sqlite3_stmt **st);
/** GPU binaries (hash, kind, size, path, profile_id) a selected profile
 *  loaded or sampled in (pcsample_cubin: with_pcs = 1); profile_id: the
 *  loading profile if selected, else the first selected one that sampled
 *  in it. */
int gpd_store_merge_gpubins(const gpd_store_merge_t *m, int with_pcs, struct sqlite3_stmt **st);
/** Contexts (cols from uid, id) labelled for the selected profiles'
 *  users, in table order. */
int gpd_store_merge_contexts(const gpd_store_merge_t *m, const char *cols, struct sqlite3_stmt **st);
/** Frames (cols from uid, context_id) of those users, by uid, context
 *  and depth. */
int gpd_store_merge_frames(const gpd_store_merge_t *m, const char *cols, struct sqlite3_stmt **st);
/** Metric values of the selected profiles by profile: merged = 0:
 *  (profile_id, context_id, metric_id, value) `metric` rows by context and
 *  metric; 1: (profile_id, vals) pmetric blobs. */
int gpd_store_merge_metrics(const gpd_store_merge_t *m, int merged, struct sqlite3_stmt **st);
/** 1 if db has table with every column of cols. */
int gpd_store_merge_has_cols(struct sqlite3 *db, const char *table, const char *cols);
/** Step st: 1 a row, 0 done, GPD_ESTORE with err set ("cannot read the
 *  profile", corrupt or truncated). */
int gpd_store_merge_step(const gpd_store_merge_t *m, struct sqlite3_stmt *st);
/** Finalize st (NULL: nothing). */
void gpd_store_merge_done(struct sqlite3_stmt *st);

#endif

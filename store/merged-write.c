/* merged-write.c - the SQL of a merged file being written and of the MPI
 * merge's in-memory shards (merged-write.h).
 *
 * Storage (Zhou et al., "Scalable Analysis of GPU-accelerated Applications
 * with HPCToolkit", sec. 6.2: sparse values, kept both profile-major and
 * context-major):
 *   pmetric(profile_id, vals)  profile-major: one blob per profile,
 *                              (context, metric, value) records sorted
 *   stat(uid, context_id, metric_id, n, nz, sum, min, mean, max, stddev,
 *        cv, min_profile, max_profile, vals)
 *                              context-major: one row per (uid, context,
 *                              metric) with its statistics and a blob of
 *                              (profile, value) records sorted by profile
 * Only non-zero values are stored in either; the `metric` table is empty.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "gpuprof/error.h"
#include "gpuprof/metric.h"
#include "store-schema.h"
#include "merged-write.h"
#include "store-read.h"

#define STR_(x) #x
#define STR(x) STR_(x)

static const char MERGED_SCHEMA[] =
    "CREATE TABLE pmetric(profile_id INTEGER PRIMARY KEY, vals BLOB NOT NULL);"
    "CREATE TABLE stat(uid INTEGER NOT NULL, context_id INTEGER NOT NULL, metric_id INTEGER NOT NULL,"
    "  n INTEGER NOT NULL, nz INTEGER NOT NULL, sum REAL NOT NULL, min REAL NOT NULL, mean REAL NOT NULL,"
    "  max REAL NOT NULL, stddev REAL NOT NULL, cv REAL NOT NULL, min_profile INTEGER NOT NULL,"
    "  max_profile INTEGER NOT NULL, vals BLOB NOT NULL, PRIMARY KEY(uid, context_id, metric_id)) WITHOUT ROWID;";

/* The merged file's contexts and frames: one B-tree each, keyed as the
 * store's (which has a rowid table and its key's index: two inserts per
 * row); created before GPD_STORE_SCHEMA, whose IF NOT EXISTS then keeps
 * them.  Same columns (docs/FORMATS.md). */
static const char MERGED_CONTEXT[] =
    "CREATE TABLE context(uid INTEGER NOT NULL, id INTEGER NOT NULL, parent INTEGER NOT NULL,"
    "  kind INTEGER NOT NULL, module TEXT, build_id TEXT, offset INTEGER, label TEXT, raw_name TEXT,"
    "  PRIMARY KEY(uid, id)) WITHOUT ROWID;"
    "CREATE TABLE frame(uid INTEGER NOT NULL, context_id INTEGER NOT NULL, depth INTEGER NOT NULL,"
    "  function TEXT, file TEXT, line INTEGER, inlined INTEGER NOT NULL,"
    "  PRIMARY KEY(uid, context_id, depth)) WITHOUT ROWID;";

static int wfail(gpd_store_merged_t *w, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int wfail(gpd_store_merged_t *w, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(w->err, w->errn, fmt, ap);
  va_end(ap);
  return code;
}

static int exec(gpd_store_merged_t *w, const char *sql) {
  char *msg = NULL;
  if (sqlite3_exec(w->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
    int e = wfail(w, GPD_ESTORE, "%s", msg ? msg : sqlite3_errmsg(w->db));
    sqlite3_free(msg);
    return e;
  }
  return 0;
}

static int prepare(gpd_store_merged_t *w, const char *sql, sqlite3_stmt **st) {
  return sqlite3_prepare_v2(w->db, sql, -1, st, NULL) == SQLITE_OK ? 0
                                                                    : wfail(w, GPD_ESTORE, "%s", sqlite3_errmsg(w->db));
}

int gpd_store_merged_step(gpd_store_merged_t *w, sqlite3_stmt *st) {
  int rc = sqlite3_step(st);
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  return rc == SQLITE_DONE ? 0 : wfail(w, GPD_ESTORE, "%s", sqlite3_errmsg(w->db));
}

sqlite3_stmt *gpd_store_merged_insert(gpd_store_merged_t *w, int t) {
  return t >= 0 && t < GPD_STORE_MERGED_MAXT ? w->ins[t] : NULL;
}

static int write_head(gpd_store_merged_t *w, uint32_t nprof, uint32_t ninputs, const gpd_store_mtable_t *tables,
                      int ntables, int ignore_dups) {
  sqlite3_stmt *md = NULL;
  char sql[1024];
  int err;
  if ((err = exec(w, MERGED_CONTEXT)) < 0 || (err = exec(w, GPD_STORE_SCHEMA)) < 0 ||
      (err = exec(w, GPD_PCSAMPLE_SCHEMA)) < 0 || (err = exec(w, GPD_TRACE_SCHEMA)) < 0 ||
      (err = exec(w, GPD_TRACEWIN_SCHEMA)) < 0 || (err = exec(w, MERGED_SCHEMA)) < 0 ||
      (err = exec(w, "PRAGMA user_version=" STR(GPD_STORE_FORMAT_MERGED) "; BEGIN")) < 0)
    return err;
  {
    char host[256] = "";
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    gethostname(host, sizeof(host) - 1);
    char *q = sqlite3_mprintf(
        "INSERT INTO meta VALUES('format','gpuprof'),('format_version','" STR(GPD_STORE_FORMAT_MERGED) "'),"
        "('host',%Q),('created_ns','%llu'),('clock','CLOCK_MONOTONIC_RAW'),('next_profile_id','%u'),"
        "('merged_inputs','%u');",
        host, (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec, nprof + 1, ninputs);
    err = q ? exec(w, q) : wfail(w, -ENOMEM, "out of memory");
    sqlite3_free(q);
    if (err < 0) return err;
  }
  if ((err = prepare(w, "INSERT INTO metric_desc VALUES(?1, ?2, ?3, ?4)", &md)) < 0) return err;
  for (unsigned i = 0; i < GPD_M__COUNT && !err; i++) {
    const gpd_metric_desc_t *d = gpd_metric_desc(i);
    sqlite3_bind_int(md, 1, (int)i);
    sqlite3_bind_text(md, 2, d->name, -1, SQLITE_STATIC);
    sqlite3_bind_text(md, 3, gpd_metric_unit_name(d->unit), -1, SQLITE_STATIC);
    sqlite3_bind_text(md, 4, d->desc, -1, SQLITE_STATIC);
    err = gpd_store_merged_step(w, md);
  }
  sqlite3_finalize(md);
  for (int t = 0; t < ntables && !err; t++) {
    char q[64] = "";
    for (int c = 0; c < tables[t].ncols; c++) snprintf(q + strlen(q), sizeof(q) - strlen(q), "%s?", c ? "," : "");
    snprintf(sql, sizeof(sql), "INSERT %sINTO %s(%s) VALUES(%s)", t == ignore_dups ? "OR IGNORE " : "",
             tables[t].name, tables[t].cols, q);
    err = prepare(w, sql, &w->ins[t]);
  }
  if (!err) err = prepare(w, "INSERT INTO pmetric VALUES(?1, ?2)", &w->pm);
  if (!err) err = prepare(w, "INSERT INTO stat VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14)", &w->stq);
  return err;
}

int gpd_store_merged_open(gpd_store_merged_t *w, const char *tmp, uint32_t nprof, uint32_t ninputs,
                          const gpd_store_mtable_t *tables, int ntables, int ignore_dups, char *err, size_t errn) {
  int e;
  memset(w, 0, sizeof(*w));
  w->err = err;
  w->errn = errn;
  if (ntables > GPD_STORE_MERGED_MAXT) return wfail(w, -EINVAL, "%s: %d tables to copy", tmp, ntables);
  if (sqlite3_open_v2(tmp, &w->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
    e = wfail(w, GPD_ESTORE, "%s: %s", tmp, w->db ? sqlite3_errmsg(w->db) : "out of memory");
    gpd_store_merged_close(w);
    return e;
  }
  /* a new private file, renamed into place only when complete: no
   * journal is needed; fsync before the rename */
  if ((e = exec(w, "PRAGMA page_size=16384; PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"
                   "PRAGMA locking_mode=EXCLUSIVE;")) < 0 ||
      (e = write_head(w, nprof, ninputs, tables, ntables, ignore_dups)) < 0)
    gpd_store_merged_close(w);
  return e;
}

int gpd_store_merged_open_shard(gpd_store_merged_t *w, int ctx_t, int frame_t, char *err, size_t errn) {
  int e;
  memset(w, 0, sizeof(*w));
  w->err = err;
  w->errn = errn;
  if (ctx_t < 0 || ctx_t >= GPD_STORE_MERGED_MAXT || frame_t < 0 || frame_t >= GPD_STORE_MERGED_MAXT)
    return wfail(w, -EINVAL, "shard: bad table numbers");
  /* memdb: one contiguous image that sqlite3_serialize hands out as it is */
  if (sqlite3_open_v2("file:gpd-shard?vfs=memdb", &w->db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX,
                      NULL) != SQLITE_OK) {
    e = wfail(w, GPD_ESTORE, "shard: %s", w->db ? sqlite3_errmsg(w->db) : "out of memory");
    gpd_store_merged_close(w);
    return e;
  }
  if ((e = exec(w, "PRAGMA page_size=16384; PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;")) < 0 ||
      (e = exec(w, MERGED_CONTEXT)) < 0 || (e = exec(w, MERGED_SCHEMA)) < 0 || (e = exec(w, "BEGIN")) < 0 ||
      (e = prepare(w, "INSERT INTO context VALUES(?,?,?,?,?,?,?,?,?)", &w->ins[ctx_t])) < 0 ||
      (e = prepare(w, "INSERT INTO frame VALUES(?,?,?,?,?,?,?)", &w->ins[frame_t])) < 0 ||
      (e = prepare(w, "INSERT INTO stat VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14)", &w->stq)) < 0 ||
      (e = prepare(w, "INSERT INTO pmetric VALUES(?1, ?2)", &w->pm)) < 0)
    gpd_store_merged_close(w);
  return e;
}

int gpd_store_merged_pmetric(gpd_store_merged_t *w, int64_t profile_id, const uint8_t *blob, size_t n) {
  sqlite3_bind_int64(w->pm, 1, profile_id);
  sqlite3_bind_blob(w->pm, 2, n ? (const void *)blob : "", (int)n, SQLITE_STATIC);
  return gpd_store_merged_step(w, w->pm);
}

int gpd_store_merged_stat(gpd_store_merged_t *w, int64_t uid, int64_t ctx, uint32_t metric,
                          const gpd_store_mstat_t *s, const uint8_t *vals, size_t n) {
  sqlite3_stmt *stq = w->stq;
  sqlite3_bind_int64(stq, 1, uid);
  sqlite3_bind_int64(stq, 2, ctx);
  sqlite3_bind_int64(stq, 3, metric);
  sqlite3_bind_int64(stq, 4, (int64_t)s->n);
  sqlite3_bind_int64(stq, 5, (int64_t)s->nz);
  sqlite3_bind_double(stq, 6, s->sum);
  sqlite3_bind_double(stq, 7, s->min);
  sqlite3_bind_double(stq, 8, s->mean);
  sqlite3_bind_double(stq, 9, s->max);
  sqlite3_bind_double(stq, 10, s->stddev);
  sqlite3_bind_double(stq, 11, s->cv);
  sqlite3_bind_int64(stq, 12, s->min_profile);
  sqlite3_bind_int64(stq, 13, s->max_profile);
  sqlite3_bind_blob(stq, 14, n ? (const void *)vals : "", (int)n, SQLITE_STATIC);
  return gpd_store_merged_step(w, stq);
}

int gpd_store_merged_shard_tag(gpd_store_merged_t *w, const char *nonce, uint32_t ord) {
  char *q = sqlite3_mprintf("CREATE TABLE shard_of(nonce TEXT NOT NULL, ord INTEGER NOT NULL);"
                            "INSERT INTO shard_of VALUES(%Q, %u)",
                            nonce, ord);
  int e = q ? exec(w, q) : wfail(w, -ENOMEM, "out of memory");
  sqlite3_free(q);
  return e;
}

int gpd_store_merged_image(gpd_store_merged_t *w, const uint8_t **img, size_t *n) {
  sqlite3_int64 sz = 0;
  int e;
  if ((e = exec(w, "COMMIT")) < 0) return e;
  unsigned char *p = sqlite3_serialize(w->db, "main", &sz, SQLITE_SERIALIZE_NOCOPY);
  if (!p) { /* not one contiguous image: a copy */
    if (!(p = w->img = sqlite3_serialize(w->db, "main", &sz, 0))) return wfail(w, -ENOMEM, "shard: out of memory");
  }
  *img = p;
  *n = (size_t)sz;
  return 0;
}

int gpd_store_merged_shard_add(gpd_store_merged_t *w, uint8_t *img, size_t n) {
  int e, rc;
  /* ATTACH is refused inside a transaction: the rows so far are written
   * (no journal: that is only their pages) and a new one begins */
  if ((e = exec(w, "COMMIT; ATTACH ':memory:' AS shard")) < 0) return e;
  rc = sqlite3_deserialize(w->db, "shard", img, (sqlite3_int64)n, (sqlite3_int64)n, SQLITE_DESERIALIZE_READONLY);
  if (rc != SQLITE_OK) e = wfail(w, GPD_ESTORE, "shard: %s", sqlite3_errmsg(w->db));
  /* the first shard's rows go into empty tables: SQLite copies them as
   * records (its transfer optimization); later ones are appended in order */
  if (!e)
    e = exec(w, "BEGIN; INSERT INTO main.context SELECT * FROM shard.context;"
                "INSERT INTO main.frame SELECT * FROM shard.frame; INSERT INTO main.stat SELECT * FROM shard.stat;"
                "COMMIT");
  if (!sqlite3_get_autocommit(w->db)) sqlite3_exec(w->db, "ROLLBACK", NULL, NULL, NULL);
  int d = exec(w, "DETACH shard");
  if (!e) e = d;
  if (!e) e = exec(w, "BEGIN");
  return e;
}

int gpd_store_merged_shard_table(gpd_store_merged_t *w) {
  return exec(w, "CREATE TABLE shard(ord INTEGER PRIMARY KEY, name TEXT NOT NULL, bytes INTEGER NOT NULL,"
                 "  xxh64 TEXT NOT NULL, nonce TEXT NOT NULL, contexts INTEGER NOT NULL, keys INTEGER NOT NULL,"
                 "  profiles INTEGER NOT NULL)");
}

int gpd_store_merged_shard_row(gpd_store_merged_t *w, const gpd_store_shard_row_t *r) {
  sqlite3_stmt *st = NULL;
  char h[20];
  int e;
  if ((e = prepare(w, "INSERT INTO shard VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)", &st)) < 0) return e;
  snprintf(h, sizeof(h), "%016llx", (unsigned long long)r->xxh64);
  sqlite3_bind_int64(st, 1, r->ord);
  sqlite3_bind_text(st, 2, r->name, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 3, (int64_t)r->bytes);
  sqlite3_bind_text(st, 4, h, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 5, r->nonce, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 6, (int64_t)r->contexts);
  sqlite3_bind_int64(st, 7, (int64_t)r->keys);
  sqlite3_bind_int64(st, 8, (int64_t)r->profiles);
  e = gpd_store_merged_step(w, st);
  sqlite3_finalize(st);
  return e;
}

static void finalize_all(gpd_store_merged_t *w) {
  for (int t = 0; t < GPD_STORE_MERGED_MAXT; t++) sqlite3_finalize(w->ins[t]), w->ins[t] = NULL;
  sqlite3_finalize(w->pm);
  sqlite3_finalize(w->stq);
  w->pm = w->stq = NULL;
}

int gpd_store_merged_commit(gpd_store_merged_t *w, const char *label) {
  int e;
  if ((e = exec(w, "COMMIT")) < 0) return e;
  finalize_all(w);
  if (sqlite3_close(w->db) != SQLITE_OK) return wfail(w, GPD_ESTORE, "%s: cannot close", label);
  w->db = NULL;
  return 0;
}

void gpd_store_merged_close(gpd_store_merged_t *w) {
  finalize_all(w);
  if (w->db) sqlite3_close(w->db);
  sqlite3_free(w->img);
  w->img = NULL;
  w->db = NULL;
}

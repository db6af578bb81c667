/* reload.c - a stored profile read back by its daemon (store-reload.h). */
#include "store-reload.h"

#include "gpuprof/error.h"

#include "store-db.h"
#include "store-sql.h"

#define TEXT(q, i) ((const char *)sqlite3_column_text(q, i))

/* Prepare sql and bind ?1 id and, when it has one, ?2 b.  0 or GPD_ESTORE. */
static int rows_open(sqlite3 *db, const char *sql, int64_t id, int64_t b, sqlite3_stmt **q) {
  *q = NULL;
  if (sqlite3_prepare_v2(db, sql, -1, q, NULL) != SQLITE_OK)
    return GPD_ESTORE;
  sqlite3_bind_int64(*q, 1, id);
  if (sqlite3_bind_parameter_count(*q) >= 2)
    sqlite3_bind_int64(*q, 2, b);
  return 0;
}

/* Every row of sql (bound as rows_open does) to row(q, k) until it
 * returns non-zero.  0 or GPD_ESTORE. */
static int rows_each(sqlite3 *db, const char *sql, int64_t id, int64_t b, int (*row)(sqlite3_stmt *q, void *k),
                     void *k) {
  sqlite3_stmt *q;
  if (rows_open(db, sql, id, b, &q) < 0)
    return GPD_ESTORE;
  while (sqlite3_step(q) == SQLITE_ROW && row(q, k) == 0)
    ;
  sqlite3_finalize(q);
  return 0;
}

/* A caller's callback of one table and its argument. */
#define SINK(name, ...)                                                                                  \
  typedef struct {                                                                                     \
    int (*fn)(void *arg, __VA_ARGS__);                                                                 \
    void *arg;                                                                                         \
  } name
SINK(profile_sink_t, const gpd_store_profile_row_t *r);
SINK(module_sink_t, const gpd_store_module_row_t *r);
SINK(string_sink_t, const gpd_store_string_row_t *r);
SINK(backend_sink_t, const gpd_store_backend_row_t *r);
SINK(context_sink_t, const gpd_store_context_row_t *r);
SINK(metric_sink_t, uint64_t ctx, int64_t metric, double v);
SINK(local_sink_t, uint32_t local, uint64_t ctx);
SINK(pending_sink_t, const void *rec, size_t len);
SINK(cursor_sink_t, int64_t ring, uint64_t pos);

#define I64(q, i) sqlite3_column_int64(q, i)
#define U64(q, i) ((uint64_t)sqlite3_column_int64(q, i))

static int profile_row(sqlite3_stmt *q, void *k) {
  const profile_sink_t *s = k;
  gpd_store_profile_row_t r = {
      .id = U64(q, 0),          .pid = I64(q, 1),          .ppid = I64(q, 2),
      .uid = I64(q, 3),         .gid = I64(q, 4),          .exe = TEXT(q, 5),
      .job = TEXT(q, 6),        .step = TEXT(q, 7),        .hostname = TEXT(q, 8),
      .rank = I64(q, 9),        .local_rank = I64(q, 10),  .start_ns = U64(q, 11),
      .end_ns = U64(q, 12),     .state = TEXT(q, 13),      .drops = U64(q, 14),
      .error = TEXT(q, 15),     .argv = TEXT(q, 16),       .proc_start = U64(q, 17)};
  return s->fn(s->arg, &r);
}

static int module_row(sqlite3_stmt *q, void *k) {
  const module_sink_t *s = k;
  gpd_store_module_row_t r = {(uint32_t)I64(q, 0), TEXT(q, 1), TEXT(q, 2), U64(q, 3), U64(q, 4)};
  return s->fn(s->arg, &r);
}

static int string_row(sqlite3_stmt *q, void *k) {
  const string_sink_t *s = k;
  gpd_store_string_row_t r = {(uint32_t)I64(q, 0), (uint32_t)I64(q, 1), TEXT(q, 2)};
  return s->fn(s->arg, &r);
}

static int backend_row(sqlite3_stmt *q, void *k) {
  const backend_sink_t *s = k;
  gpd_store_backend_row_t r = {TEXT(q, 0), sqlite3_column_int(q, 1), sqlite3_column_int(q, 2), TEXT(q, 3)};
  return s->fn(s->arg, &r);
}

static int context_row(sqlite3_stmt *q, void *k) {
  const context_sink_t *s = k;
  gpd_store_context_row_t r = {.id = U64(q, 0),      .parent = U64(q, 1),     .kind = sqlite3_column_int(q, 2),
                               .module = TEXT(q, 3), .build_id = TEXT(q, 4), .offset = U64(q, 5),
                               .label = TEXT(q, 6),  .raw = TEXT(q, 7)};
  return s->fn(s->arg, &r);
}

static int metric_row(sqlite3_stmt *q, void *k) {
  const metric_sink_t *s = k;
  return s->fn(s->arg, U64(q, 0), I64(q, 1), sqlite3_column_double(q, 2));
}

static int local_row(sqlite3_stmt *q, void *k) {
  const local_sink_t *s = k;
  return s->fn(s->arg, (uint32_t)I64(q, 0), U64(q, 1));
}

static int pending_row(sqlite3_stmt *q, void *k) {
  const pending_sink_t *s = k;
  const void *b = sqlite3_column_blob(q, 0);
  int len = sqlite3_column_bytes(q, 0);
  return s->fn(s->arg, b, len > 0 ? (size_t)len : 0);
}

static int cursor_row(sqlite3_stmt *q, void *k) {
  const cursor_sink_t *s = k;
  return s->fn(s->arg, I64(q, 0), U64(q, 1));
}

int gpd_store_reload_mark_lost(sqlite3 *db) {
  return gpd_store_db_exec(db, "UPDATE profile SET state='lost' WHERE state='running';");
}

int gpd_store_reload_profile(sqlite3 *db, uint64_t id, gpd_store_profile_row_t *out) {
  sqlite3_stmt *q;
  if (rows_open(db, "SELECT uid, records, pid, proc_start FROM profile WHERE id=?1", (int64_t)id, 0, &q) < 0)
    return GPD_ESTORE;
  int found = sqlite3_step(q) == SQLITE_ROW;
  if (found) {
    *out = (gpd_store_profile_row_t){.id = id};
    out->uid = sqlite3_column_int64(q, 0);
    out->records = (uint64_t)sqlite3_column_int64(q, 1);
    out->pid = sqlite3_column_int64(q, 2);
    out->proc_start = (uint64_t)sqlite3_column_int64(q, 3);
  }
  sqlite3_finalize(q);
  return found;
}

int gpd_store_reload_profiles(sqlite3 *db, unsigned keep, int (*fn)(void *arg, const gpd_store_profile_row_t *r),
                              void *arg) {
  profile_sink_t k = {fn, arg};
  return rows_each(db,
                   "SELECT id, pid, ppid, uid, gid, exe, job_id, step_id, hostname, rank,"
                   " local_rank, start_ns, end_ns, state, drops, error, argv, proc_start"
                   " FROM profile ORDER BY gpd_profile_seq(id) DESC LIMIT ?1",
                   keep, 0, profile_row, &k);
}

int gpd_store_reload_modules(sqlite3 *db, uint64_t id, int (*fn)(void *arg, const gpd_store_module_row_t *r),
                             void *arg) {
  module_sink_t k = {fn, arg};
  return rows_each(db, "SELECT id, path, build_id, base, size FROM module WHERE profile_id=?1", (int64_t)id, 0,
                   module_row, &k);
}

int gpd_store_reload_strings(sqlite3 *db, uint64_t id, int (*fn)(void *arg, const gpd_store_string_row_t *r),
                             void *arg) {
  string_sink_t k = {fn, arg};
  return rows_each(db, "SELECT id, kind, text FROM string WHERE profile_id=?1", (int64_t)id, 0, string_row, &k);
}

int gpd_store_reload_backends(sqlite3 *db, uint64_t id, int (*fn)(void *arg, const gpd_store_backend_row_t *r),
                              void *arg) {
  backend_sink_t k = {fn, arg};
  return rows_each(db, "SELECT api, enabled, code, reason FROM backend WHERE profile_id=?1", (int64_t)id, 0,
                   backend_row, &k);
}

int gpd_store_reload_contexts(sqlite3 *db, uint64_t id, uint32_t uid,
                              int (*fn)(void *arg, const gpd_store_context_row_t *r), void *arg) {
  context_sink_t k = {fn, arg};
  return rows_each(db,
                   "WITH RECURSIVE c(id) AS (SELECT context_id FROM cct_local WHERE profile_id=?1"
                   " UNION SELECT context_id FROM metric WHERE profile_id=?1"
                   " UNION SELECT context.parent FROM context JOIN c ON context.uid=?2 AND context.id=c.id"
                   " WHERE context.parent != 0)"
                   " SELECT context.id, parent, kind, module, build_id, offset, label, raw_name"
                   " FROM context JOIN c ON context.uid=?2 AND context.id=c.id",
                   (int64_t)id, uid, context_row, &k);
}

int gpd_store_reload_metrics(sqlite3 *db, uint64_t id, int (*fn)(void *arg, uint64_t ctx, int64_t metric, double v),
                             void *arg) {
  metric_sink_t k = {fn, arg};
  return rows_each(db, "SELECT context_id, metric_id, value FROM metric WHERE profile_id=?1", (int64_t)id, 0,
                   metric_row, &k);
}

int gpd_store_reload_locals(sqlite3 *db, uint64_t id, int (*fn)(void *arg, uint32_t local, uint64_t ctx),
                            void *arg) {
  local_sink_t k = {fn, arg};
  return rows_each(db, "SELECT local_id, context_id FROM cct_local WHERE profile_id=?1", (int64_t)id, 0, local_row,
                   &k);
}

int gpd_store_reload_pending(sqlite3 *db, uint64_t id, int (*fn)(void *arg, const void *rec, size_t len),
                             void *arg) {
  pending_sink_t k = {fn, arg};
  return rows_each(db, "SELECT rec FROM pending WHERE profile_id=?1 ORDER BY seq", (int64_t)id, 0, pending_row, &k);
}

int gpd_store_reload_cursors(sqlite3 *db, uint64_t id, int (*fn)(void *arg, int64_t ring, uint64_t pos),
                             void *arg) {
  cursor_sink_t k = {fn, arg};
  return rows_each(db, "SELECT ring, pos FROM ring_cursor WHERE profile_id=?1", (int64_t)id, 0, cursor_row, &k);
}

uint64_t gpd_store_reload_trace_rows(sqlite3 *db, uint64_t id) {
  sqlite3_stmt *q;
  uint64_t n = 0;
  if (rows_open(db,
                "SELECT (SELECT count(*) FROM trace_event WHERE profile_id=?1) +"
                " (SELECT count(*) FROM trace_launch WHERE profile_id=?1)",
                (int64_t)id, 0, &q) < 0)
    return 0;
  if (sqlite3_step(q) == SQLITE_ROW)
    n = (uint64_t)sqlite3_column_int64(q, 0);
  sqlite3_finalize(q);
  return n;
}

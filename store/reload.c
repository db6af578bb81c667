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
  sqlite3_stmt *q;
  if (rows_open(db,
                "SELECT id, pid, ppid, uid, gid, exe, job_id, step_id, hostname, rank,"
                " local_rank, start_ns, end_ns, state, drops, error, argv, proc_start"
                " FROM profile ORDER BY id DESC LIMIT ?1",
                keep, 0, &q) < 0)
    return GPD_ESTORE;
  while (sqlite3_step(q) == SQLITE_ROW) {
    gpd_store_profile_row_t r = {
        .id = (uint64_t)sqlite3_column_int64(q, 0), .pid = sqlite3_column_int64(q, 1),
        .ppid = sqlite3_column_int64(q, 2),         .uid = sqlite3_column_int64(q, 3),
        .gid = sqlite3_column_int64(q, 4),          .exe = TEXT(q, 5),
        .job = TEXT(q, 6),                          .step = TEXT(q, 7),
        .hostname = TEXT(q, 8),                     .rank = sqlite3_column_int64(q, 9),
        .local_rank = sqlite3_column_int64(q, 10),  .start_ns = (uint64_t)sqlite3_column_int64(q, 11),
        .end_ns = (uint64_t)sqlite3_column_int64(q, 12), .state = TEXT(q, 13),
        .drops = (uint64_t)sqlite3_column_int64(q, 14), .error = TEXT(q, 15),
        .argv = TEXT(q, 16),                        .proc_start = (uint64_t)sqlite3_column_int64(q, 17)};
    if (fn(arg, &r))
      break;
  }
  sqlite3_finalize(q);
  return 0;
}

int gpd_store_reload_modules(sqlite3 *db, uint64_t id, int (*fn)(void *arg, const gpd_store_module_row_t *r),
                             void *arg) {
  sqlite3_stmt *q;
  if (rows_open(db, "SELECT id, path, build_id, base, size FROM module WHERE profile_id=?1", (int64_t)id, 0, &q) < 0)
    return GPD_ESTORE;
  while (sqlite3_step(q) == SQLITE_ROW) {
    gpd_store_module_row_t r = {(uint32_t)sqlite3_column_int64(q, 0), TEXT(q, 1), TEXT(q, 2),
                                (uint64_t)sqlite3_column_int64(q, 3), (uint64_t)sqlite3_column_int64(q, 4)};
    if (fn(arg, &r))
      break;
  }
  sqlite3_finalize(q);
  return 0;
}

int gpd_store_reload_strings(sqlite3 *db, uint64_t id, int (*fn)(void *arg, const gpd_store_string_row_t *r),
                             void *arg) {
  sqlite3_stmt *q;
  if (rows_open(db, "SELECT id, kind, text FROM string WHERE profile_id=?1", (int64_t)id, 0, &q) < 0)
    return GPD_ESTORE;
  while (sqlite3_step(q) == SQLITE_ROW) {
    gpd_store_string_row_t r = {(uint32_t)sqlite3_column_int64(q, 0), (uint32_t)sqlite3_column_int64(q, 1),
                                TEXT(q, 2)};
    if (fn(arg, &r))
      break;
  }
  sqlite3_finalize(q);
  return 0;
}

int gpd_store_reload_backends(sqlite3 *db, uint64_t id, int (*fn)(void *arg, const gpd_store_backend_row_t *r),
                              void *arg) {
  sqlite3_stmt *q;
  if (rows_open(db, "SELECT api, enabled, code, reason FROM backend WHERE profile_id=?1", (int64_t)id, 0, &q) < 0)
    return GPD_ESTORE;
  while (sqlite3_step(q) == SQLITE_ROW) {
    gpd_store_backend_row_t r = {TEXT(q, 0), sqlite3_column_int(q, 1), sqlite3_column_int(q, 2), TEXT(q, 3)};
    if (fn(arg, &r))
      break;
  }
  sqlite3_finalize(q);
  return 0;
}

int gpd_store_reload_contexts(sqlite3 *db, uint64_t id, uint32_t uid,
                              int (*fn)(void *arg, const gpd_store_context_row_t *r), void *arg) {
  sqlite3_stmt *q;
  if (rows_open(db,
                "WITH RECURSIVE c(id) AS (SELECT context_id FROM cct_local WHERE profile_id=?1"
                " UNION SELECT context_id FROM metric WHERE profile_id=?1"
                " UNION SELECT context.parent FROM context JOIN c ON context.uid=?2 AND context.id=c.id"
                " WHERE context.parent != 0)"
                " SELECT context.id, parent, kind, module, build_id, offset, label, raw_name"
                " FROM context JOIN c ON context.uid=?2 AND context.id=c.id",
                (int64_t)id, uid, &q) < 0)
    return GPD_ESTORE;
  while (sqlite3_step(q) == SQLITE_ROW) {
    gpd_store_context_row_t r = {.id = (uint64_t)sqlite3_column_int64(q, 0),
                                 .parent = (uint64_t)sqlite3_column_int64(q, 1),
                                 .kind = sqlite3_column_int(q, 2),
                                 .module = TEXT(q, 3),
                                 .build_id = TEXT(q, 4),
                                 .offset = (uint64_t)sqlite3_column_int64(q, 5),
                                 .label = TEXT(q, 6),
                                 .raw = TEXT(q, 7)};
    if (fn(arg, &r))
      break;
  }
  sqlite3_finalize(q);
  return 0;
}

int gpd_store_reload_metrics(sqlite3 *db, uint64_t id, int (*fn)(void *arg, uint64_t ctx, int64_t metric, double v),
                             void *arg) {
  sqlite3_stmt *q;
  if (rows_open(db, "SELECT context_id, metric_id, value FROM metric WHERE profile_id=?1", (int64_t)id, 0, &q) < 0)
    return GPD_ESTORE;
  while (sqlite3_step(q) == SQLITE_ROW)
    if (fn(arg, (uint64_t)sqlite3_column_int64(q, 0), sqlite3_column_int64(q, 1), sqlite3_column_double(q, 2)))
      break;
  sqlite3_finalize(q);
  return 0;
}

int gpd_store_reload_locals(sqlite3 *db, uint64_t id, int (*fn)(void *arg, uint32_t local, uint64_t ctx),
                            void *arg) {
  sqlite3_stmt *q;
  if (rows_open(db, "SELECT local_id, context_id FROM cct_local WHERE profile_id=?1", (int64_t)id, 0, &q) < 0)
    return GPD_ESTORE;
  while (sqlite3_step(q) == SQLITE_ROW)
    if (fn(arg, (uint32_t)sqlite3_column_int64(q, 0), (uint64_t)sqlite3_column_int64(q, 1)))
      break;
  sqlite3_finalize(q);
  return 0;
}

int gpd_store_reload_pending(sqlite3 *db, uint64_t id, int (*fn)(void *arg, const void *rec, size_t len),
                             void *arg) {
  sqlite3_stmt *q;
  if (rows_open(db, "SELECT rec FROM pending WHERE profile_id=?1 ORDER BY seq", (int64_t)id, 0, &q) < 0)
    return GPD_ESTORE;
  while (sqlite3_step(q) == SQLITE_ROW) {
    const void *b = sqlite3_column_blob(q, 0);
    int len = sqlite3_column_bytes(q, 0);
    if (fn(arg, b, len > 0 ? (size_t)len : 0))
      break;
  }
  sqlite3_finalize(q);
  return 0;
}

int gpd_store_reload_cursors(sqlite3 *db, uint64_t id, int (*fn)(void *arg, int64_t ring, uint64_t pos),
                             void *arg) {
  sqlite3_stmt *q;
  if (rows_open(db, "SELECT ring, pos FROM ring_cursor WHERE profile_id=?1", (int64_t)id, 0, &q) < 0)
    return GPD_ESTORE;
  while (sqlite3_step(q) == SQLITE_ROW)
    if (fn(arg, sqlite3_column_int64(q, 0), (uint64_t)sqlite3_column_int64(q, 1)))
      break;
  sqlite3_finalize(q);
  return 0;
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

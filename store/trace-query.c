/* trace-query.c - a window of the trace tables for the daemon's live
 * Trace query (store-trace.h). */
#include "store-trace.h"

#include <sqlite3.h>

#include "gpuprof/trace-row.h"
#include "trace-row-read.h"

#include "gpuprof/error.h"
#include "gpuprof/log.h"

#include "store-db.h"

typedef struct {
  void (*ev)(void *arg, const gpd_trace_row_t *r);
  void (*launch)(void *arg, const gpd_trace_lrow_t *l);
  void *arg;
} sink_t;

/* Rows of sql (bound: ?1 profile, ?2 from, ?3 to, ?4 limit) of every
 * profile, each to the sink; at most `room` in all.  Returns the count. */
static size_t read_rows(sqlite3 *db, const char *sql, const uint64_t *ids, size_t nids, uint64_t from, uint64_t to,
                        size_t room, const sink_t *k) {
  size_t n = 0;
  sqlite3_stmt *q = NULL;
  if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK) {
    GPD_WARN("trace query: %s", sqlite3_errmsg(db));
    return 0;
  }
  for (size_t i = 0; i < nids && n < room; i++) {
    sqlite3_bind_int64(q, 1, (int64_t)ids[i]);
    sqlite3_bind_int64(q, 2, (int64_t)from);
    sqlite3_bind_int64(q, 3, to > INT64_MAX ? INT64_MAX : (int64_t)to);
    sqlite3_bind_int64(q, 4, (int64_t)(room - n));
    while (n < room && sqlite3_step(q) == SQLITE_ROW) {
      if (k->ev) {
        gpd_trace_row_t r;
        gpd_trace_row_read(q, ids[i], &r);
        k->ev(k->arg, &r);
      } else {
        gpd_trace_lrow_t l;
        gpd_trace_lrow_read(q, ids[i], &l);
        k->launch(k->arg, &l);
      }
      n++;
    }
    sqlite3_reset(q);
  }
  sqlite3_finalize(q);
  return n;
}

int gpd_store_trace_query(const char *path, const uint64_t *ids, size_t nids, uint64_t from, uint64_t to, size_t max,
                          void (*ev)(void *arg, const gpd_trace_row_t *r),
                          void (*launch)(void *arg, const gpd_trace_lrow_t *l), void *arg, size_t *nev,
                          size_t *nlaunch) {
  sqlite3 *db = NULL;
  *nev = *nlaunch = 0;
  if (gpd_store_db_open_read(path, 5000, &db) < 0)
    return GPD_ESTORE;
  gpd_store_db_begin_read(db); /* one snapshot for both tables */
  sink_t ke = {ev, NULL, arg}, kl = {NULL, launch, arg};
  *nev = read_rows(db,
                   "SELECT " GPD_TRACE_ROW_COLS " FROM trace_event"
                   " WHERE profile_id=?1 AND start_ns BETWEEN ?2 AND ?3"
                   " ORDER BY start_ns LIMIT ?4",
                   ids, nids, from, to, max, &ke);
  *nlaunch = read_rows(db,
                       "SELECT " GPD_TRACE_LROW_COLS " FROM trace_launch"
                       " WHERE profile_id=?1 AND ts_ns BETWEEN ?2 AND ?3 ORDER BY ts_ns LIMIT ?4",
                       ids, nids, from, to, max - *nev, &kl);
  sqlite3_exec(db, "COMMIT;", NULL, NULL, NULL);
  gpd_store_db_close(db);
  return 0;
}

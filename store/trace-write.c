/* trace-write.c - a tracing thread's inserts into the trace tables
 * (store-trace.h). */
#include "store-trace.h"

#include <errno.h>
#include <stdlib.h>

#include <sqlite3.h>

#include "gpuprof/error.h"
#include "gpuprof/log.h"

#include "store-db.h"
#include "store-sql.h"

enum { T_EVENT, T_LAUNCH, T_STAT, T__N };

static const char *const T_SQL[T__N] = {
    "INSERT OR IGNORE INTO trace_event(profile_id, start_ns, stream, corr, end_ns, device, op,"
    " subkind, node, name, bytes) VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11)",
    "INSERT OR IGNORE INTO trace_launch(profile_id, ts_ns, tid, corr, node, op)"
    " VALUES(?1,?2,?3,?4,?5,?6)",
    "INSERT INTO trace_stat(profile_id, events, dropped, refused) VALUES(?1,?2,?3,?4)"
    " ON CONFLICT(profile_id) DO UPDATE SET events=max(events, excluded.events),"
    " dropped=max(dropped, excluded.dropped), refused=max(refused, excluded.refused)",
};

int gpd_store_trace_open(const char *path, gpd_store_trace_t **w) {
  sqlite3 *db = NULL;
  *w = NULL;
  /* the store made the file (private, no link); NOFOLLOW as it opens it */
  if (gpd_store_db_open(path, 0, &db) < 0)
    return GPD_ESTORE;
  if ((*w = gpd_store_stmts_new(db, "trace", T_SQL, T__N)) == NULL) {
    gpd_store_db_close(db);
    return GPD_ESTORE;
  }
  return 0;
}

void gpd_store_trace_close(gpd_store_trace_t *w) {
  if (w == NULL)
    return;
  sqlite3 *db = w->db;
  gpd_store_stmts_free(w);
  gpd_store_db_close(db);
}

int gpd_store_trace_begin(gpd_store_trace_t *w) {
  return sqlite3_exec(w->db, "BEGIN IMMEDIATE;", NULL, NULL, NULL) == SQLITE_OK ? 0 : GPD_ESTORE;
}

int gpd_store_trace_commit(gpd_store_trace_t *w) {
  return sqlite3_exec(w->db, "COMMIT;", NULL, NULL, NULL) == SQLITE_OK ? 0 : GPD_ESTORE;
}

void gpd_store_trace_rollback(gpd_store_trace_t *w) { gpd_store_db_rollback(w->db); }

const char *gpd_store_trace_error(gpd_store_trace_t *w) { return sqlite3_errmsg(w->db); }

static int step(sqlite3_stmt *s) {
  int rc = sqlite3_step(s);
  sqlite3_reset(s);
  return rc == SQLITE_DONE ? 0 : GPD_ESTORE;
}

int gpd_store_trace_event(gpd_store_trace_t *w, const gpd_trace_row_t *r, uint32_t name) {
  sqlite3_stmt *s = w->st[T_EVENT];
  sqlite3_bind_int64(s, 1, (int64_t)r->profile);
  sqlite3_bind_int64(s, 2, (int64_t)r->start);
  sqlite3_bind_int64(s, 3, r->stream);
  sqlite3_bind_int64(s, 4, (int64_t)r->corr);
  sqlite3_bind_int64(s, 5, (int64_t)r->end);
  sqlite3_bind_int64(s, 6, r->device);
  sqlite3_bind_int(s, 7, r->op);
  sqlite3_bind_int(s, 8, r->subkind);
  sqlite3_bind_int64(s, 9, (int64_t)r->node);
  sqlite3_bind_int64(s, 10, name);
  sqlite3_bind_int64(s, 11, (int64_t)r->bytes);
  return step(s);
}

int gpd_store_trace_launch(gpd_store_trace_t *w, const gpd_trace_lrow_t *l) {
  sqlite3_stmt *s = w->st[T_LAUNCH];
  sqlite3_bind_int64(s, 1, (int64_t)l->profile);
  sqlite3_bind_int64(s, 2, (int64_t)l->ts);
  sqlite3_bind_int64(s, 3, l->tid);
  sqlite3_bind_int64(s, 4, (int64_t)l->corr);
  sqlite3_bind_int64(s, 5, (int64_t)l->node);
  sqlite3_bind_int(s, 6, l->op);
  return step(s);
}

int gpd_store_trace_stat(gpd_store_trace_t *w, uint64_t profile, uint64_t events, uint64_t dropped,
                         uint64_t refused) {
  sqlite3_stmt *s = w->st[T_STAT];
  sqlite3_bind_int64(s, 1, (int64_t)profile);
  sqlite3_bind_int64(s, 2, (int64_t)events);
  sqlite3_bind_int64(s, 3, (int64_t)dropped);
  sqlite3_bind_int64(s, 4, (int64_t)refused);
  return step(s);
}

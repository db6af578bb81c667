/* duty-read.c - the duty-cycle windows of a saved profile's processes
 * (trace_duty, trace_window, trace_duty_launch; docs/CUDA.md "The
 * duty-cycle estimate"), store-read.h.  A store from before duty windows
 * lacks the tables: it has no duty-cycled process. */
#include <errno.h>

#include "gpuprof/error.h"
#include "read-internal.h"
#include "store-read.h"

int gpd_store_duty_any(sqlite3 *db, int pid) {
  return gpd__store_int(db,
                        "SELECT 1 FROM trace_duty d JOIN profile p ON p.id = d.profile_id"
                        " WHERE d.duty = 1 AND (?1 = 0 OR p.pid = ?1) LIMIT 1",
                        pid) == 1;
}

typedef struct duty_cb_s {
  int (*fn)(void *c, const gpd_store_duty_t *d);
  int (*win)(void *c, uint64_t start);
  void *c;
} duty_cb_t;

static int duty_row(sqlite3_stmt *q, void *arg) {
  duty_cb_t *cb = arg;
  gpd_store_duty_t d = {.profile = (uint64_t)sqlite3_column_int64(q, 0),
                        .pid = sqlite3_column_int(q, 1),
                        .api = sqlite3_column_int(q, 2),
                        .final = sqlite3_column_int(q, 3),
                        .t0 = (uint64_t)sqlite3_column_int64(q, 4),
                        .end = (uint64_t)sqlite3_column_int64(q, 5),
                        .windows = (uint64_t)sqlite3_column_int64(q, 6),
                        .window_ns = (uint64_t)sqlite3_column_int64(q, 7)};
  return cb->fn(cb->c, &d);
}

int gpd_store_duty_each(sqlite3 *db, int pid, int (*fn)(void *c, const gpd_store_duty_t *d), void *c) {
  duty_cb_t cb = {fn, NULL, c};
  int64_t a = pid;
  int r = gpd__store_each(db,
                          "SELECT d.profile_id, p.pid, d.api, d.final, d.t0_ns, d.end_ns, d.windows,"
                          " d.window_ns FROM trace_duty d JOIN profile p ON p.id = d.profile_id"
                          " WHERE d.duty = 1 AND (?1 = 0 OR p.pid = ?1) ORDER BY d.profile_id",
                          &a, 1, duty_row, &cb, 1, "", NULL, 0);
  return r == GPD_ESTORE ? 0 : r; /* a failing step: as many as were read */
}

static int win_row(sqlite3_stmt *q, void *arg) {
  duty_cb_t *cb = arg;
  return cb->win(cb->c, (uint64_t)sqlite3_column_int64(q, 0));
}

int gpd_store_duty_windows(sqlite3 *db, uint64_t profile, int (*fn)(void *c, uint64_t start), void *c) {
  sqlite3_stmt *q = NULL;
  duty_cb_t cb = {NULL, fn, c};
  int r = 0;
  if (sqlite3_prepare_v2(db, "SELECT start_ns FROM trace_window WHERE profile_id=?1 ORDER BY start_ns", -1, &q,
                         NULL) != SQLITE_OK)
    return -EIO;
  sqlite3_bind_int64(q, 1, (int64_t)profile);
  while (r == 0 && sqlite3_step(q) == SQLITE_ROW) r = win_row(q, &cb);
  sqlite3_finalize(q);
  return r;
}

int gpd_store_duty_launches(sqlite3 *db, uint64_t profile, int64_t *launches, int64_t *inside) {
  sqlite3_stmt *q = NULL;
  int yes = 0;
  if (sqlite3_prepare_v2(db, "SELECT launches, launches_in FROM trace_duty_launch WHERE profile_id = ?1", -1, &q,
                         NULL) != SQLITE_OK)
    return 0;
  sqlite3_bind_int64(q, 1, (int64_t)profile);
  if (sqlite3_step(q) == SQLITE_ROW) {
    *launches = sqlite3_column_int64(q, 0);
    *inside = sqlite3_column_int64(q, 1);
    yes = 1;
  }
  sqlite3_finalize(q);
  return yes;
}

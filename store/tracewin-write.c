/* tracewin-write.c - tracing windows of a flush: tables trace_duty,
 * trace_duty_launch and trace_window (store-write.h; docs/FORMATS.md). */
#include "store-write.h"

#include "store-db.h"
#include "store-sql.h"

int gpd_store_write_tracewin(sqlite3 *db, int64_t profile_id, const gpd_tw_snap_t *s) {
  static const char *sql[] = {
      "INSERT OR REPLACE INTO trace_duty VALUES(?1,?2,?3,?4,?5,?6,?7,?8)",
      "INSERT OR IGNORE INTO trace_window VALUES(?1,?2,?3)",
      "INSERT OR REPLACE INTO trace_duty_launch VALUES(?1,?2,?3)",
  };
  sqlite3_stmt *st[3] = {0};
  int err = 0;
  if (!s->have)
    return 0;
  if ((err = gpd_store_db_prepare(db, "tracewin", sql, st, 3)) < 0)
    goto out;
  sqlite3_bind_int64(st[0], 1, profile_id);
  sqlite3_bind_int(st[0], 2, s->api);
  sqlite3_bind_int(st[0], 3, s->duty);
  sqlite3_bind_int64(st[0], 4, (int64_t)s->t0);
  sqlite3_bind_int64(st[0], 5, (int64_t)s->end);
  sqlite3_bind_int(st[0], 6, s->final);
  sqlite3_bind_int64(st[0], 7, (int64_t)s->windows);
  sqlite3_bind_int64(st[0], 8, (int64_t)s->window_ns);
  err = gpd_store_db_run(st[0]);
  if (err == 0 && s->launches) {
    sqlite3_bind_int64(st[2], 1, profile_id);
    sqlite3_bind_int64(st[2], 2, (int64_t)s->launches);
    sqlite3_bind_int64(st[2], 3, (int64_t)s->launches_in);
    err = gpd_store_db_run(st[2]);
  }
  for (uint32_t i = 0; i < s->nwin && err == 0; i++) {
    sqlite3_bind_int64(st[1], 1, profile_id);
    sqlite3_bind_int64(st[1], 2, (int64_t)s->win[i].start);
    sqlite3_bind_int64(st[1], 3, (int64_t)s->win[i].end);
    err = gpd_store_db_run(st[1]);
  }
out:
  for (int i = 0; i < 3; i++)
    sqlite3_finalize(st[i]);
  return err;
}

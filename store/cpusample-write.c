/* cpusample-write.c - CPU-time samples of a flush: tables trace_cpu_sample
 * and cpu_sample_stat (store-write.h; docs/FORMATS.md). */
#include "store-write.h"

#include "store-db.h"
#include "store-sql.h"

int gpd_store_write_cpusample(sqlite3 *db, int64_t profile_id, const gpd_cps_snap_t *s) {
  static const char *sql[] = {
      "INSERT INTO trace_cpu_sample VALUES(?1,?2,?3,?4)",
      "INSERT INTO cpu_sample_stat VALUES(?1,?2,?3,?4,?5,?6) ON CONFLICT DO UPDATE SET"
      " samples=samples+excluded.samples, cputime_ns=cputime_ns+excluded.cputime_ns,"
      " trace_rows=trace_rows+excluded.trace_rows, trace_dropped=trace_dropped+excluded.trace_dropped,"
      " unknown=unknown+excluded.unknown",
  };
  sqlite3_stmt *st[2] = {0};
  int err = 0;
  if (!s->have)
    return 0;
  if ((err = gpd_store_db_prepare(db, "cpusample", sql, st, 2)) < 0)
    goto out;
  for (uint32_t i = 0; i < s->nrows && err == 0; i++) {
    sqlite3_bind_int64(st[0], 1, profile_id);
    sqlite3_bind_int64(st[0], 2, s->rows[i].tid);
    sqlite3_bind_int64(st[0], 3, (int64_t)s->rows[i].ts);
    sqlite3_bind_int64(st[0], 4, (int64_t)s->rows[i].ctx);
    err = gpd_store_db_run(st[0]);
  }
  if (err == 0) {
    sqlite3_bind_int64(st[1], 1, profile_id);
    sqlite3_bind_int64(st[1], 2, (int64_t)s->samples);
    sqlite3_bind_int64(st[1], 3, (int64_t)s->cputime_ns);
    sqlite3_bind_int64(st[1], 4, (int64_t)s->trace_rows);
    sqlite3_bind_int64(st[1], 5, (int64_t)s->trace_dropped);
    sqlite3_bind_int64(st[1], 6, (int64_t)s->unknown);
    err = gpd_store_db_run(st[1]);
  }
out:
  for (int i = 0; i < 2; i++)
    sqlite3_finalize(st[i]);
  return err;
}

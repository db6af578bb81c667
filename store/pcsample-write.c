/* pcsample-write.c - GPU PC samples of a flush: tables pcsample,
 * pcsample_cubin, pcsample_stat (store-write.h; docs/FORMATS.md). */
#include "store-write.h"

#include "store-db.h"
#include "store-sql.h"

int gpd_store_write_pcsample(sqlite3 *db, int64_t profile_id, const gpd_pcs_snap_t *s) {
  static const char *sql[] = {
      "INSERT INTO pcsample VALUES(?1,?2,?3,?4,?5,?6,?7,?8) ON CONFLICT DO UPDATE SET"
      " samples=samples+excluded.samples, latency=latency+excluded.latency",
      "INSERT OR REPLACE INTO pcsample_cubin VALUES(?1,?2,?3)",
      "INSERT INTO pcsample_stat VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9) ON CONFLICT DO UPDATE SET"
      " period_log2=excluded.period_log2, sm_count=excluded.sm_count,"
      " clock_khz=excluded.clock_khz, total=total+excluded.total,"
      " dropped=dropped+excluded.dropped, non_user=non_user+excluded.non_user,"
      " lost_keys=lost_keys+excluded.lost_keys",
  };
  sqlite3_stmt *st[3] = {0};
  int err = 0;
  if (s->nrows == 0 && s->ncubins == 0 && s->nstats == 0 && s->lost == 0)
    return 0;
  if ((err = gpd_store_db_prepare(db, "pcsample", sql, st, 3)) < 0)
    goto out;
  for (uint32_t i = 0; i < s->nrows && err == 0; i++) {
    const gpd_pcs_row_t *r = &s->rows[i];
    sqlite3_bind_int64(st[0], 1, profile_id);
    sqlite3_bind_int64(st[0], 2, (int64_t)r->cubin_id);
    sqlite3_bind_int64(st[0], 3, r->func);
    sqlite3_bind_int64(st[0], 4, (int64_t)r->pc);
    sqlite3_bind_int64(st[0], 5, r->stall);
    sqlite3_bind_int64(st[0], 6, r->device);
    sqlite3_bind_int64(st[0], 7, (int64_t)r->samples);
    sqlite3_bind_int64(st[0], 8, (int64_t)r->latency);
    err = gpd_store_db_run(st[0]);
  }
  for (uint32_t i = 0; i < s->ncubins && err == 0; i++) {
    sqlite3_bind_int64(st[1], 1, profile_id);
    sqlite3_bind_int64(st[1], 2, (int64_t)s->cubins[i].cubin_id);
    sqlite3_bind_text(st[1], 3, s->cubins[i].hash, -1, SQLITE_STATIC);
    err = gpd_store_db_run(st[1]);
  }
  /* lost keys ride on device 0's row when no device reported stats */
  gpd_pcs_stat_t none = {0};
  uint32_t nst = s->nstats;
  const gpd_pcs_stat_t *stats = s->stats;
  if (nst == 0 && s->lost) {
    stats = &none;
    nst = 1;
  }
  for (uint32_t i = 0; i < nst && err == 0; i++) {
    const gpd_pcs_stat_t *x = &stats[i];
    sqlite3_bind_int64(st[2], 1, profile_id);
    sqlite3_bind_int64(st[2], 2, x->device);
    sqlite3_bind_int64(st[2], 3, x->period_log2);
    sqlite3_bind_int64(st[2], 4, x->sm_count);
    sqlite3_bind_int64(st[2], 5, x->clock_khz);
    sqlite3_bind_int64(st[2], 6, (int64_t)x->total);
    sqlite3_bind_int64(st[2], 7, (int64_t)x->dropped);
    sqlite3_bind_int64(st[2], 8, (int64_t)x->non_user);
    sqlite3_bind_int64(st[2], 9, i == 0 ? (int64_t)s->lost : 0);
    err = gpd_store_db_run(st[2]);
  }
out:
  for (int i = 0; i < 3; i++)
    sqlite3_finalize(st[i]);
  return err;
}

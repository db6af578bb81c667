/* pcsample-read.c - the GPU PC samples of a saved profile (pcsample,
 * pcsample_cubin, pcsample_stat; docs/FORMATS.md), store-read.h. */
#include <stdio.h>

#include "gpuprof/error.h"
#include "read-internal.h"
#include "store-read.h"

/* the sample rows of ?1's profiles summed per (function, hash, pc,
 * stall); HASH: the binary's hash expression */
#define PCS_SQL(HASH)                                                                                  \
  "SELECT fs.text, " HASH ", s.pc, ss.text, SUM(s.samples) FROM pcsample s "                        \
  "JOIN string fs ON fs.profile_id = s.profile_id AND fs.id = s.func "                               \
  "JOIN string ss ON ss.profile_id = s.profile_id AND ss.id = s.stall "                              \
  "LEFT JOIN pcsample_cubin c ON c.profile_id = s.profile_id AND c.cubin_id = s.cubin_id "           \
  "WHERE (?1 = 0 OR s.profile_id IN (SELECT id FROM profile WHERE pid = ?1)) "                       \
  "GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3"

int gpd_store_pcsample_each(sqlite3 *db, int pid, int guess_hash, int (*fn)(void *c, const gpd_store_pcsample_t *s),
                            void *c, char *err, size_t errn) {
  sqlite3_stmt *st = NULL;
  int r = 0, rc;
  /* guess: the hash the other processes agree on for that binary id (the
   * CRC of the same binary) */
  const char *sql = guess_hash ? PCS_SQL("COALESCE(c.hash, (SELECT CASE WHEN COUNT(DISTINCT o.hash) = 1 THEN "
                                         "MIN(o.hash) END FROM pcsample_cubin o WHERE o.cubin_id = s.cubin_id), '')")
                               : PCS_SQL("COALESCE(c.hash, '')");
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
    snprintf(err, errn, "%s", sqlite3_errmsg(db));
    return GPD_ESTORE;
  }
  sqlite3_bind_int(st, 1, pid);
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    gpd_store_pcsample_t s = {(const char *)sqlite3_column_text(st, 0), (const char *)sqlite3_column_text(st, 1),
                              (const char *)sqlite3_column_text(st, 3), sqlite3_column_int64(st, 2),
                              sqlite3_column_double(st, 4)};
    if ((r = fn(c, &s)) < 0) break;
  }
  sqlite3_finalize(st);
  return r;
}

int gpd_store_pcsample_stat(sqlite3 *db, int pid, gpd_store_pcstat_t *s) {
  sqlite3_stmt *st = NULL;
  int yes = 0;
  if (sqlite3_prepare_v2(db,
                         "SELECT SUM(total), SUM(dropped), MAX(period_log2), MAX(sm_count), "
                         "MAX(clock_khz), SUM(lost_keys) FROM pcsample_stat WHERE (?1 = 0 OR "
                         "profile_id IN (SELECT id FROM profile WHERE pid = ?1))",
                         -1, &st, NULL) != SQLITE_OK)
    return 0;
  sqlite3_bind_int(st, 1, pid);
  if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
    *s = (gpd_store_pcstat_t){.total = sqlite3_column_double(st, 0),
                              .dropped = sqlite3_column_double(st, 1),
                              .period_log2 = sqlite3_column_int(st, 2),
                              .sm_count = sqlite3_column_int(st, 3),
                              .clock_khz = sqlite3_column_double(st, 4),
                              .lost_keys = sqlite3_column_double(st, 5)};
    yes = 1;
  }
  sqlite3_finalize(st);
  return yes;
}

int gpd_store_pcsample_has(sqlite3 *db) {
  return gpd_store_file_has_table(db, "pcsample") && gpd_store_file_has_table(db, "pcsample_cubin") &&
         gpd_store_file_has_table(db, "pcsample_stat");
}

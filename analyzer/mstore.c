/* mstore.c - reading the metric values of a merged file (format 3,
 * mout.c): the per-context sums for readers of saved profiles
 * (`gpuprof report`).
 */
#include <errno.h>
#include <string.h>

#include "analyzer.h"
#include "gpuprof/error.h"

int gpd_pmetric_decode(const uint8_t *b, size_t n, int (*fn)(void *c, int64_t ctx, uint32_t metric, double v),
                       void *c) {
  int err = 0;
  if (n % GPD_PMETRIC_REC) return -EINVAL;
  for (size_t o = 0; o < n && !err; o += GPD_PMETRIC_REC) {
    int64_t ctx;
    uint32_t m;
    double v;
    memcpy(&ctx, b + o, 8);
    memcpy(&m, b + o + 8, 4);
    memcpy(&v, b + o + 12, 8);
    err = fn(c, ctx, m, v);
  }
  return err;
}

int gpd_mstore_read_sums(sqlite3 *db, int pid, int (*add)(void *c, int64_t ctx, uint32_t metric, double v),
                         void *c) {
  sqlite3_stmt *st = NULL;
  int rc, err = 0;
  const char *sql = pid <= 0 ? "SELECT context_id, metric_id, SUM(sum) FROM stat GROUP BY context_id, metric_id"
                             : "SELECT vals FROM pmetric WHERE profile_id IN (SELECT id FROM profile WHERE pid = ?1)";
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return GPD_ESTORE;
  if (pid > 0) sqlite3_bind_int(st, 1, pid);
  while (!err && (rc = sqlite3_step(st)) == SQLITE_ROW) {
    if (pid <= 0) {
      err = add(c, sqlite3_column_int64(st, 0), (uint32_t)sqlite3_column_int64(st, 1), sqlite3_column_double(st, 2));
      continue;
    }
    err = gpd_pmetric_decode(sqlite3_column_blob(st, 0), (size_t)sqlite3_column_bytes(st, 0), add, c);
  }
  if (!err && rc != SQLITE_DONE) err = GPD_ESTORE;
  sqlite3_finalize(st);
  return err;
}

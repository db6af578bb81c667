/* metric-read.c - the metric values of a saved profile: `metric` rows,
 * and a merged file's (format 3) pmetric blobs and stat rows
 * (store-read.h; docs/FORMATS.md "Merged profiles"). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "gpuprof/error.h"
#include "read-internal.h"
#include "store-read.h"

int gpd_store_metric_decode(const uint8_t *b, size_t n, gpd_store_value_fn fn, void *c) {
  int err = 0;
  if (n % GPD_STORE_PMETRIC_REC) return -EINVAL;
  for (size_t o = 0; o < n && !err; o += GPD_STORE_PMETRIC_REC) {
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

typedef struct val_cb_s {
  gpd_store_value_fn fn;
  void *c;
} val_cb_t;

/* (context, metric, value) columns */
static int val_row(sqlite3_stmt *st, void *arg) {
  val_cb_t *cb = arg;
  return cb->fn(cb->c, sqlite3_column_int64(st, 0), (uint32_t)sqlite3_column_int64(st, 1),
                sqlite3_column_double(st, 2));
}

/* a pmetric blob in column 0 */
static int blob_row(sqlite3_stmt *st, void *arg) {
  val_cb_t *cb = arg;
  return gpd_store_metric_decode(sqlite3_column_blob(st, 0), (size_t)sqlite3_column_bytes(st, 0), cb->fn, cb->c);
}

int gpd_store_metric_sums(sqlite3 *db, int pid, int merged, gpd_store_value_fn fn, void *c, const char *label,
                          char *err, size_t errn) {
  val_cb_t cb = {fn, c};
  int64_t a = pid;
  if (!merged)
    return gpd__store_each(db,
                           "SELECT context_id, metric_id, SUM(value) FROM metric "
                           "WHERE (?1 = 0 OR profile_id IN (SELECT id FROM profile WHERE pid = ?1)) "
                           "GROUP BY context_id, metric_id",
                           &a, 1, val_row, &cb, 0, label, err, errn);
  /* merged: all from stat.sum, a process from its pmetric blobs */
  int r = pid <= 0 ? gpd__store_each(db,
                                     "SELECT context_id, metric_id, SUM(sum) FROM stat "
                                     "GROUP BY context_id, metric_id",
                                     NULL, 0, val_row, &cb, 0, label, NULL, 0)
                   : gpd__store_each(db,
                                     "SELECT vals FROM pmetric WHERE profile_id IN "
                                     "(SELECT id FROM profile WHERE pid = ?1)",
                                     &a, 1, blob_row, &cb, 0, label, NULL, 0);
  if (r < 0) snprintf(err, errn, "%s: cannot read its merged values (%s)", label, gpd_strerror(r));
  return r;
}

int gpd_store_metric_of_profile(sqlite3 *db, uint64_t profile, uint32_t m1, uint32_t m2, gpd_store_value_fn fn,
                                void *c) {
  val_cb_t cb = {fn, c};
  int64_t a[3] = {(int64_t)profile, m1, m2};
  int r = gpd__store_each(db,
                          "SELECT context_id, metric_id, value FROM metric WHERE profile_id=?1"
                          " AND metric_id IN (?2, ?3) ORDER BY context_id",
                          a, 3, val_row, &cb, 0, "", NULL, 0);
  return r == GPD_ESTORE ? -EIO : r;
}

typedef struct stat_cb_s {
  int (*fn)(void *c, const gpd_store_stat_t *s);
  void *c;
} stat_cb_t;

/* columns c..c+3: profile id, rank (-1 or NULL: not an MPI rank),
 * hostname, pid */
static gpd_store_at_t at(sqlite3_stmt *st, int c) {
  gpd_store_at_t a = {-1, sqlite3_column_int(st, c + 3), (const char *)sqlite3_column_text(st, c + 2)};
  if (sqlite3_column_type(st, c + 1) != SQLITE_NULL && sqlite3_column_int(st, c + 1) >= 0)
    a.rank = sqlite3_column_int(st, c + 1);
  return a;
}

static int stat_row(sqlite3_stmt *st, void *arg) {
  stat_cb_t *cb = arg;
  gpd_store_stat_t s = {(uint64_t)sqlite3_column_int64(st, 0),
                        sqlite3_column_double(st, 1),
                        sqlite3_column_double(st, 2),
                        sqlite3_column_double(st, 3),
                        sqlite3_column_double(st, 4),
                        sqlite3_column_double(st, 5),
                        sqlite3_column_double(st, 6),
                        sqlite3_column_double(st, 7),
                        at(st, 8),
                        at(st, 12)};
  return cb->fn(cb->c, &s);
}

int gpd_store_metric_imbalance(sqlite3 *db, unsigned metric, double fraction, unsigned top,
                               int (*fn)(void *c, const gpd_store_stat_t *s), void *c, const char *label, char *err,
                               size_t errn) {
  sqlite3_stmt *st = NULL;
  stat_cb_t cb = {fn, c};
  int r = 0, rc;
  if (sqlite3_prepare_v2(db,
                         "WITH tot AS (SELECT TOTAL(sum) AS s FROM stat WHERE metric_id = ?1) "
                         "SELECT s.context_id, s.n, s.sum, s.mean, s.stddev, s.cv, s.min, s.max, "
                         "  s.min_profile, a.rank, a.hostname, a.pid, s.max_profile, b.rank, b.hostname, b.pid "
                         "FROM stat s, tot LEFT JOIN profile a ON a.id = s.min_profile "
                         "  LEFT JOIN profile b ON b.id = s.max_profile "
                         "WHERE s.metric_id = ?1 AND s.sum > 0 AND s.sum >= tot.s * ?2 "
                         "ORDER BY s.cv DESC, s.sum DESC, s.context_id LIMIT ?3",
                         -1, &st, NULL) != SQLITE_OK) {
    snprintf(err, errn, "%s: no statistics (%s): only `gpuprof merge` output has them", label, sqlite3_errmsg(db));
    return GPD_ESTORE;
  }
  sqlite3_bind_int(st, 1, (int)metric);
  sqlite3_bind_double(st, 2, fraction);
  sqlite3_bind_int(st, 3, (int)top);
  while ((rc = sqlite3_step(st)) == SQLITE_ROW)
    if ((r = stat_row(st, &cb)) < 0) break;
  if (r == 0 && rc != SQLITE_DONE) r = GPD_ESTORE, snprintf(err, errn, "%s: %s", label, sqlite3_errmsg(db));
  sqlite3_finalize(st);
  return r;
}

int gpd_store_metric_descs(sqlite3 *db, int (*fn)(void *c, int64_t id, const char *name), void *c, const char *label,
                           char *err, size_t errn) {
  sqlite3_stmt *st = NULL;
  int r = 0, rc;
  /* fn's errors carry fn's message */
  if ((r = gpd__store_prep(db, "SELECT id, name FROM metric_desc", &st, label, err, errn)) < 0) return r;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW)
    if ((r = fn(c, sqlite3_column_int64(st, 0), (const char *)sqlite3_column_text(st, 1))) < 0) break;
  if (r == 0 && rc != SQLITE_DONE) r = gpd__store_step_fail(db, rc, label, err, errn);
  sqlite3_finalize(st);
  return r;
}

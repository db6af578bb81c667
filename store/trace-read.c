/* trace-read.c - the traces of a saved profile (trace_event,
 * trace_launch, trace_cpu_sample, trace_stat; docs/TRACE.md), profile by
 * profile, store-read.h. */
#include <errno.h>

#include "read-internal.h"
#include "store-read.h"
#include "trace-row-read.h"

void gpd_store_trace_read_init(gpd_store_trace_reader_t *tr, sqlite3 *db) {
  tr->db = db;
  tr->has_trace = gpd_store_file_has_table(db, "trace_event");
  tr->cpu_sample = 0;
  /* CPU samples (the shim's CPU sampling) when the store has them; an
   * early store named the column `profile` */
  if (tr->has_trace && gpd_store_file_has_table(db, "trace_cpu_sample"))
    tr->cpu_sample = gpd_store_file_has_column(db, "trace_cpu_sample", "profile_id") ? 1 : 2;
}

int64_t gpd_store_trace_read_count_events(const gpd_store_trace_reader_t *tr, uint64_t profile) {
  return tr->has_trace
             ? gpd__store_int(tr->db, "SELECT count(*) FROM trace_event WHERE profile_id=?1", (int64_t)profile)
             : 0;
}

int64_t gpd_store_trace_read_count_launches(const gpd_store_trace_reader_t *tr, uint64_t profile) {
  return tr->has_trace
             ? gpd__store_int(tr->db, "SELECT count(*) FROM trace_launch WHERE profile_id=?1", (int64_t)profile)
             : 0;
}

int gpd_store_trace_read_events(const gpd_store_trace_reader_t *tr, uint64_t profile,
                                int (*fn)(void *c, const gpd_trace_row_t *e), void *c) {
  sqlite3_stmt *q = NULL;
  int err = 0;
  if (!tr->has_trace) return 0;
  if (sqlite3_prepare_v2(tr->db, "SELECT " GPD_TRACE_ROW_COLS " FROM trace_event WHERE profile_id=?1 ORDER BY start_ns",
                         -1, &q, NULL) != SQLITE_OK)
    return -EIO;
  sqlite3_bind_int64(q, 1, (int64_t)profile);
  while (err == 0 && sqlite3_step(q) == SQLITE_ROW) {
    gpd_trace_row_t e;
    gpd_trace_row_read(q, profile, &e);
    err = fn(c, &e);
  }
  sqlite3_finalize(q);
  return err;
}

int gpd_store_trace_read_launches(const gpd_store_trace_reader_t *tr, uint64_t profile,
                                  int (*fn)(void *c, const gpd_trace_lrow_t *l), void *c) {
  sqlite3_stmt *q = NULL;
  int err = 0;
  if (!tr->has_trace ||
      sqlite3_prepare_v2(tr->db, "SELECT " GPD_TRACE_LROW_COLS " FROM trace_launch WHERE profile_id=?1 ORDER BY ts_ns",
                         -1, &q, NULL) != SQLITE_OK)
    return 0;
  sqlite3_bind_int64(q, 1, (int64_t)profile);
  while (err == 0 && sqlite3_step(q) == SQLITE_ROW) {
    gpd_trace_lrow_t l;
    gpd_trace_lrow_read(q, profile, &l);
    err = fn(c, &l);
  }
  sqlite3_finalize(q);
  return err;
}

int gpd_store_trace_read_cpu_samples(const gpd_store_trace_reader_t *tr, uint64_t profile,
                                     int (*fn)(void *c, uint32_t tid, uint64_t ts, uint64_t node), void *c) {
  sqlite3_stmt *q = NULL;
  int err = 0;
  if (!tr->cpu_sample ||
      sqlite3_prepare_v2(tr->db,
                         tr->cpu_sample == 1 ? "SELECT tid, ts_ns, node FROM trace_cpu_sample WHERE profile_id=?1"
                                             : "SELECT tid, ts_ns, node FROM trace_cpu_sample WHERE profile=?1",
                         -1, &q, NULL) != SQLITE_OK)
    return 0;
  sqlite3_bind_int64(q, 1, (int64_t)profile);
  while (err == 0 && sqlite3_step(q) == SQLITE_ROW)
    err = fn(c, (uint32_t)sqlite3_column_int64(q, 0), (uint64_t)sqlite3_column_int64(q, 1),
             (uint64_t)sqlite3_column_int64(q, 2));
  sqlite3_finalize(q);
  return err;
}

void gpd_store_trace_read_stat(const gpd_store_trace_reader_t *tr, uint64_t profile, uint64_t *dropped,
                               uint64_t *refused) {
  sqlite3_stmt *q = NULL;
  if (tr->has_trace &&
      sqlite3_prepare_v2(tr->db, "SELECT dropped, refused FROM trace_stat WHERE profile_id=?1", -1, &q, NULL) ==
          SQLITE_OK) {
    sqlite3_bind_int64(q, 1, (int64_t)profile);
    if (sqlite3_step(q) == SQLITE_ROW) {
      *dropped += (uint64_t)sqlite3_column_int64(q, 0);
      *refused += (uint64_t)sqlite3_column_int64(q, 1);
    }
  }
  sqlite3_finalize(q);
}

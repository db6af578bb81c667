/* trace-row-read.h - the one decoder of the store's trace rows (tables
 * trace_event and trace_launch, docs/FORMATS.md) for every reader that
 * holds a statement: the daemon's Trace query and store/trace-read.c.
 * The row types and column lists are in gpuprof/trace-row.h (common/,
 * which does not link SQLite).  Header-only; any thread; no allocation.
 */
#ifndef GPD_STORE_TRACE_ROW_READ_H
#define GPD_STORE_TRACE_ROW_READ_H

#include <sqlite3.h>

#include "gpuprof/trace-row.h"

/** Decode the current row of q (selected with GPD_TRACE_ROW_COLS as its
 *  first columns) of profile `profile` into *e. */
static inline void gpd_trace_row_read(sqlite3_stmt *q, uint64_t profile, gpd_trace_row_t *e) {
  e->profile = profile;
  e->start = (uint64_t)sqlite3_column_int64(q, 0);
  e->end = (uint64_t)sqlite3_column_int64(q, 1);
  e->stream = (uint32_t)sqlite3_column_int64(q, 2);
  e->device = (uint32_t)sqlite3_column_int64(q, 3);
  e->op = (uint8_t)sqlite3_column_int(q, 4);
  e->subkind = (uint8_t)sqlite3_column_int(q, 5);
  e->corr = (uint64_t)sqlite3_column_int64(q, 6);
  e->node = (uint64_t)sqlite3_column_int64(q, 7);
  e->bytes = (uint64_t)sqlite3_column_int64(q, 8);
}

/** Decode the current row of q (selected with GPD_TRACE_LROW_COLS as its
 *  first columns) of profile `profile` into *l. */
static inline void gpd_trace_lrow_read(sqlite3_stmt *q, uint64_t profile, gpd_trace_lrow_t *l) {
  l->profile = profile;
  l->ts = (uint64_t)sqlite3_column_int64(q, 0);
  l->tid = (uint32_t)sqlite3_column_int64(q, 1);
  l->corr = (uint64_t)sqlite3_column_int64(q, 2);
  l->node = (uint64_t)sqlite3_column_int64(q, 3);
  l->op = (uint8_t)sqlite3_column_int(q, 4);
}

#endif

/* trace-row.h - the one decoder of the store's trace rows (tables
 * trace_event and trace_launch, docs/FORMATS.md) for every reader: the
 * daemon's Trace query (daemon/query-trace.c) and the CLI's saved-profile
 * loader (cli/trace.c).  The columns and their order live here only.
 *
 * Header-only (static inline): gpd_common does not link SQLite (the shim
 * links gpd_common), so only the SQLite users include this, after
 * <sqlite3.h> (the types alone need no SQLite).  Any thread; no
 * allocation.
 */
#ifndef GPUPROF_TRACE_ROW_H
#define GPUPROF_TRACE_ROW_H

#include <stdint.h>

/** One GPU operation of a trace (a trace_event row).  Times in ns on the
 *  gpuprof clock (CLOCK_MONOTONIC_RAW); op / subkind: GPD_OP_* and its
 *  copy / memory / sync kind (gpuprof/record.h); node: the Merkle context
 *  id of the operation (its kernel node, or the placeholder); bytes: of a
 *  copy or memset, else 0. */
typedef struct gpd_trace_row_s {
  uint64_t profile, start, end, corr, node, bytes;
  uint32_t stream, device;
  uint8_t op, subkind;
} gpd_trace_row_t;

/** The CPU side of one GPU API call (a trace_launch row): host time ts
 *  (ns), calling thread, correlation id, call-site context id (0 when not
 *  known), the GPD_OP_* it invoked. */
typedef struct gpd_trace_lrow_s {
  uint64_t profile, ts, corr, node;
  uint32_t tid;
  uint8_t op;
} gpd_trace_lrow_t;

/** Columns to SELECT for gpd_trace_row_read / gpd_trace_lrow_read, in
 *  the order they read them ("SELECT " GPD_TRACE_ROW_COLS " FROM
 *  trace_event ..."). */
#define GPD_TRACE_ROW_COLS "start_ns, end_ns, stream, device, op, subkind, corr, node, bytes"
#define GPD_TRACE_LROW_COLS "ts_ns, tid, corr, node, op"

#endif

/* The decoders, once <sqlite3.h> was included (this part has a guard of
 * its own: the header may first be read before <sqlite3.h>). */
#if defined(SQLITE_VERSION) && !defined(GPUPROF_TRACE_ROW_READ)
#define GPUPROF_TRACE_ROW_READ
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

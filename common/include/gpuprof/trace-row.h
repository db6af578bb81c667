/* trace-row.h - the store's trace rows (tables trace_event and
 * trace_launch, docs/FORMATS.md) as the daemon's Trace query and the
 * CLI's trace use them: the row types and the columns, whose order lives
 * here only.  Their decoder from a SQLite statement is store/'s
 * (store/trace-row-read.h): gpd_common does not link SQLite.
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

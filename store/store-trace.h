/* store-trace.h - the trace tables as the daemon writes and queries them
 * (trace-write.c: trace_event, trace_launch, trace_stat from the tracing
 * threads; trace-query.c: a window of some profiles for the live Trace
 * query).  Rows: gpuprof/trace-row.h; docs/TRACE.md, docs/FORMATS.md.
 *
 * A writer is one connection of its own (one tracing thread); writes run
 * inside gpd_store_trace_begin / _commit and return 0 or GPD_ESTORE
 * (not logged: the thread reports a failed batch once, with
 * gpd_store_trace_error).
 */
#ifndef GPD_STORE_TRACE_H
#define GPD_STORE_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "gpuprof/trace-row.h"

/** A handle on a tracing thread's connection and inserts (a statement set, store-sql.h). */
typedef struct gpd_store_stmts_s gpd_store_trace_t;

/** Open the existing store `path` (made by the daemon's store: no create,
 *  never through a link, busy timeout 10 s) and prepare the inserts.
 *  0 or GPD_ESTORE (logged); *w NULL on error. */
int gpd_store_trace_open(const char *path, gpd_store_trace_t **w);
void gpd_store_trace_close(gpd_store_trace_t *w);
int gpd_store_trace_begin(gpd_store_trace_t *w);
int gpd_store_trace_commit(gpd_store_trace_t *w);
void gpd_store_trace_rollback(gpd_store_trace_t *w);
/** SQLite's message for the last failure. */
const char *gpd_store_trace_error(gpd_store_trace_t *w);
/** One GPU operation (name: its string id); kept when its key (profile,
 *  start, stream, corr) is stored already. */
int gpd_store_trace_event(gpd_store_trace_t *w, const gpd_trace_row_t *r, uint32_t name);
/** One launch; kept when its key (profile, ts, tid, corr) is stored. */
int gpd_store_trace_launch(gpd_store_trace_t *w, const gpd_trace_lrow_t *l);
/** A profile's cumulative counts (each only ever raised). */
int gpd_store_trace_stat(gpd_store_trace_t *w, uint64_t profile, uint64_t events, uint64_t dropped,
                         uint64_t refused);

/** Read the trace_event rows, then the trace_launch rows, of profiles
 *  ids[0..nids) whose time lies in [from, to] ns, in time order per
 *  profile, at most max rows in all, in one read snapshot of the file
 *  path (read-only, no link, busy timeout 5 s); each row to ev / launch
 *  (arg).  *nev, *nlaunch: rows handed over.  0, or GPD_ESTORE when the
 *  file cannot be opened (logged as a warning).  Any thread. */
int gpd_store_trace_query(const char *path, const uint64_t *ids, size_t nids, uint64_t from, uint64_t to, size_t max,
                          void (*ev)(void *arg, const gpd_trace_row_t *r),
                          void (*launch)(void *arg, const gpd_trace_lrow_t *l), void *arg, size_t *nev,
                          size_t *nlaunch);

#endif

/* store-write.h - the typed writers of the daemon's flush (profile-write.c,
 * pcsample-write.c, cpusample-write.c, tracewin-write.c): one function per
 * table, each inside the caller's write transaction (gpd_store_db_begin /
 * gpd_store_db_commit on the same connection; the exactly-once protocol
 * around them is daemon/checkpoint.c's).
 *
 * gpd_store_write_t holds the prepared statements of one flush: open it
 * once per transaction, write any number of rows, close it.  Every
 * function returns 0 or GPD_ESTORE (logged unless the thread is quiet,
 * gpd_store_db_quiet); ids are the daemon's (profile id, Merkle context
 * id); strings are copied (NULL: SQL NULL).  One thread per connection.
 */
#ifndef GPD_STORE_WRITE_H
#define GPD_STORE_WRITE_H

#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#include "store-rows.h"

/** A handle on the prepared statements of one flush (a statement set, store-sql.h). */
typedef struct gpd_store_stmts_s gpd_store_write_t;

/** Prepare the flush's statements on db (the writer's connection).
 *  0 or GPD_ESTORE (logged); *w NULL on error. */
int gpd_store_write_open(sqlite3 *db, gpd_store_write_t **w);
void gpd_store_write_close(gpd_store_write_t *w);

/** Table profile: insert, or update every column of the row r->id. */
int gpd_store_write_profile(gpd_store_write_t *w, const gpd_store_profile_row_t *r);
/** Tables backend, module, string: insert or replace one row. */
int gpd_store_write_backend(gpd_store_write_t *w, uint64_t profile, const gpd_store_backend_row_t *r);
int gpd_store_write_module(gpd_store_write_t *w, uint64_t profile, const gpd_store_module_row_t *r);
int gpd_store_write_string(gpd_store_write_t *w, uint64_t profile, const gpd_store_string_row_t *r);
/** Table context: uid's row r->id, kept when it exists (the first
 *  writer's labels stay; gpd_store_write_label changes one). */
int gpd_store_write_context(gpd_store_write_t *w, int64_t uid, const gpd_store_context_row_t *r);
/** Table frame: source frame `depth` of uid's context ctx (0: the
 *  outermost; an existing row is kept). */
int gpd_store_write_frame(gpd_store_write_t *w, int64_t uid, uint64_t ctx, unsigned depth,
                          const gpd_store_frame_row_t *f);
/** The label of uid's context ctx (symbols that came after its row). */
int gpd_store_write_label(gpd_store_write_t *w, int64_t uid, uint64_t ctx, const char *label);
/** Table cct_local: the shim's node id `local` is context ctx. */
int gpd_store_write_local(gpd_store_write_t *w, uint64_t profile, uint32_t local, uint64_t ctx);
/** Table metric: a node's running total (replaces the row). */
int gpd_store_write_metric(gpd_store_write_t *w, uint64_t profile, uint64_t ctx, unsigned metric, double v);
/** Table pending: every row of profile (seq < 0) or one row deleted; one
 *  record (raw record bytes) inserted or replaced. */
int gpd_store_write_pending_del(gpd_store_write_t *w, uint64_t profile, int64_t seq);
int gpd_store_write_pending(gpd_store_write_t *w, uint64_t profile, uint64_t seq, const void *rec, size_t len);
/** Table ring_cursor: ring's committed consumer position. */
int gpd_store_write_cursor(gpd_store_write_t *w, uint64_t profile, uint32_t ring, uint64_t pos);
/** Tables gpubin (one row per hash) and gpubin_ref (one per profile that
 *  sent it), for every row of the list. */
int gpd_store_write_gpubins(gpd_store_write_t *w, const gpd_store_gpubin_row_t *rows);

/** Tables pcsample, pcsample_cubin, pcsample_stat: add a snapshot's
 *  deltas (pcsample-write.c).  Nothing when it is empty. */
int gpd_store_write_pcsample(sqlite3 *db, int64_t profile, const gpd_pcs_snap_t *s);
/** Tables trace_cpu_sample and cpu_sample_stat: a snapshot's rows and
 *  counter increases (cpusample-write.c).  Nothing unless s->have. */
int gpd_store_write_cpusample(sqlite3 *db, int64_t profile, const gpd_cps_snap_t *s);
/** Tables trace_duty, trace_duty_launch (replaced) and trace_window
 *  (added) of a snapshot (tracewin-write.c).  Nothing unless s->have. */
int gpd_store_write_tracewin(sqlite3 *db, int64_t profile, const gpd_tw_snap_t *s);

#endif

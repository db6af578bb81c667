/* store-reload.h - a stored profile read back by the daemon that wrote it
 * (reload.c): the hand-back reload and the restore of the live view at
 * start.  The file is the daemon's own; hostile files go through
 * store-open.h instead.
 *
 * Each gpd_store_reload_<table> runs one statement on db and hands every
 * row to fn(arg, row) in the order given; the row and its strings are
 * valid during the call only.  fn returns 0 to go on, non-zero to stop
 * (then the function returns 0).  Returns 0, or GPD_ESTORE when the
 * statement fails (sqlite3_errmsg(db) says why).  One thread per
 * connection.
 */
#ifndef GPD_STORE_RELOAD_H
#define GPD_STORE_RELOAD_H

#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#include "store-rows.h"

/** Mark the profiles a dead daemon left 'running' as 'lost' (their shims
 *  may hand them back).  In the caller's write transaction.  0 or
 *  GPD_ESTORE. */
int gpd_store_reload_mark_lost(sqlite3 *db);
/** Profile id's row, only uid, records, pid and proc_start filled.
 *  1 found, 0 not, GPD_ESTORE. */
int gpd_store_reload_profile(sqlite3 *db, uint64_t id, gpd_store_profile_row_t *out);
/** The newest `keep` profiles, newest first (by their count: db must
 *  have gpd_profile_seq, gpd_store_id_register), every column. */
int gpd_store_reload_profiles(sqlite3 *db, unsigned keep, int (*fn)(void *arg, const gpd_store_profile_row_t *r),
                              void *arg);
int gpd_store_reload_modules(sqlite3 *db, uint64_t id, int (*fn)(void *arg, const gpd_store_module_row_t *r),
                             void *arg);
int gpd_store_reload_strings(sqlite3 *db, uint64_t id, int (*fn)(void *arg, const gpd_store_string_row_t *r),
                             void *arg);
int gpd_store_reload_backends(sqlite3 *db, uint64_t id, int (*fn)(void *arg, const gpd_store_backend_row_t *r),
                              void *arg);
/** The contexts profile id refers to (metric and cct_local rows) and all
 *  their ancestors, of uid; in no particular order. */
int gpd_store_reload_contexts(sqlite3 *db, uint64_t id, uint32_t uid,
                              int (*fn)(void *arg, const gpd_store_context_row_t *r), void *arg);
/** Metric rows: context id, metric id, value. */
int gpd_store_reload_metrics(sqlite3 *db, uint64_t id, int (*fn)(void *arg, uint64_t ctx, int64_t metric, double v),
                             void *arg);
/** cct_local rows: the shim's local node id and its context id. */
int gpd_store_reload_locals(sqlite3 *db, uint64_t id, int (*fn)(void *arg, uint32_t local, uint64_t ctx),
                            void *arg);
/** Persisted unmatched records (table pending), in seq order. */
int gpd_store_reload_pending(sqlite3 *db, uint64_t id, int (*fn)(void *arg, const void *rec, size_t len),
                             void *arg);
/** Committed ring positions (table ring_cursor). */
int gpd_store_reload_cursors(sqlite3 *db, uint64_t id, int (*fn)(void *arg, int64_t ring, uint64_t pos),
                             void *arg);
/** Rows of trace_event plus trace_launch of profile id (0 on error). */
uint64_t gpd_store_reload_trace_rows(sqlite3 *db, uint64_t id);

#endif

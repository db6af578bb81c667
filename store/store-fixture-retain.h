/* store-fixture-retain.h - synthetic stores for the retention test and
 * bench (tests/store/test-retention.c, bench/bench-retention.c;
 * fixture-retain.c, library gpd_store_fixture), and the retention
 * statements the daemon's pass replaced, kept as the bench's baseline.
 * Not for the product: the daemon's retention is store-purge.h.  Each
 * function opens its own connection to a file gpd_dstore_open made (busy
 * timeout 10 s) and closes it before returning; single thread.
 */
#ifndef GPUPROF_STORE_FIXTURE_RETAIN_H
#define GPUPROF_STORE_FIXTURE_RETAIN_H

#include <stdint.h>

/** The shape of a synthetic store.  One uid's contexts form a tree: id 1
 *  is the root, context i (2..nctx) has parent i / 2, one frame each.
 *  Profile k (first .. first+nprof-1, exited in that order: start_ns =
 *  t0 + k - 1000, end_ns = t0 + k) refers to `window` contexts starting at
 *  2 + k * (nctx - 1 - window) / (nprof - 1) (the windows overlap and
 *  cover every context but the root, as a daemon writes only contexts
 *  some profile has), each through a cct_local row and two metric rows
 *  (metrics 1 and 2, value context id times metric id), and has `trace`
 *  trace_event rows (start 0, 1000, ... ns) and two strings. */
typedef struct gpd_store_fixture_fill_s {
  uint32_t uid;
  int64_t first; /* first profile id */
  int nprof, nctx, window, trace;
  int64_t t0; /* end_ns of profile 0 */
} gpd_store_fixture_fill_t;

/** Add the rows of `f` to the store file at path, in one transaction.
 *  0, or GPD_ESTORE with the statement and SQLite's message on stderr
 *  (the transaction rolled back). */
int gpd_store_fixture_retain_fill(const char *path, const gpd_store_fixture_fill_t *f);

/** Drop the indexes the retention pass relies on (metric_context,
 *  cct_local_context, context_parent, profile_end, profile_uid_age): the
 *  schema the old statements ran on.  Indexes already gone are not an
 *  error.  0, or GPD_ESTORE when the file cannot be opened. */
int gpd_store_fixture_drop_retain_indexes(const char *path);

/** What gpd_store_fixture_old_retain did. */
typedef struct gpd_store_fixture_old_s {
  uint64_t hold_max_ns; /* longest statement (each holds the write lock) */
  int removed;          /* profiles removed */
  int timed_out;        /* 1: stopped at the deadline */
} gpd_store_fixture_old_t;

/** The daemon's retention before issue 23, by size only (the bench's
 *  baseline): while the pages in use times the page size exceed
 *  max_bytes, remove the finished profile that ended first (its rows of
 *  every per-profile table, one transaction), then repeat the orphan
 *  context DELETE ... NOT EXISTS until it removes nothing, then orphan
 *  frames and an incremental vacuum.  Stops when gpd_clock_ns() passes
 *  deadline_ns (o->timed_out = 1).  0, or GPD_ESTORE (message on stderr)
 *  when the file cannot be opened or a removal fails. */
int gpd_store_fixture_old_retain(const char *path, uint64_t max_bytes, uint64_t deadline_ns,
                                 gpd_store_fixture_old_t *o);

#endif

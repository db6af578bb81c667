/* store-purge.h - the statements of the daemon's retention pass (purge.c;
 * the policy, its transactions and the GPU-binary files are
 * daemon/retention.c's; docs/FORMATS.md "Retention").
 *
 * A removal spans many short transactions through work lists in the file:
 * retain_drop (profiles whose row is gone and whose rows are being
 * removed), retain_ctx (contexts that may have lost their last reference),
 * retain_bin (binaries that may have).  Each function runs in the
 * caller's transaction (or none, for reads) on the connection given to
 * gpd_store_purge_open; writers return 0 or GPD_ESTORE (logged).  One
 * thread (the store's writer).
 */
#ifndef GPD_STORE_PURGE_H
#define GPD_STORE_PURGE_H

#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

/** Rows removed per statement of gpd_store_purge_rows. */
#define GPD_STORE_PURGE_CHUNK 256

/** A handle on the retention pass's statements (a statement set, store-sql.h). */
typedef struct gpd_store_stmts_s gpd_store_purge_t;

/** Prepare the pass's statements on db.  0 or GPD_ESTORE (logged). */
int gpd_store_purge_open(sqlite3 *db, gpd_store_purge_t **out);
void gpd_store_purge_close(gpd_store_purge_t *r);

/** The statements, n of them; scan[i] says statement i reads a small
 *  table or a work list whole by design (the plan test allows its SCAN).
 *  For tests/store/test-retention.c. */
const char *const *gpd__store_retain_sql(size_t *n, const unsigned char **scan);

/* --- removing one profile */
/** Its row goes and it joins retain_drop (its profile_size row too). */
int gpd_store_purge_drop(gpd_store_purge_t *r, int64_t id);
/** How many tables hold a profile's rows (k of gpd_store_purge_rows). */
unsigned gpd_store_purge_tables(void);
/** Up to GPD_STORE_PURGE_CHUNK rows of profile id (uid) in its table k
 *  removed; the contexts and binaries they referred to join the work
 *  lists.  *more: table k may have more rows of id.  0 or < 0. */
int gpd_store_purge_rows(gpd_store_purge_t *r, unsigned k, int64_t id, int64_t uid, int *more);
/** Profile id is gone entirely: off retain_drop. */
int gpd_store_purge_dropped(gpd_store_purge_t *r, int64_t id);
/** A profile on retain_drop: 1 with *id, *uid; 0 none. */
int gpd_store_purge_next_drop(gpd_store_purge_t *r, int64_t *id, int64_t *uid);

/* --- orphans */
/** Up to cap entries of retain_ctx.  Returns how many. */
int gpd_store_purge_ctx_list(gpd_store_purge_t *r, int64_t *uid, int64_t *ctx, int cap);
/** Check uid's context ctx: when no metric or cct_local row of a profile
 *  of uid and no child refers to it (and it is not a root), it and its
 *  frames go and its parent joins retain_ctx.  It leaves retain_ctx.
 *  1 removed, 0 kept, GPD_ESTORE. */
int gpd_store_purge_ctx(gpd_store_purge_t *r, int64_t uid, int64_t ctx);
/** Up to cap hashes of retain_bin after `after` (ascending). */
int gpd_store_purge_bin_list(gpd_store_purge_t *r, const char *after, char (*hash)[33], int cap);
/** 1 when a profile still refers to the binary (gpubin_ref). */
int gpd_store_purge_bin_used(gpd_store_purge_t *r, const char *hash);
/** 1 when the binary has its gpubin row. */
int gpd_store_purge_bin_stored(gpd_store_purge_t *r, const char *hash);
/** Its gpubin row removed; off retain_bin. */
int gpd_store_purge_bin_drop(gpd_store_purge_t *r, const char *hash);
int gpd_store_purge_bin_done(gpd_store_purge_t *r, const char *hash);

/* --- victims and sizes */
/** Up to cap finished profiles that ended before `before` (ns), oldest
 *  first, with their uids.  Returns how many (at most 64). */
int gpd_store_purge_aged(gpd_store_purge_t *r, int64_t before, int64_t *id, int64_t *uid, int cap);
/** Up to cap finished profiles of uid, oldest first (at most 64). */
int gpd_store_purge_oldest(gpd_store_purge_t *r, uint32_t uid, int64_t *id, int cap);
/** Up to cap profiles whose size is due: never counted, running and
 *  counted before `before` (ns), or ended and not counted final since
 *  `now`; *running[i]: 1 it runs, 2 it ended at or after `traced` (its
 *  trace rows may still be on their way: the tracing threads committed
 *  only what came before; INT64_MAX: no tracing), 0 its size is final
 *  (at most 64). */
int gpd_store_purge_size_todo(gpd_store_purge_t *r, int64_t before, int64_t traced, int64_t now, int64_t *id,
                              int64_t *uid, int64_t *running, int cap);
/** Estimated bytes of profile id: rows times a per-table size, text and
 *  blobs by their length; its trace rows from `events` (the tracing
 *  threads' count of a running profile, >= 0) or, with -1, from its
 *  trace_stat row (counted row by row only in a file without one: long
 *  for a large profile, no transaction should be open). */
int64_t gpd_store_purge_size_of(gpd_store_purge_t *r, int64_t id, int64_t events);
/** Cache a profile's size (table profile_size); final: it has ended. */
int gpd_store_purge_size_set(gpd_store_purge_t *r, int64_t id, int64_t uid, int64_t bytes, int final, uint64_t t_ns);
/** The uids that own a profile (malloc'd, *n of them).  0 or -ENOMEM. */
int gpd_store_purge_uids(gpd_store_purge_t *r, uint32_t **uids, size_t *n);
/** uid's estimated bytes: its profiles' sizes, its contexts and frames,
 *  the binaries its profiles sent. */
uint64_t gpd_store_purge_uid_use(gpd_store_purge_t *r, uint32_t uid);
/** Profile id's size and the binaries it sent (a live profile's part). */
uint64_t gpd_store_purge_live_use(gpd_store_purge_t *r, uint64_t id);
/** The store's bytes: database pages in use, the -wal file (stat) and
 *  every GPU binary. */
uint64_t gpd_store_purge_total(gpd_store_purge_t *r);

#endif

/* store-internal.h - what the store's files share (store.c, checkpoint.c,
 * handback.c, retention.c, gpubin.c); not for other nouns.
 *
 * Lock: gpd_store_t fields say which thread or lock guards them. */
#ifndef GPD_DAEMON_STORE_INTERNAL_H
#define GPD_DAEMON_STORE_INTERNAL_H

#include <limits.h>
#include <stdint.h>

#include <sqlite3.h>

#include "store.h"

/* A stored GPU binary's row, waiting for the writer's next transaction
 * (the main thread never writes to SQLite: a busy writer would stall the
 * event loop and with it every shim's socket). */
typedef struct gpubin_row_s {
  struct gpubin_row_s *next;
  char hash[33], kind[32];
  uint64_t size;
  int64_t profile_id;
} gpubin_row_t;

struct gpd_store_s {
  sqlite3 *wdb; /* writer thread */
  sqlite3 *rdb; /* main thread: reads, and a profile-id reservation when
                   the writer fell behind (gpd_store_take_profile_id) */
  gpubin_row_t *gpubins; /* pending rows, under d->reg_lock */
  char path[PATH_MAX];
  char dir[PATH_MAX];
  uint64_t flushes;
  /* writer thread, logged at its stop: flushes that wrote something,
   * their time from the snapshot to the rings' release (total, longest,
   * how many over 50 ms: a CUPTI buffer's wait budget in the shim), and
   * the longest wait for the file in BEGIN IMMEDIATE and the longest
   * symbolization before it (a large library's first lookup: seconds) */
  uint64_t wr_n, wr_ns, wr_max_ns, wr_slow, wr_begin_max_ns, wr_sym_max_ns;
  int bindir;        /* gpubins/ (verified dirfd), -1 until needed; main thread */
  uint64_t id_hw;    /* ids below this are reserved durably (meta), d->reg_lock */
  uint64_t first_id; /* first id this daemon hands out */
  int failing;       /* the last flush failed (writer thread) */
  char why[160];     /* its reason, for the processes' error text */
};

/* ids reserved per meta write; the writer tops up at half */
#define GPD_STORE_ID_BLOCK 1024u

/** Set on the writer thread while the database refuses writes (disk
 *  full): the state change is logged once, not every statement. */
extern _Thread_local int gpd__store_quiet;
/** sqlite3_exec, logged unless quiet.  0 or GPD_ESTORE. */
int gpd__db_exec(sqlite3 *db, const char *sql);
/** Step a bound INSERT / UPDATE once and reset it.  0 or -EIO. */
int gpd__db_run(sqlite3_stmt *st);
/** Prepare n statements sql[0..n-1] into st[0..n-1] (st zeroed by the
 *  caller, who finalizes every st[i] in any case).  0 or -EIO. */
int gpd__db_prepare(sqlite3 *db, const char *const *sql, sqlite3_stmt **st, int n);
/** Raise meta.next_profile_id to at least hw (in the caller's
 *  transaction).  0, GPD_ESTORE or -ENOMEM. */
int gpd__store_id_hw(sqlite3 *db, uint64_t hw);
/** Lowercase hex of n bytes (malloc'd), NULL when n == 0 or no memory. */
char *gpd__hex(const uint8_t *b, unsigned n);
/** strdup that passes NULL through. */
char *gpd__xdup(const char *s);

#endif

/* dstore-internal.h - what the store's files share (dstore.c, checkpoint.c,
 * handback.c, retention.c, gpubin.c); not for other nouns.
 *
 * Lock: gpd_dstore_t fields say which thread or lock guards them. */
#ifndef GPD_DAEMON_DSTORE_INTERNAL_H
#define GPD_DAEMON_DSTORE_INTERNAL_H

#include <limits.h>
#include <pthread.h>
#include <stdint.h>

#include <sqlite3.h>

#include "store-db.h"
#include "store-id.h"
#include "store-rows.h"
#include "dstore.h"

/* A stored GPU binary's row, waiting for the writer's next transaction
 * (the main thread never writes to SQLite: a busy writer would stall the
 * event loop and with it every shim's socket). */
typedef gpd_store_gpubin_row_t gpubin_row_t;

/* One uid's standing for uploads (reg_lock): what the last retention pass
 * counted as undeletable (running profiles and their binaries), and the
 * binary bytes committed since (retention has not seen them yet). */
typedef struct gpd_uid_use_s {
  uint32_t uid;
  uint64_t live, unseen;
} gpd_uid_use_t;

/* Counters of the retention passes (writer thread; read by tests and the
 * writer's stop line). */
typedef struct gpd_retain_stats_s {
  uint64_t passes, profiles, contexts, gpubins; /* removed */
  uint64_t txns, txn_max_ns, txn_slow;          /* transactions, the longest, over 100 ms */
  uint64_t pass_ns, pass_max_ns;                /* the last pass, the longest */
  uint64_t flushes;                             /* flushes run between transactions */
  uint64_t size_ns;                             /* the last sizing of profiles (size_profiles) */
  uint64_t step_max_ns;                         /* the longest stretch between two flush points */
  uint64_t slow_steps, slow_logged, slow_log_ns; /* stretches over RT_SLOW_STEP_NS; the log line's */
  int stopped;                                  /* the last pass stopped for writer_stop */
} gpd_retain_stats_t;

struct gpd_dstore_s {
  sqlite3 *wdb; /* writer thread */
  sqlite3 *rdb; /* main thread: reads, and a profile-id reservation when
                   the writer fell behind (gpd_dstore_take_profile_id) */
  gpubin_row_t *gpubins; /* pending rows, under d->reg_lock */
  struct gpd_gpubin_s *uploads; /* uploads in progress, under d->reg_lock */
  pthread_mutex_t *reg_lock;    /* &d->reg_lock, set by the first upload (main thread) */
  gpd_uid_use_t *uses;          /* per uid, under d->reg_lock */
  size_t nuses, capuses;
  gpd_retain_stats_t rstats;    /* writer thread */
  int rbindir;                  /* gpubins/ for retention's unlinks (writer thread), -1 */
  uint64_t use_t_ns, use_total; /* last per-uid count (writer thread): when, total then, */
  uint64_t use_live_sig;        /* and which profiles were live then */
  char path[PATH_MAX];
  char dir[PATH_MAX];
  uint64_t flushes;
  uint64_t flush_last_ns; /* how long the writer's last flush took (writer thread):
                             retention's share of the writer (retention.c) */
  /* writer thread, logged at its stop: flushes that wrote something,
   * their time from the snapshot to the rings' release (total, longest,
   * how many over 50 ms: a CUPTI buffer's wait budget in the shim), and
   * the longest wait for the file in BEGIN IMMEDIATE and the longest
   * symbolization before it (a large library's first lookup: seconds) */
  uint64_t wr_n, wr_ns, wr_max_ns, wr_slow, wr_begin_max_ns, wr_sym_max_ns;
  int flush_more; /* the last flush left processes for the next (GPD_CHECKPOINT_PROCS_PER_UID) */
  uint64_t lock_max_ns[3]; /* the writer's longest hold of d->lock: its snapshot's first hold,
                              a chunk, after the commit (atomic: read by others) */
  uint32_t snap_chunk;  /* items copied per hold of d->lock after the snapshot's
                           first hold; 0: GPD_CHECKPOINT_SNAP_CHUNK (gpd_checkpoint_snapshot_chunk) */
  int bindir;        /* gpubins/ (verified dirfd), -1 until needed; main thread */
  uint64_t id_hw;    /* ids below this are reserved durably (meta), d->reg_lock */
  uint64_t first_id; /* first id this daemon hands out */
  gpd_store_idkey_t idkey; /* permutes the count into ids (store-id.h); set at open */
  int failing;       /* the last flush failed (writer thread) */
  char why[160];     /* its reason, for the processes' error text */
};

/* modules, strings, contexts, locals, metric and pending rows the writer
 * copies per hold of d->lock after a process's snapshot (docs/PERFORMANCE.md,
 * "Writer snapshot": 2 048 held it up to ~10 ms on a busy 2-core VM) */
#define GPD_CHECKPOINT_SNAP_CHUNK 256u
/** Processes of one uid one flush writes at most: ended ones first, then
 *  the least recently written (checkpoint.c), so that no uid's number of
 *  processes lengthens the wait for every other uid's commit. */
#define GPD_CHECKPOINT_PROCS_PER_UID 64u
/** Rows (new modules, strings, contexts, locals; dirty contexts' metrics)
 *  of one uid one flush writes at most: past it that uid's further
 *  processes wait for the next turn (its first process is always taken,
 *  whatever its size), so one user's large profiles do not lengthen every
 *  other user's wait for a commit. */
#define GPD_CHECKPOINT_ROWS_PER_UID 65536u
/** A flush this long or longer logs where its time went (checkpoint.c). */
#define GPD_CHECKPOINT_SLOW_NS 1000000000ull

/* ids reserved per meta write; the writer tops up at half */
#define GPD_DSTORE_ID_BLOCK 1024u

/** Lowercase hex of n bytes (malloc'd), NULL when n == 0 or no memory. */
char *gpd__dstore_hex(const uint8_t *b, unsigned n);
/** The uid's entry of s->uses, added when missing (reg_lock held); NULL
 *  when out of memory. */
gpd_uid_use_t *gpd__gpubin_uid_use(gpd_dstore_t *s, uint32_t uid);
/** After the flush's COMMIT (reg_lock held): their bytes count as unseen
 *  in their uids' quotas until the next retention count. */
void gpd__gpubin_committed(gpd_dstore_t *s, const gpubin_row_t *rows);
/** 1 when hash is queued (s->gpubins) or being uploaded (reg_lock held):
 *  retention keeps its file. */
int gpd__gpubin_busy(const gpd_dstore_t *s, const char *hash);
/** 1 for 32 lowercase hex digits (a gpubin's name). */
int gpd__gpubin_valid_hash(const char *h);
/** strdup that passes NULL through. */
char *gpd__dstore_xdup(const char *s);

#endif

/* intern.h - the shim's process-wide CCT intern table.
 *
 * Maps (parent node id, call-site key) -> node id.  Lock-free open
 * addressing over a fixed-capacity table allocated once (mmap) at init:
 * bounded memory, no allocation, no lock on the application's thread.
 * Node ids are dense, starting at 1.  When a key is new, the inserting
 * thread gets `*is_new = 1` and must announce the node (NODE record)
 * before its own records refer to it; other threads may use the id at
 * once (the daemon holds records that name a node it has not seen yet).
 *
 * Full and busy are different answers: a lookup that meets an entry that
 * another thread is filling in waits for it (bounded: that thread may be
 * preempted, or be the very thread a signal handler interrupted); if the
 * wait runs out the entry is passed over and the lookup goes on, so a
 * slow racer costs at most a duplicate entry for the same key (two ids
 * for one path: the daemon's context hashes make them one context), never
 * a wrong or a lost answer.  Only when no entry is free within the probe
 * window does the lookup fail: -ENOSPC (full) or -EBUSY (full except for
 * entries still being filled).
 */
#ifndef GPUPROF_INTERN_H
#define GPUPROF_INTERN_H

#include <stdatomic.h>
#include <stdint.h>

/** One entry.  key_ip 0 = empty; key_ip set and id 0 = being filled by
 *  the thread that claimed it; id != 0 = complete (key_parent valid). */
typedef struct gpd_intern_entry_s {
  _Atomic uint64_t key_ip;     /* call-site key; 0 = empty */
  _Atomic uint32_t key_parent; /* parent node id */
  _Atomic uint32_t id;         /* 0 while being filled, then the node id */
} gpd_intern_entry_t;

/** The table.  Counters are statistics (relaxed). */
typedef struct gpd_intern_s {
  gpd_intern_entry_t *tab;
  uint64_t mask;               /* capacity - 1 */
  _Atomic uint32_t next_id;    /* last id handed out */
  _Atomic uint64_t full_fails; /* lookups that found no free entry (-ENOSPC) */
  _Atomic uint64_t busy_fails; /* lookups that failed only for entries being filled (-EBUSY) */
  _Atomic uint64_t busy_skips; /* entries passed over after the bounded wait */
  uint64_t busy_wait_ns;       /* the bound; gpd_intern_init sets GPD_INTERN_BUSY_WAIT_NS */
} gpd_intern_t;

/** Default longest wait (ns) for another thread to finish filling an
 *  entry whose call-site key matches ours, before passing it over. */
#define GPD_INTERN_BUSY_WAIT_NS 2000000ull

/** Allocate a table of `capacity` entries (power of two, >= 2, <= 2^31).
 *  0, -EINVAL or -errno of mmap. */
int gpd_intern_init(gpd_intern_t *t, uint64_t capacity);
void gpd_intern_free(gpd_intern_t *t);

/** Find or insert (parent, ip).  On 0, *id is the node id (> 0) and
 *  *is_new (if not NULL) is 1 for the one caller that created the entry.
 *  Errors: -EINVAL (ip 0 is not a key), -ENOSPC (table full within the
 *  probe window), -EBUSY (no free entry, some entries of the window still
 *  being filled after the bounded wait).  Thread-safe, lock-free; waits at
 *  most t->busy_wait_ns per matching entry being filled. */
int gpd_intern_get(gpd_intern_t *t, uint32_t parent, uint64_t ip, uint32_t *id, int *is_new);

/** Find only: never inserts, never waits (async-signal-safe).  0 and *id,
 *  or -ENOENT (absent, or being filled right now), -EINVAL (ip 0). */
int gpd_intern_find(const gpd_intern_t *t, uint32_t parent, uint64_t ip, uint32_t *id);

#endif

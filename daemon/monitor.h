/* monitor.h - the monitor thread: drains rings into profiles.
 *
 * Lock: gpd_monitor_pass takes gpd_daemon_t.lock for the pass;
 * gpd_monitor_drain needs it held. */
#ifndef GPD_DAEMON_MONITOR_H
#define GPD_DAEMON_MONITOR_H

#include <stdint.h>

#include "registry.h"

typedef struct gpd_daemon_s gpd_daemon_t;

/** Most monitor threads ([monitor] threads). */
#define GPD_MONITOR_MAX_THREADS 8

/** Start the monitor: d->cfg.monitor_threads threads (helpers first, see
 *  gpd_monitor_helpers_start).  0 or -errno. */
int gpd_monitor_start(gpd_daemon_t *d);
/** Start nthreads - 1 helper monitors (none for nthreads < 2; at most
 *  GPD_MONITOR_MAX_THREADS - 1): gpd_monitor_pass then splits each pass's
 *  processes among the calling thread and the helpers, one process per
 *  thread, under the daemon lock held by the caller of the pass (monitor.c
 *  says why that keeps every profile single-writer).  Tests and benches
 *  call it without gpd_monitor_start.  0 or -errno (nothing started). */
int gpd_monitor_helpers_start(gpd_daemon_t *d, unsigned nthreads);
/** Process passes of the helper pool so far (both 0 without helpers):
 *  *passes = every process drained in a shared pass, *moved = of those,
 *  the ones drained by another thread than in the process's pass before
 *  (its profile's lines then come over from another core's cache).  Call
 *  between passes. */
void gpd_monitor_moves(const gpd_daemon_t *d, uint64_t *passes, uint64_t *moved);
/** Bench hook (bench-ingest's A/B): every thread claims from the list's
 *  start (1; the claim order before the own-share-first claims) or its
 *  own share first (0, the default).  Call between passes. */
void gpd_monitor_claim_from_start(gpd_daemon_t *d, int on);
/** Stop and join the helpers (no pass may be running). */
void gpd_monitor_helpers_stop(gpd_daemon_t *d);
void gpd_monitor_stop(gpd_daemon_t *d);
/** One pass over all processes (monitor thread or tests); takes the lock
 *  per process.  Returns records consumed. */
uint64_t gpd_monitor_pass(gpd_daemon_t *d);
/** Drain each of p's rings once (at most max_per_ring records each; lock
 *  held).  Records journaled while the writer copied p's profile are
 *  applied first; while it copies (p->snap_frozen) or they are not all
 *  applied, the rings are journaled without being read (journal-hold.c;
 *  without a journal: left for a later pass).  Returns the records
 *  consumed or applied plus the slots journaled so. */
uint64_t gpd_monitor_drain(gpd_daemon_t *d, gpd_proc_t *p, unsigned max_per_ring);

#endif

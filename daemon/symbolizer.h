/* symbolizer.h - the symbolizer thread: call sites of stored FRAME
 * contexts are symbolized here, off the writer and the loop, with a time
 * budget per uid; the writer stores an unsymbolized frame by module +
 * offset and applies its symbols in a later flush (docs/DAEMON.md,
 * "Nothing slow on the writer").
 *
 * Lock: own mutex; never call with d->lock held (the lookup takes the
 * symbolizer's mutex only, no I/O). */
#ifndef GPD_DAEMON_SYMBOLIZER_H
#define GPD_DAEMON_SYMBOLIZER_H

#include <stdint.h>
#include <sys/types.h>

#include "symbols.h"

typedef struct gpd_daemon_s gpd_daemon_t;
typedef struct gpd_symbolizer_s gpd_symbolizer_t;

/** Per-uid budget: at most this much symbolization time per second of
 *  wall time (a lookup's cost is charged after it ran, so one slow lookup
 *  puts its uid in debt for as long). */
#define GPD_SYMBOLIZER_MS_PER_S 200u
/** Requests queued per uid; more are dropped (the frame stays module +
 *  offset) and counted. */
#define GPD_SYMBOLIZER_QUEUE_MAX 65536u

/** Symbols that arrived for a stored context: the writer's UPDATE. */
typedef struct gpd_symupd_s {
  uid_t uid;
  uint64_t ctx;
  const gpd_sframe_t *fr; /* valid until gpd_symbols_shutdown */
  unsigned n;
} gpd_symupd_t;

/** Start the thread (d->symbolizer).  0 or -errno.  Main thread. */
int gpd_symbolizer_start(gpd_daemon_t *d);
/** Stop it (waits for the lookup in progress); queued requests are
 *  dropped, results not yet taken are lost (the frames stay module +
 *  offset in the store).  Main thread, after the writer stopped. */
void gpd_symbolizer_stop(gpd_daemon_t *d);
/** Frames of (module, offset) for uid/gid if already symbolized: 1 with
 *  *fr, *n (n may be 0: nothing to say about it).  Otherwise 0: a request
 *  to symbolize it is queued for context ctx of uid (its result comes
 *  back through gpd_symbolizer_take), or dropped when uid's queue is full.
 *  Never does I/O.  Any thread. */
int gpd_symbolizer_lookup(gpd_symbolizer_t *z, const char *module, uid_t uid, gid_t gid, uint64_t offset,
                          uint64_t ctx, const gpd_sframe_t **fr, unsigned *n);
/** The updates that arrived since the last take (malloc'd array, caller
 *  frees, or hands back with gpd_symbolizer_untake when its write
 *  failed).  Any thread. */
void gpd_symbolizer_take(gpd_symbolizer_t *z, gpd_symupd_t **upd, uint32_t *n);
void gpd_symbolizer_untake(gpd_symbolizer_t *z, gpd_symupd_t *upd, uint32_t n);
/** The daemon stops: serve every queued request without budgets and
 *  wait until none is left or `ms` passed.  1 when all are done.  Any
 *  thread but the symbolizer's. */
int gpd_symbolizer_drain(gpd_symbolizer_t *z, unsigned ms);
/** Are there updates to take?  Any thread; NULL: 0. */
int gpd_symbolizer_pending(gpd_symbolizer_t *z);
/** Counters (any thread): lookups done, requests dropped, queued now,
 *  and the longest single lookup (ns). */
void gpd_symbolizer_stats(gpd_symbolizer_t *z, uint64_t *done, uint64_t *dropped, uint64_t *queued,
                          uint64_t *max_ns);

#endif

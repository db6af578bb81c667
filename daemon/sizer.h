/* sizer.h - the profile sizer thread: estimates each profile's size for
 * retention (docs/STORE.md "Sizes") on its own database connection, so
 * that the counts, long for a large profile, never run on the store's
 * writer, between two of its flushes.
 *
 * Lock: gpd_sizer_take and gpd_sizer_urgent are called by the writer
 * thread; the sizer takes d->lock briefly for running profiles' trace
 * counts and its own mutex for the results. */
#ifndef GPD_DAEMON_SIZER_H
#define GPD_DAEMON_SIZER_H

#include <stdint.h>

typedef struct gpd_daemon_s gpd_daemon_t;
typedef struct gpd_sizer_s gpd_sizer_t;

/** One estimate: profile id of uid is about `bytes` (store/purge.c,
 *  gpd_store_purge_size_of) at t_ns (gpd_clock_ns); final: it has ended
 *  and its trace rows are all written. */
typedef struct gpd_size_res_s {
  int64_t id, uid, bytes;
  int final;
  uint64_t t_ns;
} gpd_size_res_t;

/** Results held at most (the sizer waits for the writer beyond). */
#define GPD_SIZER_MAX 4096u

/** The tracing threads' event counts (trace_n) of the n profiles id[]
 *  that are running (run[i] == 1; id[i] < 0: skipped) and live in memory,
 *  into events[]; -1 for the others (their trace_stat row or a count then:
 *  gpd_store_purge_size_of).  Takes d->lock once. */
void gpd_sizer_events(gpd_daemon_t *d, const int64_t *id, const int64_t *run, int n, int64_t *events);
/** Open a connection to d's store and start the thread (d->sizer).
 *  0, or a negative errno / GPD_ESTORE (then retention sizes on the
 *  writer, as without the thread).  Main thread, after the store opened. */
int gpd_sizer_start(gpd_daemon_t *d);
/** Stop and join the thread (before the tracing threads and the registry
 *  it reads go); the results queued stay for the writer.  No-op when
 *  none or stopped. */
void gpd_sizer_stop(gpd_daemon_t *d);
/** After the writer stopped: stop if needed, close the connection, free
 *  (d->sizer NULL). */
void gpd_sizer_free(gpd_daemon_t *d);
/** Writer: move at most cap estimates into out (oldest first); returns
 *  how many.  0 without a sizer. */
uint32_t gpd_sizer_take(gpd_daemon_t *d, gpd_size_res_t *out, uint32_t cap);
/** Writer: the store is over its limit (running profiles re-sized every
 *  second, else every 10 s); wakes the sizer when it turns on. */
void gpd_sizer_urgent(gpd_daemon_t *d, int on);

#endif

/* trace.h - the daemon's tracing threads: per-stream GPU event traces and
 * the CPU side of each launch, written to the profile store in time order
 * (docs/TRACE.md, tables trace_event / trace_launch / trace_stat in
 * docs/FORMATS.md).
 *
 * The monitor (holding gpd_daemon_t.lock) hands every attributed activity
 * and every invocation to the tracing thread that owns its stream
 * (gpd_trace_activity, gpd_trace_invoke).  Streams are given to threads in
 * the order they are first seen, K per thread (streams_per_thread), round
 * robin over the threads, as HPCToolkit's hpcrun does ("one tracing thread
 * per four GPU streams", HPCToolkit manual, GPU chapter, tracing).  The
 * hand-off never blocks: each tracing thread has a few bounded
 * single-producer/single-consumer queues; a producer claims a free one with
 * one atomic exchange (so any number of monitor threads up to
 * GPD_TRACE_QUEUES may push at once); a full queue drops the event and the
 * drop is counted per profile (trace_stat.dropped).
 *
 * Each tracing thread owns its own SQLite connection.  Every flush
 * interval it sorts its window by (profile, stream, start) and writes it in
 * one transaction (INSERT OR IGNORE: a daemon restart that re-reads records
 * of its predecessor's last unflushed seconds writes no duplicate).
 *
 * Bound: at most max_events trace rows (GPU events + launches) per
 * profile; beyond it NEW events are refused (the oldest are kept: the
 * start of a run is where the trace is usually read) and counted
 * (trace_stat.refused).
 */
#ifndef GPD_DAEMON_TRACE_H
#define GPD_DAEMON_TRACE_H

#include <stdint.h>

#include "gpuprof/record.h"

struct gpd_profile_s;
typedef struct gpd_trace_s gpd_trace_t;

/** Event kinds (gpd_trace_ev_t.kind). */
enum { GPD_TEV_GPU = 1, GPD_TEV_LAUNCH = 2, GPD_TEV_STAT = 3 };

/** One trace event as handed to a tracing thread (64 bytes).
 *  GPU:    [start, end) ns of the activity, its stream/device, op/subkind,
 *          the Merkle id of the CCT node it was attributed to (kernel or
 *          placeholder under the call site), kernel name string id, bytes.
 *  LAUNCH: start = the API call's host time, stream = thread id, node = the
 *          call site's Merkle id (0 when not yet known), op = invoked op.
 *  STAT:   start = rows handed so far, bytes = dropped, corr = refused. */
typedef struct gpd_trace_ev_s {
  uint64_t profile_id;
  uint64_t start, end; /* ns, gpuprof clock */
  uint64_t corr;
  uint64_t node;
  uint64_t bytes;
  uint32_t stream;
  uint32_t device;
  uint32_t name;
  uint8_t kind, op, subkind, pad;
} gpd_trace_ev_t;
_Static_assert(sizeof(gpd_trace_ev_t) == 64, "trace event");

#define GPD_TRACE_QUEUES 4u

/** Settings ([trace] section of the daemon config). */
typedef struct gpd_trace_cfg_s {
  uint32_t threads;            /* tracing threads, 0 = tracing off */
  uint32_t streams_per_thread; /* K */
  uint32_t queue_events;       /* capacity of each queue (power of two) */
  uint32_t flush_ms;           /* write interval */
  uint64_t max_events;         /* per profile; 0 = no bound */
} gpd_trace_cfg_t;

/** Start cfg->threads tracing threads writing to the SQLite file db_path
 *  (already created with the store's schema; opened with the store's
 *  rules: no symbolic link).  0, -EINVAL (threads 0), -ENOMEM, GPD_ESTORE,
 *  or -errno of pthread_create.  Main thread. */
int gpd_trace_start(gpd_trace_t **out, const char *db_path, const gpd_trace_cfg_t *cfg);
/** Write everything queued, stop and free the threads (NULL is fine).
 *  Call after the producers stopped.  Main thread. */
void gpd_trace_stop(gpd_trace_t *t);

/** Producer side: called by the monitor with the daemon lock held on p.
 *  Never blocks; the event is dropped (counted in p) when the queue is
 *  full and refused (counted) when p holds max_events. */
void gpd_trace_activity(struct gpd_profile_s *p, uint32_t target, const gpd_rec_activity_t *a,
                        unsigned op);
/** A launch event of thread p->ring_tid (the owner of the ring r came
 *  from) at r->ts; nothing for ts 0 (re-fed from the pending table). */
void gpd_trace_invoke(struct gpd_profile_s *p, const gpd_rec_invoke_t *r);
/** Push p's drop/refusal counters if they changed (at the process's end). */
void gpd_trace_stat(struct gpd_profile_s *p);

/** Per-uid admission (the store's cap, docs/DAEMON.md "Retention"): the
 *  retention pass gives uid an allowance of `bytes` of new trace rows
 *  (gpd_trace_admit); each event handed over takes its estimated size
 *  (GPD_TRACE_ROW_BYTES_*, the estimate retention counts a profile's rows
 *  with, store/purge.c) from it, and an event of a uid whose allowance is
 *  spent is refused and counted (trace_stat.refused) until the next
 *  allowance.  A uid never given one is not limited; INT64_MAX lifts the
 *  limit.  At most GPD_TRACE_ADMIT_UIDS uids are limited; beyond that,
 *  -ENOSPC and that uid stays unlimited.  Any thread (atomics). */
#define GPD_TRACE_ADMIT_UIDS 1024u
#define GPD_TRACE_ROW_BYTES_GPU 56
#define GPD_TRACE_ROW_BYTES_LAUNCH 36
int gpd_trace_admit(gpd_trace_t *t, uint32_t uid, int64_t bytes);
/** The allowance a uid gets at its first event when it has none yet (the
 *  retention limits' share of a uid: until the first count, a uid writes
 *  at most that); INT64_MAX: unlimited.  Any thread. */
void gpd_trace_admit_default(gpd_trace_t *t, int64_t bytes);
/** Lift every uid's limit (retention limits switched off).  Any thread. */
void gpd_trace_admit_clear(gpd_trace_t *t);
/** 1 (and cleared) when some uid's allowance ran out since the last call:
 *  the retention pass counts the uses again.  Any thread. */
int gpd_trace_admit_spent(gpd_trace_t *t);

/** Every event pushed before this time (gpuprof clock, ns) is committed
 *  to the store: the minimum over the threads of the start of their last
 *  completed flush.  Any thread. */
uint64_t gpd_trace_flushed_ns(gpd_trace_t *t);

/** Counters of all threads (bench and logs): rows written, flushes
 *  (transactions), events dropped at hand-off (queue full). */
typedef struct gpd_trace_counters_s {
  uint64_t written, flushes, dropped, write_errors;
} gpd_trace_counters_t;
void gpd_trace_counters(gpd_trace_t *t, gpd_trace_counters_t *out);

/** Push one prepared event to the thread owning (profile, key); for the
 *  bench and the unit test.  1 queued, 0 dropped (queue full). */
int gpd_trace_push(gpd_trace_t *t, unsigned thread, const gpd_trace_ev_t *ev);
/** Stream keys (never 0: the map reserves it): a GPU stream, a CPU
 *  thread's launches. */
#define GPD_TRACE_KEY_STREAM(s) ((uint64_t)(s) | (1ull << 33))
#define GPD_TRACE_KEY_TID(t) ((uint64_t)(t) | (1ull << 32))
/** Thread that owns stream key `key` of profile p (assigned on first use).
 *  d->lock. */
unsigned gpd_trace_thread_of(gpd_trace_t *t, struct gpd_profile_s *p, uint64_t key);

#endif

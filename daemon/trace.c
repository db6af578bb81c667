/* trace.c - the tracing threads (trace.h, docs/TRACE.md).
 *
 * Producer (monitor, daemon lock held): build a 64-byte event, find the
 * thread owning its stream, claim one of that thread's queues with an
 * atomic exchange, copy the event in, publish head.  No lock is waited on,
 * nothing is allocated but the profile's stream -> thread map entry on a
 * stream's first event.
 *
 * Consumer (one tracing thread per gpd_trace_t.tr[i]): drain its queues
 * into a window buffer; every flush_ms (or when the window is half full)
 * sort the window by (profile, kind, stream, start) and write it in one
 * transaction with prepared statements.  A failed write keeps the window
 * for the next try while it has room; otherwise the window is lost and
 * counted (write_errors, logged).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <pthread.h>


#include "gpuprof/clock.h"
#include "gpuprof/error.h"
#include "gpuprof/log.h"

#include "profile.h"
#include "store-trace.h"
#include "trace.h"

/* window buffer of one tracing thread, in events (16 MiB) */
#define TRACE_BUF_MAX (1u << 18)
/* idle sleep of a tracing thread */
#define TRACE_IDLE_US 5000u

typedef struct tq_s {
  _Alignas(64) atomic_uint busy; /* a producer holds this queue */
  _Alignas(64) _Atomic uint64_t head; /* next slot to write (producer) */
  uint64_t tail_seen; /* producer's last view of tail (under busy): tail is
                         read again only when that view says full */
  _Alignas(64) _Atomic uint64_t tail; /* next slot to read (consumer) */
  gpd_trace_ev_t *ev;
  uint32_t mask;
} tq_t;

typedef struct tracer_s {
  tq_t q[GPD_TRACE_QUEUES];
  struct gpd_trace_s *t;
  unsigned idx;
  pthread_t tid;
  int started;
  gpd_store_trace_t *w; /* this thread's connection */
  gpd_trace_ev_t *buf;
  size_t nbuf, capbuf;
  gpd_trace_ev_t *st; /* thread 0: changed stats (TRACE_STATS) */
  _Atomic uint64_t flushed_ns, written, flushes, write_errors;
  uint64_t txn_max_ns, begin_max_ns; /* this thread's longest write, BEGIN wait */
} tracer_t;

/* Per-profile counters (trace_stat) the producer publishes without the
 * queues (a full queue must not hide its own drops): a fixed table,
 * slots claimed by CAS on the profile id, cumulative values stored
 * relaxed; tracing thread 0 writes the changed ones with its flushes.
 * Full (more profiles with drops or refusals than slots): a STAT event
 * through the queue instead. */
#define TRACE_STATS 4096u
typedef struct tstat_s {
  _Atomic uint64_t profile, events, dropped, refused;
} tstat_t;

/* Per-uid allowances (gpd_trace_admit): open addressing on uid + 1,
 * slots claimed by CAS and never freed. */
typedef struct tadmit_s {
  _Atomic uint64_t uid1; /* uid + 1; 0 free */
  _Atomic int64_t allow; /* bytes left */
} tadmit_t;

struct gpd_trace_s {
  gpd_trace_cfg_t cfg;
  tadmit_t admit[GPD_TRACE_ADMIT_UIDS];
  atomic_int admit_any;   /* some uid has an allowance */
  atomic_int admit_spent; /* an allowance ran out (gpd_trace_admit_spent) */
  _Atomic int64_t admit_dflt; /* a new uid's allowance (gpd_trace_admit_default) */
  tstat_t stats[TRACE_STATS];
  uint64_t written_stats[TRACE_STATS][3]; /* tracing thread 0: last written */
  atomic_int stop;
  _Atomic uint32_t next_stream; /* streams assigned so far */
  _Atomic uint64_t dropped;
  tracer_t *tr;
  unsigned n;
};

/* ------------------------------------------------------------ producer */

int gpd_trace_push(gpd_trace_t *t, unsigned thread, const gpd_trace_ev_t *ev) {
  tracer_t *tr = &t->tr[thread % t->n];
  for (unsigned k = 0; k < GPD_TRACE_QUEUES; k++) {
    tq_t *q = &tr->q[k];
    if (atomic_exchange_explicit(&q->busy, 1, memory_order_acquire))
      continue; /* another producer holds it: try the next one */
    uint64_t h = atomic_load_explicit(&q->head, memory_order_relaxed);
    if (h - q->tail_seen > q->mask)
      q->tail_seen = atomic_load_explicit(&q->tail, memory_order_acquire);
    int ok = h - q->tail_seen <= q->mask;
    if (ok) {
      q->ev[h & q->mask] = *ev;
      atomic_store_explicit(&q->head, h + 1, memory_order_release);
    }
    atomic_store_explicit(&q->busy, 0, memory_order_release);
    if (ok)
      return 1; /* full: another queue may have room (the window is sorted) */
  }
  atomic_fetch_add_explicit(&t->dropped, 1, memory_order_relaxed);
  return 0;
}

unsigned gpd_trace_thread_of(gpd_trace_t *t, gpd_profile_t *p, uint64_t key) {
  uint64_t v;
  if (gpd_map_get(&p->trace_streams, key, &v))
    return (unsigned)v;
  uint32_t n = atomic_fetch_add_explicit(&t->next_stream, 1, memory_order_relaxed);
  unsigned th = (unsigned)((n / t->cfg.streams_per_thread) % t->n);
  gpd_map_put(&p->trace_streams, key, th); /* ENOMEM: asked again next time */
  return th;
}

/* uid's slot; with add, claimed when missing (NULL: none, or full). */
static tadmit_t *admit_slot(gpd_trace_t *t, uint32_t uid, int add) {
  uint64_t key = (uint64_t)uid + 1;
  unsigned h = (unsigned)(key * 0x9e3779b97f4a7c15ull >> 40);
  for (unsigned k = 0; k < GPD_TRACE_ADMIT_UIDS; k++) {
    tadmit_t *a = &t->admit[(h + k) % GPD_TRACE_ADMIT_UIDS];
    uint64_t cur = atomic_load_explicit(&a->uid1, memory_order_acquire);
    if (cur == 0 && add &&
        atomic_compare_exchange_strong_explicit(&a->uid1, &cur, key, memory_order_acq_rel,
                                                memory_order_acquire))
      cur = key;
    if (cur == key)
      return a;
    if (cur == 0)
      return NULL;
  }
  return NULL;
}

int gpd_trace_admit(gpd_trace_t *t, uint32_t uid, int64_t bytes) {
  if (t == NULL)
    return 0;
  tadmit_t *a = admit_slot(t, uid, bytes != INT64_MAX);
  if (a == NULL)
    return bytes == INT64_MAX ? 0 : -ENOSPC;
  atomic_store_explicit(&a->allow, bytes, memory_order_relaxed);
  if (bytes != INT64_MAX)
    atomic_store_explicit(&t->admit_any, 1, memory_order_release);
  return 0;
}

void gpd_trace_admit_default(gpd_trace_t *t, int64_t bytes) {
  if (t == NULL)
    return;
  atomic_store_explicit(&t->admit_dflt, bytes, memory_order_relaxed);
  if (bytes != INT64_MAX)
    atomic_store_explicit(&t->admit_any, 1, memory_order_release);
}

void gpd_trace_admit_clear(gpd_trace_t *t) {
  if (t == NULL)
    return;
  atomic_store_explicit(&t->admit_dflt, INT64_MAX, memory_order_relaxed);
  if (!atomic_exchange_explicit(&t->admit_any, 0, memory_order_acq_rel))
    return;
  for (unsigned i = 0; i < GPD_TRACE_ADMIT_UIDS; i++)
    atomic_store_explicit(&t->admit[i].allow, INT64_MAX, memory_order_relaxed);
}

int gpd_trace_admit_spent(gpd_trace_t *t) {
  return t && atomic_exchange_explicit(&t->admit_spent, 0, memory_order_relaxed);
}

/* 1 when p's uid may hand over an event of `bytes` (taken from its
 * allowance). */
static int admitted(gpd_trace_t *t, const gpd_profile_t *p, int64_t bytes) {
  if (!atomic_load_explicit(&t->admit_any, memory_order_acquire))
    return 1;
  tadmit_t *a = admit_slot(t, (uint32_t)p->uid, 0);
  if (a == NULL) { /* its first event: the default allowance */
    int64_t dflt = atomic_load_explicit(&t->admit_dflt, memory_order_relaxed);
    if (dflt == INT64_MAX || (a = admit_slot(t, (uint32_t)p->uid, 1)) == NULL)
      return 1;
    int64_t zero = 0;
    /* a slot just claimed holds 0 until set; the writer may set it first */
    atomic_compare_exchange_strong_explicit(&a->allow, &zero, dflt, memory_order_relaxed,
                                            memory_order_relaxed);
  }
  int64_t left = atomic_load_explicit(&a->allow, memory_order_relaxed);
  if (left == INT64_MAX)
    return 1;
  if (left < bytes) {
    atomic_store_explicit(&t->admit_spent, 1, memory_order_relaxed);
    return 0;
  }
  atomic_fetch_sub_explicit(&a->allow, bytes, memory_order_relaxed);
  return 1;
}

static void emit(gpd_trace_t *t, gpd_profile_t *p, uint64_t key, const gpd_trace_ev_t *ev) {
  if (p->trace_stat_dirty)
    gpd_trace_stat(p); /* an earlier publication found no room */
  int64_t bytes = ev->kind == GPD_TEV_LAUNCH ? GPD_TRACE_ROW_BYTES_LAUNCH : GPD_TRACE_ROW_BYTES_GPU;
  if (!admitted(t, p, bytes)) {
    if (p->trace_refused++ == 0)
      GPD_WARN("profile %llu: uid %u is over its share of a full store: new trace events are "
               "refused until retention makes room", (unsigned long long)p->profile_id,
               (unsigned)p->uid);
    p->trace_stat_dirty = 1;
    gpd_trace_stat(p);
    return;
  }
  if (t->cfg.max_events && p->trace_n >= t->cfg.max_events) {
    if (p->trace_refused++ == 0)
      GPD_WARN("profile %llu: %llu trace events stored, new ones are refused ([trace] "
               "max_events_per_profile)", (unsigned long long)p->profile_id,
               (unsigned long long)p->trace_n);
    p->trace_stat_dirty = 1;
    gpd_trace_stat(p);
    return;
  }
  unsigned th = gpd_trace_thread_of(t, p, key);
  if (gpd_trace_push(t, th, ev)) {
    p->trace_n++;
  } else {
    p->trace_dropped++;
    p->trace_stat_dirty = 1;
    gpd_trace_stat(p);
  }
}

/* Publish p's counters in the stats table.  0, or -ENOSPC when full. */
static int stat_put(gpd_trace_t *t, const gpd_profile_t *p) {
  uint64_t id = p->profile_id ? p->profile_id : ~0ull;
  for (unsigned k = 0, h = (unsigned)(id * 0x9e3779b97f4a7c15ull >> 52); k < 64; k++) {
    tstat_t *s = &t->stats[(h + k) % TRACE_STATS];
    uint64_t cur = atomic_load_explicit(&s->profile, memory_order_acquire);
    if (cur == 0 &&
        atomic_compare_exchange_strong_explicit(&s->profile, &cur, id, memory_order_acq_rel,
                                                memory_order_acquire))
      cur = id;
    if (cur != id)
      continue;
    atomic_store_explicit(&s->events, p->trace_n, memory_order_relaxed);
    atomic_store_explicit(&s->dropped, p->trace_dropped, memory_order_relaxed);
    atomic_store_explicit(&s->refused, p->trace_refused, memory_order_relaxed);
    return 0;
  }
  return -ENOSPC;
}

void gpd_trace_stat(gpd_profile_t *p) {
  gpd_trace_t *t = p->trace;
  if (t == NULL || !p->trace_stat_dirty)
    return;
  gpd_trace_ev_t s = {.profile_id = p->profile_id, .kind = GPD_TEV_STAT, .start = p->trace_n,
                      .bytes = p->trace_dropped, .corr = p->trace_refused};
  if (stat_put(t, p) == 0 || gpd_trace_push(t, 0, &s))
    p->trace_stat_dirty = 0;
}

void gpd_trace_activity(gpd_profile_t *p, uint32_t target, const gpd_rec_activity_t *a,
                        unsigned op) {
  gpd_trace_t *t = p->trace;
  if (t == NULL)
    return;
  gpd_trace_ev_t ev = {.profile_id = p->profile_id, .start = a->start, .end = a->end,
                       .corr = a->corr, .node = target < p->nnodes ? p->nodes[target].id : 0,
                       .bytes = a->bytes, .stream = a->stream, .device = a->device,
                       .name = op == GPD_OP_KERNEL ? a->name : 0, .kind = GPD_TEV_GPU,
                       .op = (uint8_t)op, .subkind = a->subkind};
  emit(t, p, GPD_TRACE_KEY_STREAM(a->stream), &ev);
}

void gpd_trace_invoke(gpd_profile_t *p, const gpd_rec_invoke_t *r) {
  gpd_trace_t *t = p->trace;
  if (t == NULL || r->ts == 0) /* ts 0: re-fed from the pending table, traced before */
    return;
  uint32_t at = gpd_profile_local(p, r->node);
  gpd_trace_ev_t ev = {.profile_id = p->profile_id, .start = r->ts, .corr = r->corr,
                       .node = at != GPD_NONE ? p->nodes[at].id : 0, .stream = p->ring_tid,
                       .kind = GPD_TEV_LAUNCH, .op = r->op};
  emit(t, p, GPD_TRACE_KEY_TID(p->ring_tid), &ev);
}

/* ------------------------------------------------------------ consumer */

/* Move queued events into the window.  1 when every queue was emptied. */
static int drain(tracer_t *tr) {
  int empty = 1;
  for (unsigned k = 0; k < GPD_TRACE_QUEUES; k++) {
    tq_t *q = &tr->q[k];
    uint64_t tl = atomic_load_explicit(&q->tail, memory_order_relaxed);
    uint64_t h = atomic_load_explicit(&q->head, memory_order_acquire);
    while (tl != h && tr->nbuf < tr->capbuf)
      tr->buf[tr->nbuf++] = q->ev[tl++ & q->mask];
    atomic_store_explicit(&q->tail, tl, memory_order_release);
    if (tl != h)
      empty = 0;
  }
  return empty;
}

static int ev_cmp(const void *x, const void *y) {
  const gpd_trace_ev_t *a = x, *b = y;
  if (a->profile_id != b->profile_id)
    return a->profile_id < b->profile_id ? -1 : 1;
  if (a->kind != b->kind)
    return a->kind < b->kind ? -1 : 1;
  if (a->stream != b->stream)
    return a->stream < b->stream ? -1 : 1;
  if (a->start != b->start)
    return a->start < b->start ? -1 : 1;
  return a->corr < b->corr ? -1 : a->corr > b->corr;
}

static int write_one(tracer_t *tr, const gpd_trace_ev_t *e) {
  switch (e->kind) {
  case GPD_TEV_GPU: {
    gpd_trace_row_t r = {.profile = e->profile_id, .start = e->start, .end = e->end, .corr = e->corr,
                         .node = e->node, .bytes = e->bytes, .stream = e->stream, .device = e->device,
                         .op = e->op, .subkind = e->subkind};
    return gpd_store_trace_event(tr->w, &r, e->name);
  }
  case GPD_TEV_LAUNCH: {
    gpd_trace_lrow_t l = {.profile = e->profile_id, .ts = e->start, .corr = e->corr, .node = e->node,
                          .tid = e->stream, .op = e->op};
    return gpd_store_trace_launch(tr->w, &l);
  }
  case GPD_TEV_STAT:
    return gpd_store_trace_stat(tr->w, e->profile_id, e->start, e->bytes, e->corr);
  default:
    return 0;
  }
}

/* Thread 0: the stats table's changed entries as STAT events into st
 * (room for TRACE_STATS); returns how many. */
static size_t stats_changed(tracer_t *tr, gpd_trace_ev_t *st) {
  gpd_trace_t *t = tr->t;
  size_t n = 0;
  if (tr->idx != 0)
    return 0;
  for (unsigned i = 0; i < TRACE_STATS; i++) {
    uint64_t id = atomic_load_explicit(&t->stats[i].profile, memory_order_acquire);
    if (id == 0)
      continue;
    uint64_t v[3] = {atomic_load_explicit(&t->stats[i].events, memory_order_relaxed),
                     atomic_load_explicit(&t->stats[i].dropped, memory_order_relaxed),
                     atomic_load_explicit(&t->stats[i].refused, memory_order_relaxed)};
    if (!memcmp(v, t->written_stats[i], sizeof v))
      continue;
    memcpy(t->written_stats[i], v, sizeof v);
    st[n++] = (gpd_trace_ev_t){.profile_id = id == ~0ull ? 0 : id, .kind = GPD_TEV_STAT,
                               .start = v[0], .bytes = v[1], .corr = v[2]};
  }
  return n;
}

/* Write the window in time order per stream.  t0: when its drain began. */
static void flush(tracer_t *tr, uint64_t t0, int all_drained) {
  size_t nst = tr->st ? stats_changed(tr, tr->st) : 0;
  if (tr->nbuf || nst) {
    qsort(tr->buf, tr->nbuf, sizeof *tr->buf, ev_cmp);
    uint64_t tb = gpd_clock_ns();
    int err = gpd_store_trace_begin(tr->w);
    uint64_t tw = gpd_clock_ns() - tb;
    tr->begin_max_ns = tw > tr->begin_max_ns ? tw : tr->begin_max_ns;
    for (size_t i = 0; i < tr->nbuf && err == 0; i++)
      err = write_one(tr, &tr->buf[i]);
    for (size_t i = 0; i < nst && err == 0; i++)
      err = write_one(tr, &tr->st[i]);
    if (err == 0)
      err = gpd_store_trace_commit(tr->w);
    if (err < 0) {
      uint64_t n = atomic_fetch_add(&tr->write_errors, 1);
      if (n == 0 || (n & (n - 1)) == 0)
        GPD_ERR("trace thread %u: writing %zu events failed: %s%s", tr->idx, tr->nbuf,
                gpd_store_trace_error(tr->w), tr->nbuf < tr->capbuf / 2 ? " (kept for a retry)" : "");
      gpd_store_trace_rollback(tr->w);
      if (nst) /* written again next time */
        memset(tr->t->written_stats, 0, sizeof tr->t->written_stats);
      if (tr->nbuf < tr->capbuf / 2)
        return; /* retry at the next flush */
    } else {
      atomic_fetch_add(&tr->written, tr->nbuf);
      atomic_fetch_add(&tr->flushes, 1);
      tw = gpd_clock_ns() - tb;
      tr->txn_max_ns = tw > tr->txn_max_ns ? tw : tr->txn_max_ns;
    }
    tr->nbuf = 0;
  }
  if (all_drained)
    atomic_store(&tr->flushed_ns, t0);
}

static void *tracer_main(void *arg) {
  tracer_t *tr = arg;
  gpd_trace_t *t = tr->t;
  uint64_t flush_ns = (uint64_t)t->cfg.flush_ms * 1000000ull, last = gpd_clock_ns();
  for (;;) {
    int stopping = atomic_load(&t->stop);
    uint64_t t0 = gpd_clock_ns();
    size_t before = tr->nbuf;
    int empty = drain(tr);
    if (stopping) {
      for (int k = 0; k < 64 && !empty; k++) {
        flush(tr, t0, 0);
        empty = drain(tr);
      }
      flush(tr, t0, empty);
      break;
    }
    if (tr->nbuf >= tr->capbuf / 2 || (tr->nbuf && t0 - last >= flush_ns) || (!tr->nbuf && empty)) {
      flush(tr, t0, empty);
      last = t0;
    }
    if (tr->nbuf == before && empty)
      usleep(TRACE_IDLE_US);
  }
  return NULL;
}

/* --------------------------------------------------------------- setup */

static void tracer_close(tracer_t *tr) {
  gpd_store_trace_close(tr->w);
  for (unsigned k = 0; k < GPD_TRACE_QUEUES; k++)
    free(tr->q[k].ev);
  free(tr->buf);
  free(tr->st);
}

static int tracer_open(tracer_t *tr, const char *db_path, uint32_t qcap) {
  for (unsigned k = 0; k < GPD_TRACE_QUEUES; k++) {
    tr->q[k].ev = malloc((size_t)qcap * sizeof(gpd_trace_ev_t));
    if (tr->q[k].ev == NULL)
      return -ENOMEM;
    tr->q[k].mask = qcap - 1;
  }
  tr->capbuf = TRACE_BUF_MAX;
  tr->buf = malloc(tr->capbuf * sizeof *tr->buf);
  if (tr->buf == NULL)
    return -ENOMEM;
  if (tr->idx == 0 && (tr->st = malloc(TRACE_STATS * sizeof *tr->st)) == NULL)
    return -ENOMEM;
  if (gpd_store_trace_open(db_path, &tr->w) < 0)
    return GPD_ESTORE;
  return 0;
}

int gpd_trace_start(gpd_trace_t **out, const char *db_path, const gpd_trace_cfg_t *cfg) {
  *out = NULL;
  if (cfg->threads == 0)
    return -EINVAL;
  gpd_trace_t *t = calloc(1, sizeof *t);
  if (t == NULL)
    return -ENOMEM;
  t->cfg = *cfg;
  atomic_init(&t->admit_dflt, INT64_MAX);
  if (t->cfg.streams_per_thread == 0)
    t->cfg.streams_per_thread = 1;
  uint32_t qcap = 64;
  while (qcap < t->cfg.queue_events && qcap < (1u << 24))
    qcap <<= 1;
  if (t->cfg.flush_ms == 0)
    t->cfg.flush_ms = 1;
  t->n = cfg->threads;
  int err = 0;
  if (posix_memalign((void **)&t->tr, 64, t->n * sizeof *t->tr) != 0) {
    free(t);
    return -ENOMEM;
  }
  memset(t->tr, 0, t->n * sizeof *t->tr);
  for (unsigned i = 0; i < t->n && err == 0; i++) {
    t->tr[i].t = t;
    t->tr[i].idx = i;
    err = tracer_open(&t->tr[i], db_path, qcap);
  }
  for (unsigned i = 0; i < t->n && err == 0; i++) {
    atomic_store(&t->tr[i].flushed_ns, gpd_clock_ns());
    err = -pthread_create(&t->tr[i].tid, NULL, tracer_main, &t->tr[i]);
    t->tr[i].started = err == 0;
  }
  if (err < 0) {
    gpd_trace_stop(t);
    return err;
  }
  *out = t;
  return 0;
}

void gpd_trace_stop(gpd_trace_t *t) {
  if (t == NULL)
    return;
  atomic_store(&t->stop, 1);
  for (unsigned i = 0; i < t->n; i++) {
    tracer_t *tr = &t->tr[i];
    if (tr->started)
      pthread_join(tr->tid, NULL);
    if (tr->flushes)
      GPD_INFO("trace thread %u: %llu rows in %llu writes, longest write %.2f ms, longest wait in "
               "BEGIN %.2f ms", i, (unsigned long long)tr->written, (unsigned long long)tr->flushes,
               (double)tr->txn_max_ns / 1e6, (double)tr->begin_max_ns / 1e6);
    tracer_close(tr);
  }
  free(t->tr);
  free(t);
}

uint64_t gpd_trace_flushed_ns(gpd_trace_t *t) {
  uint64_t m = UINT64_MAX;
  for (unsigned i = 0; i < t->n; i++) {
    uint64_t f = atomic_load(&t->tr[i].flushed_ns);
    m = f < m ? f : m;
  }
  return m;
}

void gpd_trace_counters(gpd_trace_t *t, gpd_trace_counters_t *out) {
  memset(out, 0, sizeof *out);
  out->dropped = atomic_load(&t->dropped);
  for (unsigned i = 0; i < t->n; i++) {
    out->written += atomic_load(&t->tr[i].written);
    out->flushes += atomic_load(&t->tr[i].flushes);
    out->write_errors += atomic_load(&t->tr[i].write_errors);
  }
}

/* monitor.c - the monitor thread: drains every registered region's rings
 * and attributes the records (profile-ingest.c).
 *
 * One pass visits every RUNNING/ENDING process with the daemon lock held,
 * consuming at most GPD_MONITOR_BATCH records per ring, so a query waits at
 * most one pass.  The writer waits at most one process: when it says it
 * waits (d->lock_want), a one-thread pass lets it in between two processes
 * (let_writer_in).  Records are read from the process's private per-ring
 * cursor (gpd_ring_consume_at) and then releases the shared tail to it
 * once the span is in the process's journal (journal.c), so that a daemon
 * killed at any moment loses nothing: its successor replays the journal
 * from the committed cursor and re-reads the ring from the tail.  A span
 * that could not be journaled (its uid's budget, a write error) waits for
 * the writer's commit, which releases it; a ring more than half full of
 * such slots wakes the writer early (back-pressure, d->flush_now).  A private
 * recorder (--release-on-consume, gpuprof record) has no successor: its
 * monitor releases each ring right after consuming it, so the producer's
 * room does not wait for the writer's symbolization and commit.
 *
 * While the writer copies a process's profile (snap_frozen) its rings are
 * appended to its journal unread and released; once the copy is
 * complete those records are read back from the journal and applied
 * before the rings are consumed again (journal-hold.c).
 *
 * A ring that fails validation marks its process bad (the error is kept,
 * logged once, the region is no longer read); everything consumed before
 * stays in the profile.  RETIRED rings go back to FREE when the writer
 * releases them to head (gpd_ring_release).  A process whose connection
 * reached EOF is drained to empty, finished (unmatched activities ->
 * <unknown context>) and handed to the writer, which releases and unmaps
 * its region after the final commit.  Idle: sleep poll_us.
 *
 * Several monitor threads ([monitor] threads = N): thread 0 leads each
 * pass.  It takes the daemon lock, lists the RUNNING/ENDING processes and
 * hands the list to the N - 1 helpers; every thread claims processes one
 * at a time (an atomic flag per list entry) and drains and, if ENDING,
 * finishes each one it claimed; the leader releases the lock only after
 * every helper reported the pass done.  So for everything else (writer,
 * queries, registry) the lock means what it meant with one monitor, and a
 * profile is written by exactly one thread in a pass, with a
 * happens-before edge to the next pass (leader's lock -> pass mutex ->
 * helper -> pass mutex -> leader's unlock).  The only daemon fields
 * helpers write are flush_now and early_flushes, with atomics.  Thread t
 * starts its claims at entry t * n / N and goes round: while the list
 * does not change, each thread drains the same processes pass after pass,
 * so that a profile's nodes, maps and attribution cache stay in one
 * core's cache (claiming from one shared index moved them between cores
 * from pass to pass); a thread done early takes what the others have not
 * claimed yet.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpuprof/clock.h"
#include "gpuprof/error.h"
#include "gpuprof/log.h"

#include "daemon.h"

#define GPD_MONITOR_BATCH 4096u
/* Fair share of a pass: records per ring per process are at most
 * GPD_MONITOR_UID_PASS divided by the processes its uid holds, and at
 * least GPD_MONITOR_MIN_BATCH.  A uid with a thousand busy processes gets
 * about as much of each pass as one with a few: a pass stays short
 * (a default ring of 65 536 slots fills in ~0.25 s at 100 000 ops/s), so
 * one user's volume cannot make another's rings overflow. */
#define GPD_MONITOR_UID_PASS 65536u
#define GPD_MONITOR_MIN_BATCH 64u
/* Passes an ENDING process is drained at its fair batch before it is
 * finished whatever is left (drained to empty then, as before). */
#define GPD_MONITOR_END_PASSES 64u
/* A pass this long or longer is logged (at most one line per
 * GPD_MONITOR_SLOW_EVERY_NS, with the count since). */
#define GPD_MONITOR_SLOW_NS 100000000ull
#define GPD_MONITOR_SLOW_EVERY_NS 10000000000ull
/* Records of held spans applied per pass (journal-hold.c): four times a
 * ring's batch (GPD_MONITOR_BATCH, or the process's fair share), so the apply outruns the producers while the lock is
 * held for about as long as a pass that drains four busy rings. */
#define GPD_MONITOR_APPLY_PER_RING 4u

/* p's region (ring `ring`, or any when -1) failed validation with err:
 * stop reading it, keep what was consumed. */
static void proc_bad(gpd_proc_t *p, int ring, int err) {
  p->bad = 1;
  if (ring >= 0)
    snprintf(p->error, sizeof p->error, "ring %d of the shared region is corrupt: %s", ring, gpd_strerror(err));
  else
    snprintf(p->error, sizeof p->error, "a ring of the shared region is corrupt: %s", gpd_strerror(err));
  GPD_ERR("pid %d (profile %llu): %s; no longer reading its region (kept %llu records)", (int)p->pid,
          (unsigned long long)p->profile_id, p->error, (unsigned long long)p->prof.records);
  p->meta_dirty = 1;
}

uint64_t gpd_monitor_drain(gpd_daemon_t *d, gpd_proc_t *p, unsigned max_per_ring) {
  if (!p->has_region || p->bad || p->cursor == NULL)
    return 0;
  gpd_region_t *r = &p->region;
  p->prof.trace = d ? d->trace : NULL; /* activities -> tracing threads (trace.c) */
  gpd_journal_corr_bound(d, p); /* its uid's share of unmatched invocations */
  uint64_t total = 0, drops = 0, held = 0;
  uint32_t inuse = 0;
  int pressure = 0;
  /* Spans journaled while the writer copied the profile are applied
   * first; while it copies (frozen) or they are not all applied, the
   * rings are journaled without being read (journal-hold.c), also for a
   * private recorder (gpuprof record: its journal is used for holds only).
   * Without a journal a frozen process waits for the next pass. */
  if (p->jr.hold_on && !p->snap_frozen) {
    int64_t a = gpd_journal_apply(d, p, GPD_MONITOR_APPLY_PER_RING * (uint64_t)max_per_ring);
    if (a < 0) {
      proc_bad(p, -1, (int)a);
      return 0;
    }
    total = (uint64_t)a;
  }
  int holding = p->snap_frozen || p->jr.hold_on;
  if (holding && (d == NULL || p->jr.rel == NULL))
    return total;
  if (holding)
    held = gpd_journal_hold(d, p);
  /* Only rings below the shim's high-water mark were ever claimed (an
   * untrusted value: clamped; a process that lowers it hides only its own
   * rings). */
  uint32_t hwm = atomic_load_explicit(&r->hdr->ring_hwm, memory_order_acquire);
  if (hwm > r->nrings)
    hwm = r->nrings;
  for (uint32_t i = 0; i < hwm; i++) {
    gpd_ring_ctl_t *ctl = &r->ctl[i];
    uint32_t st = atomic_load_explicit(&ctl->state, memory_order_acquire);
    drops += atomic_load_explicit(&ctl->drops, memory_order_relaxed);
    if (st == GPD_RING_FREE &&
        atomic_load_explicit(&ctl->head, memory_order_acquire) == p->cursor[i] &&
        atomic_load_explicit(&ctl->tail, memory_order_relaxed) == p->cursor[i])
      continue;
    inuse++;
    if (holding)
      continue;
    int n = gpd_profile_consume(&p->prof, r, i, &p->cursor[i], max_per_ring);
    /* a private recorder: give the slots back now (daemon.h); else once
     * they are in the journal (journal.c), also the prefix before a bad
     * record */
    if (d && d->release_on_consume) {
      gpd_ring_release(r, i, p->cursor[i]);
      gpd_journal_released(p, i);
    } else if (d)
      gpd_journal_append(d, p, i);
    if (n < 0) {
      proc_bad(p, (int)i, n);
      break;
    }
    total += (uint64_t)n;
    uint64_t tail = atomic_load_explicit(&ctl->tail, memory_order_relaxed);
    if (p->cursor[i] > tail && p->cursor[i] - tail > r->ring_slots / 2)
      pressure = 1;
  }
  /* atomics: helper monitors drain other processes at the same time */
  if (pressure && d && !__atomic_exchange_n(&d->flush_now, 1, __ATOMIC_RELAXED)) {
    __atomic_fetch_add(&d->early_flushes, 1, __ATOMIC_RELAXED);
    pthread_cond_signal(&d->writer_cv);
  }
  if (!p->bad) {
    p->rings_in_use = inuse;
    p->drops = drops + atomic_load_explicit(&r->hdr->no_ring_drops, memory_order_relaxed);
  }
  if (total) {
    gpd_profile_retry(&p->prof);
    p->meta_dirty = 1;
  }
  gpd_journal_corr_publish(p);
  if (p->prof.full && p->error[0] == 0) {
    snprintf(p->error, sizeof p->error, "profile size bounds exceeded (nodes/strings/pending)");
    GPD_WARN("pid %d: %s", (int)p->pid, p->error);
  }
  return total + held;
}

static void finish_proc(gpd_daemon_t *d, gpd_proc_t *p) {
  /* the process is gone: drain to empty (bounded: nothing refills it
   * unless the process lives on without its connection) */
  for (int k = 0; k < 1024; k++)
    if (gpd_monitor_drain(d, p, GPD_MONITOR_BATCH) == 0)
      break;
  gpd_profile_finish(&p->prof);
  p->state = GPD_PROC_EXITED;
  p->ends++;
  p->end_ns = gpd_clock_ns();
  p->meta_dirty = 1;
  p->flushed = 0;
  /* the region stays mapped until the writer committed the final state
   * and released the rings (gpd_registry_close_region) */
  __atomic_store_n(&d->flush_now, 1, __ATOMIC_RELAXED);
  pthread_cond_signal(&d->writer_cv);
  GPD_INFO("pid %d ended: %llu records (%llu journaled while frozen), %llu activities (%llu to <unknown "
           "context>)", (int)p->pid, (unsigned long long)p->prof.records, (unsigned long long)p->jr.held,
           (unsigned long long)p->prof.activities, (unsigned long long)p->prof.unknown);
}

/* 1 when the writer is copying some process's profile (lock held). */
static int frozen_any(gpd_daemon_t *d) {
  for (gpd_proc_t *p = d->procs; p; p = p->next)
    if (p->snap_frozen)
      return 1;
  return 0;
}

/* p's records per ring in one pass: its uid's fair share (see
 * GPD_MONITOR_UID_PASS). */
static unsigned fair_batch(const gpd_proc_t *p) {
  unsigned n = p->held ? __atomic_load_n(&p->held->n, __ATOMIC_RELAXED) : 1;
  unsigned b = GPD_MONITOR_UID_PASS / (n ? n : 1);
  return b < GPD_MONITOR_MIN_BATCH ? GPD_MONITOR_MIN_BATCH : b > GPD_MONITOR_BATCH ? GPD_MONITOR_BATCH : b;
}

/* One process's share of a pass (whichever monitor thread claimed it). */
static uint64_t pass_proc(gpd_daemon_t *d, gpd_proc_t *p) {
  /* frozen (the writer is copying its profile): journaled only, and
   * finished after the copy */
  unsigned b = fair_batch(p);
  uint64_t n = gpd_monitor_drain(d, p, b);
  /* an ended process is drained at its fair share too, and finished once
   * a pass found less than a batch left (or after END_PASSES passes) */
  if (p->state == GPD_PROC_ENDING && !p->snap_frozen &&
      (n < b || p->bad || ++p->end_passes >= GPD_MONITOR_END_PASSES))
    finish_proc(d, p);
  return n;
}

/* The longest pass and the slow ones (gpd_monitor_pass): one line per
 * GPD_MONITOR_SLOW_EVERY_NS at most.  Monitor thread 0 only. */
static void pass_time(gpd_daemon_t *d, uint64_t t0, unsigned nproc, uint64_t records) {
  static uint64_t slow, slow_logged, logged_ns;
  uint64_t now = gpd_clock_ns(), dt = now - t0;
  if (dt > __atomic_load_n(&d->mon_pass_max_ns, __ATOMIC_RELAXED))
    __atomic_store_n(&d->mon_pass_max_ns, dt, __ATOMIC_RELAXED);
  if (dt < GPD_MONITOR_SLOW_NS)
    return;
  slow++;
  if (logged_ns && now - logged_ns < GPD_MONITOR_SLOW_EVERY_NS)
    return;
  GPD_INFO("monitor: slow pass, %.0f ms for %u processes, %llu records (%llu passes of %.0f ms or "
           "more since the last line)",
           (double)dt / 1e6, nproc, (unsigned long long)records, (unsigned long long)(slow - slow_logged),
           (double)GPD_MONITOR_SLOW_NS / 1e6);
  slow_logged = slow;
  logged_ns = now;
}

/* A helper thread's pool and its number t (1 .. nhelpers). */
typedef struct {
  struct gpd_mpool_s *m;
  unsigned t;
} gpd_mhelper_t;

/* Helper monitors and the pass they are handed (the leader holds the
 * daemon lock from listing the processes until every helper is done). */
typedef struct gpd_mpool_s {
  gpd_daemon_t *d;
  pthread_mutex_t mu;
  pthread_cond_t start_cv, done_cv;
  uint64_t gen;      /* pass number (mu) */
  unsigned ndone;    /* helpers done with pass gen (mu) */
  int stop;          /* (mu) */
  gpd_proc_t **work; /* the pass's processes, capacity capwork */
  unsigned char *claimed; /* atomic flags: work[i] taken in this pass */
  gpd_proc_t **lastp;      /* lastp[i] drained by thread lastt[i] in the pass before */
  unsigned char *lastt;
  unsigned nwork, capwork;
  uint64_t passes, moved;  /* atomic: process passes, on another thread than before */
  int from_start;          /* gpd_monitor_claim_from_start */
  uint64_t total;    /* atomic: records consumed in the pass */
  uint64_t helped;    /* atomic: processes drained by helpers (logged at stop) */
  unsigned nhelpers;
  pthread_t tids[GPD_MONITOR_MAX_THREADS - 1];
  gpd_mhelper_t args[GPD_MONITOR_MAX_THREADS - 1];
} gpd_mpool_t;

/* Thread t (0 = the leader) of the pool's 1 + nhelpers: drain the
 * processes of the pass it claims, its own share of the list first. */
static void pool_claim(gpd_mpool_t *m, unsigned t) {
  uint64_t total = 0, procs = 0, moved = 0;
  unsigned n = m->nwork, start = m->from_start ? 0 : (unsigned)((uint64_t)t * n / (m->nhelpers + 1u));
  for (unsigned j = 0; j < n; j++) {
    unsigned i = start + j < n ? start + j : start + j - n;
    if (__atomic_load_n(&m->claimed[i], __ATOMIC_RELAXED) ||
        __atomic_exchange_n(&m->claimed[i], 1, __ATOMIC_RELAXED))
      continue;
    total += pass_proc(m->d, m->work[i]);
    procs++;
    /* entry i is this thread's alone until the pass ends (lastp: compared,
     * never dereferenced; a statistic only) */
    moved += m->lastp[i] == m->work[i] && m->lastt[i] != t;
    m->lastp[i] = m->work[i];
    m->lastt[i] = (unsigned char)t;
  }
  __atomic_fetch_add(&m->passes, procs, __ATOMIC_RELAXED);
  if (moved)
    __atomic_fetch_add(&m->moved, moved, __ATOMIC_RELAXED);
  if (total)
    __atomic_fetch_add(&m->total, total, __ATOMIC_RELAXED);
  if (t && procs)
    __atomic_fetch_add(&m->helped, procs, __ATOMIC_RELAXED);
}

static void *helper_main(void *arg) {
  gpd_mhelper_t *h = arg;
  gpd_mpool_t *m = h->m;
  unsigned t = h->t;
  uint64_t seen = 0;
  pthread_mutex_lock(&m->mu);
  for (;;) {
    while (m->gen == seen && !m->stop)
      pthread_cond_wait(&m->start_cv, &m->mu);
    if (m->stop)
      break;
    seen = m->gen;
    pthread_mutex_unlock(&m->mu);
    pool_claim(m, t);
    pthread_mutex_lock(&m->mu);
    m->ndone++;
    pthread_cond_signal(&m->done_cv);
  }
  pthread_mutex_unlock(&m->mu);
  return NULL;
}

/* Tests only (daemon.register64): until d->test_hold_procs processes are
 * registered, every pass keeps the lock d->test_hold_ms longer and the
 * next follows at once, as passes over many loading processes on a loaded
 * machine do (lock held). */
static int test_holding(gpd_daemon_t *d) {
  return d->test_hold_ms && d->nprocs < d->test_hold_procs;
}

static void test_hold(gpd_daemon_t *d) {
  if (test_holding(d))
    usleep(d->test_hold_ms * 1000u);
}

/* Between two processes of a one-thread pass: when the writer waits for
 * the lock (lock_want), let it in, and go on once its hold is over (at
 * most ~1 ms of waiting for it to take the lock).  p, where the pass goes
 * on, is pinned meanwhile: neither unlinked nor freed. */
static void let_writer_in(gpd_daemon_t *d, gpd_proc_t *p) {
  if (__atomic_load_n(&d->lock_want, __ATOMIC_ACQUIRE) == 0)
    return;
  p->mon_pinned = 1;
  pthread_mutex_unlock(&d->lock);
  for (int k = 0; k < 100 && __atomic_load_n(&d->lock_want, __ATOMIC_ACQUIRE); k++)
    nanosleep(&(struct timespec){0, 10000}, NULL);
  pthread_mutex_lock(&d->lock);
  p->mon_pinned = 0;
}

uint64_t gpd_monitor_pass(gpd_daemon_t *d) {
  uint64_t total = 0, t0 = gpd_clock_ns();
  gpd_mpool_t *m = d->mpool;
  gpd_registry_lock(d); /* and the processes registered since the last pass */
  if (m == NULL || m->nhelpers == 0) {
    unsigned np = 0;
    for (gpd_proc_t *p = d->procs; p; p = p->next) {
      if (p->state == GPD_PROC_RUNNING || p->state == GPD_PROC_ENDING) {
        total += pass_proc(d, p);
        np++;
      }
      let_writer_in(d, p);
    }
    test_hold(d);
    pthread_mutex_unlock(&d->lock);
    pass_time(d, t0, np, total);
    return total;
  }
  m->nwork = 0;
  for (gpd_proc_t *p = d->procs; p; p = p->next) {
    if (p->state != GPD_PROC_RUNNING && p->state != GPD_PROC_ENDING)
      continue;
    if (m->nwork == m->capwork) {
      unsigned nc = m->capwork ? m->capwork * 2 : 64;
      gpd_proc_t **nw = realloc(m->work, (size_t)nc * sizeof *nw);
      if (nw)
        m->work = nw;
      gpd_proc_t **nlp = nw ? realloc(m->lastp, (size_t)nc * sizeof *nlp) : NULL;
      if (nlp)
        m->lastp = nlp;
      unsigned char *ncl = nlp ? realloc(m->claimed, nc) : NULL;
      if (ncl)
        m->claimed = ncl;
      unsigned char *nlt = ncl ? realloc(m->lastt, nc) : NULL;
      if (nlt == NULL) { /* out of memory: this process on this thread alone */
        total += pass_proc(d, p);
        continue;
      }
      m->lastt = nlt;
      memset(m->lastp + m->capwork, 0, (size_t)(nc - m->capwork) * sizeof *nlp);
      m->capwork = nc;
    }
    m->work[m->nwork++] = p;
  }
  if (m->nwork)
    memset(m->claimed, 0, m->nwork);
  m->total = 0;
  if (m->nwork > 1) { /* one process: no hand-off (nothing to share) */
    pthread_mutex_lock(&m->mu);
    m->gen++;
    m->ndone = 0;
    pthread_cond_broadcast(&m->start_cv);
    pthread_mutex_unlock(&m->mu);
    pool_claim(m, 0);
    pthread_mutex_lock(&m->mu);
    while (m->ndone < m->nhelpers)
      pthread_cond_wait(&m->done_cv, &m->mu);
    pthread_mutex_unlock(&m->mu);
  } else {
    pool_claim(m, 0);
  }
  total += m->total;
  test_hold(d);
  unsigned np = m->nwork;
  pthread_mutex_unlock(&d->lock);
  pass_time(d, t0, np, total);
  return total;
}

int gpd_monitor_helpers_start(gpd_daemon_t *d, unsigned nthreads) {
  if (nthreads < 2)
    return 0;
  if (nthreads > GPD_MONITOR_MAX_THREADS)
    nthreads = GPD_MONITOR_MAX_THREADS;
  gpd_mpool_t *m = calloc(1, sizeof *m);
  if (m == NULL)
    return -ENOMEM;
  m->d = d;
  pthread_mutex_init(&m->mu, NULL);
  pthread_cond_init(&m->start_cv, NULL);
  pthread_cond_init(&m->done_cv, NULL);
  for (unsigned k = 0; k + 1 < nthreads; k++) {
    m->args[k].m = m;
    m->args[k].t = k + 1;
    int err = pthread_create(&m->tids[k], NULL, helper_main, &m->args[k]);
    if (err) {
      d->mpool = m;
      gpd_monitor_helpers_stop(d);
      return -err;
    }
    m->nhelpers++;
  }
  d->mpool = m;
  GPD_INFO("monitor: %u threads", nthreads);
  return 0;
}

void gpd_monitor_claim_from_start(gpd_daemon_t *d, int on) {
  if (d->mpool)
    d->mpool->from_start = on;
}

void gpd_monitor_moves(const gpd_daemon_t *d, uint64_t *passes, uint64_t *moved) {
  const gpd_mpool_t *m = d->mpool;
  *passes = m ? __atomic_load_n(&m->passes, __ATOMIC_RELAXED) : 0;
  *moved = m ? __atomic_load_n(&m->moved, __ATOMIC_RELAXED) : 0;
}

void gpd_monitor_helpers_stop(gpd_daemon_t *d) {
  gpd_mpool_t *m = d->mpool;
  if (m == NULL)
    return;
  pthread_mutex_lock(&m->mu);
  m->stop = 1;
  pthread_cond_broadcast(&m->start_cv);
  pthread_mutex_unlock(&m->mu);
  for (unsigned k = 0; k < m->nhelpers; k++)
    pthread_join(m->tids[k], NULL);
  if (m->nhelpers)
    GPD_INFO("monitor: %u helper threads drained %llu of %llu process passes (%llu on another thread "
             "than the pass before)",
             m->nhelpers, (unsigned long long)m->helped, (unsigned long long)m->passes,
             (unsigned long long)m->moved);
  pthread_mutex_destroy(&m->mu);
  pthread_cond_destroy(&m->start_cv);
  pthread_cond_destroy(&m->done_cv);
  free(m->work);
  free(m->claimed);
  free(m->lastp);
  free(m->lastt);
  free(m);
  d->mpool = NULL;
}

#define GPD_MONITOR_SLEEP_BELOW 256u

static void *monitor_main(void *arg) {
  gpd_daemon_t *d = arg;
  unsigned idle = 0;
  for (;;) {
    uint64_t n = gpd_monitor_pass(d);
    if (__atomic_load_n(&d->stop, __ATOMIC_ACQUIRE))
      break;
    if (d->test_hold_ms) { /* tests only: test_hold */
      pthread_mutex_lock(&d->lock);
      int holding = test_holding(d);
      pthread_mutex_unlock(&d->lock);
      if (holding)
        continue;
    }
    /* Sleep unless the pass found a real batch: draining a trickle record
     * by record makes the monitor and every producer bounce the ring's
     * head cache line on each push (measured: ~100 ns per push on the
     * application's thread).  A ring holds 65536 slots by default, so
     * poll_us (200 us) of sleep cannot overflow it at any rate a GPU API
     * reaches. */
    if (n < GPD_MONITOR_SLEEP_BELOW) {
      /* idle passes back off from poll_us up to 10x poll_us (a node's
       * daemon mostly waits); any record brings it back to poll_us */
      uint32_t us = __atomic_load_n(&d->cfg.poll_us, __ATOMIC_RELAXED);
      us = us ? us : 200;
      idle = n ? 0 : (idle < 10 ? idle + 1 : idle);
      usleep(us * (idle ? idle : 1));
    }
  }
  return NULL;
}

int gpd_monitor_start(gpd_daemon_t *d) {
  int err = gpd_monitor_helpers_start(d, d->cfg.monitor_threads);
  if (err < 0)
    return err;
  err = pthread_create(&d->monitor_tid, NULL, monitor_main, d);
  if (err) {
    gpd_monitor_helpers_stop(d);
    return -err;
  }
  d->monitor_started = 1;
  return 0;
}

void gpd_monitor_stop(gpd_daemon_t *d) {
  if (!d->monitor_started)
    return;
  __atomic_store_n(&d->stop, 1, __ATOMIC_RELEASE);
  pthread_join(d->monitor_tid, NULL);
  d->monitor_started = 0;
  GPD_INFO("monitor: longest pass %.2f ms", (double)__atomic_load_n(&d->mon_pass_max_ns, __ATOMIC_RELAXED) / 1e6);
  gpd_monitor_helpers_stop(d);
  /* drain what is left so the last flush has it, once the writer has
   * finished copying any profile (a few ms; at most 5 s) */
  gpd_registry_lock(d);
  for (int k = 0; k < 5000 && frozen_any(d); k++) {
    pthread_mutex_unlock(&d->lock);
    usleep(1000);
    gpd_registry_lock(d);
  }
  for (gpd_proc_t *p = d->procs; p; p = p->next) {
    if ((p->state != GPD_PROC_RUNNING && p->state != GPD_PROC_ENDING) || p->snap_frozen)
      continue;
    for (int k = 0; k < 1024; k++)
      if (gpd_monitor_drain(d, p, GPD_MONITOR_BATCH) == 0)
        break;
    if (p->state == GPD_PROC_ENDING)
      finish_proc(d, p);
  }
  pthread_mutex_unlock(&d->lock);
}

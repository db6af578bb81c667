/* sizer.c - the profile sizer thread (sizer.h).
 *
 * Every GPD_SIZER_TICK_MS it asks the store which profiles need an
 * estimate (never sized; running ones every second while the store is
 * over its limit, else every 10 s, but at most a quarter of the thread's
 * time; ended ones once more after their trace rows are written), sizes
 * them with reads on its own connection (WAL mode: the writer is never
 * blocked by them) and queues the results; the writer's retention pass
 * writes them into profile_size (retention.c, size_profiles).  A running
 * profile's trace rows come from memory (the tracing threads' count,
 * trace_n): no count over its millions of rows.  Measured on the issue's
 * soak: such counts, run on the writer, held every process's commit for
 * 1-5 s at a time (docs/PERFORMANCE.md). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sqlite3.h>

#include "gpuprof/clock.h"
#include "gpuprof/error.h"
#include "gpuprof/log.h"

#include "daemon.h"
#include "dstore-internal.h"
#include "sizer.h"
#include "store-db.h"
#include "store-purge.h"

#define GPD_SIZER_TICK_MS 200u
#define SIZER_RUNNING_NS (10ull * 1000000000)
#define SIZER_URGENT_NS (1ull * 1000000000)

struct gpd_sizer_s {
  gpd_daemon_t *d;
  sqlite3 *db;
  gpd_store_purge_t *pg;
  pthread_t tid;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int stop, urgent;         /* mu */
  int joined;               /* the thread is joined (main thread) */
  gpd_size_res_t res[GPD_SIZER_MAX]; /* queued results, ring (mu) */
  uint32_t head, n;
  uint64_t round_ns;        /* the last round's time (thread) */
};

/* 1 when profile id has a result queued, not yet written (mu held). */
static int queued(const gpd_sizer_t *z, int64_t id) {
  for (uint32_t k = 0; k < z->n; k++)
    if (z->res[(z->head + k) % GPD_SIZER_MAX].id == id)
      return 1;
  return 0;
}

void gpd_sizer_events(gpd_daemon_t *d, const int64_t *id, const int64_t *run, int n, int64_t *events) {
  gpd_registry_lock(d);
  for (int i = 0; i < n; i++) {
    gpd_proc_t *p = id[i] >= 0 && run[i] == 1 ? gpd_registry_find(d, (uint64_t)id[i]) : NULL;
    events[i] = p && p->state != GPD_PROC_EXITED ? (int64_t)p->prof.trace_n : -1;
  }
  pthread_mutex_unlock(&d->lock);
}

/* One round: every profile that needs an estimate now, 64 at a time. */
static void round_once(gpd_sizer_t *z) {
  gpd_daemon_t *d = z->d;
  uint64_t t0 = gpd_clock_ns();
  pthread_mutex_lock(&z->mu);
  uint64_t every = z->urgent ? SIZER_URGENT_NS : SIZER_RUNNING_NS;
  pthread_mutex_unlock(&z->mu);
  if (every < 4 * z->round_ns) /* at most a quarter of this thread's time */
    every = 4 * z->round_ns;
  uint64_t tf = d->trace ? gpd_trace_flushed_ns(d->trace) : UINT64_MAX;
  int64_t traced = tf > INT64_MAX ? INT64_MAX : (int64_t)tf;
  for (int rounds = 0; rounds < 1024; rounds++) {
    int64_t id[64], uid[64], run[64], events[64];
    int n = gpd_store_purge_size_todo(z->pg, (int64_t)(t0 - every), traced, (int64_t)t0, id, uid, run, 64);
    int fresh = 0;
    pthread_mutex_lock(&z->mu);
    for (int i = 0; i < n; i++)
      if (queued(z, id[i]))
        id[i] = -1; /* sized already, the writer has not stored it yet */
      else
        fresh++;
    pthread_mutex_unlock(&z->mu);
    if (fresh == 0)
      break;
    gpd_sizer_events(d, id, run, n, events);
    for (int i = 0; i < n; i++) {
      if (id[i] < 0)
        continue;
      gpd_size_res_t r = {id[i], uid[i], gpd_store_purge_size_of(z->pg, id[i], events[i]), run[i] == 0, t0};
      pthread_mutex_lock(&z->mu);
      while (z->n == GPD_SIZER_MAX && !z->stop)
        pthread_cond_wait(&z->cv, &z->mu);
      int stop = z->stop;
      if (!stop) {
        z->res[(z->head + z->n) % GPD_SIZER_MAX] = r;
        z->n++;
      }
      pthread_mutex_unlock(&z->mu);
      if (stop)
        return;
    }
    if (n < 64)
      break;
  }
  z->round_ns = gpd_clock_ns() - t0;
}

static void *sizer_main(void *arg) {
  gpd_sizer_t *z = arg;
  pthread_mutex_lock(&z->mu);
  while (!z->stop) {
    pthread_mutex_unlock(&z->mu);
    round_once(z);
    pthread_mutex_lock(&z->mu);
    if (z->stop)
      break;
    struct timespec ts = gpd_clock_deadline((uint64_t)GPD_SIZER_TICK_MS * 1000000u);
    pthread_cond_timedwait(&z->cv, &z->mu, &ts);
  }
  pthread_mutex_unlock(&z->mu);
  return NULL;
}

int gpd_sizer_start(gpd_daemon_t *d) {
  if (d->store == NULL)
    return 0;
  gpd_sizer_t *z = calloc(1, sizeof *z);
  if (z == NULL)
    return -ENOMEM;
  z->d = d;
  pthread_mutex_init(&z->mu, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* gpd_clock_deadline's clock */
  pthread_cond_init(&z->cv, &ca);
  pthread_condattr_destroy(&ca);
  int err = gpd_dstore_connect(d->store, &z->db);
  if (err == 0 && gpd_store_purge_open(z->db, &z->pg) < 0)
    err = GPD_ESTORE;
  if (err == 0 && (err = -pthread_create(&z->tid, NULL, sizer_main, z)) == 0) {
    d->sizer = z;
    return 0;
  }
  gpd_store_purge_close(z->pg);
  gpd_store_db_close(z->db);
  pthread_mutex_destroy(&z->mu);
  pthread_cond_destroy(&z->cv);
  free(z);
  GPD_WARN("store: no sizer thread (%d): retention sizes profiles on the writer", err);
  return err;
}

void gpd_sizer_stop(gpd_daemon_t *d) {
  gpd_sizer_t *z = d->sizer;
  if (z == NULL || z->joined)
    return;
  pthread_mutex_lock(&z->mu);
  z->stop = 1;
  pthread_cond_broadcast(&z->cv);
  pthread_mutex_unlock(&z->mu);
  pthread_join(z->tid, NULL);
  z->joined = 1;
}

void gpd_sizer_free(gpd_daemon_t *d) {
  gpd_sizer_t *z = d->sizer;
  if (z == NULL)
    return;
  gpd_sizer_stop(d);
  d->sizer = NULL;
  gpd_store_purge_close(z->pg);
  gpd_store_db_close(z->db);
  pthread_mutex_destroy(&z->mu);
  pthread_cond_destroy(&z->cv);
  free(z);
}

uint32_t gpd_sizer_take(gpd_daemon_t *d, gpd_size_res_t *out, uint32_t cap) {
  gpd_sizer_t *z = d->sizer;
  if (z == NULL)
    return 0;
  pthread_mutex_lock(&z->mu);
  uint32_t k = 0;
  for (; k < cap && z->n; k++, z->n--, z->head = (z->head + 1) % GPD_SIZER_MAX)
    out[k] = z->res[z->head];
  if (k)
    pthread_cond_broadcast(&z->cv);
  pthread_mutex_unlock(&z->mu);
  return k;
}

void gpd_sizer_urgent(gpd_daemon_t *d, int on) {
  gpd_sizer_t *z = d->sizer;
  if (z == NULL)
    return;
  pthread_mutex_lock(&z->mu);
  if (on && !z->urgent)
    pthread_cond_broadcast(&z->cv);
  z->urgent = on;
  pthread_mutex_unlock(&z->mu);
}

/* symbolizer.c - the symbolizer thread (symbolizer.h).
 *
 * The writer asks gpd_symbolizer_lookup for each new FRAME context: a call
 * site already symbolized is answered from this file's table at once;
 * any other is queued on its uid's queue and the context is stored by
 * module + offset.  The thread serves the uids round robin, one lookup at
 * a time (gpd_symbols_resolve: libdw, with the owner's file rights), and
 * charges each lookup's time to its uid: a uid whose budget
 * (GPD_SYMBOLIZER_MS_PER_S per second, at most one second's worth saved
 * up) is spent waits until it refills, so a user whose binaries take
 * seconds per lookup (a 20 000-function -g compilation unit: ~3 ms each)
 * delays only their own symbols.  Results go to the writer as updates
 * (gpd_symbolizer_take): UPDATE of the context's label and its frame rows
 * in the next flush.
 *
 * Bounds: GPD_SYMBOLIZER_QUEUE_MAX requests per uid, SYM_TABLE_MAX call
 * sites in the table (then lookups of new ones are dropped), 4096 uids.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpuprof/clock.h"
#include "gpuprof/hash.h"
#include "gpuprof/log.h"

#include "daemon.h"
#include "symbolizer.h"

#define SYM_TABLE_MAX 1000000u
#define SYM_USERS_MAX 4096u

typedef struct zent_s {
  uint32_t module; /* index into mods */
  uid_t uid;
  gid_t gid;
  uint64_t offset;
  const gpd_sframe_t *fr;
  unsigned n;
  int done;
} zent_t;

typedef struct zreq_s {
  struct zreq_s *next;
  uint32_t ent;
  uint64_t ctx;
} zreq_t;

typedef struct zuser_s {
  uid_t uid;
  zreq_t *head, **tail;
  uint32_t n;
  int64_t budget_ns; /* may go negative: a lookup's cost is charged after it */
  uint64_t refill_ns;
  uint64_t dropped;
} zuser_t;

struct gpd_symbolizer_s {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  pthread_t tid;
  int stop;
  int unlimited; /* draining at stop: no budgets */
  int busy;      /* a lookup is running (mu released) */
  pthread_cond_t idle_cv;
  char **mods;
  uint32_t nmods, capmods;
  gpd_map_t mod_map; /* hash(path) (+2 per collision) -> index */
  zent_t *ents;
  uint32_t nents, capents;
  gpd_map_t ent_map; /* hash(module, uid, gid, offset) (+2 per collision) -> index */
  gpd_map_t queued;  /* hash(uid, ctx) | 1 -> 1: a request is queued */
  zuser_t *users;
  uint32_t nusers, capusers, rr;
  gpd_symupd_t *upd;
  uint32_t nupd, capupd;
  uint64_t nqueued, done, dropped, max_ns;
};

static int grow(void **arr, uint32_t *cap, size_t elem) {
  uint32_t nc = *cap ? *cap * 2 : 64;
  void *na = realloc(*arr, (size_t)nc * elem);
  if (na == NULL)
    return -ENOMEM;
  *arr = na;
  *cap = nc;
  return 0;
}

/* Interned module path index, or -ENOMEM (mu held). */
static int64_t mod_index(gpd_symbolizer_t *z, const char *path) {
  uint64_t key = gpd_hash64(path, strlen(path), 0x5359u) | 1, v;
  while (gpd_map_get(&z->mod_map, key, &v)) {
    if (strcmp(z->mods[v], path) == 0)
      return (int64_t)v;
    key += 2;
  }
  if (z->nmods == z->capmods && grow((void **)&z->mods, &z->capmods, sizeof *z->mods) < 0)
    return -ENOMEM;
  char *s = strdup(path);
  if (s == NULL || gpd_map_put(&z->mod_map, key, z->nmods) < 0) {
    free(s);
    return -ENOMEM;
  }
  z->mods[z->nmods] = s;
  return z->nmods++;
}

static zuser_t *user_of(gpd_symbolizer_t *z, uid_t uid) {
  for (uint32_t i = 0; i < z->nusers; i++)
    if (z->users[i].uid == uid)
      return &z->users[i];
  if (z->nusers >= SYM_USERS_MAX ||
      (z->nusers == z->capusers && grow((void **)&z->users, &z->capusers, sizeof *z->users) < 0))
    return NULL;
  zuser_t *u = &z->users[z->nusers++];
  memset(u, 0, sizeof *u);
  u->uid = uid;
  u->tail = &u->head;
  u->budget_ns = (int64_t)GPD_SYMBOLIZER_MS_PER_S * 1000000;
  u->refill_ns = gpd_clock_ns();
  return u;
}

static void upd_add(gpd_symbolizer_t *z, uid_t uid, uint64_t ctx, const zent_t *e) {
  if (z->nupd == z->capupd && grow((void **)&z->upd, &z->capupd, sizeof *z->upd) < 0)
    return; /* stays module + offset */
  z->upd[z->nupd++] = (gpd_symupd_t){uid, ctx, e->fr, e->n};
}

int gpd_symbolizer_lookup(gpd_symbolizer_t *z, const char *module, uid_t uid, gid_t gid, uint64_t offset,
                          uint64_t ctx, const gpd_sframe_t **fr, unsigned *n) {
  *fr = NULL;
  *n = 0;
  if (z == NULL || module == NULL || module[0] == 0)
    return 1;
  int ret = 0;
  pthread_mutex_lock(&z->mu);
  int64_t mi = mod_index(z, module);
  if (mi < 0)
    goto out;
  uint64_t seed = ((uint64_t)uid << 32 | gid) ^ (offset * 0x9e3779b97f4a7c15ull);
  uint64_t key = gpd_hash64(&mi, sizeof mi, seed) | 1, v;
  zent_t *e = NULL;
  while (gpd_map_get(&z->ent_map, key, &v)) {
    zent_t *c = &z->ents[v];
    if (c->module == (uint32_t)mi && c->uid == uid && c->gid == gid && c->offset == offset) {
      e = c;
      break;
    }
    key += 2;
  }
  if (e && e->done) {
    *fr = e->fr;
    *n = e->n;
    ret = 1;
    goto out;
  }
  uint64_t qkey = gpd_hash64(&ctx, sizeof ctx, uid) | 1;
  if (gpd_map_get(&z->queued, qkey, &v))
    goto out; /* asked already (a rewrite after a failed flush) */
  zuser_t *u = user_of(z, uid);
  if (u == NULL || u->n >= GPD_SYMBOLIZER_QUEUE_MAX || (e == NULL && z->nents >= SYM_TABLE_MAX)) {
    if (u)
      u->dropped++;
    z->dropped++;
    goto out;
  }
  if (e == NULL) {
    if (z->nents == z->capents && grow((void **)&z->ents, &z->capents, sizeof *z->ents) < 0)
      goto out;
    if (gpd_map_put(&z->ent_map, key, z->nents) < 0)
      goto out;
    e = &z->ents[z->nents++];
    *e = (zent_t){.module = (uint32_t)mi, .uid = uid, .gid = gid, .offset = offset};
  }
  zreq_t *r = malloc(sizeof *r);
  if (r == NULL || gpd_map_put(&z->queued, qkey, 1) < 0) {
    free(r);
    goto out;
  }
  r->next = NULL;
  r->ent = (uint32_t)(e - z->ents);
  r->ctx = ctx;
  *u->tail = r;
  u->tail = &r->next;
  u->n++;
  z->nqueued++;
  pthread_cond_signal(&z->cv);
out:
  pthread_mutex_unlock(&z->mu);
  return ret;
}

void gpd_symbolizer_take(gpd_symbolizer_t *z, gpd_symupd_t **upd, uint32_t *n) {
  *upd = NULL;
  *n = 0;
  if (z == NULL)
    return;
  pthread_mutex_lock(&z->mu);
  *upd = z->upd;
  *n = z->nupd;
  z->upd = NULL;
  z->nupd = z->capupd = 0;
  pthread_mutex_unlock(&z->mu);
}

void gpd_symbolizer_untake(gpd_symbolizer_t *z, gpd_symupd_t *upd, uint32_t n) {
  if (z == NULL || upd == NULL)
    return;
  pthread_mutex_lock(&z->mu);
  for (uint32_t i = 0; i < n; i++) {
    if (z->nupd == z->capupd && grow((void **)&z->upd, &z->capupd, sizeof *z->upd) < 0)
      break;
    z->upd[z->nupd++] = upd[i];
  }
  pthread_mutex_unlock(&z->mu);
  free(upd);
}

int gpd_symbolizer_drain(gpd_symbolizer_t *z, unsigned ms) {
  if (z == NULL)
    return 1;
  struct timespec ts = gpd_clock_deadline((uint64_t)ms * 1000000u);
  pthread_mutex_lock(&z->mu);
  z->unlimited = 1;
  pthread_cond_signal(&z->cv);
  while ((z->nqueued || z->busy) && pthread_cond_timedwait(&z->idle_cv, &z->mu, &ts) == 0)
    ;
  int done = z->nqueued == 0 && !z->busy;
  pthread_mutex_unlock(&z->mu);
  return done;
}

int gpd_symbolizer_pending(gpd_symbolizer_t *z) {
  if (z == NULL)
    return 0;
  pthread_mutex_lock(&z->mu);
  int n = z->nupd > 0;
  pthread_mutex_unlock(&z->mu);
  return n;
}

void gpd_symbolizer_stats(gpd_symbolizer_t *z, uint64_t *done, uint64_t *dropped, uint64_t *queued,
                          uint64_t *max_ns) {
  *done = *dropped = *queued = *max_ns = 0;
  if (z == NULL)
    return;
  pthread_mutex_lock(&z->mu);
  *done = z->done;
  *dropped = z->dropped;
  *queued = z->nqueued;
  *max_ns = z->max_ns;
  pthread_mutex_unlock(&z->mu);
}

/* The next uid (round robin from z->rr) with a request and budget left;
 * refills budgets.  NULL with *wait_ns the time until one refills (mu held). */
static zuser_t *next_user(gpd_symbolizer_t *z, uint64_t *wait_ns) {
  const int64_t rate = (int64_t)GPD_SYMBOLIZER_MS_PER_S * 1000000; /* ns of work per s */
  uint64_t now = gpd_clock_ns();
  *wait_ns = 1000000000ull;
  for (uint32_t k = 0; k < z->nusers; k++) {
    uint32_t i = (z->rr + k) % z->nusers;
    zuser_t *u = &z->users[i];
    if (u->n == 0)
      continue;
    uint64_t dt = now - u->refill_ns;
    u->refill_ns = now;
    u->budget_ns += (int64_t)((double)dt * (double)rate / 1e9);
    if (u->budget_ns > rate)
      u->budget_ns = rate;
    if (u->budget_ns > 0 || z->unlimited) {
      z->rr = (i + 1) % z->nusers;
      return u;
    }
    uint64_t w = (uint64_t)((double)-u->budget_ns * 1e9 / (double)rate) + 1000000;
    if (w < *wait_ns)
      *wait_ns = w;
  }
  return NULL;
}

static void *symbolizer_main(void *arg) {
  gpd_symbolizer_t *z = arg;
  pthread_mutex_lock(&z->mu);
  while (!z->stop) {
    uint64_t wait_ns;
    zuser_t *u = next_user(z, &wait_ns);
    if (u == NULL) {
      if (z->nqueued == 0)
        pthread_cond_broadcast(&z->idle_cv);
      if (z->nqueued == 0)
        pthread_cond_wait(&z->cv, &z->mu);
      else {
        struct timespec ts = gpd_clock_deadline(wait_ns);
        pthread_cond_timedwait(&z->cv, &z->mu, &ts);
      }
      continue;
    }
    zreq_t *r = u->head;
    u->head = r->next;
    if (u->head == NULL)
      u->tail = &u->head;
    u->n--;
    z->nqueued--;
    uint64_t qkey = gpd_hash64(&r->ctx, sizeof r->ctx, u->uid) | 1;
    gpd_map_del(&z->queued, qkey);
    uid_t uid = u->uid; /* u may move: z->users grows under mu */
    zent_t *e = &z->ents[r->ent];
    if (!e->done) {
      char *mod = z->mods[e->module]; /* stable: interned, freed at stop */
      gid_t gid = e->gid;
      uint64_t off = e->offset;
      uint32_t ei = r->ent;
      z->busy = 1;
      pthread_mutex_unlock(&z->mu);
      const gpd_sframe_t *fr = NULL;
      unsigned n = 0;
      uint64_t t0 = gpd_clock_ns();
      if (gpd_symbols_resolve(mod, uid, gid, off, &fr, &n) < 0)
        n = 0;
      uint64_t dt = gpd_clock_ns() - t0;
      pthread_mutex_lock(&z->mu);
      z->busy = 0;
      e = &z->ents[ei];
      e->fr = n ? fr : NULL;
      e->n = n;
      e->done = 1;
      z->done++;
      z->max_ns = dt > z->max_ns ? dt : z->max_ns;
      for (uint32_t i = 0; i < z->nusers; i++)
        if (z->users[i].uid == uid)
          z->users[i].budget_ns -= (int64_t)dt;
    }
    if (e->n)
      upd_add(z, uid, r->ctx, e);
    free(r);
  }
  pthread_mutex_unlock(&z->mu);
  return NULL;
}

int gpd_symbolizer_start(gpd_daemon_t *d) {
  gpd_symbolizer_t *z = calloc(1, sizeof *z);
  if (z == NULL)
    return -ENOMEM;
  pthread_mutex_init(&z->mu, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&z->cv, &ca);
  pthread_cond_init(&z->idle_cv, &ca);
  pthread_condattr_destroy(&ca);
  int err = pthread_create(&z->tid, NULL, symbolizer_main, z);
  if (err) {
    pthread_mutex_destroy(&z->mu);
    pthread_cond_destroy(&z->cv);
    pthread_cond_destroy(&z->idle_cv);
    free(z);
    return -err;
  }
  d->symbolizer = z;
  return 0;
}

void gpd_symbolizer_stop(gpd_daemon_t *d) {
  gpd_symbolizer_t *z = d->symbolizer;
  if (z == NULL)
    return;
  pthread_mutex_lock(&z->mu);
  z->stop = 1;
  pthread_cond_signal(&z->cv);
  pthread_mutex_unlock(&z->mu);
  pthread_join(z->tid, NULL);
  if (z->done || z->dropped)
    GPD_INFO("symbolizer: %llu call sites symbolized (longest %.1f ms), %llu requests dropped, %llu "
             "still queued",
             (unsigned long long)z->done, (double)z->max_ns / 1e6, (unsigned long long)z->dropped,
             (unsigned long long)z->nqueued);
  for (uint32_t i = 0; i < z->nusers; i++)
    while (z->users[i].head) {
      zreq_t *r = z->users[i].head;
      z->users[i].head = r->next;
      free(r);
    }
  free(z->users);
  for (uint32_t i = 0; i < z->nmods; i++)
    free(z->mods[i]);
  free(z->mods);
  gpd_map_free(&z->mod_map);
  free(z->ents);
  gpd_map_free(&z->ent_map);
  gpd_map_free(&z->queued);
  free(z->upd);
  pthread_mutex_destroy(&z->mu);
  pthread_cond_destroy(&z->cv);
  pthread_cond_destroy(&z->idle_cv);
  free(z);
  d->symbolizer = NULL;
}

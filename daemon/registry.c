/* registry.c - the processes registered with this daemon.
 *
 * A process registers with Hello on its own connection; identity (pid,
 * uid, gid) comes from SO_PEERCRED, never from Hello.  EOF on that
 * connection means the process ended: the monitor does a final drain and
 * the writer a final flush.  Hand-back: after a daemon restart the shim
 * sends Hello{handback} with its region memfd; the region is validated
 * (gpd_region_map) and adopted, and the profile is reloaded from the store
 * when the stored owner uid matches the peer's, so shim node ids known
 * before the restart still resolve (table cct_local).  The monitor reads
 * each ring from a private cursor: the previous daemon's committed state,
 * then what its journal holds past the committed cursor (journal.c), then
 * the ring from the end of that or the shared tail, whichever is ahead:
 * every record once (monitor.c, checkpoint.c).
 *
 * A plain Hello never waits for the daemon lock: the monitor holds it for
 * a whole pass over every process and the writer for its snapshot (with
 * 64 processes loading 10 K contexts each, 140-270 ms per hold on the
 * 2-core VM at load 2, and a Hello took it twice); the Hellos are served
 * one after the other on the loop thread, so at load 10-20 the last of 64
 * waited past the shim's 10 s deadline.  The new process goes on the
 * incoming list (reg_lock, a few pointer moves), is adopted at once when
 * the daemon lock is free (trylock), else by the next thread that takes
 * it through gpd_registry_lock (the monitor within its poll interval).  Its
 * profile id comes from the block the writer keeps reserved ahead
 * (gpd_dstore_take_profile_id, reg_lock).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpuprof/clock.h"
#include "gpuprof/error.h"
#include "gpuprof/log.h"
#include "gpuprof.pb-c.h"

#include "daemon.h"
#include "job.h"
#include "procstat.h"

static void eof_apply(gpd_proc_t *p) {
  p->client = NULL;
  if (p->state == GPD_PROC_RUNNING)
    p->state = GPD_PROC_ENDING;
}

/* The incoming list moved into the registry, then the EOFs that came
 * meanwhile applied (d->lock held). */
static void registry_adopt(gpd_daemon_t *d) {
  pthread_mutex_lock(&d->reg_lock);
  gpd_proc_t *in = d->incoming;
  d->incoming = NULL;
  if (in) {
    gpd_proc_t *last = in;
    uint32_t n = 1;
    for (; last->next; last = last->next)
      n++;
    last->next = d->procs; /* both newest first: the incoming are newer */
    d->procs = in;
    d->nprocs += n;
    d->had_client = 1;
  }
  for (gpd_proc_t *p = d->eofs, *next; p; p = next) {
    next = p->eof_next;
    p->eof_next = NULL;
    p->eof_pending = 0;
    eof_apply(p);
  }
  d->eofs = NULL;
  pthread_mutex_unlock(&d->reg_lock);
}

void gpd_registry_lock(gpd_daemon_t *d) {
  pthread_mutex_lock(&d->lock);
  registry_adopt(d);
}

void gpd_registry_lock_writer(gpd_daemon_t *d, int adopt) {
  __atomic_add_fetch(&d->lock_want, 1, __ATOMIC_ACQ_REL);
  pthread_mutex_lock(&d->lock);
  __atomic_sub_fetch(&d->lock_want, 1, __ATOMIC_ACQ_REL);
  if (adopt)
    registry_adopt(d);
}

int gpd_registry_trylock(gpd_daemon_t *d) {
  if (pthread_mutex_trylock(&d->lock) != 0)
    return -EBUSY;
  registry_adopt(d);
  return 0;
}

gpd_proc_t *gpd_registry_find(gpd_daemon_t *d, uint64_t profile_id) {
  for (gpd_proc_t *p = d->procs; p; p = p->next)
    if (p->profile_id == profile_id)
      return p;
  return NULL;
}

gpd_proc_t *gpd_registry_find_visible(gpd_daemon_t *d, const gpd_peer_t *peer, pid_t pid) {
  gpd_proc_t *best = NULL;
  int hidden = 0;
  for (gpd_proc_t *p = d->procs; p; p = p->next) { /* newest first */
    if (p->pid != pid)
      continue;
    if (!gpd_access_may_see(peer, p->uid)) {
      hidden = 1;
      continue;
    }
    if (best == NULL || (best->state != GPD_PROC_RUNNING && p->state == GPD_PROC_RUNNING))
      best = p;
  }
  if (best == NULL && hidden) /* the admin's log says it; the peer is told "no such" */
    GPD_INFO("peer pid %d uid %u asked for pid %d of another uid", (int)peer->pid, (unsigned)peer->uid, (int)pid);
  return best;
}

gpd_proc_t *gpd_registry_find_pid(gpd_daemon_t *d, pid_t pid) {
  gpd_proc_t *best = NULL;
  for (gpd_proc_t *p = d->procs; p; p = p->next) /* newest first */
    if (p->pid == pid && (best == NULL || (best->state != GPD_PROC_RUNNING &&
                                           p->state == GPD_PROC_RUNNING)))
      best = p;
  return best;
}

void gpd_registry_trim(gpd_daemon_t *d, unsigned keep) {
  unsigned seen = 0;
  for (gpd_proc_t **pp = &d->procs; *pp;) {
    gpd_proc_t *p = *pp;
    if (p->state == GPD_PROC_EXITED && p->flushed && !p->snap_pinned && !p->mon_pinned && ++seen > keep) {
      *pp = p->next;
      d->nprocs--;
      gpd_registry_free_proc(p);
      continue;
    }
    pp = &p->next;
  }
}

unsigned gpd_registry_live(gpd_daemon_t *d) {
  unsigned n = 0;
  for (gpd_proc_t *p = d->procs; p; p = p->next)
    if (!(p->state == GPD_PROC_EXITED && p->flushed))
      n++;
  return n;
}

/* JSON string escaping for the argv column. */
static void json_str(FILE *f, const char *s) {
  fputc('"', f);
  for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
    if (*c == '"' || *c == '\\')
      fprintf(f, "\\%c", *c);
    else if (*c < 0x20)
      fprintf(f, "\\u%04x", *c);
    else
      fputc(*c, f);
  }
  fputc('"', f);
}

static char *sdup(const char *s, size_t max) {
  if (s == NULL)
    return strdup("");
  return strndup(s, max);
}

static void fill_from_hello(gpd_proc_t *p, const Gpuprof__Hello *h) {
  p->exe = sdup(h->exe, 4096);
  p->job_id = sdup(h->job_id, 256);
  p->step_id = sdup(h->step_id, 256);
  p->hostname = sdup(h->hostname, 256);
  p->rank = h->rank;
  p->local_rank = h->local_rank;
  p->ppid = h->ppid;
  p->start_ns = h->start_time_ns ? h->start_time_ns : gpd_clock_ns();
  size_t argc = h->n_argv > 1024 ? 1024 : h->n_argv;
  p->argv = calloc(argc ? argc : 1, sizeof *p->argv);
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (f)
    fputc('[', f);
  for (size_t i = 0; p->argv && i < argc; i++) {
    p->argv[i] = sdup(h->argv[i], 4096);
    if (p->argv[i] == NULL)
      break;
    p->argc++;
    if (f) {
      if (i)
        fputc(',', f);
      json_str(f, p->argv[i]);
    }
  }
  if (f) {
    fputc(']', f);
    fclose(f);
    p->argv_json = buf;
  }
}

/* The job of p from its cgroup (job.h), replacing what the Hello claimed;
 * without one the claim stays, unverified. */
static void registry_verify_job(gpd_proc_t *p) {
  char job[64], step[64];
  if (gpd_job_read(p->pid, p->uid, job, sizeof job, step, sizeof step) != 1)
    return;
  char *j = strdup(job), *s = step[0] ? strdup(step) : NULL;
  if (j == NULL || (step[0] && s == NULL)) {
    free(j);
    free(s);
    return; /* out of memory: the claim stays a claim */
  }
  if (p->job_id && p->job_id[0] && strcmp(p->job_id, job) != 0)
    GPD_INFO("pid %d uid %u claimed job %s; its cgroup says job %s", (int)p->pid, (unsigned)p->uid, p->job_id, job);
  free(p->job_id);
  p->job_id = j;
  if (s) {
    free(p->step_id);
    p->step_id = s;
  }
  p->job_verified = 1;
}

/* 1 when profile id is this peer's process with its region mapped here
 * (lock taken here). */
static int held_by(gpd_daemon_t *d, const gpd_peer_t *peer, uint64_t id) {
  gpd_registry_lock(d);
  gpd_proc_t *q = gpd_registry_find(d, id);
  int yes = q && q->has_region && q->uid == peer->uid && q->pid == peer->pid;
  pthread_mutex_unlock(&d->lock);
  return yes;
}

/* Reserve one region for a uid: at most max_procs_per_uid (root: no
 * bound), counting processes that ended and whose profile the writer has
 * not stored yet (their regions stay mapped until then).  Without
 * d->lock: the event loop never waits for a monitor pass here.  0 with
 * *cell holding the reservation, which the process entry's detach gives
 * back (p->held); -EUSERS with the reason in errmsg; -ENOMEM. */
static int uid_room(gpd_daemon_t *d, uid_t uid, gpd_uid_held_t **cell, char *errmsg, size_t errlen) {
  *cell = NULL;
  pthread_mutex_lock(&d->reg_lock);
  gpd_uid_held_t *c = d->uid_held;
  while (c && c->uid != uid)
    c = c->next;
  if (c == NULL && (c = calloc(1, sizeof *c)) != NULL) {
    c->uid = uid;
    c->next = d->uid_held;
    d->uid_held = c;
  }
  pthread_mutex_unlock(&d->reg_lock);
  if (c == NULL) {
    snprintf(errmsg, errlen, "out of memory");
    return -ENOMEM;
  }
  unsigned n = __atomic_add_fetch(&c->n, 1, __ATOMIC_RELAXED);
  if (uid != 0 && n > d->cfg.max_procs_per_uid) {
    __atomic_sub_fetch(&c->n, 1, __ATOMIC_RELAXED);
    snprintf(errmsg, errlen, "uid %u holds %u processes, running or ended and not stored yet (max_procs_per_uid)",
             (unsigned)uid, n - 1);
    return -EUSERS;
  }
  *cell = c;
  return 0;
}

void gpd_registry_fini(gpd_daemon_t *d) {
  pthread_mutex_lock(&d->reg_lock);
  while (d->uid_held) {
    gpd_uid_held_t *c = d->uid_held;
    d->uid_held = c->next;
    free(c);
  }
  pthread_mutex_unlock(&d->reg_lock);
}

int gpd_registry_hello(gpd_daemon_t *d, struct gpd_client_s *c, const Gpuprof__Hello *h, int fd,
                       uint64_t *profile_id, int *reply_fd, char *errmsg, size_t errlen) {
  const gpd_peer_t *peer = gpd_client_peer(c);
  gpd_proc_t *p = NULL;
  int err = 0;
  *reply_fd = -1;
  if (h->proto_version != GPD_PROTO_VERSION) {
    snprintf(errmsg, errlen, "protocol version %u not supported (want %u)", h->proto_version,
             GPD_PROTO_VERSION);
    err = GPD_EBADVERSION;
    goto fail;
  }
  if (h->handback && fd < 0) {
    snprintf(errmsg, errlen, "hand-back Hello without a region fd");
    err = GPD_EPROTO;
    goto fail;
  }
  /* a reconnecting process (hand-back to this daemon) keeps its region:
   * only a Hello that maps a new one is counted */
  gpd_uid_held_t *cell = NULL;
  if (!(h->handback && h->profile_id != 0 && held_by(d, peer, h->profile_id)) &&
      (err = uid_room(d, peer->uid, &cell, errmsg, errlen)) < 0)
    goto fail;
  p = calloc(1, sizeof *p);
  if (p == NULL) {
    if (cell)
      __atomic_sub_fetch(&cell->n, 1, __ATOMIC_RELAXED);
    err = -ENOMEM;
    snprintf(errmsg, errlen, "out of memory");
    goto fail;
  }
  p->held = cell; /* given back when its region is detached or it is freed */
  p->pid = peer->pid;
  p->uid = peer->uid;
  p->gid = peer->gid;
  p->proc_start = gpd_procstat_start(p->pid);
  fill_from_hello(p, h);
  registry_verify_job(p);

  if (h->handback) {
    uint64_t want = h->profile_id;
    gpd_registry_lock(d);
    gpd_proc_t *old = want != 0 ? gpd_registry_find(d, want) : NULL;
    /* Only the very process the entry was made for may take it over: same
     * uid and pid (SO_PEERCRED) and the same kernel start time (a reused
     * pid is another process).  Anything else gets a profile of its own. */
    if (old && !(old->uid == peer->uid && old->pid == peer->pid &&
                 (old->proc_start == 0 || old->proc_start == p->proc_start)))
      old = NULL;
    if (old && old->has_region) {
      /* The same daemon still reads this process's region (its connection
       * broke and it reconnected): go on with that entry and that
       * mapping; mapping the region a second time would count its
       * records twice. */
      if (old->client && old->client != c)
        gpd_client_set_proc(old->client, NULL); /* its EOF no longer ends the process */
      old->client = c;
      if (old->state == GPD_PROC_ENDING || old->state == GPD_PROC_EXITED) {
        old->state = GPD_PROC_RUNNING;
        old->flushed = 0;
        old->end_ns = 0;
      }
      old->meta_dirty = 1;
      pthread_mutex_unlock(&d->lock);
      gpd_client_set_proc(c, old);
      *profile_id = old->profile_id;
      GPD_INFO("pid %d reconnected: profile %llu goes on", (int)old->pid,
               (unsigned long long)old->profile_id);
      close(fd);
      gpd_registry_free_proc(p);
      return 0;
    }
    /* A LOST entry restored from the store (or an EXITED one whose
     * process evidently lives on) stands in for this process until it
     * hands back: take its place. */
    if (old && !old->client && (old->state == GPD_PROC_LOST || old->state == GPD_PROC_EXITED) &&
        !old->snap_pinned && !old->mon_pinned) { /* being written or read: a profile of its own */
      for (gpd_proc_t **pp = &d->procs; *pp; pp = &(*pp)->next)
        if (*pp == old) {
          *pp = old->next;
          d->nprocs--;
          break;
        }
    } else {
      old = NULL;
    }
    int busy = want != 0 && !old && gpd_registry_find(d, want) != NULL;
    pthread_mutex_unlock(&d->lock);
    if (old)
      gpd_registry_free_proc(old);
    err = gpd_region_map(&p->region, fd);
    if (err < 0) {
      snprintf(errmsg, errlen, "hand-back region rejected: %s", gpd_strerror(err));
      goto fail;
    }
    fd = -1; /* owned by the region now */
    p->has_region = 1;
    if (gpd_registry_cursors(p) < 0) {
      err = -ENOMEM;
      snprintf(errmsg, errlen, "out of memory");
      goto fail;
    }
    if (gpd_journal_attach(d, p) < 0)
      GPD_WARN("pid %d: no journal (out of memory): released at commit", (int)p->pid);
    int loaded = 0;
    if (want != 0 && !busy && d->store) {
      gpd_profile_init(&p->prof, want);
      p->prof.uid = p->uid;
      p->prof.gid = p->gid;
      p->profile_id = want;
      loaded = gpd_handback_load(d->store, p, peer->uid);
      if (loaded <= 0) {
        gpd_profile_free(&p->prof);
        p->profile_id = 0;
        if (loaded < 0)
          GPD_WARN("hand-back of profile %llu by pid %d uid %u: not reloaded (%s)",
                   (unsigned long long)want, (int)peer->pid, (unsigned)peer->uid,
                   loaded == -ESRCH ? "stored for another process" : gpd_strerror(loaded));
        loaded = 0;
      }
    }
    if (!loaded) {
      for (uint32_t i = 0; p->jr.from && i < p->region.nrings; i++)
        p->jr.from[i] = UINT64_MAX; /* nothing of it stored: the journal from its start */
      if ((err = gpd_dstore_take_profile_id(d, &p->profile_id)) < 0) {
        snprintf(errmsg, errlen, "cannot reserve a profile id: %s", gpd_strerror(err));
        goto fail;
      }
      gpd_profile_init(&p->prof, p->profile_id);
      p->prof.uid = p->uid;
      p->prof.gid = p->gid;
    }
    /* what the previous daemon consumed and released but had not
     * committed: from its journal (of `want`, if this is that process) */
    if (want != 0 && !busy) {
      int64_t nj = gpd_journal_replay(d, p, want);
      if (nj < 0)
        GPD_WARN("hand-back of profile %llu: journal not replayed (%s)", (unsigned long long)want,
                 gpd_strerror((int)nj));
    }
    pthread_mutex_lock(&d->lock);
    GPD_INFO("pid %d handed back its region (profile %llu, %s)", (int)p->pid,
             (unsigned long long)p->profile_id, loaded ? "reloaded" : "new profile");
  } else {
    if (fd >= 0) {
      close(fd); /* unexpected fd on a plain Hello */
      fd = -1;
    }
    if ((err = gpd_dstore_take_profile_id(d, &p->profile_id)) < 0) {
      snprintf(errmsg, errlen, "cannot reserve a profile id: %s", gpd_strerror(err));
      goto fail;
    }
    err = gpd_region_create(&p->region, d->cfg.rings, d->cfg.ring_slots, p->pid, p->profile_id);
    if (err < 0) {
      snprintf(errmsg, errlen, "cannot create region: %s", gpd_strerror(err));
      goto fail;
    }
    p->has_region = 1;
    if (gpd_registry_cursors(p) < 0) {
      err = -ENOMEM;
      snprintf(errmsg, errlen, "out of memory");
      goto fail;
    }
    if (gpd_journal_attach(d, p) < 0)
      GPD_WARN("pid %d: no journal (out of memory): released at commit", (int)p->pid);
    gpd_profile_init(&p->prof, p->profile_id);
    p->prof.uid = p->uid;
    p->prof.gid = p->gid;
    *reply_fd = p->region.fd;
    p->state = GPD_PROC_RUNNING;
    p->meta_dirty = 1;
    p->client = c;
    /* no wait for the daemon lock (top of this file) */
    pthread_mutex_lock(&d->reg_lock);
    p->next = d->incoming;
    d->incoming = p;
    pthread_mutex_unlock(&d->reg_lock);
    if (gpd_registry_trylock(d) == 0)
      pthread_mutex_unlock(&d->lock);
    goto registered;
  }
  /* hand-back: d->lock held */
  p->state = GPD_PROC_RUNNING;
  p->meta_dirty = 1;
  p->client = c;
  p->next = d->procs;
  d->procs = p;
  d->nprocs++;
  d->had_client = 1;
  pthread_mutex_unlock(&d->lock);
registered:
  gpd_client_set_proc(c, p);
  *profile_id = p->profile_id;
  GPD_INFO("registered pid %d uid %u exe %s as profile %llu", (int)p->pid, (unsigned)p->uid,
           p->exe, (unsigned long long)p->profile_id);
  return 0;
fail:
  if (fd >= 0)
    close(fd);
  gpd_registry_free_proc(p);
  return err;
}

void gpd_registry_eof(gpd_daemon_t *d, gpd_proc_t *p) {
  if (gpd_registry_trylock(d) == 0) { /* p may have been incoming: adopted now */
    eof_apply(p);
    pthread_mutex_unlock(&d->lock);
    return;
  }
  pthread_mutex_lock(&d->reg_lock); /* applied by the next gpd_registry_lock */
  if (!p->eof_pending) {
    p->eof_pending = 1;
    p->eof_next = d->eofs;
    d->eofs = p;
  }
  pthread_mutex_unlock(&d->reg_lock);
}

/* gpubin.c - GPU binaries sent by shims (GpuBinary chunks, main thread),
 * stored as gpubins/<hash>.gpubin beside the database; their rows go
 * through the writer's next transaction (checkpoint.c): gpubin (one per
 * hash) and gpubin_ref (one per profile that sent it, with its uid).
 * Retention (retention.c) removes a file with the last profile that
 * refers to it, unless the hash is queued or being uploaded: uploads in
 * progress are on the store's list (reg_lock), and a completed file is
 * renamed into place and its row queued under one hold of reg_lock.
 *
 * Quota: a new binary is refused (-EDQUOT, logged by the client's
 * per-uid note) when the uploader's uid would pass its share of the store
 * (gpd_gpubin_uid_quota) with what retention cannot remove (its running
 * profiles and their binaries, as last counted) plus what retention has
 * not counted yet (committed since, queued, being uploaded).
 *
 * Hostile input: the folder is the daemon's own private directory,
 * verified once and used through its fd; temporary files have unique
 * names created O_EXCL|O_NOFOLLOW; the content hash is checked before
 * the rename.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpuprof/clock.h"
#include "gpuprof/error.h"
#include "gpuprof/hash.h"
#include "gpuprof/log.h"
#include "gpuprof.pb-c.h"

#include "daemon.h"
#include "dstore-internal.h"

/* reg_lock held */
static void upload_unlist(gpd_gpubin_t *g) {
  gpd_dstore_t *s = g->listed;
  if (s == NULL)
    return;
  if (g->prev)
    g->prev->next = g->next;
  else
    s->uploads = g->next;
  if (g->next)
    g->next->prev = g->prev;
  g->prev = g->next = NULL;
  g->listed = NULL;
}

void gpd_gpubin_abort(gpd_gpubin_t *g) {
  if (g->listed) {
    pthread_mutex_t *mu = g->listed->reg_lock;
    pthread_mutex_lock(mu);
    upload_unlist(g);
    pthread_mutex_unlock(mu);
  }
  if (g->fd >= 0) {
    close(g->fd);
    unlinkat(g->dirfd, g->tmp, 0);
  }
  g->fd = -1;
  g->hash[0] = 0;
  g->received = g->total = 0;
}

int gpd__gpubin_valid_hash(const char *h) {
  size_t n = strlen(h);
  if (n != 32)
    return 0;
  for (size_t i = 0; i < n; i++)
    if (!((h[i] >= '0' && h[i] <= '9') || (h[i] >= 'a' && h[i] <= 'f')))
      return 0;
  return 1;
}

static int valid_kind(const char *k) {
  size_t n = strlen(k);
  if (n == 0 || n >= 32)
    return 0;
  for (size_t i = 0; i < n; i++)
    if (!((k[i] >= 'a' && k[i] <= 'z') || (k[i] >= '0' && k[i] <= '9') || k[i] == '_' ||
          k[i] == '-'))
      return 0;
  return 1;
}

/* The rows of a complete binary go to the writer thread (reg_lock held:
 * never the daemon lock on the loop thread).  0 or -ENOMEM. */
static int gpubin_queue_row(gpd_daemon_t *d, const gpd_gpubin_t *g, uint64_t profile_id) {
  gpubin_row_t *row = calloc(1, sizeof *row);
  if (row == NULL)
    return -ENOMEM;
  snprintf(row->hash, sizeof row->hash, "%s", g->hash);
  snprintf(row->kind, sizeof row->kind, "%s", g->kind);
  row->size = g->total;
  row->profile_id = (int64_t)profile_id;
  row->uid = g->uid;
  row->next = d->store->gpubins;
  d->store->gpubins = row;
  return 0;
}

static void wake_writer(gpd_daemon_t *d) {
  __atomic_store_n(&d->flush_now, 1, __ATOMIC_RELAXED); /* soon, not at the next interval */
  pthread_cond_signal(&d->writer_cv);
}

uint64_t gpd_gpubin_uid_quota(const gpd_daemon_t *d) {
  uint64_t q = __atomic_load_n(&d->cfg.retain_uid_bytes, __ATOMIC_RELAXED);
  return q ? q : __atomic_load_n(&d->cfg.retain_bytes, __ATOMIC_RELAXED) / 2;
}

gpd_uid_use_t *gpd__gpubin_uid_use(gpd_dstore_t *s, uint32_t uid) {
  for (size_t i = 0; i < s->nuses; i++)
    if (s->uses[i].uid == uid)
      return &s->uses[i];
  if (s->nuses == s->capuses) {
    size_t nc = s->capuses ? 2 * s->capuses : 16;
    gpd_uid_use_t *n = realloc(s->uses, nc * sizeof *n);
    if (n == NULL)
      return NULL;
    s->uses = n;
    s->capuses = nc;
  }
  gpd_uid_use_t *u = &s->uses[s->nuses++];
  memset(u, 0, sizeof *u);
  u->uid = uid;
  return u;
}

/* Bytes of uid's that retention cannot remove or has not counted yet
 * (reg_lock held). */
static uint64_t uid_pending_bytes(gpd_dstore_t *s, uint32_t uid) {
  uint64_t b = 0;
  for (size_t i = 0; i < s->nuses; i++)
    if (s->uses[i].uid == uid)
      b += s->uses[i].live + s->uses[i].unseen;
  for (const gpubin_row_t *r = s->gpubins; r; r = r->next)
    if (r->uid == uid)
      b += r->size;
  for (const gpd_gpubin_t *g = s->uploads; g; g = g->next)
    if (g->uid == uid)
      b += g->total;
  return b;
}

int gpd__gpubin_busy(const gpd_dstore_t *s, const char *hash) {
  for (const gpubin_row_t *r = s->gpubins; r; r = r->next)
    if (strcmp(r->hash, hash) == 0)
      return 1;
  for (const gpd_gpubin_t *g = s->uploads; g; g = g->next)
    if (strcmp(g->hash, hash) == 0)
      return 1;
  return 0;
}

void gpd__gpubin_committed(gpd_dstore_t *s, const gpubin_row_t *rows) {
  for (const gpubin_row_t *g = rows; g; g = g->next) {
    gpd_uid_use_t *u = gpd__gpubin_uid_use(s, g->uid);
    if (u)
      u->unseen += g->size;
  }
}

/* The gpubins directory beside the database, opened once and verified
 * (gpd_dstore_private_dir): every name below is opened relative to this fd,
 * so a directory swapped or planted later is never written through. */
static int gpubin_dir(gpd_dstore_t *s, char *errmsg, size_t errlen) {
  if (s->bindir >= 0)
    return s->bindir;
  char dir[PATH_MAX + 16];
  snprintf(dir, sizeof dir, "%s/gpubins", s->dir);
  int fd = gpd_dstore_private_dir(dir, 1, errmsg, errlen);
  if (fd < 0)
    GPD_ERR("gpubin: %s", errmsg); /* once per try; uploads are refused */
  else
    s->bindir = fd;
  return fd;
}

/* A new private temporary file: a name no one else uses (pid, counter,
 * random), created O_EXCL|O_NOFOLLOW so that nothing planted is ever
 * opened.  Two uploads of one binary write two files; the later rename
 * replaces the earlier with the same content. */
static int gpubin_tmp(gpd_gpubin_t *g, int dirfd) {
  static uint64_t seq;
  for (int tries = 0; tries < 16; tries++) {
    uint64_t r = 0;
    if (getentropy(&r, sizeof r) < 0)
      r = gpd_clock_ns();
    snprintf(g->tmp, sizeof g->tmp, ".%s.%d.%llu.%016llx.tmp", g->hash, (int)getpid(),
             (unsigned long long)++seq, (unsigned long long)r);
    /* read-write: the complete file is mapped to verify its hash */
    int fd = openat(dirfd, g->tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0 || errno != EEXIST)
      return fd < 0 ? -errno : fd;
  }
  return -EEXIST;
}

int gpd_gpubin_store(gpd_daemon_t *d, gpd_gpubin_t *g, uint64_t profile_id, uint32_t uid,
                     const Gpuprof__GpuBinary *m, char *errmsg, size_t errlen) {
  gpd_dstore_t *s = d->store;
  int err = 0;
  if (s == NULL) {
    snprintf(errmsg, errlen, "no store");
    return GPD_ESTORE;
  }
  if (m->hash == NULL || !gpd__gpubin_valid_hash(m->hash) || m->kind == NULL || !valid_kind(m->kind)) {
    snprintf(errmsg, errlen, "gpubin: bad hash or kind");
    return GPD_EBADFRAME;
  }
  if (m->total_size == 0 || m->total_size > GPD_GPUBIN_MAX_BYTES ||
      m->offset > m->total_size || m->data.len > m->total_size - m->offset) {
    snprintf(errmsg, errlen, "gpubin %s: bad size/offset (%llu+%zu of %llu)", m->hash,
             (unsigned long long)m->offset, m->data.len, (unsigned long long)m->total_size);
    return GPD_EBADFRAME;
  }
  char final[64];
  snprintf(final, sizeof final, "%s.gpubin", m->hash);
  if (strcmp(g->hash, m->hash) != 0) {
    gpd_gpubin_abort(g);
    if (m->offset != 0) {
      snprintf(errmsg, errlen, "gpubin %s: first chunk at offset %llu", m->hash,
               (unsigned long long)m->offset);
      return GPD_EPROTO;
    }
    int dirfd = gpubin_dir(s, errmsg, errlen);
    if (dirfd < 0)
      return dirfd;
    snprintf(g->hash, sizeof g->hash, "%s", m->hash);
    snprintf(g->kind, sizeof g->kind, "%s", m->kind);
    g->total = m->total_size;
    g->received = 0;
    g->dirfd = dirfd;
    g->uid = uid;
    struct stat st;
    uint64_t quota = gpd_gpubin_uid_quota(d), have = 0;
    /* listed before the file is looked at: from here retention keeps it */
    s->reg_lock = &d->reg_lock;
    pthread_mutex_lock(&d->reg_lock);
    /* stored before: a regular file of that size (a link is not) */
    int stored = fstatat(dirfd, final, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
                 (uint64_t)st.st_size == g->total;
    int over = !stored && quota && (have = uid_pending_bytes(s, uid)) + g->total > quota;
    if (!over) {
      g->listed = s;
      g->prev = NULL;
      g->next = s->uploads;
      if (s->uploads)
        s->uploads->prev = g;
      s->uploads = g;
    }
    pthread_mutex_unlock(&d->reg_lock);
    if (over) {
      snprintf(errmsg, errlen,
               "gpubin %s (%llu bytes) refused: uid %u is at %llu of its share of %llu bytes"
               " (running profiles, binaries being stored)",
               m->hash, (unsigned long long)g->total, (unsigned)uid, (unsigned long long)have,
               (unsigned long long)quota);
      g->hash[0] = 0;
      g->total = 0;
      return -EDQUOT;
    }
    if (stored) {
      g->fd = -2; /* swallow the chunks */
    } else if ((g->fd = gpubin_tmp(g, dirfd)) < 0) {
      err = g->fd;
      g->fd = -1;
      snprintf(errmsg, errlen, "gpubin %s: temporary file: %s", m->hash, strerror(-err));
      gpd_gpubin_abort(g);
      return err;
    }
  }
  if (m->offset != g->received || m->total_size != g->total) {
    snprintf(errmsg, errlen, "gpubin %s: chunk at %llu, expected %llu", m->hash,
             (unsigned long long)m->offset, (unsigned long long)g->received);
    gpd_gpubin_abort(g);
    return GPD_EPROTO;
  }
  if (g->fd >= 0 && m->data.len &&
      pwrite(g->fd, m->data.data, m->data.len, (off_t)m->offset) != (ssize_t)m->data.len) {
    err = errno ? -errno : -EIO;
    snprintf(errmsg, errlen, "gpubin %s: write: %s", m->hash, strerror(-err));
    gpd_gpubin_abort(g);
    return err;
  }
  g->received += m->data.len;
  if (g->received < g->total)
    return 0;
  /* complete: verify the content hash, then publish */
  if (g->fd >= 0) {
    int ok = 0;
    void *map = mmap(NULL, g->total, PROT_READ, MAP_PRIVATE, g->fd, 0);
    if (map != MAP_FAILED) {
      char h[33];
      gpd_hash128_hex(map, g->total, h);
      ok = strcmp(h, g->hash) == 0;
      munmap(map, g->total);
    }
    close(g->fd);
    g->fd = -1;
    /* renameat replaces whatever is at the final name (a planted link
     * included) without following it; under reg_lock with the row queued,
     * so that retention never sees the file without its row or upload */
    int renamed = 0, queued = -ENOMEM;
    if (ok) {
      pthread_mutex_lock(&d->reg_lock);
      renamed = renameat(g->dirfd, g->tmp, g->dirfd, final) == 0;
      if (renamed && (queued = gpubin_queue_row(d, g, profile_id)) < 0)
        unlinkat(g->dirfd, final, 0);
      upload_unlist(g);
      pthread_mutex_unlock(&d->reg_lock);
    }
    if (!renamed || queued < 0) {
      unlinkat(g->dirfd, g->tmp, 0);
      snprintf(errmsg, errlen, "gpubin %s: %s", g->hash,
               map == MAP_FAILED ? "cannot map the received file to check it"
               : !ok             ? "content does not match its hash"
               : !renamed        ? "cannot rename into place"
                                 : "out of memory");
      gpd_gpubin_abort(g);
      return GPD_EBADFRAME;
    }
    wake_writer(d);
    GPD_INFO("stored gpubin %s (%s, %llu bytes)", g->hash, g->kind, (unsigned long long)g->total);
  } else if (g->fd == -2) {
    /* stored before, by another profile: listed here too */
    pthread_mutex_lock(&d->reg_lock);
    int e = gpubin_queue_row(d, g, profile_id);
    upload_unlist(g);
    pthread_mutex_unlock(&d->reg_lock);
    if (e == 0)
      wake_writer(d);
    GPD_INFO("gpubin %s (%s, %llu bytes) was stored before", g->hash, g->kind,
             (unsigned long long)g->total);
  }
  g->fd = -1;
  g->hash[0] = 0;
  return 0;
}


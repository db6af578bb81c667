/* gpubin.c - GPU binaries sent by shims (GpuBinary chunks, main thread),
 * stored as gpubins/<hash>.gpubin beside the database; their rows go
 * through the writer's next transaction (checkpoint.c).
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
#include "store-internal.h"

void gpd_gpubin_abort(gpd_gpubin_t *g) {
  if (g->fd >= 0) {
    close(g->fd);
    unlinkat(g->dirfd, g->tmp, 0);
  }
  g->fd = -1;
  g->hash[0] = 0;
  g->received = g->total = 0;
}

static int valid_hash(const char *h) {
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

/* The gpubin row of a complete binary goes to the writer thread. */
static void gpubin_queue_row(gpd_daemon_t *d, const gpd_gpubin_t *g, uint64_t profile_id) {
  gpubin_row_t *row = calloc(1, sizeof *row);
  if (row == NULL)
    return;
  snprintf(row->hash, sizeof row->hash, "%s", g->hash);
  snprintf(row->kind, sizeof row->kind, "%s", g->kind);
  row->size = g->total;
  row->profile_id = (int64_t)profile_id;
  pthread_mutex_lock(&d->reg_lock); /* never the daemon lock on the loop thread */
  row->next = d->store->gpubins;
  d->store->gpubins = row;
  pthread_mutex_unlock(&d->reg_lock);
  __atomic_store_n(&d->flush_now, 1, __ATOMIC_RELAXED); /* soon, not at the next interval */
  pthread_cond_signal(&d->writer_cv);
}

/* The gpubins directory beside the database, opened once and verified
 * (gpd_store_private_dir): every name below is opened relative to this fd,
 * so a directory swapped or planted later is never written through. */
static int gpubin_dir(gpd_store_t *s, char *errmsg, size_t errlen) {
  if (s->bindir >= 0)
    return s->bindir;
  char dir[PATH_MAX + 16];
  snprintf(dir, sizeof dir, "%s/gpubins", s->dir);
  int fd = gpd_store_private_dir(dir, 1, errmsg, errlen);
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

int gpd_store_gpubin(gpd_daemon_t *d, gpd_gpubin_t *g, uint64_t profile_id,
                     const Gpuprof__GpuBinary *m, char *errmsg, size_t errlen) {
  gpd_store_t *s = d->store;
  int err = 0;
  if (s == NULL) {
    snprintf(errmsg, errlen, "no store");
    return GPD_ESTORE;
  }
  if (m->hash == NULL || !valid_hash(m->hash) || m->kind == NULL || !valid_kind(m->kind)) {
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
    struct stat st;
    /* stored before: a regular file of that size (a link is not) */
    if (fstatat(dirfd, final, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
        (uint64_t)st.st_size == g->total) {
      g->fd = -2; /* swallow the chunks */
    } else if ((g->fd = gpubin_tmp(g, dirfd)) < 0) {
      err = g->fd;
      g->fd = -1;
      snprintf(errmsg, errlen, "gpubin %s: temporary file: %s", m->hash, strerror(-err));
      g->hash[0] = 0;
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
     * included) without following it */
    if (!ok || renameat(g->dirfd, g->tmp, g->dirfd, final) < 0) {
      unlinkat(g->dirfd, g->tmp, 0);
      snprintf(errmsg, errlen, "gpubin %s: %s", g->hash,
               map == MAP_FAILED ? "cannot map the received file to check it" : !ok ? "content does not match its hash" : "cannot rename into place");
      g->hash[0] = 0;
      return GPD_EBADFRAME;
    }
    gpubin_queue_row(d, g, profile_id);
    GPD_INFO("stored gpubin %s (%s, %llu bytes)", g->hash, g->kind, (unsigned long long)g->total);
  } else if (g->fd == -2) {
    gpubin_queue_row(d, g, profile_id); /* stored before, by another profile: listed here too */
    GPD_INFO("gpubin %s (%s, %llu bytes) was stored before", g->hash, g->kind,
             (unsigned long long)g->total);
  }
  g->fd = -1;
  g->hash[0] = 0;
  return 0;
}


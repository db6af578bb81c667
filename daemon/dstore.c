/* dstore.c - the daemon's profile store: open (through store/: private
 * files, schema, format upgrade), profile-id reservation and the helpers
 * the store's files share.
 *
 * The daemon's store nouns, one file and prefix each (their SQL is
 * store/'s, which owns gpd_store_*: docs/STORE.md):
 *   dstore.c      gpd_dstore_*: open/close, profile ids (this file)
 *   checkpoint.c  gpd_checkpoint_*: the writer thread and the exactly-once
 *                 protocol: snapshot under the lock -> symbolize -> write ->
 *                 COMMIT -> release the rings to the committed cursors
 *   handback.c    gpd_handback_*: reload of a stored profile (hand-back,
 *                 restart restore)
 *   retention.c   gpd_retention_*: deleting old profiles (by age, per-uid
 *                 quota, size)
 *   gpubin.c      gpd_gpubin_*: GPU-binary files
 * Two connections to one WAL database: the writer thread's (flushes,
 * retention) and the main thread's (hand-back reload, restore, and the
 * rare profile-id reservation when the writer fell behind).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "gpuprof/error.h"
#include "gpuprof/log.h"

#include "daemon.h"
#include "dstore-internal.h"
#include "store-reload.h"

int gpd_dstore_private_dir(const char *dir, int create, char *errmsg, size_t errlen) {
  int err = 0, fd = -1;
  struct stat st;
  if (create && mkdir(dir, 0700) < 0 && errno != EEXIST) {
    err = -errno;
    snprintf(errmsg, errlen, "%s: cannot create: %s", dir, strerror(-err));
    goto fail;
  }
  fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    err = -errno;
    snprintf(errmsg, errlen, "%s: %s", dir,
             err == -ELOOP || err == -ENOTDIR ? "is a symbolic link or not a directory"
                                              : strerror(-err));
    goto fail;
  }
  if (fstat(fd, &st) < 0) {
    err = -errno;
    snprintf(errmsg, errlen, "%s: %s", dir, strerror(-err));
    goto fail;
  }
  if (st.st_uid != geteuid()) {
    err = -EPERM;
    snprintf(errmsg, errlen, "%s is owned by uid %u, not by the daemon (uid %u)", dir,
             (unsigned)st.st_uid, (unsigned)geteuid());
    goto fail;
  }
  if (st.st_mode & (S_IWGRP | S_IWOTH)) {
    err = -EPERM;
    snprintf(errmsg, errlen, "%s is writable by group or others (mode %03o)", dir,
             (unsigned)(st.st_mode & 07777));
    goto fail;
  }
  if ((st.st_mode & 077) && fchmod(fd, st.st_mode & 07700) < 0) {
    err = -errno;
    snprintf(errmsg, errlen, "%s: cannot make it private: %s", dir, strerror(-err));
    goto fail;
  }
  return fd;
fail:
  if (fd >= 0)
    close(fd);
  return err;
}

int gpd_dstore_open(gpd_dstore_t **out, const char *path) {
  int err = GPD_ESTORE;
  gpd_dstore_t *s = calloc(1, sizeof *s);
  if (s == NULL)
    return -ENOMEM;
  s->bindir = -1;
  s->rbindir = -1;
  snprintf(s->path, sizeof s->path, "%s", path);
  snprintf(s->dir, sizeof s->dir, "%s", path);
  char *slash = strrchr(s->dir, '/');
  if (slash == NULL)
    snprintf(s->dir, sizeof s->dir, ".");
  else if (slash == s->dir)
    s->dir[1] = 0;
  else
    *slash = 0;
  if (gpd_store_db_private(path, 1) < 0 || gpd_store_db_open(path, 1, &s->wdb) < 0 ||
      gpd_store_schema_pragmas(s->wdb) < 0 || gpd_store_db_begin(s->wdb) < 0)
    goto fail;
  if (gpd_store_schema_upgrade(s->wdb, path) < 0)
    goto rollback;
  /* profiles a dead daemon left running: their shims may hand them back */
  if (gpd_store_reload_mark_lost(s->wdb) < 0)
    goto rollback;
  /* Profile ids are never handed out twice, even ids a killed daemon gave
   * out and never committed: the first id is past both the stored
   * profiles and the reserved mark, and a block is reserved now. */
  s->first_id = gpd_store_meta_first_id(s->wdb);
  s->id_hw = s->first_id + GPD_DSTORE_ID_BLOCK;
  if (gpd_store_meta_reserve(s->wdb, s->id_hw) < 0)
    goto rollback;
  /* the ids handed out are that count permuted under the file's key */
  if ((err = gpd_store_id_key(s->wdb, &s->idkey)) < 0) {
    GPD_ERR("store %s: profile id key: %s", path, err == -EINVAL ? "damaged (meta profile_id_key)" : gpd_strerror(err));
    err = GPD_ESTORE;
    goto rollback;
  }
  if (gpd_store_db_commit(s->wdb) < 0)
    goto fail;
  if (gpd_store_db_open(path, 0, &s->rdb) < 0 || gpd_store_id_register(s->rdb, &s->idkey) < 0)
    goto fail;
  *out = s;
  return 0;
rollback:
  gpd_store_db_rollback(s->wdb);
fail:
  gpd_dstore_close(s);
  return err;
}

void gpd_dstore_close(gpd_dstore_t *s) {
  if (s == NULL)
    return;
  while (s->gpubins) { /* only left if the last flush failed */
    gpubin_row_t *g = s->gpubins;
    s->gpubins = g->next;
    free(g);
  }
  if (s->bindir >= 0)
    close(s->bindir);
  if (s->rbindir >= 0)
    close(s->rbindir);
  free(s->uses);
  gpd_store_db_close(s->wdb);
  gpd_store_db_close(s->rdb);
  free(s);
}

int gpd_dstore_connect(gpd_dstore_t *s, sqlite3 **db) {
  return gpd_store_db_open(s->path, 0, db);
}

uint64_t gpd_dstore_first_profile_id(gpd_dstore_t *s) { return s->first_id; }

int gpd_dstore_take_profile_id(gpd_daemon_t *d, uint64_t *id) {
  gpd_dstore_t *s = d->store;
  pthread_mutex_lock(&d->reg_lock);
  if (s == NULL || d->next_profile_id < s->id_hw) {
    *id = s ? gpd_store_id_encode(&s->idkey, d->next_profile_id++) : d->next_profile_id++;
    /* under half a block left: the writer reserves the next one now, not
     * at its next interval (a lost wake-up costs one interval) */
    int low = s && s->id_hw - d->next_profile_id < GPD_DSTORE_ID_BLOCK / 2;
    pthread_mutex_unlock(&d->reg_lock);
    if (low) {
      __atomic_store_n(&d->flush_now, 1, __ATOMIC_RELAXED);
      pthread_cond_signal(&d->writer_cv);
    }
    return 0;
  }
  uint64_t hw = d->next_profile_id + GPD_DSTORE_ID_BLOCK;
  pthread_mutex_unlock(&d->reg_lock);
  /* The writer did not keep the reservation ahead (more than half a block
   * of registrations within one flush interval): reserve here, once per
   * block, on the main thread's own connection. */
  int err = gpd_store_db_begin(s->rdb);
  if (err == 0 && (err = gpd_store_meta_reserve(s->rdb, hw)) == 0)
    err = gpd_store_db_commit(s->rdb);
  if (err < 0) {
    gpd_store_db_rollback(s->rdb);
    return err;
  }
  pthread_mutex_lock(&d->reg_lock);
  if (s->id_hw < hw)
    s->id_hw = hw;
  *id = gpd_store_id_encode(&s->idkey, d->next_profile_id++);
  pthread_mutex_unlock(&d->reg_lock);
  return 0;
}

char *gpd__dstore_xdup(const char *s) { return s ? strdup(s) : NULL; }

char *gpd__dstore_hex(const uint8_t *b, unsigned n) {
  if (n == 0)
    return NULL;
  char *h = malloc(2 * n + 1);
  if (h)
    for (unsigned i = 0; i < n; i++)
      sprintf(h + 2 * i, "%02x", b[i]);
  return h;
}

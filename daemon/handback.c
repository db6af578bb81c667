/* handback.c - a stored profile back into memory: the hand-back reload
 * (a shim returns its region to a restarted daemon) and the restore of the
 * live view at start.  Main thread, the store's read connection.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "gpuprof/error.h"
#include "gpuprof/hash.h"
#include "gpuprof/log.h"

#include "daemon.h"
#include "store-internal.h"

static unsigned unhex(const char *h, uint8_t *out, unsigned max) {
  unsigned n = 0;
  if (h == NULL)
    return 0;
  while (h[0] && h[1] && n < max) {
    unsigned v;
    if (sscanf(h, "%2x", &v) != 1)
      break;
    out[n++] = (uint8_t)v;
    h += 2;
  }
  return n;
}

int gpd_store_load(gpd_store_t *s, gpd_proc_t *proc, uid_t uid) {
  sqlite3 *db = s->rdb;
  gpd_profile_t *p = &proc->prof;
  sqlite3_stmt *q = NULL;
  int ret = 0;
  int64_t pid = (int64_t)p->profile_id;
  if (sqlite3_prepare_v2(db, "SELECT uid, records, pid, proc_start FROM profile WHERE id=?1", -1,
                         &q, NULL) != SQLITE_OK)
    goto dberr;
  sqlite3_bind_int64(q, 1, pid);
  if (sqlite3_step(q) != SQLITE_ROW) {
    ret = 0;
    goto out;
  }
  if ((uid_t)sqlite3_column_int64(q, 0) != uid) {
    ret = -EPERM;
    goto out;
  }
  /* A hand-back (a region to adopt) must come from the very process the
   * profile was made for: its pid (SO_PEERCRED) and its kernel start
   * time (NULL in a profile an older daemon stored: pid only). */
  uint64_t pstart = (uint64_t)sqlite3_column_int64(q, 3);
  if (proc->has_region && ((pid_t)sqlite3_column_int64(q, 2) != proc->pid ||
                           (pstart != 0 && pstart != proc->proc_start))) {
    ret = -ESRCH;
    goto out;
  }
  p->records = (uint64_t)sqlite3_column_int64(q, 1);
  sqlite3_finalize(q);
  q = NULL;

  if (sqlite3_prepare_v2(db, "SELECT id, path, build_id, base, size FROM module WHERE profile_id=?1",
                         -1, &q, NULL) != SQLITE_OK)
    goto dberr;
  sqlite3_bind_int64(q, 1, pid);
  while (sqlite3_step(q) == SQLITE_ROW) {
    uint8_t bid[20];
    unsigned nb = unhex((const char *)sqlite3_column_text(q, 2), bid, 20);
    const char *path = (const char *)sqlite3_column_text(q, 1);
    gpd_profile_add_module(p, (uint32_t)sqlite3_column_int64(q, 0), bid, nb,
                           (uint64_t)sqlite3_column_int64(q, 3),
                           (uint64_t)sqlite3_column_int64(q, 4), path ? path : "",
                           path ? strlen(path) : 0);
  }
  sqlite3_finalize(q);
  q = NULL;

  if (sqlite3_prepare_v2(db, "SELECT id, kind, text FROM string WHERE profile_id=?1", -1, &q,
                         NULL) != SQLITE_OK)
    goto dberr;
  sqlite3_bind_int64(q, 1, pid);
  while (sqlite3_step(q) == SQLITE_ROW) {
    const char *t = (const char *)sqlite3_column_text(q, 2);
    gpd_profile_add_string(p, (uint32_t)sqlite3_column_int64(q, 0),
                           (uint32_t)sqlite3_column_int64(q, 1), t ? t : "", t ? strlen(t) : 0);
  }
  sqlite3_finalize(q);
  q = NULL;

  /* back-end states (the reason text gets a string id of its own, above
   * any the shim hands out) */
  if (sqlite3_prepare_v2(db, "SELECT api, enabled, code, reason FROM backend WHERE profile_id=?1",
                         -1, &q, NULL) != SQLITE_OK)
    goto dberr;
  sqlite3_bind_int64(q, 1, pid);
  while (sqlite3_step(q) == SQLITE_ROW) {
    const char *api = (const char *)sqlite3_column_text(q, 0);
    for (unsigned a = 1; api && a < GPD_API_MAX; a++) {
      if (strcmp(api, gpd_api_name(a)) != 0)
        continue;
      const char *why = (const char *)sqlite3_column_text(q, 3);
      uint32_t sid = 0;
      if (why && *why && gpd_profile_add_string(p, 0xffffff00u + a, GPD_STR_REASON, why, strlen(why)) == 0)
        sid = 0xffffff00u + a;
      p->backends[a].seen = 1;
      p->backends[a].enabled = sqlite3_column_int(q, 1);
      p->backends[a].code = sqlite3_column_int(q, 2);
      p->backends[a].reason = sid;
    }
  }
  sqlite3_finalize(q);
  q = NULL;

  /* contexts of this profile and all their ancestors */
  if (sqlite3_prepare_v2(
          db,
          "WITH RECURSIVE c(id) AS (SELECT context_id FROM cct_local WHERE profile_id=?1"
          " UNION SELECT context_id FROM metric WHERE profile_id=?1"
          " UNION SELECT context.parent FROM context JOIN c ON context.uid=?2 AND context.id=c.id"
          " WHERE context.parent != 0)"
          " SELECT context.id, parent, kind, module, build_id, offset, label, raw_name"
          " FROM context JOIN c ON context.uid=?2 AND context.id=c.id",
          -1, &q, NULL) != SQLITE_OK)
    goto dberr;
  sqlite3_bind_int64(q, 1, pid);
  sqlite3_bind_int64(q, 2, (int64_t)uid);
  typedef struct { uint64_t id, parent, off; int kind; uint32_t mod; char *label, *raw; } row_t;
  row_t *rows = NULL;
  size_t nrows = 0, caprows = 0;
  while (sqlite3_step(q) == SQLITE_ROW) {
    if (nrows == caprows) {
      size_t nc = caprows ? caprows * 2 : 256;
      row_t *nr = realloc(rows, nc * sizeof *nr);
      if (nr == NULL)
        break;
      rows = nr;
      caprows = nc;
    }
    row_t *r = &rows[nrows++];
    r->id = (uint64_t)sqlite3_column_int64(q, 0);
    r->parent = (uint64_t)sqlite3_column_int64(q, 1);
    r->kind = sqlite3_column_int(q, 2);
    r->off = (uint64_t)sqlite3_column_int64(q, 5);
    const char *mpath = (const char *)sqlite3_column_text(q, 3);
    const char *mbid = (const char *)sqlite3_column_text(q, 4);
    r->mod = 0;
    for (uint32_t k = 0; mpath && k < p->nmods; k++) {
      char *h = gpd__hex(p->mods[k].build_id, p->mods[k].build_id_len);
      int same = strcmp(p->mods[k].path, mpath) == 0 &&
                 ((h == NULL && mbid == NULL) || (h && mbid && strcmp(h, mbid) == 0));
      free(h);
      if (same) {
        r->mod = p->mods[k].id;
        break;
      }
    }
    r->label = gpd__xdup((const char *)sqlite3_column_text(q, 6));
    r->raw = gpd__xdup((const char *)sqlite3_column_text(q, 7));
  }
  sqlite3_finalize(q);
  q = NULL;
  /* insert parents first: passes until no progress */
  int progress = 1;
  size_t left = nrows;
  while (progress && left) {
    progress = 0;
    for (size_t i = 0; i < nrows; i++) {
      if (rows[i].id == 0)
        continue;
      if (rows[i].id == GPD_CTX_ROOT ||
          gpd_profile_restore_node(p, rows[i].id, rows[i].parent, (uint8_t)rows[i].kind,
                                   rows[i].mod, rows[i].off, rows[i].label, rows[i].raw) !=
              GPD_NONE) {
        rows[i].id = 0;
        left--;
        progress = 1;
      }
    }
  }
  for (size_t i = 0; i < nrows; i++) {
    free(rows[i].label);
    free(rows[i].raw);
  }
  free(rows);
  p->nodes[0].saved = 1;

  if (sqlite3_prepare_v2(db, "SELECT context_id, metric_id, value FROM metric WHERE profile_id=?1",
                         -1, &q, NULL) != SQLITE_OK)
    goto dberr;
  sqlite3_bind_int64(q, 1, pid);
  while (sqlite3_step(q) == SQLITE_ROW) {
    uint32_t i = gpd_profile_find(p, (uint64_t)sqlite3_column_int64(q, 0));
    if (i == GPD_NONE)
      continue;
    int64_t mid = sqlite3_column_int64(q, 1);
    if (mid >= 0 && mid < GPD_M__COUNT)
      gpd_profile_metric_add(p, i, (unsigned)mid, sqlite3_column_double(q, 2));
  }
  sqlite3_finalize(q);
  q = NULL;

  if (sqlite3_prepare_v2(db, "SELECT local_id, context_id FROM cct_local WHERE profile_id=?1", -1,
                         &q, NULL) != SQLITE_OK)
    goto dberr;
  sqlite3_bind_int64(q, 1, pid);
  while (sqlite3_step(q) == SQLITE_ROW) {
    uint32_t i = gpd_profile_find(p, (uint64_t)sqlite3_column_int64(q, 1));
    if (i != GPD_NONE)
      gpd_profile_add_local(p, (uint32_t)sqlite3_column_int64(q, 0), i);
  }
  sqlite3_finalize(q);
  q = NULL;
  p->nmods_saved = p->nmods;
  p->nstrs_saved = p->nstrs;
  p->nlocals_saved = p->nlocals;
  for (uint32_t i = 0; i < p->nnodes; i++)
    p->nodes[i].dirty = 0;
  p->ndirtyv = 0;

  /* the unmatched records that were stored with this state, in order:
   * they match records that are still in (or come back to) the rings */
  if (sqlite3_prepare_v2(db, "SELECT rec FROM pending WHERE profile_id=?1 ORDER BY seq", -1, &q,
                         NULL) != SQLITE_OK)
    goto dberr;
  sqlite3_bind_int64(q, 1, pid);
  uint64_t refed = 0, bad = 0;
  while (sqlite3_step(q) == SQLITE_ROW) {
    const void *b = sqlite3_column_blob(q, 0);
    int len = sqlite3_column_bytes(q, 0);
    if (gpd_profile_restore_pending(p, b, len > 0 ? (size_t)len : 0) == 0)
      refed++;
    else
      bad++;
  }
  sqlite3_finalize(q);
  q = NULL;
  gpd_profile_retry(p);
  p->pend_gen_saved = p->pend_gen; /* what is stored */

  /* committed ring positions: ahead of the shared tail only when the old
   * daemon died between its COMMIT and the release.  With a journal they
   * are where its replay starts (gpd_journal_replay moves the cursors). */
  if (sqlite3_prepare_v2(db, "SELECT ring, pos FROM ring_cursor WHERE profile_id=?1", -1, &q,
                         NULL) != SQLITE_OK)
    goto dberr;
  sqlite3_bind_int64(q, 1, pid);
  uint64_t skipped = 0;
  while (proc->cursor && sqlite3_step(q) == SQLITE_ROW) {
    int64_t ring = sqlite3_column_int64(q, 0);
    uint64_t pos = (uint64_t)sqlite3_column_int64(q, 1);
    if (ring < 0 || ring >= (int64_t)proc->region.nrings)
      continue;
    gpd_ring_ctl_t *c = &proc->region.ctl[ring];
    uint64_t tail = atomic_load_explicit(&c->tail, memory_order_acquire);
    uint64_t head = atomic_load_explicit(&c->head, memory_order_acquire);
    proc->cursor_saved[ring] = pos;
    if (proc->jr.from) {
      proc->jr.from[ring] = pos;
      continue;
    }
    if (pos > tail && pos <= head && pos - tail <= proc->region.ring_slots) {
      skipped += pos - tail;
      proc->cursor[ring] = pos;
      gpd_ring_release(&proc->region, (uint32_t)ring, pos);
    }
  }
  /* the trace bound counts what the previous daemon already stored */
  sqlite3_finalize(q);
  q = NULL;
  if (sqlite3_prepare_v2(db, "SELECT (SELECT count(*) FROM trace_event WHERE profile_id=?1) +"
                             " (SELECT count(*) FROM trace_launch WHERE profile_id=?1)",
                         -1, &q, NULL) == SQLITE_OK) {
    sqlite3_bind_int64(q, 1, pid);
    if (sqlite3_step(q) == SQLITE_ROW)
      p->trace_n = (uint64_t)sqlite3_column_int64(q, 0);
  }
  if (refed || bad || skipped)
    GPD_INFO("profile %lld reloaded: %llu pending records re-fed (%llu unusable), %llu slots "
             "already stored skipped", (long long)pid, (unsigned long long)refed,
             (unsigned long long)bad, (unsigned long long)skipped);
  ret = 1;
  goto out;
dberr:
  GPD_ERR("store: load profile %lld: %s", (long long)pid, sqlite3_errmsg(db));
  ret = GPD_ESTORE;
out:
  sqlite3_finalize(q);
  return ret;
}

static char *col_dup(sqlite3_stmt *q, int i) {
  const char *t = (const char *)sqlite3_column_text(q, i);
  return t ? strdup(t) : NULL;
}

/* Restore the live view after a (re)start: the newest `keep` stored
 * profiles come back into memory as EXITED, or LOST when the store says
 * the process was running when the previous daemon died (its shim may
 * still hand its region back: gpd_registry_hello then takes the place of
 * the LOST entry).  Neither is written again by the writer (flushed = 1).
 * Called once from main before the threads start.  Returns the number of
 * profiles restored or a negative code. */
int gpd_store_restore(gpd_daemon_t *d, unsigned keep) {
  gpd_store_t *s = d->store;
  sqlite3_stmt *q = NULL;
  int n = 0;
  if (s == NULL)
    return 0;
  if (sqlite3_prepare_v2(s->rdb,
                         "SELECT id, pid, ppid, uid, gid, exe, job_id, step_id, hostname, rank,"
                         " local_rank, start_ns, end_ns, state, drops, error, argv, proc_start"
                         " FROM profile ORDER BY id DESC LIMIT ?1",
                         -1, &q, NULL) != SQLITE_OK) {
    GPD_ERR("store: restore: %s", sqlite3_errmsg(s->rdb));
    return GPD_ESTORE;
  }
  sqlite3_bind_int64(q, 1, keep);
  gpd_proc_t *head = NULL, **tail = &head;
  while (sqlite3_step(q) == SQLITE_ROW) {
    gpd_proc_t *p = calloc(1, sizeof *p);
    if (p == NULL)
      break;
    p->profile_id = (uint64_t)sqlite3_column_int64(q, 0);
    p->pid = (pid_t)sqlite3_column_int64(q, 1);
    p->ppid = (pid_t)sqlite3_column_int64(q, 2);
    p->uid = (uid_t)sqlite3_column_int64(q, 3);
    p->gid = (gid_t)sqlite3_column_int64(q, 4);
    p->exe = col_dup(q, 5);
    p->job_id = col_dup(q, 6);
    p->step_id = col_dup(q, 7);
    p->hostname = col_dup(q, 8);
    p->rank = (int32_t)sqlite3_column_int64(q, 9);
    p->local_rank = (int32_t)sqlite3_column_int64(q, 10);
    p->start_ns = (uint64_t)sqlite3_column_int64(q, 11);
    p->end_ns = (uint64_t)sqlite3_column_int64(q, 12);
    const char *st = (const char *)sqlite3_column_text(q, 13);
    p->state = st && strcmp(st, "exited") == 0 ? GPD_PROC_EXITED : GPD_PROC_LOST;
    p->drops = (uint64_t)sqlite3_column_int64(q, 14);
    const char *er = (const char *)sqlite3_column_text(q, 15);
    if (er)
      snprintf(p->error, sizeof p->error, "%s", er);
    p->argv_json = col_dup(q, 16);
    p->proc_start = (uint64_t)sqlite3_column_int64(q, 17);
    p->flushed = 1;
    gpd_profile_init(&p->prof, p->profile_id);
    p->prof.uid = p->uid;
    p->prof.gid = p->gid;
    if (gpd_store_load(s, p, p->uid) < 0) {
      gpd_registry_free_proc(p);
      continue;
    }
    *tail = p; /* keep newest first, as the registry list is */
    tail = &p->next;
    n++;
  }
  sqlite3_finalize(q);
  pthread_mutex_lock(&d->lock);
  *tail = d->procs;
  d->procs = head;
  d->nprocs += (uint32_t)n;
  pthread_mutex_unlock(&d->lock);
  if (n)
    GPD_INFO("store: restored %d stored profiles into the live view", n);
  return n;
}


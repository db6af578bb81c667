/* handback.c - a stored profile back into memory: the hand-back reload
 * (a shim returns its region to a restarted daemon) and the restore of the
 * live view at start.  Main thread, the store's read connection.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuprof/error.h"
#include "gpuprof/grow.h"
#include "gpuprof/hash.h"
#include "gpuprof/log.h"

#include "daemon.h"
#include "dstore-internal.h"
#include "store-reload.h"

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

/* The stored rows, back into p->prof (gpd_store_reload_* callbacks). */
static int load_module(void *arg, const gpd_store_module_row_t *r) {
  gpd_profile_t *p = arg;
  uint8_t bid[20];
  unsigned nb = unhex(r->build_id, bid, 20);
  gpd_profile_add_module(p, r->id, bid, nb, r->base, r->size, r->path ? r->path : "",
                         r->path ? strlen(r->path) : 0);
  return 0;
}

static int load_string(void *arg, const gpd_store_string_row_t *r) {
  gpd_profile_add_string(arg, r->id, r->kind, r->text ? r->text : "", r->text ? strlen(r->text) : 0);
  return 0;
}

static int load_backend(void *arg, const gpd_store_backend_row_t *r) {
  gpd_profile_t *p = arg;
  for (unsigned a = 1; r->api && a < GPD_API_MAX; a++) {
    if (strcmp(r->api, gpd_api_name(a)) != 0)
      continue;
    const char *why = r->reason;
    uint32_t sid = 0;
    if (why && *why && gpd_profile_add_string(p, 0xffffff00u + a, GPD_STR_REASON, why, strlen(why)) == 0)
      sid = 0xffffff00u + a;
    p->backends[a].seen = 1;
    p->backends[a].enabled = r->enabled;
    p->backends[a].code = r->code;
    p->backends[a].reason = sid;
  }
  return 0;
}

typedef struct { uint64_t id, parent, off; int kind; uint32_t mod; char *label, *raw; } ctx_row_t;

typedef struct {
  gpd_profile_t *p;
  ctx_row_t *rows;
  size_t n, cap;
} ctx_rows_t;

static int load_context(void *arg, const gpd_store_context_row_t *c) {
  ctx_rows_t *cr = arg;
  gpd_profile_t *p = cr->p;
  if (gpd_grow(&cr->rows, &cr->cap, cr->n, sizeof *cr->rows, 256) < 0)
    return 1;
  ctx_row_t *r = &cr->rows[cr->n++];
  r->id = c->id;
  r->parent = c->parent;
  r->kind = c->kind;
  r->off = c->offset;
  r->mod = 0;
  for (uint32_t k = 0; c->module && k < p->nmods; k++) {
    char *h = gpd__dstore_hex(p->mods[k].build_id, p->mods[k].build_id_len);
    int same = strcmp(p->mods[k].path, c->module) == 0 &&
               ((h == NULL && c->build_id == NULL) || (h && c->build_id && strcmp(h, c->build_id) == 0));
    free(h);
    if (same) {
      r->mod = p->mods[k].id;
      break;
    }
  }
  r->label = gpd__dstore_xdup(c->label);
  r->raw = gpd__dstore_xdup(c->raw);
  return 0;
}

static int load_metric(void *arg, uint64_t ctx, int64_t mid, double v) {
  gpd_profile_t *p = arg;
  uint32_t i = gpd_profile_find(p, ctx);
  if (i != GPD_NONE && mid >= 0 && mid < GPD_M__COUNT)
    gpd_profile_metric_add(p, i, (unsigned)mid, v);
  return 0;
}

static int load_local(void *arg, uint32_t local, uint64_t ctx) {
  gpd_profile_t *p = arg;
  uint32_t i = gpd_profile_find(p, ctx);
  if (i != GPD_NONE)
    gpd_profile_add_local(p, local, i);
  return 0;
}

typedef struct {
  gpd_proc_t *proc;
  uint64_t refed, bad, skipped;
} load_t;

static int load_pending(void *arg, const void *b, size_t len) {
  load_t *l = arg;
  if (gpd_profile_restore_pending(&l->proc->prof, b, len) == 0)
    l->refed++;
  else
    l->bad++;
  return 0;
}

static int load_cursor(void *arg, int64_t ring, uint64_t pos) {
  load_t *l = arg;
  gpd_proc_t *proc = l->proc;
  if (ring < 0 || ring >= (int64_t)proc->region.nrings)
    return 0;
  gpd_ring_ctl_t *c = &proc->region.ctl[ring];
  uint64_t tail = atomic_load_explicit(&c->tail, memory_order_acquire);
  uint64_t head = atomic_load_explicit(&c->head, memory_order_acquire);
  proc->cursor_saved[ring] = pos;
  if (proc->jr.from) {
    proc->jr.from[ring] = pos;
    return 0;
  }
  if (pos > tail && pos <= head && pos - tail <= proc->region.ring_slots) {
    l->skipped += pos - tail;
    proc->cursor[ring] = pos;
    gpd_ring_release(&proc->region, (uint32_t)ring, pos);
  }
  return 0;
}

int gpd_handback_load(gpd_dstore_t *s, gpd_proc_t *proc, uid_t uid) {
  sqlite3 *db = s->rdb;
  gpd_profile_t *p = &proc->prof;
  int ret = 0;
  int64_t pid = (int64_t)p->profile_id;
  gpd_store_profile_row_t head;
  if ((ret = gpd_store_reload_profile(db, p->profile_id, &head)) < 0)
    goto dberr;
  if (ret == 0)
    goto out;
  if ((uid_t)head.uid != uid) {
    ret = -EPERM;
    goto out;
  }
  /* A hand-back (a region to adopt) must come from the very process the
   * profile was made for: its pid (SO_PEERCRED) and its kernel start
   * time (NULL in a profile an older daemon stored: pid only). */
  uint64_t pstart = head.proc_start;
  if (proc->has_region && ((pid_t)head.pid != proc->pid || (pstart != 0 && pstart != proc->proc_start))) {
    ret = -ESRCH;
    goto out;
  }
  p->records = head.records;

  if (gpd_store_reload_modules(db, p->profile_id, load_module, p) < 0 ||
      gpd_store_reload_strings(db, p->profile_id, load_string, p) < 0)
    goto dberr;
  /* back-end states (the reason text gets a string id of its own, above
   * any the shim hands out) */
  if (gpd_store_reload_backends(db, p->profile_id, load_backend, p) < 0)
    goto dberr;

  /* contexts of this profile and all their ancestors */
  ctx_rows_t cr = {.p = p};
  if (gpd_store_reload_contexts(db, p->profile_id, (uint32_t)uid, load_context, &cr) < 0) {
    free(cr.rows);
    goto dberr;
  }
  ctx_row_t *rows = cr.rows;
  size_t nrows = cr.n;
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

  if (gpd_store_reload_metrics(db, p->profile_id, load_metric, p) < 0 ||
      gpd_store_reload_locals(db, p->profile_id, load_local, p) < 0)
    goto dberr;
  p->nmods_saved = p->nmods;
  p->nstrs_saved = p->nstrs;
  p->nlocals_saved = p->nlocals;
  for (uint32_t i = 0; i < p->nnodes; i++)
    p->nodes[i].dirty = 0;
  p->ndirtyv = 0;

  /* the unmatched records that were stored with this state, in order:
   * they match records that are still in (or come back to) the rings */
  load_t l = {.proc = proc};
  if (gpd_store_reload_pending(db, p->profile_id, load_pending, &l) < 0)
    goto dberr;
  gpd_profile_retry(p);
  p->pend_gen_saved = p->pend_gen; /* what is stored */

  /* committed ring positions: ahead of the shared tail only when the old
   * daemon died between its COMMIT and the release.  With a journal they
   * are where its replay starts (gpd_journal_replay moves the cursors). */
  if (proc->cursor && gpd_store_reload_cursors(db, p->profile_id, load_cursor, &l) < 0)
    goto dberr;
  /* the trace bound counts what the previous daemon already stored */
  p->trace_n = gpd_store_reload_trace_rows(db, p->profile_id);
  if (l.refed || l.bad || l.skipped)
    GPD_INFO("profile %lld reloaded: %llu pending records re-fed (%llu unusable), %llu slots "
             "already stored skipped", (long long)pid, (unsigned long long)l.refed,
             (unsigned long long)l.bad, (unsigned long long)l.skipped);
  ret = 1;
  goto out;
dberr:
  GPD_ERR("store: load profile %lld: %s", (long long)pid, sqlite3_errmsg(db));
  ret = GPD_ESTORE;
out:
  return ret;
}

typedef struct {
  gpd_dstore_t *s;
  gpd_proc_t *head, **tail;
  int n;
} restore_t;

static int restore_one(void *arg, const gpd_store_profile_row_t *r) {
  restore_t *rs = arg;
  gpd_proc_t *p = calloc(1, sizeof *p);
  if (p == NULL)
    return 1;
  p->profile_id = r->id;
  p->pid = (pid_t)r->pid;
  p->ppid = (pid_t)r->ppid;
  p->uid = (uid_t)r->uid;
  p->gid = (gid_t)r->gid;
  p->exe = gpd__dstore_xdup(r->exe);
  p->job_id = gpd__dstore_xdup(r->job);
  p->step_id = gpd__dstore_xdup(r->step);
  p->hostname = gpd__dstore_xdup(r->hostname);
  p->rank = (int32_t)r->rank;
  p->local_rank = (int32_t)r->local_rank;
  p->start_ns = r->start_ns;
  p->end_ns = r->end_ns;
  p->state = r->state && strcmp(r->state, "exited") == 0 ? GPD_PROC_EXITED : GPD_PROC_LOST;
  p->drops = r->drops;
  if (r->error)
    snprintf(p->error, sizeof p->error, "%s", r->error);
  p->argv_json = gpd__dstore_xdup(r->argv);
  p->proc_start = r->proc_start;
  p->flushed = 1;
  gpd_profile_init(&p->prof, p->profile_id);
  p->prof.uid = p->uid;
  p->prof.gid = p->gid;
  if (gpd_handback_load(rs->s, p, p->uid) < 0) {
    gpd_registry_free_proc(p);
    return 0;
  }
  *rs->tail = p; /* keep newest first, as the registry list is */
  rs->tail = &p->next;
  rs->n++;
  return 0;
}

/* Restore the live view after a (re)start: the newest `keep` stored
 * profiles come back into memory as EXITED, or LOST when the store says
 * the process was running when the previous daemon died (its shim may
 * still hand its region back: gpd_registry_hello then takes the place of
 * the LOST entry).  Neither is written again by the writer (flushed = 1).
 * Called once from main before the threads start.  Returns the number of
 * profiles restored or a negative code. */
int gpd_handback_restore(gpd_daemon_t *d, unsigned keep) {
  gpd_dstore_t *s = d->store;
  if (s == NULL)
    return 0;
  restore_t rs = {.s = s};
  rs.tail = &rs.head;
  if (gpd_store_reload_profiles(s->rdb, keep, restore_one, &rs) < 0) {
    GPD_ERR("store: restore: %s", sqlite3_errmsg(s->rdb));
    return GPD_ESTORE;
  }
  pthread_mutex_lock(&d->lock);
  *rs.tail = d->procs;
  d->procs = rs.head;
  d->nprocs += (uint32_t)rs.n;
  pthread_mutex_unlock(&d->lock);
  if (rs.n)
    GPD_INFO("store: restored %d stored profiles into the live view", rs.n);
  return rs.n;
}


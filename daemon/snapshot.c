/* snapshot.c - one process's snapshot for the store's writer
 * (snapshot.h, checkpoint.c).  gpd_snapshot_take copies under the daemon
 * lock what must agree with the ring cursors and takes the ranges of the
 * rest; gpd_snapshot_chunk copies those ranges a budget at a time while
 * the process is frozen: modules, strings, nodes and locals are
 * append-only and the monitor leaves a frozen profile alone, so a copy
 * spread over several holds of the lock reads what one hold would have.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "gpuprof/metric.h"

#include "snapshot.h"
#include "dstore-internal.h"

void gpd_snapshot_free(gpd_snapshot_t *s) {
  free(s->exe); free(s->argv); free(s->hostname); free(s->job); free(s->step); free(s->error);
  for (int i = 0; i < s->nbe; i++)
    free(s->be[i].reason);
  for (uint32_t i = 0; i < s->nmods; i++)
    free(s->mods[i].path);
  free(s->mods);
  for (uint32_t i = 0; i < s->nstrs; i++)
    free(s->strs[i].text);
  free(s->strs);
  for (uint32_t i = 0; i < s->nctxs; i++) {
    free(s->ctxs[i].module); free(s->ctxs[i].build_id);
    free(s->ctxs[i].label); free(s->ctxs[i].raw);
  }
  free(s->ctxs);
  free(s->locals);
  free(s->mets);
  free(s->mval);
  free(s->cursor);
  free(s->cursor_prev);
  free(s->pend);
  if (s->pdl_on)
    free(s->pdl.v);
  gpd_pcsample_snap_free(&s->pcs);
  gpd_cpusample_snap_free(&s->cps);
  gpd_tracewin_snap_free(&s->tw);
  free(s->pdel);
}

/* After a failed or skipped write: everything of p is written next time. */
void gpd_snapshot_redo(gpd_proc_t *p) {
  p->prof.nmods_saved = p->prof.nstrs_saved = p->prof.nlocals_saved = 0;
  p->prof.tw.nwin_saved = 0;
  for (uint32_t k = 0; k < p->prof.nnodes; k++) {
    p->prof.nodes[k].saved = 0;
    p->prof.nodes[k].dirty = 1;
  }
  p->prof.nodes_clean = 0;
  p->prof.ndirtyv = UINT32_MAX; /* every node: scanned at the next copy */
  p->prof.pend_gen++;
  p->prof.pend_full = 1;
  p->meta_dirty = 1;
}

/* Copy src[*from..to) (elem bytes each) into dst + *n, at most budget
 * elements, each element's string at byte offset off duplicated; *from
 * and *n advance; *incomplete set when memory ran out (dst NULL: the
 * array could not be allocated).  Returns the elements visited. */
static uint32_t copy_range(void *dst, const void *src, uint32_t *from, uint32_t to, size_t elem, size_t off,
                           uint32_t *n, uint32_t budget, int *incomplete) {
  uint32_t k = 0;
  if (dst == NULL && *from < to) {
    *incomplete = 1;
    return 0;
  }
  for (; *from < to && k < budget; (*from)++, k++) {
    char *e = (char *)dst + (size_t)(*n)++ * elem, **str = (char **)(void *)(e + off);
    memcpy(e, (const char *)src + (size_t)*from * elem, elem);
    *str = strdup(*str);
    if (*str == NULL)
      *incomplete = 1;
  }
  return k;
}

/* The arrays the chunked copy fills (sizes from the snapshot). */
void gpd_snapshot_alloc(gpd_snapshot_t *s) {
  if (s->mod_to > s->mod_from && (s->mods = calloc(s->mod_to - s->mod_from, sizeof *s->mods)) == NULL)
    s->incomplete = 1;
  if (s->str_to > s->str_from && (s->strs = calloc(s->str_to - s->str_from, sizeof *s->strs)) == NULL)
    s->incomplete = 1;
  if (s->node_to > s->node_from && (s->ctxs = calloc(s->node_to - s->node_from, sizeof *s->ctxs)) == NULL)
    s->incomplete = 1;
  if (s->loc_to > s->loc_from && (s->locals = malloc((s->loc_to - s->loc_from) * sizeof *s->locals)) == NULL)
    s->incomplete = 1;
  if (s->ndirty && (s->mets = malloc(s->ndirty * sizeof *s->mets)) == NULL)
    s->incomplete = 1;
}

static int snap_chunks_left(const gpd_snapshot_t *s) {
  return !s->incomplete && (s->mod_from < s->mod_to || s->str_from < s->str_to || s->node_next < s->node_to ||
                            s->loc_from < s->loc_to || s->met_next < s->met_to || s->pdl_on);
}

/* The metric values of node n (dirty) appended to s. */
static void snap_metrics(gpd_profile_t *pr, gpd_node_t *n, gpd_snapshot_t *s) {
  gpd_mval_t mv[GPD_M__COUNT];
  unsigned nm = gpd_profile_node_metrics(pr, n, mv);
  if (s->nmval + nm > s->capmval) {
    size_t cap = s->capmval ? 2 * s->capmval : 4 * (size_t)s->ndirty + GPD_M__COUNT;
    gpd_mval_t *g = realloc(s->mval, cap * sizeof *g);
    if (g == NULL) {
      s->incomplete = 1;
      return;
    }
    s->mval = g;
    s->capmval = cap;
  }
  memcpy(s->mval + s->nmval, mv, nm * sizeof *mv);
  s->mets[s->nmets++] = (gpd_snapshot_met_t){.ctx = n->id, .off = (uint32_t)s->nmval, .n = nm};
  s->nmval += nm;
  n->dirty = 0;
}

/* Copy at most budget of the modules, strings and contexts that s still
 * needs from p, its process (lock held).  They were added before the
 * snapshot and never change once added, so a copy spread over several
 * holds of the lock reads what one hold would have.  Returns the items
 * visited. */
uint32_t gpd_snapshot_chunk(gpd_proc_t *p, gpd_snapshot_t *s, uint32_t budget) {
  gpd_profile_t *pr = &p->prof;
  uint32_t k = copy_range(s->mods, pr->mods, &s->mod_from, s->mod_to, sizeof *pr->mods,
                          offsetof(gpd_pmodule_t, path), &s->nmods, budget, &s->incomplete);
  k += copy_range(s->strs, pr->strs, &s->str_from, s->str_to, sizeof *pr->strs, offsetof(gpd_pstring_t, text),
                  &s->nstrs, budget - k, &s->incomplete);
  if (s->node_next < s->node_to && s->ctxs == NULL)
    s->incomplete = 1;
  for (; s->ctxs && s->node_next < s->node_to && k < budget; s->node_next++, k++) {
    uint32_t i = s->node_next;
    gpd_node_t *n = &pr->nodes[i];
    if (n->saved)
      continue;
    gpd_snapshot_ctx_t *c = &s->ctxs[s->nctxs++];
    c->id = n->id;
    c->parent = gpd_profile_parent_id(pr, i);
    c->kind = n->kind;
    c->offset = n->offset;
    c->label = gpd__dstore_xdup(gpd_profile_label(pr, n->label));
    c->raw = gpd__dstore_xdup(gpd_profile_label(pr, n->raw));
    if (n->kind == GPD_NODE_FRAME) {
      const gpd_pmodule_t *m = gpd_profile_module(pr, n->module);
      if (m) {
        c->module = strdup(m->path);
        c->build_id = gpd__dstore_hex(m->build_id, m->build_id_len);
      }
    }
    n->saved = 1;
  }
  for (; s->locals && s->loc_from < s->loc_to && k < budget; s->loc_from++, k++) {
    s->locals[s->nlocals].local = pr->locals[s->loc_from].local;
    s->locals[s->nlocals++].ctx = pr->nodes[pr->locals[s->loc_from].node].id;
  }
  for (; s->mets && s->met_next < s->met_to && k < budget && !s->incomplete; s->met_next++, k++) {
    gpd_node_t *n = &pr->nodes[s->met_all ? s->met_next : pr->dirtyv[s->met_next]];
    if (n->dirty)
      snap_metrics(pr, n, s);
  }
  if (s->met_next == s->met_to && s->mets)
    pr->ndirtyv = 0;
  if ((s->loc_from < s->loc_to && !s->locals) || (s->met_next < s->met_to && !s->mets))
    s->incomplete = 1;
  if (s->pdl_on && !s->incomplete && k < budget)
    k += gpd_profile_pending_step(pr, &s->pdl, budget - k);
  if (s->pdl_on && !s->incomplete && !gpd_profile_pending_left(&s->pdl)) {
    gpd_profile_pending_end(&s->pdl, &s->pend, &s->npend);
    s->pdl_on = 0;
  }
  if (!snap_chunks_left(s))
    p->snap_frozen = s->frozen = 0;
  return k;
}

/* Copy what changed in p (lock held) at one instant: the profile row,
 * the metrics of dirty nodes, the cursors, the journal cut, the pending
 * delta, the samples and windows, which must all agree with each other.
 * Of the modules, strings and contexts added since the last snapshot
 * only the ranges are taken (watermarks moved): gpd_snapshot_chunk copies
 * them, in holds of the lock as short as the caller chooses. */
void gpd_snapshot_take(gpd_daemon_t *d, gpd_proc_t *p, gpd_snapshot_t *s) {
  gpd_profile_t *pr = &p->prof;
  memset(s, 0, sizeof *s);
  s->proc = p;
  s->id = p->profile_id;
  s->pid = p->pid; s->ppid = p->ppid; s->uid = p->uid; s->gid = p->gid;
  s->rank = p->rank; s->local_rank = p->local_rank;
  s->exe = gpd__dstore_xdup(p->exe);
  s->argv = gpd__dstore_xdup(p->argv_json);
  s->hostname = gpd__dstore_xdup(p->hostname);
  s->job = gpd__dstore_xdup(p->job_id); s->step = gpd__dstore_xdup(p->step_id);
  s->error = p->error[0] && !p->store_error ? strdup(p->error) : NULL; /* not our own retry note */
  s->start_ns = p->start_ns;
  s->proc_start = p->proc_start;
  s->end_ns = p->end_ns;
  s->records = pr->records;
  s->drops = p->drops;
  s->exited = p->state == GPD_PROC_EXITED;
  s->ends = p->ends;
  s->state = s->exited ? "exited" : (d->writer_stop ? "lost" : "running");
  for (unsigned a = 1; a < GPD_API_MAX; a++) {
    if (!pr->backends[a].seen)
      continue;
    s->be[s->nbe].api = gpd_api_name(a);
    s->be[s->nbe].enabled = pr->backends[a].enabled;
    s->be[s->nbe].code = pr->backends[a].code;
    s->be[s->nbe].reason = gpd__dstore_xdup(gpd_profile_string(pr, pr->backends[a].reason));
    s->nbe++;
  }
  s->mod_from = pr->nmods_saved;
  s->mod_to = pr->nmods_saved = pr->nmods;
  s->str_from = pr->nstrs_saved;
  s->str_to = pr->nstrs_saved = pr->nstrs;
  /* New nodes are past nodes_clean (nodes are append-only; everything is
   * rewritten after a failed write), changed metrics are on the dirty
   * list: the copy costs what changed, not the whole tree. */
  s->node_from = s->node_next = pr->nodes_clean;
  s->node_to = pr->nodes_clean = pr->nnodes;
  s->loc_from = pr->nlocals_saved;
  s->loc_to = pr->nlocals_saved = pr->nlocals;
  s->met_all = pr->ndirtyv == UINT32_MAX;
  s->met_to = s->met_all ? pr->nnodes : pr->ndirtyv;
  s->ndirty = s->met_to; /* at most */
  /* the consumer position and the unmatched state that go with it */
  if (p->has_region && p->cursor) {
    uint32_t n = p->region.nrings;
    s->cursor = malloc(n * sizeof *s->cursor);
    s->cursor_prev = malloc(n * sizeof *s->cursor_prev);
    if (s->cursor && s->cursor_prev) {
      memcpy(s->cursor, p->cursor, n * sizeof *s->cursor);
      memcpy(s->cursor_prev, p->cursor_saved, n * sizeof *s->cursor_prev);
      s->ncursor = n;
    } else {
      s->incomplete = 1;
    }
  }
  gpd_journal_cut(p, &s->jcut);
  if (pr->pend_gen != pr->pend_gen_saved || s->exited) {
    s->pend_write = 1;
    /* a finished profile has resolved or forced everything: no rows */
    s->pend_full = 1;
    if (!s->exited) {
      if (gpd_profile_pending_begin(pr, &s->pdl, &s->pdel, &s->npdel, &s->pend_full) < 0)
        s->incomplete = 1;
      else
        s->pdl_on = 1; /* the rows: gpd_snapshot_chunk */
    }
    pr->pend_gen_saved = pr->pend_gen;
  }
  if (gpd_pcsample_snap(pr->pcs, &s->pcs) < 0)
    s->incomplete = 1;
  if (gpd_cpusample_snap(pr->cps, &s->cps) < 0)
    s->incomplete = 1;
  if (gpd_tracewin_snap(&pr->tw, &s->tw) < 0)
    s->incomplete = 1;
  p->meta_dirty = 0;
  /* until its copy is complete, nothing of the profile may change */
  p->snap_frozen = s->frozen = snap_chunks_left(s);
}

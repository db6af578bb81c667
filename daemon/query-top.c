/* query-top.c - the Top answer, from the node view (merge.h).
 * Main thread only, under d->lock (called from gpd_query_start).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuprof/hash.h"
#include "gpuprof/log.h"
#include "gpuprof/metric.h"
#include "gpuprof.pb-c.h"

#include "daemon.h"
#include "query-internal.h"

/* ---------------------------------------------------------------- Top
 *
 * Top lists the groups (kind, key: a kernel's mangled name, a
 * placeholder's label) of KERNEL and PLACEHOLDER nodes by their summed
 * exclusive metrics, each with its heaviest instance (one calling context
 * of one owner) and that instance's CPU path.  The node view of the
 * selected processes (merge.h, shared with Tree) already holds one merged
 * node per (Merkle id, owner) with its exclusive sums over the selected
 * profiles, kept up to date incrementally: an instance is a merged node,
 * and a group's sums are its member instances' exclusive rows added in
 * merged-index order.
 *
 * top_ix maps merged nodes to groups (resolved once per merged node: its
 * kind and key never change) and keeps each group's members in increasing
 * merged index, its sums, and its heaviest member for the sort metric
 * (ties: the lowest index).  A request brings the view up to date
 * (gpd__query_merge), then:
 *   - the view's sums were not taken again since the last request, same
 *     metric: the last sorted groups stand (no work);
 *   - the view's last sums were incremental and directly follow the ones
 *     top_ix holds: only the groups of its dirty merged nodes (and those
 *     that got new members) are summed again, over their members, in the
 *     same order (bit for bit the full result);
 *   - else every group is summed again (a pass over the view's merged
 *     nodes: 30 K for 64 x 10 K contexts, not 640 K profile nodes).
 * Labels and paths come from the view's label profile of the instance
 * (the oldest selected profile holding it, as Tree); the path's frames
 * from the oldest selected profile of the same owner holding each.
 * Bounded: per merged node 4 bytes, per member 4 bytes, per group its
 * metric sums; rebuilt when the view's index is (merge.h epoch).
 */

typedef struct top_group_s {
  uint8_t kind;
  char *key;                /* raw name or placeholder label (owned) */
  double m[GPD_M__COUNT];   /* summed exclusive metrics of the view */
  uint32_t best;            /* heaviest member in the view, GPD_NONE */
  int live;                 /* a member in the view holds metrics */
  uint32_t *mem;            /* merged indices, increasing */
  uint32_t nmem, capmem;
  uint32_t dstamp;          /* == top_ix.dgen: on the dirty list */
} top_group_t;

/* gof[j]: 0 = merged node j not resolved yet, 1 = not a Top node,
 * 2 + g = member of group g */
#define TOP_UNRESOLVED 0u
#define TOP_NOT 1u

static struct {
  gpd_daemon_t *d;
  uint64_t epoch;           /* the view's index epoch these indices are of */
  uint32_t *gof;            /* per merged node (below) */
  uint32_t capgof;
  top_group_t *groups;
  uint32_t ngroups, capgroups;
  gpd_map_t group_by_hash;  /* hash(kind, key) (+2 per collision) -> group */
  uint32_t *dirty;          /* groups to sum again */
  uint32_t ndirty, capdirty, dgen;
  /* what the sums are of: valid while ok */
  int ok;
  uint64_t sums_gen;        /* the view's sums_gen they were taken from */
  uint64_t view_gen;        /* ... and its view generation */
  unsigned metric;          /* best member by this metric */
  uint32_t *sorted;         /* live groups by m[metric], decreasing */
  uint32_t nsorted, capsorted;
} top_ix;

static void top_ix_reset(void) {
  for (uint32_t i = 0; i < top_ix.ngroups; i++) {
    free(top_ix.groups[i].key);
    free(top_ix.groups[i].mem);
  }
  free(top_ix.groups);
  free(top_ix.gof);
  free(top_ix.dirty);
  free(top_ix.sorted);
  gpd_map_free(&top_ix.group_by_hash);
  memset(&top_ix, 0, sizeof top_ix);
}

/* Group of (kind, key); GPD_NONE when out of memory. */
static uint32_t top_group_get(uint8_t kind, const char *key) {
  uint64_t h = (((uint64_t)kind << 60) ^ gpd_hash64(key, strlen(key), 0)) | 1;
  uint64_t v;
  while (gpd_map_get(&top_ix.group_by_hash, h, &v)) {
    top_group_t *g = &top_ix.groups[v];
    if (g->kind == kind && strcmp(g->key, key) == 0)
      return (uint32_t)v;
    h += 2;
  }
  if (top_ix.ngroups == top_ix.capgroups &&
      gpd__query_grow((void **)&top_ix.groups, &top_ix.capgroups, sizeof *top_ix.groups, 64) < 0)
    return GPD_NONE;
  top_group_t *g = &top_ix.groups[top_ix.ngroups];
  memset(g, 0, sizeof *g);
  g->kind = kind;
  g->best = GPD_NONE;
  g->key = strdup(key);
  if (g->key == NULL || gpd_map_put(&top_ix.group_by_hash, h, top_ix.ngroups) < 0) {
    free(g->key);
    return GPD_NONE;
  }
  return top_ix.ngroups++;
}

/* Group key of a node as Top groups it (NULL: not a Top node). */
static const char *top_key(const gpd_profile_t *p, const gpd_node_t *n) {
  if (n->kind == GPD_NODE_KERNEL)
    return gpd_profile_label(p, n->raw ? n->raw : n->label);
  if (n->kind == GPD_NODE_PLACEHOLDER)
    return gpd_profile_label(p, n->label);
  return NULL;
}

static int top_dirty(uint32_t g) {
  top_group_t *gr = &top_ix.groups[g];
  if (gr->dstamp == top_ix.dgen)
    return 0;
  if (top_ix.ndirty == top_ix.capdirty &&
      gpd__query_grow((void **)&top_ix.dirty, &top_ix.capdirty, sizeof *top_ix.dirty, 64) < 0)
    return -ENOMEM;
  top_ix.dirty[top_ix.ndirty++] = g;
  gr->dstamp = top_ix.dgen;
  return 0;
}

/* Resolve the view's merged nodes not looked at yet (a node out of the
 * view stays unresolved until it is in one: its labels come from a view
 * profile); a node that joins a group makes the group dirty.  0 or
 * -ENOMEM. */
static int top_resolve(const gpd_merge_t *m) {
  if (m->n > top_ix.capgof) {
    uint32_t nc = top_ix.capgof ? top_ix.capgof : 1024;
    while (nc < m->n)
      nc *= 2;
    uint32_t *na = realloc(top_ix.gof, (size_t)nc * sizeof *na);
    if (na == NULL)
      return -ENOMEM;
    memset(na + top_ix.capgof, 0, (size_t)(nc - top_ix.capgof) * sizeof *na);
    top_ix.gof = na;
    top_ix.capgof = nc;
  }
  /* new merged nodes, and earlier ones that were out of every view (a
   * pass over the merged nodes: 30 K for 64 x 10 K contexts) */
  for (uint32_t j = 0; j < m->n; j++) {
    if (top_ix.gof[j] != TOP_UNRESOLVED || !gpd_merge_in_view(m, j))
      continue;
    const gpd_mview_t *v = &m->view[j];
    const gpd_node_t *n = &v->prof->nodes[v->pidx];
    const char *key = top_key(v->prof, n);
    if (key == NULL) {
      top_ix.gof[j] = TOP_NOT;
      continue;
    }
    uint32_t g = top_group_get(n->kind, key);
    if (g == GPD_NONE)
      return -ENOMEM;
    top_group_t *gr = &top_ix.groups[g];
    if (gr->nmem == gr->capmem && gpd__query_grow((void **)&gr->mem, &gr->capmem, sizeof *gr->mem, 8) < 0)
      return -ENOMEM;
    uint32_t at = gr->nmem; /* keep increasing order (a late resolve) */
    while (at > 0 && gr->mem[at - 1] > j)
      at--;
    memmove(&gr->mem[at + 1], &gr->mem[at], (gr->nmem - at) * sizeof *gr->mem);
    gr->mem[at] = j;
    gr->nmem++;
    top_ix.gof[j] = 2 + g;
    if (top_dirty(g) < 0)
      return -ENOMEM;
  }
  return 0;
}

/* Sum group g again over its members in the view (merged-index order) and
 * pick its heaviest member by metric (ties: the lowest index). */
static void top_group_sum(const gpd_merge_t *m, uint32_t g, unsigned metric) {
  top_group_t *gr = &top_ix.groups[g];
  memset(gr->m, 0, sizeof gr->m);
  gr->best = GPD_NONE;
  gr->live = 0;
  double best_v = -1;
  if (m->nslot == 0)
    return;
  for (uint32_t k = 0; k < gr->nmem; k++) {
    uint32_t j = gr->mem[k];
    if (!gpd_merge_in_view(m, j))
      continue;
    const double *row = &m->excl[(size_t)j * m->nslot];
    int any = 0;
    for (uint64_t b = m->umask; b; b &= b - 1) {
      unsigned id = (unsigned)__builtin_ctzll(b);
      double x = row[m->slot[id]];
      if (x != 0) {
        gr->m[id] += x;
        any = 1;
      }
    }
    if (!any)
      continue; /* no metric here: not an instance */
    gr->live = 1;
    double x = metric < 64 && m->slot[metric] != 0xff ? row[m->slot[metric]] : 0;
    if (x > best_v) {
      best_v = x;
      gr->best = j;
    }
  }
}

static unsigned top_metric; /* sort key of the request being answered */

static int top_group_cmp(const void *a, const void *b) {
  double x = top_ix.groups[*(const uint32_t *)a].m[top_metric];
  double y = top_ix.groups[*(const uint32_t *)b].m[top_metric];
  if (x != y)
    return x < y ? 1 : -1;
  uint32_t p = *(const uint32_t *)a, q = *(const uint32_t *)b;
  return (p > q) - (p < q);
}

/* Bring the groups' sums and the sorted list up to date with view m.
 * 0 or -ENOMEM (top_ix reset). */
static int top_update(const gpd_merge_t *m, unsigned metric) {
  if (top_ix.epoch != m->epoch) { /* merged indices renumbered */
    gpd_daemon_t *d = top_ix.d;
    top_ix_reset();
    top_ix.d = d;
    top_ix.epoch = m->epoch;
  }
  int same = top_ix.ok && top_ix.sums_gen == m->sums_gen && top_ix.view_gen == m->gen;
  if (same && top_ix.metric == metric)
    return 0;
  /* only the dirty groups: the view's last sums were incremental and
   * follow the ones held (the same view generation: the same marks) */
  int inc = top_ix.ok && top_ix.metric == metric && m->last_inc &&
            top_ix.sums_gen + 1 == m->sums_gen && top_ix.view_gen == m->gen;
  top_ix.ok = 0;
  if (++top_ix.dgen == 0) {
    for (uint32_t g = 0; g < top_ix.ngroups; g++)
      top_ix.groups[g].dstamp = 0;
    top_ix.dgen = 1;
  }
  top_ix.ndirty = 0;
  if (top_resolve(m) < 0)
    goto nomem;
  if (inc) {
    for (uint32_t d = 0; d < m->ndirty; d++) {
      uint32_t j = m->dirty[d], go = top_ix.gof[j];
      if (go >= 2 && top_dirty(go - 2) < 0)
        goto nomem;
    }
    for (uint32_t d = 0; d < top_ix.ndirty; d++)
      top_group_sum(m, top_ix.dirty[d], metric);
  } else {
    for (uint32_t g = 0; g < top_ix.ngroups; g++)
      top_group_sum(m, g, metric);
  }
  /* the live groups by the metric, decreasing (ties: the older group) */
  top_ix.nsorted = 0;
  for (uint32_t g = 0; g < top_ix.ngroups; g++) {
    if (!top_ix.groups[g].live)
      continue;
    if (top_ix.nsorted == top_ix.capsorted &&
        gpd__query_grow((void **)&top_ix.sorted, &top_ix.capsorted, sizeof *top_ix.sorted, 64) < 0)
      goto nomem;
    top_ix.sorted[top_ix.nsorted++] = g;
  }
  top_metric = metric;
  if (top_ix.nsorted)
    qsort(top_ix.sorted, top_ix.nsorted, sizeof *top_ix.sorted, top_group_cmp);
  top_ix.ok = 1;
  top_ix.sums_gen = m->sums_gen;
  top_ix.view_gen = m->gen;
  top_ix.metric = metric;
  return 0;
nomem:
  top_ix.ok = 0;
  return -ENOMEM;
}

/* The oldest selected profile of owner uid holding Merkle id (and its node
 * index): labels never cross users. */
static const gpd_profile_t *top_oldest(const gpd_merge_t *m, uint64_t id, uid_t uid, uint32_t *pidx) {
  for (uint32_t i = 0; i < m->nvprofs; i++) {
    if (m->vprofs[i]->uid != uid)
      continue;
    uint32_t j = gpd_profile_find(m->vprofs[i], id);
    if (j != GPD_NONE) {
      *pidx = j;
      return m->vprofs[i];
    }
  }
  return NULL;
}

Gpuprof__Msg *gpd__query_top_answer(gpd_daemon_t *d, const gpd_peer_t *peer, const Gpuprof__TopRequest *r) {
  Gpuprof__Msg *e = gpd__query_check_pid(d, peer, r->pid);
  if (e)
    return e;
  /* a CLI-only id (GINST on, >= 64) is in no node's mask: sort by GPUOP */
  unsigned metric = r->metric < GPD_M__COUNT && r->metric < 64 ? r->metric : GPD_M_GPUOP;
  unsigned limit = r->limit ? r->limit : 10;
  if (top_ix.d != d) {
    top_ix_reset();
    top_ix.d = d;
  }
  gpd_merge_t *mg;
  if (gpd__query_merge(d, peer, r->pid, r->job_id, &mg, NULL, NULL) < 0)
    return NULL;
  if (top_update(mg, metric) < 0)
    return NULL;
  Gpuprof__Msg *m = gpd__query_msg_new();
  Gpuprof__TopReply *t = gpd__query_alloc(sizeof *t);
  if (m == NULL || t == NULL)
    return NULL;
  gpuprof__top_reply__init(t);
  size_t n = top_ix.nsorted < limit ? top_ix.nsorted : limit;
  t->entries = gpd__query_calloc(n + 1, sizeof *t->entries);
  for (size_t i = 0; t->entries && i < n; i++) {
    top_group_t *g = &top_ix.groups[top_ix.sorted[i]];
    const gpd_mview_t *bv = &mg->view[g->best];
    const gpd_profile_t *bp = bv->prof;
    const gpd_node_t *bn = &bp->nodes[bv->pidx];
    Gpuprof__TopEntry *o = gpd__query_alloc(sizeof *o);
    if (o == NULL)
      break;
    gpuprof__top_entry__init(o);
    o->kind = (Gpuprof__NodeKind)g->kind;
    o->label = gpd__query_strdup(bn->label ? gpd_profile_label(bp, bn->label) : g->key);
    o->metrics = gpd__query_calloc(GPD_M__COUNT, sizeof *o->metrics);
    for (unsigned q = 0; o->metrics && q < GPD_M__COUNT; q++) {
      if (g->m[q] == 0)
        continue;
      Gpuprof__Metric *mm = gpd__query_alloc(sizeof *mm);
      if (mm == NULL)
        break;
      gpuprof__metric__init(mm);
      mm->id = q;
      mm->value = g->m[q];
      o->metrics[o->n_metrics++] = mm;
    }
    /* heaviest CPU path: the CPU frames above the heaviest instance, each
     * taken from the oldest selected profile that has it (as the merge) */
    uint32_t depth = 0;
    for (uint32_t j = bn->parent; j != GPD_NONE; j = bp->nodes[j].parent)
      depth++;
    o->path = gpd__query_calloc(depth + 1, sizeof *o->path);
    uint32_t *chain = calloc(depth + 1, sizeof *chain);
    uint32_t c = 0;
    for (uint32_t j = bn->parent; chain && j != GPD_NONE; j = bp->nodes[j].parent)
      chain[c++] = j;
    while (o->path && chain && c-- > 0) {
      const gpd_node_t *cn = &bp->nodes[chain[c]];
      if (cn->kind != GPD_NODE_FRAME && cn->kind != GPD_NODE_UNKNOWN && cn->kind != GPD_NODE_PYTHON)
        continue;
      uint32_t pidx = chain[c];
      const gpd_profile_t *op = top_oldest(mg, cn->id, bp->uid, &pidx);
      Gpuprof__Node *nm = gpd__query_node_msg(op ? op : bp, op ? pidx : chain[c]);
      if (nm)
        o->path[o->n_path++] = nm;
    }
    free(chain);
    if (g->kind == GPD_NODE_KERNEL &&
        gpd__query_top_gpu(mg->vprofs, mg->nvprofs, g->key, o) < 0)
      return NULL;
    t->entries[t->n_entries++] = o;
  }
  m->body_case = GPUPROF__MSG__BODY_TOP;
  m->top = t;
  return m;
}

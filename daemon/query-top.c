/* query-top.c - the Top answer and its node-merged index (see below).
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
 * Top used to merge every visible tree (gpd_merge_add over all nodes of all
 * processes, then inclusive sums) on each request: 64 processes x 30 K
 * nodes took ~115 ms on a 2-core VM.  Top needs neither the tree nor
 * inclusive values: only the exclusive metrics of KERNEL and PLACEHOLDER
 * nodes, grouped by (kind, key), and per Merkle id ("merged instance") the
 * sort metric's sum, to pick the heaviest instance.  So the daemon keeps a
 * node-merged index (below, main thread only, under d->lock):
 *
 *   per profile: its KERNEL/PLACEHOLDER nodes that hold metrics
 *     (gpd_profile_t.mnodes) as {node index, group,
 *     instance, Merkle id}, extended incrementally (nodes are append-only
 *     and a node's kind, key and id never change);
 *   groups (kind, key) and instances (Merkle id), shared by all profiles.
 *
 * A request walks the index of each selected profile and adds the nodes'
 * current values into the groups/instances it touches (stamped with the
 * request's generation, so nothing is cleared between requests): no hashing,
 * no tree, no allocation per node, live values.  Each indexed node's id is
 * checked against the profile on every use, so a profile whose memory was
 * reused is re-indexed rather than misread.
 *
 * The last request's sums are kept (the groups' m, best and their order):
 * a request that selects the same profiles, none changed since
 * (gpd_profile_t.tree_gen, which every new node and metric change bumps,
 * as for merge.c's view), with the same sort metric, skips the walk over
 * the indexed nodes (64 x 10 K: 640 K nodes, the whole of Top's ~10 ms)
 * and only builds the reply (paths and PC samples from the live profiles).
 */

typedef struct top_pnode_s {
  uint64_t id;    /* Merkle id of p->nodes[pidx], checked on use */
  uint32_t pidx;  /* node index in its profile */
  uint32_t inst;  /* index into top_ix.insts */
} top_pnode_t;

typedef struct top_prof_s {
  const gpd_profile_t *prof;
  uint64_t profile_id;
  uint32_t scanned; /* nodes [0, scanned) are indexed */
  top_pnode_t *v;
  uint32_t n, cap;
  uint64_t seen; /* last request that found it in the registry */
} top_prof_t;

typedef struct top_group_s {
  uint8_t kind;
  char *key;                 /* raw name or placeholder label (owned) */
  uint64_t gen;              /* request that last touched it */
  double m[GPD_M__COUNT];    /* summed exclusive metrics (valid if gen) */
  uint32_t best;             /* heaviest instance */
  double best_v;
} top_group_t;

typedef struct top_inst_s {
  uint64_t id;
  uint32_t group;
  uint64_t gen;
  double v;                  /* sort metric, summed (valid if gen) */
  const gpd_profile_t *rep;  /* oldest selected profile holding it */
  uint32_t rep_pidx;
} top_inst_t;

static struct {
  gpd_daemon_t *d;
  uint64_t gen;
  top_prof_t *profs;
  uint32_t nprofs, capprofs;
  gpd_map_t prof_by_ptr; /* (uintptr_t)profile -> index + 1 */
  top_group_t *groups;
  uint32_t ngroups, capgroups;
  gpd_map_t group_by_hash; /* hash(kind, key) (+2 per collision) -> group */
  top_inst_t *insts;
  uint32_t ninsts, capinsts;
  gpd_map_t inst_by_id; /* Merkle id -> instance */
  /* the last request's sums (top of this file): valid while last_ok */
  int last_ok;
  uint64_t last_sig;    /* gpd_hash64 of the selection's top_sig_t + metric */
  uint32_t *last_groups; /* its groups, sorted */
  uint32_t last_ngroups;
} top_ix;

/* What the last request's sums depend on, per selected profile. */
typedef struct top_sig_s {
  uint64_t prof, profile_id, tree_gen, nmnodes;
} top_sig_t;

static void top_ix_reset(void) {
  for (uint32_t i = 0; i < top_ix.nprofs; i++)
    free(top_ix.profs[i].v);
  free(top_ix.profs);
  for (uint32_t i = 0; i < top_ix.ngroups; i++)
    free(top_ix.groups[i].key);
  free(top_ix.groups);
  free(top_ix.insts);
  free(top_ix.last_groups);
  gpd_map_free(&top_ix.prof_by_ptr);
  gpd_map_free(&top_ix.group_by_hash);
  gpd_map_free(&top_ix.inst_by_id);
  uint64_t gen = top_ix.gen;
  memset(&top_ix, 0, sizeof top_ix);
  top_ix.gen = gen;
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
  g->key = strdup(key);
  if (g->key == NULL || gpd_map_put(&top_ix.group_by_hash, h, top_ix.ngroups) < 0) {
    free(g->key);
    return GPD_NONE;
  }
  return top_ix.ngroups++;
}

/* Instance of Merkle id (in group); GPD_NONE when out of memory. */
static uint32_t top_inst_get(uint64_t id, uint32_t group) {
  uint64_t v;
  if (gpd_map_get(&top_ix.inst_by_id, id, &v))
    return (uint32_t)v;
  if (top_ix.ninsts == top_ix.capinsts &&
      gpd__query_grow((void **)&top_ix.insts, &top_ix.capinsts, sizeof *top_ix.insts, 256) < 0)
    return GPD_NONE;
  top_inst_t *in = &top_ix.insts[top_ix.ninsts];
  memset(in, 0, sizeof *in);
  in->id = id;
  in->group = group;
  if (gpd_map_put(&top_ix.inst_by_id, id, top_ix.ninsts) < 0)
    return GPD_NONE;
  return top_ix.ninsts++;
}

/* Group key of a node as Top groups it (NULL: not a Top node). */
static const char *top_key(const gpd_profile_t *p, const gpd_node_t *n) {
  if (n->kind == GPD_NODE_KERNEL)
    return gpd_profile_label(p, n->raw ? n->raw : n->label);
  if (n->kind == GPD_NODE_PLACEHOLDER)
    return gpd_profile_label(p, n->label);
  return NULL;
}

/* The index of profile p, extended to its current nodes.  NULL: ENOMEM. */
static top_prof_t *top_prof_get(const gpd_profile_t *p) {
  uint64_t v;
  top_prof_t *tp;
  uint64_t key = (uint64_t)(uintptr_t)p;
  if (gpd_map_get(&top_ix.prof_by_ptr, key, &v)) {
    tp = &top_ix.profs[v - 1];
  } else {
    if (top_ix.nprofs == top_ix.capprofs &&
        gpd__query_grow((void **)&top_ix.profs, &top_ix.capprofs, sizeof *top_ix.profs, 16) < 0)
      return NULL;
    if (gpd_map_put(&top_ix.prof_by_ptr, key, top_ix.nprofs + 1) < 0)
      return NULL;
    tp = &top_ix.profs[top_ix.nprofs++];
    memset(tp, 0, sizeof *tp);
    tp->prof = p;
    tp->profile_id = p->profile_id;
  }
  if (tp->profile_id != p->profile_id || tp->scanned > p->nmnodes ||
      (tp->n && (tp->v[tp->n - 1].pidx >= p->nnodes ||
                 p->nodes[tp->v[tp->n - 1].pidx].id != tp->v[tp->n - 1].id))) {
    tp->profile_id = p->profile_id; /* another profile at this address */
    tp->scanned = tp->n = 0;
  }
  /* only nodes that hold metrics (p->mnodes, in the order they got their
   * first one): a placeholder above a named kernel never does */
  for (uint32_t mi = tp->scanned; mi < p->nmnodes; mi++) {
    uint32_t i = p->mnodes[mi];
    const gpd_node_t *n = &p->nodes[i];
    const char *k = top_key(p, n);
    if (k == NULL)
      continue;
    uint32_t g = top_group_get(n->kind, k);
    /* instances are per owner: another user's node with the same Merkle
     * id (a forged module key) never lends its labels or path to this one */
    uint32_t in = g == GPD_NONE ? GPD_NONE : top_inst_get(gpd_merge_key(n->id, p->uid), g);
    if (in == GPD_NONE)
      return NULL;
    if (tp->n == tp->cap && gpd__query_grow((void **)&tp->v, &tp->cap, sizeof *tp->v, 64) < 0)
      return NULL;
    tp->v[tp->n++] = (top_pnode_t){.id = n->id, .pidx = i, .inst = in};
    tp->scanned = mi + 1;
  }
  tp->scanned = p->nmnodes;
  return tp;
}

/* Drop the indexes of profiles no longer in the registry; when that leaves
 * many orphaned instances, start over (bounded memory). */
static void top_ix_trim(gpd_daemon_t *d) {
  uint64_t stamp = top_ix.gen;
  uint64_t v;
  for (gpd_proc_t *p = d->procs; p; p = p->next)
    if (gpd_map_get(&top_ix.prof_by_ptr, (uint64_t)(uintptr_t)&p->prof, &v))
      top_ix.profs[v - 1].seen = stamp;
  uint64_t live = 0;
  int dropped = 0;
  for (uint32_t i = 0; i < top_ix.nprofs; i++) {
    if (top_ix.profs[i].seen == stamp) {
      live += top_ix.profs[i].n;
      continue;
    }
    dropped = 1;
    gpd_map_del(&top_ix.prof_by_ptr, (uint64_t)(uintptr_t)top_ix.profs[i].prof);
    free(top_ix.profs[i].v);
    top_ix.profs[i] = top_ix.profs[--top_ix.nprofs];
    if (i < top_ix.nprofs)
      gpd_map_put(&top_ix.prof_by_ptr, (uint64_t)(uintptr_t)top_ix.profs[i].prof, i + 1);
    i--;
  }
  if (dropped && top_ix.ninsts > 2 * live + 1024)
    top_ix_reset();
}

typedef struct top_sel_s {
  const gpd_profile_t **profs; /* selected, oldest first */
  size_t n;
} top_sel_t;

/* The oldest selected profile of owner uid holding Merkle id (and its node
 * index): labels never cross users. */
static const gpd_profile_t *top_oldest(const top_sel_t *sel, uint64_t id, uid_t uid,
                                       uint32_t *pidx) {
  for (size_t i = 0; i < sel->n; i++) {
    if (sel->profs[i]->uid != uid)
      continue;
    uint32_t j = gpd_profile_find(sel->profs[i], id);
    if (j != GPD_NONE) {
      *pidx = j;
      return sel->profs[i];
    }
  }
  return NULL;
}

static unsigned top_metric; /* sort key of the request being answered */

static int top_group_cmp(const void *a, const void *b) {
  double x = top_ix.groups[*(const uint32_t *)a].m[top_metric];
  double y = top_ix.groups[*(const uint32_t *)b].m[top_metric];
  return x < y ? 1 : x > y ? -1 : 0;
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
  int retried = 0;
  uint64_t gen = ++top_ix.gen;
  top_ix_trim(d);
  top_ix.d = d; /* trim may have reset the index */
  Gpuprof__Msg *m = NULL;
  top_sel_t sel = {0};
  uint32_t *groups = NULL, *insts = NULL;
  uint32_t ngroups = 0, ninsts = 0, capgroups = 0, capinsts = 0;
  /* oldest first: labels and paths come from the first registrant */
  size_t nall = 0;
  for (gpd_proc_t *p = d->procs; p; p = p->next)
    nall++;
  sel.profs = calloc(nall + 1, sizeof *sel.profs);
  if (sel.profs == NULL)
    goto out;
  size_t k = nall;
  for (gpd_proc_t *p = d->procs; p; p = p->next) {
    k--;
    if (gpd__query_selected(p, peer, r->pid, r->job_id))
      sel.profs[k] = &p->prof;
  }
  for (size_t i = 0; i < nall; i++)
    if (sel.profs[i])
      sel.profs[sel.n++] = sel.profs[i];
  /* the same profiles, unchanged, the same metric: the last sums hold */
  uint64_t sig = 0;
  {
    top_sig_t *sv = calloc(sel.n + 1, sizeof *sv);
    if (sv == NULL)
      goto out;
    for (size_t i = 0; i < sel.n; i++)
      sv[i] = (top_sig_t){(uint64_t)(uintptr_t)sel.profs[i], sel.profs[i]->profile_id,
                          sel.profs[i]->tree_gen, sel.profs[i]->nmnodes};
    sv[sel.n].prof = metric;
    sig = gpd_hash64(sv, (sel.n + 1) * sizeof *sv, 0x746f70);
    free(sv);
  }
  if (top_ix.last_ok && top_ix.last_sig == sig) {
    if (top_ix.last_ngroups &&
        gpd__query_grow((void **)&groups, &capgroups, sizeof *groups, top_ix.last_ngroups) < 0)
      goto out;
    ngroups = top_ix.last_ngroups;
    if (ngroups)
      memcpy(groups, top_ix.last_groups, ngroups * sizeof *groups);
    goto reply;
  }
  top_ix.last_ok = 0;
again:
  for (size_t i = 0; i < sel.n; i++) {
    const gpd_profile_t *p = sel.profs[i];
    top_prof_t *tp = top_prof_get(p);
    if (tp == NULL)
      goto out;
    for (uint32_t j = 0; j < tp->n; j++) {
      const top_pnode_t *pn = &tp->v[j];
      const gpd_node_t *n = &p->nodes[pn->pidx];
      if (n->id != pn->id) { /* cannot happen: nodes are append-only */
        GPD_WARN("top index of profile %" PRIu64 " out of date; rebuilt", p->profile_id);
        top_ix_reset();
        top_ix.d = d;
        if (retried++)
          goto out;
        gen = ++top_ix.gen;
        ngroups = ninsts = 0;
        goto again;
      }
      if (n->mb == 0)
        continue;
      top_inst_t *in = &top_ix.insts[pn->inst];
      top_group_t *g = &top_ix.groups[in->group];
      if (g->gen != gen) {
        if (ngroups == capgroups && gpd__query_grow((void **)&groups, &capgroups, sizeof *groups, 64) < 0)
          goto out;
        groups[ngroups++] = in->group;
        g->gen = gen;
        memset(g->m, 0, sizeof g->m);
        g->best = GPD_NONE;
        g->best_v = -1;
      }
      if (in->gen != gen) {
        if (ninsts == capinsts && gpd__query_grow((void **)&insts, &capinsts, sizeof *insts, 256) < 0)
          goto out;
        insts[ninsts++] = pn->inst;
        in->gen = gen;
        in->v = 0;
        in->rep = p;
        in->rep_pidx = pn->pidx;
      }
      const gpd_mword_t *w = gpd_node_vals(p, n);
      uint64_t mask = gpd_node_mask(p, n);
      unsigned q = 0;
      for (uint64_t b = mask; b; b &= b - 1, q++)
        g->m[__builtin_ctzll(b)] += w[q].v;
      if (mask & (1ull << metric))
        in->v += w[__builtin_popcountll(mask & ((1ull << metric) - 1))].v;
    }
  }
  /* heaviest instance per group; ties: the first merged (oldest profile) */
  for (size_t i = 0; i < ninsts; i++) {
    top_inst_t *in = &top_ix.insts[insts[i]];
    top_group_t *g = &top_ix.groups[in->group];
    if (in->v > g->best_v) {
      g->best_v = in->v;
      g->best = insts[i];
    }
  }
  top_metric = metric;
  if (ngroups)
    qsort(groups, ngroups, sizeof *groups, top_group_cmp);
  {
    uint32_t *lg = ngroups ? realloc(top_ix.last_groups, ngroups * sizeof *lg) : top_ix.last_groups;
    if (lg) {
      top_ix.last_groups = lg;
      if (ngroups)
        memcpy(lg, groups, ngroups * sizeof *lg);
      top_ix.last_ngroups = ngroups;
      top_ix.last_sig = sig;
      top_ix.last_ok = 1;
    }
  }
reply:
  m = gpd__query_msg_new();
  Gpuprof__TopReply *t = gpd__query_alloc(sizeof *t);
  if (m == NULL || t == NULL) {
    m = NULL;
    goto out;
  }
  gpuprof__top_reply__init(t);
  size_t n = ngroups < limit ? ngroups : limit;
  t->entries = gpd__query_calloc(n + 1, sizeof *t->entries);
  for (size_t i = 0; t->entries && i < n; i++) {
    top_group_t *g = &top_ix.groups[groups[i]];
    const top_inst_t *bi = &top_ix.insts[g->best];
    const gpd_profile_t *bp = bi->rep;
    const gpd_node_t *bn = &bp->nodes[bi->rep_pidx];
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
      const gpd_profile_t *op = top_oldest(&sel, cn->id, bp->uid, &pidx);
      Gpuprof__Node *nm = gpd__query_node_msg(op ? op : bp, op ? pidx : chain[c]);
      if (nm)
        o->path[o->n_path++] = nm;
    }
    free(chain);
    if (g->kind == GPD_NODE_KERNEL &&
        gpd__query_top_gpu((const gpd_profile_t *const *)sel.profs, sel.n, g->key, o) < 0) {
      m = NULL;
      goto out;
    }
    t->entries[t->n_entries++] = o;
  }
  m->body_case = GPUPROF__MSG__BODY_TOP;
  m->top = t;
out:
  free(groups);
  free(insts);
  free(sel.profs);
  return m;
}


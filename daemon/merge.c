/* merge.c - the node view: live per-process trees merged by Merkle id.
 *
 * Equal call paths have equal context ids in every process (hash.h), so
 * merging is a union of nodes keyed by id with exclusive metrics summed.
 * Adding profiles in order keeps "parents precede children": a node's
 * parent is either already merged from an earlier profile or precedes it in
 * its own profile.  Inclusive values are then one reverse sweep.
 *
 * Labels per user: a node's label and module come from the first profile
 * that had it, and that profile's owner (uid) owns the merged node.  A
 * profile of another uid with the same Merkle id (another user can
 * announce any build-id with a file of their own) is merged into a
 * separate node whose id mixes in its uid (gpd_merge_key), below its own
 * parent: one user's announcements never label another user's nodes.
 * The root is shared.  Ids therefore stay the Merkle ids for the first
 * owner and for every single-user view.
 *
 * Incremental: the merged nodes (one per (Merkle id, uid)) and each
 * profile's node -> merged node map are kept between views and only
 * extended (profile nodes are append-only).  A view marks the merged nodes
 * of the selected profiles with its generation (first profile = label
 * source; the first owner in view order keeps the plain id of a Merkle id
 * several owners share), then sums the metrics into dense columns of the
 * metric ids present.  Measured on 64 x 30 K nodes: a full re-merge with
 * one hash lookup per profile node cost ~100 ms per `tree`; a view costs
 * one linear pass, and none while its profiles did not change
 * (gpd_profile_t.tree_gen).
 * Caller holds the daemon lock while the view borrows profile labels.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gpuprof/hash.h"

#include "daemon.h"

struct gpd_msig_s {
  const gpd_profile_t *prof;
  uint64_t profile_id, tree_gen;
  uint32_t nnodes; /* its nodes marked in the view of sig_gen */
};

struct gpd_mprof_s {
  const gpd_profile_t *prof;
  uint64_t profile_id;
  uint32_t *at; /* profile node index -> merged index */
  uint32_t n, cap;
  uint64_t seen; /* last view that added it or saw it live */
};

uint64_t gpd_merge_key(uint64_t id, uid_t uid) {
  uint64_t u = (uint64_t)uid;
  uint64_t k = gpd_hash64(&u, sizeof u, id);
  return k ? k : 1; /* key 0 is the map's empty slot */
}

static void merge_index_free(gpd_merge_t *m) {
  for (uint32_t i = 0; i < m->nprofs; i++)
    free(m->profs[i].at);
  free(m->profs);
  free(m->nodes);
  free(m->view);
  gpd_map_free(&m->by_key);
  gpd_map_free(&m->prof_by_ptr);
  m->profs = NULL;
  m->nodes = NULL;
  m->view = NULL;
  m->n = m->cap = m->nprofs = m->capprofs = 0;
  m->epoch++;
}

void gpd_merge_free(gpd_merge_t *m) {
  merge_index_free(m);
  free(m->vprofs);
  free(m->sig);
  free(m->excl);
  free(m->incl);
  free(m->dirty);
  free(m->anc);
  free(m->vat);
  gpd_map_free(&m->owner);
  int nolog = m->nolog;
  uint64_t epoch = m->epoch;
  memset(m, 0, sizeof *m);
  m->nolog = nolog;
  m->epoch = epoch;
}

void gpd_merge_begin(gpd_merge_t *m) {
  if (m->reset) {
    merge_index_free(m);
    m->reset = 0;
    m->sig_ok = 0;
  }
  m->gen++;
  m->nvprofs = 0;
  m->nview = 0;
  m->reshare = 0;
  /* umask, slot, the sums and the owner map stay: finish may reuse the
   * last view or its marks */
}

/* The index of profile p (a new one, or p's memory reused by another
 * profile: started over).  NULL on ENOMEM. */
static gpd_mprof_t *mprof_get(gpd_merge_t *m, const gpd_profile_t *p) {
  uint64_t v, key = (uint64_t)(uintptr_t)p;
  gpd_mprof_t *mp;
  if (gpd_map_get(&m->prof_by_ptr, key, &v)) {
    mp = &m->profs[v - 1];
  } else {
    if (m->nprofs == m->capprofs) {
      uint32_t nc = m->capprofs ? m->capprofs * 2 : 16;
      gpd_mprof_t *na = realloc(m->profs, nc * sizeof *na);
      if (na == NULL)
        return NULL;
      m->profs = na;
      m->capprofs = nc;
    }
    if (gpd_map_put(&m->prof_by_ptr, key, m->nprofs + 1) < 0)
      return NULL;
    mp = &m->profs[m->nprofs++];
    memset(mp, 0, sizeof *mp);
    mp->prof = p;
    mp->profile_id = p->profile_id;
  }
  if (mp->profile_id != p->profile_id || mp->n > p->nnodes ||
      (mp->n && m->nodes[mp->at[mp->n - 1]].id != p->nodes[mp->n - 1].id)) {
    mp->profile_id = p->profile_id; /* another profile at this address */
    mp->n = 0;
  }
  mp->seen = m->gen;
  return mp;
}

void gpd_merge_live(gpd_merge_t *m, const gpd_profile_t *p) {
  uint64_t v;
  if (gpd_map_get(&m->prof_by_ptr, (uint64_t)(uintptr_t)p, &v))
    m->profs[v - 1].seen = m->gen;
}

static uint32_t mnode_new(gpd_merge_t *m, uint64_t key, const gpd_node_t *n, uint32_t par, uid_t uid) {
  if (m->n == m->cap) {
    uint32_t nc = m->cap ? m->cap * 2 : 256;
    gpd_mnode_t *na = realloc(m->nodes, nc * sizeof *na);
    if (na == NULL)
      return GPD_NONE;
    m->nodes = na;
    gpd_mview_t *nv = realloc(m->view, nc * sizeof *nv);
    if (nv == NULL)
      return GPD_NONE;
    m->view = nv;
    m->cap = nc;
  }
  uint32_t j = m->n;
  if (gpd_map_put(&m->by_key, key, j) < 0)
    return GPD_NONE;
  gpd_mnode_t *mn = &m->nodes[j];
  memset(mn, 0, sizeof *mn);
  mn->id = n->id;
  mn->parent = par;
  mn->kind = n->kind;
  mn->uid = uid;
  mn->depth = par == GPD_NONE ? 0 : m->nodes[par].depth + 1;
  mn->kid = GPD_NONE;
  mn->sib = GPD_NONE;
  if (par != GPD_NONE) { /* j is the highest index: the list stays decreasing */
    mn->sib = m->nodes[par].kid;
    m->nodes[par].kid = j;
  }
  memset(&m->view[j], 0, sizeof m->view[j]);
  m->n++;
  return j;
}

/* Extend p's node -> merged node map to p's current nodes. */
static int mprof_extend(gpd_merge_t *m, gpd_mprof_t *mp, const gpd_profile_t *p) {
  if (p->nnodes > mp->cap) {
    uint32_t nc = mp->cap ? mp->cap : 64;
    while (nc < p->nnodes)
      nc *= 2;
    uint32_t *na = realloc(mp->at, (size_t)nc * sizeof *na);
    if (na == NULL)
      return -ENOMEM;
    mp->at = na;
    mp->cap = nc;
  }
  for (uint32_t i = mp->n; i < p->nnodes; i++) {
    const gpd_node_t *n = &p->nodes[i];
    uint64_t key = n->id, v;
    uint32_t j = gpd_map_get(&m->by_key, key, &v) ? (uint32_t)v : GPD_NONE;
    if (j != GPD_NONE && n->parent != GPD_NONE && m->nodes[j].uid != p->uid) {
      /* newly shared: its owner must claim the plain id (merge_mark), so
       * the view's marks are taken again */
      m->reshare |= !m->nodes[j].shared;
      m->nodes[j].shared = 1;
      key = gpd_merge_key(n->id, p->uid); /* another user's node: keep apart */
      j = gpd_map_get(&m->by_key, key, &v) ? (uint32_t)v : GPD_NONE;
      if (j == GPD_NONE) {
        uint32_t par = n->parent == GPD_NONE ? GPD_NONE : mp->at[n->parent];
        if ((j = mnode_new(m, key, n, par, p->uid)) == GPD_NONE)
          return -ENOMEM;
        m->nodes[j].shared = 1;
      }
    } else if (j == GPD_NONE) {
      uint32_t par = n->parent == GPD_NONE ? GPD_NONE : mp->at[n->parent];
      if ((j = mnode_new(m, key, n, par, p->uid)) == GPD_NONE)
        return -ENOMEM;
    }
    mp->at[i] = j;
    mp->n = i + 1;
  }
  return 0;
}

int gpd_merge_add(gpd_merge_t *m, const gpd_profile_t *p) {
  gpd_mprof_t *mp = mprof_get(m, p);
  if (mp == NULL || mprof_extend(m, mp, p) < 0)
    return -ENOMEM;
  if (m->nvprofs == m->capvprofs) {
    uint32_t nc = m->capvprofs ? m->capvprofs * 2 : 16;
    const gpd_profile_t **na = realloc(m->vprofs, nc * sizeof *na);
    if (na == NULL)
      return -ENOMEM;
    m->vprofs = na;
    m->capvprofs = nc;
  }
  m->vprofs[m->nvprofs++] = p;
  return 0;
}

/* Profile p's node -> merged node map (NULL: not indexed). */
static const uint32_t *mprof_at(const gpd_merge_t *m, const gpd_profile_t *p) {
  uint64_t v;
  return gpd_map_get(&m->prof_by_ptr, (uint64_t)(uintptr_t)p, &v) ? m->profs[v - 1].at : NULL;
}

uint32_t gpd_merge_index(const gpd_merge_t *m, const gpd_profile_t *p, uint32_t i) {
  uint64_t v;
  if (!gpd_map_get(&m->prof_by_ptr, (uint64_t)(uintptr_t)p, &v) || i >= m->profs[v - 1].n)
    return GPD_NONE;
  return m->profs[v - 1].at[i];
}

/* Mark merged node j for node i of profile p: the first profile holding it
 * lends its labels; the first owner in view order keeps the plain id of a
 * Merkle id several owners share.  0 or -ENOMEM. */
static int merge_mark(gpd_merge_t *m, uint32_t j, const gpd_profile_t *p, uint32_t i) {
  gpd_mview_t *v = &m->view[j];
  v->gen = m->gen;
  v->prof = p;
  v->pidx = i;
  v->out = p->nodes[i].id;
  m->nview++;
  const gpd_mnode_t *mn = &m->nodes[j];
  if (mn->shared) {
    uint64_t u;
    if (!gpd_map_get(&m->owner, mn->id, &u))
      return gpd_map_put(&m->owner, mn->id, (uint64_t)mn->uid + 1);
    if (u != (uint64_t)mn->uid + 1)
      v->out = gpd_merge_key(mn->id, mn->uid);
  }
  return 0;
}

/* Put merged node j on list *l (stamp *st == gen: on it already).  0 or
 * -ENOMEM. */
static int list_add(uint32_t **l, uint32_t *n, uint32_t *cap, uint32_t *st, uint32_t gen, uint32_t j) {
  if (*st == gen)
    return 0;
  if (*n == *cap) {
    uint32_t nc = *cap ? *cap * 2 : 256;
    uint32_t *na = realloc(*l, (size_t)nc * sizeof *na);
    if (na == NULL)
      return -ENOMEM;
    *l = na;
    *cap = nc;
  }
  (*l)[(*n)++] = j;
  *st = gen;
  return 0;
}

static int dirty_add(gpd_merge_t *m, uint32_t j) {
  return list_add(&m->dirty, &m->ndirty, &m->capdirty, &m->view[j].dstamp, m->dgen, j);
}

static int u32_desc(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return (x < y) - (x > y);
}

/* The full sums of the view: exclusive values summed over the profiles in
 * view order, each profile's nodes in index order; inclusive = exclusive,
 * then every view node's inclusive row added to its parent's, from the
 * highest merged index down (children follow parents).  merge_recompute
 * repeats exactly these additions for the nodes it redoes. */
static void merge_sum_all(gpd_merge_t *m, size_t need) {
  const uint32_t ns = m->nslot;
  memset(m->excl, 0, need * sizeof *m->excl);
  for (uint32_t k = 0; k < m->nvprofs; k++) {
    const gpd_profile_t *p = m->vprofs[k];
    const uint32_t *at = m->vat[k];
    for (uint32_t i = 0; at && i < p->nnodes; i++) {
      const gpd_node_t *n = &p->nodes[i];
      if (n->mb == 0)
        continue;
      const gpd_mword_t *w = gpd_node_vals(p, n);
      double *e = &m->excl[(size_t)at[i] * ns];
      unsigned q = 0;
      for (uint64_t b = gpd_node_mask(p, n); b; b &= b - 1, q++)
        e[m->slot[__builtin_ctzll(b)]] += w[q].v;
    }
  }
  memcpy(m->incl, m->excl, need * sizeof *m->incl);
  for (uint32_t j = m->n; j-- > 1;) {
    uint32_t par = m->nodes[j].parent;
    if (par == GPD_NONE || m->view[j].gen != m->gen)
      continue;
    double *c = &m->incl[(size_t)j * ns], *pc = &m->incl[(size_t)par * ns];
    for (uint32_t q = 0; q < ns; q++)
      pc[q] += c[q];
  }
}

/* The sums of the dirty merged nodes and the inclusive sums of them and
 * their ancestors, by the additions merge_sum_all makes for them: a dirty
 * node's exclusive row is its profile nodes' values added in view order
 * (each profile holds a Merkle id once: gpd_profile_find), an inclusive
 * row its exclusive row plus its view children's inclusive rows from the
 * highest index down (the kid list's order), ancestors after their
 * children (decreasing index).  0 or -ENOMEM (sums invalid). */
static int merge_recompute(gpd_merge_t *m) {
  const uint32_t ns = m->nslot;
  for (uint32_t d = 0; d < m->ndirty; d++) {
    uint32_t j = m->dirty[d];
    const gpd_mnode_t *mn = &m->nodes[j];
    double *e = &m->excl[(size_t)j * ns];
    memset(e, 0, ns * sizeof *e);
    for (uint32_t k = 0; k < m->nvprofs; k++) {
      const gpd_profile_t *p = m->vprofs[k];
      uint32_t i = m->vat[k] ? gpd_profile_find(p, mn->id) : GPD_NONE;
      if (i == GPD_NONE || m->vat[k][i] != j || p->nodes[i].mb == 0)
        continue;
      const gpd_node_t *n = &p->nodes[i];
      const gpd_mword_t *w = gpd_node_vals(p, n);
      unsigned q = 0;
      for (uint64_t b = gpd_node_mask(p, n); b; b &= b - 1, q++)
        e[m->slot[__builtin_ctzll(b)]] += w[q].v;
    }
    for (uint32_t x = j; x != GPD_NONE && m->view[x].astamp != m->dgen; x = m->nodes[x].parent)
      if (list_add(&m->anc, &m->nanc, &m->capanc, &m->view[x].astamp, m->dgen, x) < 0)
        return -ENOMEM;
  }
  qsort(m->anc, m->nanc, sizeof *m->anc, u32_desc);
  for (uint32_t a = 0; a < m->nanc; a++) {
    uint32_t x = m->anc[a];
    double *c = &m->incl[(size_t)x * ns];
    memcpy(c, &m->excl[(size_t)x * ns], ns * sizeof *c);
    for (uint32_t k = m->nodes[x].kid; k != GPD_NONE; k = m->nodes[k].sib) {
      if (m->view[k].gen != m->gen)
        continue;
      const double *kc = &m->incl[(size_t)k * ns];
      for (uint32_t q = 0; q < ns; q++)
        c[q] += kc[q];
    }
  }
  return 0;
}

int gpd_merge_finish(gpd_merge_t *m) {
  /* forget profiles that are gone; rebuild when their nodes dominate */
  uint64_t live = 0;
  for (uint32_t i = 0; i < m->nprofs; i++) {
    if (m->profs[i].seen == m->gen) {
      live += m->profs[i].n;
      continue;
    }
    gpd_map_del(&m->prof_by_ptr, (uint64_t)(uintptr_t)m->profs[i].prof);
    free(m->profs[i].at);
    m->profs[i] = m->profs[--m->nprofs];
    if (i < m->nprofs)
      gpd_map_put(&m->prof_by_ptr, (uint64_t)(uintptr_t)m->profs[i].prof, i + 1);
    i--;
  }
  if (m->n > 2 * live + 4096)
    m->reset = 1;
  /* the same profiles, unchanged since the last computed view: it stands
   * (a repeated `tree` of idle processes costs only its reply) */
  int same = m->sig_ok && m->nsig == m->nvprofs;
  for (uint32_t k = 0; same && k < m->nvprofs; k++)
    same = m->sig[k].prof == m->vprofs[k] && m->sig[k].profile_id == m->vprofs[k]->profile_id &&
           m->sig[k].tree_gen == m->vprofs[k]->tree_gen;
  if (same) {
    m->gen = m->sig_gen;
    m->nview = m->sig_nview;
    return 0;
  }
  /* The same profiles, some changed (new nodes, new metric values): the
   * marks of the last view stand (profile nodes are append-only and keep
   * their merged node), so only the nodes added since are marked, and
   * the sums of the merged nodes that changed are taken again (below).
   * 64 processes x 30 K nodes, every one changed: the mark pass was a
   * random access into the view per profile node. */
  int prev_ok = m->sig_ok;
  int same_set = m->sig_ok && m->nsig == m->nvprofs && !m->reshare;
  for (uint32_t k = 0; same_set && k < m->nvprofs; k++)
    same_set = m->sig[k].prof == m->vprofs[k] &&
               m->sig[k].profile_id == m->vprofs[k]->profile_id &&
               m->sig[k].nnodes <= m->vprofs[k]->nnodes;
  if (same_set) {
    m->gen = m->sig_gen;
    m->nview = m->sig_nview;
  } else {
    gpd_map_free(&m->owner);
  }
  m->sig_ok = 0;
  if (m->nvprofs > m->capsig) {
    struct gpd_msig_s *ns = realloc(m->sig, m->nvprofs * sizeof *ns);
    if (ns == NULL)
      return -ENOMEM;
    m->sig = ns;
    m->capsig = m->nvprofs;
  }
  if (m->nvprofs > m->capvat) {
    const uint32_t **nv = realloc(m->vat, m->nvprofs * sizeof *nv);
    if (nv == NULL)
      return -ENOMEM;
    m->vat = nv;
    m->capvat = m->nvprofs;
  }
  for (uint32_t k = 0; k < m->nvprofs; k++)
    m->vat[k] = mprof_at(m, m->vprofs[k]);
  /* metric columns: the ids present in the view's profiles */
  uint64_t umask = 0;
  for (uint32_t k = 0; k < m->nvprofs; k++)
    umask |= m->vprofs[k]->mmask;
  /* Incremental when the last sums are of this view's profiles with the
   * same columns: the merged nodes of the profile nodes that changed
   * (change logs) or are new are summed again. */
  int inc = same_set && prev_ok && !m->nolog && umask == m->umask && m->nslot > 0;
  if (++m->dgen == 0) { /* stamps wrapped: none may look current */
    for (uint32_t j = 0; j < m->n; j++)
      m->view[j].dstamp = m->view[j].astamp = 0;
    m->dgen = 1;
  }
  m->ndirty = m->nanc = 0;
  uint64_t pnodes = 0;
  for (uint32_t k = 0; k < m->nvprofs; k++) {
    gpd_profile_t *p = (gpd_profile_t *)m->vprofs[k]; /* its log is ours (merge.h) */
    pnodes += p->nnodes;
    if (m->nolog)
      continue;
    const uint32_t *v;
    uint32_t nv;
    int over;
    gpd_profile_qlog_take(p, GPD_QLOG_TREE, &v, &nv, &over);
    if (over)
      inc = 0;
    for (uint32_t c = 0; inc && c < nv; c++)
      if (v[c] < p->nnodes && m->vat[k] && dirty_add(m, m->vat[k][v[c]]) < 0)
        inc = 0;
  }
  if (!inc) {
    m->umask = umask;
    m->nslot = 0;
    memset(m->slot, 0xff, sizeof m->slot);
    for (uint64_t b = m->umask; b; b &= b - 1)
      m->slot[__builtin_ctzll(b)] = (uint8_t)m->nslot++;
  }
  size_t need = (size_t)m->n * m->nslot;
  if (need > m->capsums) { /* realloc keeps the rows: same columns when inc */
    double *e = realloc(m->excl, need * sizeof *e);
    if (e)
      m->excl = e;
    double *c = e ? realloc(m->incl, need * sizeof *c) : NULL;
    if (c)
      m->incl = c;
    if (e == NULL || c == NULL)
      return -ENOMEM;
    m->capsums = need;
  }
  /* mark the nodes added since the last view (every index was extended
   * first: an owner sharing a Merkle id may come later); new view nodes
   * are summed again like changed ones */
  for (uint32_t k = 0; k < m->nvprofs; k++) {
    const gpd_profile_t *p = m->vprofs[k];
    const uint32_t *at = m->vat[k];
    uint32_t marked = same_set ? m->sig[k].nnodes : 0;
    for (uint32_t i = marked; at && i < p->nnodes; i++) {
      if (m->view[at[i]].gen != m->gen && merge_mark(m, at[i], p, i) < 0)
        return -ENOMEM;
      if (inc && dirty_add(m, at[i]) < 0)
        inc = 0;
    }
  }
  /* a dirty node costs a lookup per view profile: past a quarter of a
   * full pass over the profiles' nodes, take the full sums */
  if (inc && (uint64_t)m->ndirty * m->nvprofs > pnodes / 4)
    inc = 0;
  for (uint32_t k = 0; k < m->nvprofs; k++)
    m->sig[k] = (struct gpd_msig_s){m->vprofs[k], m->vprofs[k]->profile_id,
                                    m->vprofs[k]->tree_gen, m->vprofs[k]->nnodes};
  m->nsig = m->nvprofs;
  m->sig_gen = m->gen;
  if (need) {
    if (inc && merge_recompute(m) < 0)
      inc = 0;
    if (!inc)
      merge_sum_all(m, need);
  }
  if (inc)
    m->ninc++;
  else
    m->nfull++;
  m->last_inc = inc;
  m->sums_gen++;
  m->sig_nview = m->nview;
  m->sig_ok = 1;
  return 0;
}

uint32_t gpd_merge_find(const gpd_merge_t *m, uint64_t id) {
  for (uint32_t j = 0; j < m->n; j++)
    if (m->view[j].gen == m->gen && m->view[j].out == id)
      return j;
  return GPD_NONE;
}

unsigned gpd_merge_metrics(const gpd_merge_t *m, uint32_t j, int incl, gpd_mval_t *out) {
  unsigned k = 0;
  if (m->nslot == 0)
    return 0;
  const double *row = &(incl ? m->incl : m->excl)[(size_t)j * m->nslot];
  for (uint64_t b = m->umask; b; b &= b - 1) {
    unsigned id = (unsigned)__builtin_ctzll(b);
    double v = row[m->slot[id]];
    if (v != 0) {
      out[k].id = id;
      out[k].v = v;
      k++;
    }
  }
  return k;
}

double gpd_merge_value(const gpd_merge_t *m, uint32_t j, int incl, unsigned id) {
  if (id >= 64 || m->nslot == 0 || m->slot[id] == 0xff)
    return 0;
  return (incl ? m->incl : m->excl)[(size_t)j * m->nslot + m->slot[id]];
}

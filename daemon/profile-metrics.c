/* profile-metrics.c - the metric pool: each node's exclusive metrics as
 * one block of the profile's word pool, {mask, values of the set bits};
 * only non-zero metrics take room (a kernel node with 5 metrics: 48 bytes;
 * a frame node: none).  Blocks grow by moving to a larger one; freed
 * blocks are reused by size.  Also the writer's dirty list and the
 * exclusive / inclusive reads.  Caller holds the daemon lock. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "profile-internal.h"

static uint32_t mblk_alloc(gpd_profile_t *p, unsigned words) {
  uint32_t b = p->mfree[words];
  if (b != 0) {
    p->mfree[words] = (uint32_t)p->mw[b].mask;
    return b;
  }
  if (p->nmw == 0)
    p->nmw = 1; /* block 0 means "none" */
  if ((uint64_t)p->nmw + words > p->capmw) {
    uint64_t nc = p->capmw ? (uint64_t)p->capmw * 2 : 1024;
    while (nc < (uint64_t)p->nmw + words)
      nc *= 2;
    if (nc > UINT32_MAX)
      return 0;
    gpd_mword_t *na = realloc(p->mw, nc * sizeof *na);
    if (na == NULL)
      return 0;
    p->mw = na;
    p->capmw = (uint32_t)nc;
  }
  b = p->nmw;
  p->nmw += words;
  return b;
}

static void mark_dirty(gpd_profile_t *p, uint32_t i) {
  gpd_node_t *n = &p->nodes[i];
  if (n->dirty)
    return;
  n->dirty = 1;
  if (p->ndirtyv == p->capdirtyv) {
    uint32_t nc = p->capdirtyv ? p->capdirtyv * 2 : 64;
    uint32_t *na = realloc(p->dirtyv, (size_t)nc * sizeof *na);
    if (na == NULL) {
      p->ndirtyv = UINT32_MAX; /* overflowed: the writer scans every node */
      return;
    }
    p->dirtyv = na;
    p->capdirtyv = nc;
  }
  if (p->ndirtyv != UINT32_MAX)
    p->dirtyv[p->ndirtyv++] = i;
}

/* gpd_profile_metrics_add where only the ids in cand can be non-zero.
 * Returns the ids of v that are non-zero (added, or lost when *err is
 * set to -ENOMEM; *err is left alone otherwise). */
uint64_t gpd__profile_metrics_add_mask(gpd_profile_t *p, uint32_t i, const double *v, uint64_t cand,
                                       int *err) {
  uint64_t add = 0;
  for (uint64_t bits = cand; bits; bits &= bits - 1)
    if (v[__builtin_ctzll(bits)] != 0)
      add |= bits & -bits;
  if (add == 0)
    return 0;
  p->mmask |= add;
  p->tree_gen++;
  gpd__profile_qlog_note(p, i);
  gpd_node_t *n = &p->nodes[i];
  uint64_t old = n->mb ? p->mw[n->mb].mask : 0;
  if (n->mb == 0 && GPD_GROW(p->mnodes, p->nmnodes, p->capmnodes, 64) < 0) {
    *err = -ENOMEM;
    return add;
  }
  if ((old | add) != old) {
    uint64_t nmask = old | add;
    uint32_t nb = mblk_alloc(p, (unsigned)__builtin_popcountll(nmask) + 1);
    if (nb == 0) {
      *err = -ENOMEM;
      return add;
    }
    gpd_mword_t *w = p->mw; /* after the (re)allocation */
    w[nb].mask = nmask;
    unsigned k = 1, j = 1;
    for (uint64_t bits = nmask; bits; bits &= bits - 1, k++)
      w[nb + k].v = (old & bits & -bits) ? w[n->mb + j++].v : 0;
    if (n->mb) {
      unsigned ow = (unsigned)__builtin_popcountll(old) + 1;
      w[n->mb].mask = p->mfree[ow];
      p->mfree[ow] = n->mb;
    } else {
      p->mnodes[p->nmnodes++] = i; /* room made above */
    }
    n->mb = nb;
  }
  /* walk the block's ids in order (no popcount: without -mpopcnt it is a
   * libgcc call per metric on the ingest path) */
  gpd_mword_t *blk = &p->mw[n->mb];
  unsigned k = 1;
  for (uint64_t bits = blk->mask; bits; bits &= bits - 1, k++)
    if (add & bits & -bits)
      blk[k].v += v[__builtin_ctzll(bits)];
  mark_dirty(p, i);
  return add;
}

#define GPD_M_ALL (GPD_M__COUNT >= 64 ? ~0ull : (1ull << GPD_M__COUNT) - 1)

int gpd_profile_metrics_add(gpd_profile_t *p, uint32_t i, const double *v) {
  int err = 0;
  gpd__profile_metrics_add_mask(p, i, v, GPD_M_ALL, &err);
  return err;
}

int gpd_profile_metric_add(gpd_profile_t *p, uint32_t i, unsigned id, double v) {
  double d[GPD_M__COUNT];
  if (id >= GPD_M__COUNT || i >= p->nnodes)
    return -EINVAL;
  memset(d, 0, sizeof d);
  d[id] = v;
  return gpd_profile_metrics_add(p, i, d);
}

double gpd_profile_node_metric(const gpd_profile_t *p, const gpd_node_t *n, unsigned id) {
  uint64_t mask = gpd_node_mask(p, n);
  if (id >= GPD_M__COUNT || !(mask & (1ull << id)))
    return 0;
  return p->mw[n->mb + 1 + __builtin_popcountll(mask & ((1ull << id) - 1))].v;
}

unsigned gpd_profile_node_metrics(const gpd_profile_t *p, const gpd_node_t *n, gpd_mval_t *out) {
  uint64_t mask = gpd_node_mask(p, n);
  const gpd_mword_t *v = gpd_node_vals(p, n);
  unsigned k = 0;
  for (uint64_t bits = mask; bits; bits &= bits - 1, k++) {
    out[k].id = (uint32_t)__builtin_ctzll(bits);
    out[k].v = v[k].v;
  }
  return k;
}

double gpd_profile_excl(const gpd_profile_t *p, uint64_t ctx, unsigned metric) {
  uint32_t i = gpd_profile_find(p, ctx);
  if (i == GPD_NONE)
    return 0;
  return gpd_profile_node_metric(p, &p->nodes[i], metric);
}

double gpd_profile_incl(const gpd_profile_t *p, uint64_t ctx, unsigned metric) {
  uint32_t root = gpd_profile_find(p, ctx);
  if (root == GPD_NONE)
    return 0;
  double sum = 0;
  /* parents precede children: a node is inside the subtree iff walking up
   * reaches root before index drops below root */
  for (uint32_t i = root; i < p->nnodes; i++) {
    uint32_t j = i;
    while (j != GPD_NONE && j > root)
      j = p->nodes[j].parent;
    if (j == root)
      sum += gpd_profile_node_metric(p, &p->nodes[i], metric);
  }
  return sum;
}

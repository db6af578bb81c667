/* gcct.c - the approximate GPU calling-context tree of one kernel,
 * split out of its repaired static call graph (dccg.c): Zhou et al.,
 * "Measurement and analysis of GPU-accelerated applications with
 * HPCToolkit", Parallel Computing 2021, section 6.3, step 4 -- like gprof,
 * every invocation of a function costs the same, so a node's samples are
 * split among its call sites by the ratio of each site's call samples to
 * all calls into it; a path's share is the product of its edges' shares.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gpu-internal.h"

void gpd_gcct_free(gpd_gcct_t *t) {
  if (t == NULL)
    return;
  free(t->nodes);
  free(t->scc_of);
  free(t->scc_size);
  free(t);
}

typedef struct dfs_frame_s {
  int32_t node;
  size_t next; /* next out-edge to expand */
} dfs_frame_t;

/* A new node slot: its index, -E2BIG past max_nodes, -ENOMEM. */
static int32_t new_node(gpd_gcct_t *t, size_t max_nodes, size_t *cap) {
  if (t->nnodes >= max_nodes)
    return -E2BIG;
  if (t->nnodes == *cap) {
    size_t c = *cap ? 2 * *cap : 64;
    if (c > max_nodes)
      c = max_nodes;
    gpd_gctx_t *n = realloc(t->nodes, c * sizeof *n);
    if (n == NULL)
      return -ENOMEM;
    t->nodes = n;
    *cap = c;
  }
  return (int32_t)t->nnodes++;
}

/* Expand the tree below SCC s (a new root node, fraction 1) in pre-order. */
static int expand(gpd_gcct_t *t, const gpd__dccg_t *g, uint32_t s, size_t max_nodes, size_t *cap,
                  dfs_frame_t *stk) {
  int32_t id = new_node(t, max_nodes, cap);
  if (id < 0)
    return id;
  t->nodes[id] = (gpd_gctx_t){-1, g->scc_first[s], g->scc_rec[s] ? (int32_t)s : -1, 0, 1.0,
                              g->excl[s]};
  size_t sp = 0;
  stk[sp++] = (dfs_frame_t){id, g->out_start[s]};
  while (sp) {
    dfs_frame_t *f = &stk[sp - 1];
    const gpd_gctx_t *pn = &t->nodes[f->node];
    uint32_t ps = g->scc_of[pn->func];
    if (f->next >= g->out_start[ps + 1]) {
      sp--;
      continue;
    }
    size_t k = f->next++;
    double frac = pn->fraction * g->frac[k];
    if (!(frac > 0))
      continue; /* a call site no sample says was used: no context */
    uint32_t cs = g->e[k].callee;
    int32_t cid = new_node(t, max_nodes, cap);
    if (cid < 0)
      return cid;
    t->nodes[cid] = (gpd_gctx_t){f->node, g->scc_first[cs], g->scc_rec[cs] ? (int32_t)cs : -1,
                                 g->e[k].call_off, frac, g->excl[cs] * frac};
    /* the condensation is acyclic: depth <= number of SCCs */
    stk[sp++] = (dfs_frame_t){cid, g->out_start[cs]};
  }
  return 0;
}

int gpd_gcct_build(uint32_t nfuncs, uint32_t root, const double *samples,
                   const gpd_gcall_t *edges, size_t nedges, size_t max_nodes, gpd_gcct_t **out) {
  gpd__dccg_t g;
  int err;
  if (out == NULL || root >= nfuncs || max_nodes == 0)
    return -EINVAL;
  *out = NULL;
  if ((err = gpd__dccg_build(nfuncs, samples, edges, nedges, &g)) < 0)
    return err;
  err = -ENOMEM;
  gpd_gcct_t *t = calloc(1, sizeof *t);
  dfs_frame_t *stk = malloc(((size_t)g.nsccs + 1) * sizeof *stk);
  uint8_t *reached = calloc(g.nsccs, 1);
  size_t cap = 0;
  if (t == NULL || stk == NULL || reached == NULL)
    goto fail;
  if ((err = expand(t, &g, g.scc_of[root], max_nodes, &cap, stk)) < 0)
    goto fail;
  for (size_t i = 0; i < t->nnodes; i++)
    reached[g.scc_of[t->nodes[i].func]] = 1;
  /* sampled functions the kernel does not reach: their own roots, callers
   * first so that a caller's subtree holds its unreached callees */
  for (uint32_t i = g.nsccs; i-- > 0;) {
    uint32_t s = g.topo[i];
    int calls = 0;
    for (size_t k = g.out_start[s]; k < g.out_start[s + 1]; k++)
      calls |= g.frac[k] > 0;
    if (reached[s] || g.in_w[s] > 0 || !(g.excl[s] > 0 || calls))
      continue;
    size_t before = t->nnodes;
    if ((err = expand(t, &g, s, max_nodes, &cap, stk)) < 0)
      goto fail;
    for (size_t n = before; n < t->nnodes; n++) {
      uint32_t ns = g.scc_of[t->nodes[n].func];
      if (!reached[ns] && g.excl[ns] > 0)
        t->unreached += g.scc_size[ns];
      reached[ns] = 1;
    }
  }
  t->scc_of = g.scc_of;
  g.scc_of = NULL;
  t->scc_size = g.scc_size;
  g.scc_size = NULL;
  t->nsccs = g.nsccs;
  err = 0;
fail:
  free(stk);
  free(reached);
  gpd__dccg_free(&g);
  if (err < 0) {
    gpd_gcct_free(t);
    return err;
  }
  *out = t;
  return 0;
}

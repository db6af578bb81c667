/* dccg.c - the GPU static call graph after the repairs of Zhou et al.,
 * "Measurement and analysis of GPU-accelerated applications with
 * HPCToolkit" (Parallel Computing 2021), section 6.3 steps 1-3, and its
 * directed calling-context graph form ("Efficiently representing CPU-GPU
 * performance", 2025: a DCCG keeps one node per function and apportions
 * along edges instead of cloning a node per path, which explodes to
 * ~500 K paths for ~2 K functions).
 *
 * Everything is iterative and linear in functions + edges.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gpu-internal.h"

void gpd__dccg_free(gpd__dccg_t *g) {
  free(g->scc_of);
  free(g->scc_size);
  free(g->scc_first);
  free(g->excl);
  free(g->e);
  free(g->frac);
  free(g->out_start);
  free(g->topo);
  free(g->in_w);
  free(g->scc_rec);
  memset(g, 0, sizeof *g);
}

/* CSR adjacency of function-level edges: by caller (out) or callee (in). */
static int csr(uint32_t n, const gpd_gcall_t *e, size_t ne, int by_callee, size_t **start,
               uint32_t **idx) {
  *start = calloc((size_t)n + 1, sizeof **start);
  *idx = malloc((ne ? ne : 1) * sizeof **idx);
  if (*start == NULL || *idx == NULL)
    return -ENOMEM;
  for (size_t i = 0; i < ne; i++)
    (*start)[(by_callee ? e[i].callee : e[i].caller) + 1]++;
  for (uint32_t v = 0; v < n; v++)
    (*start)[v + 1] += (*start)[v];
  size_t *fill = malloc(((size_t)n + 1) * sizeof *fill);
  if (fill == NULL)
    return -ENOMEM;
  memcpy(fill, *start, ((size_t)n + 1) * sizeof *fill);
  for (size_t i = 0; i < ne; i++)
    (*idx)[fill[by_callee ? e[i].callee : e[i].caller]++] = (uint32_t)i;
  free(fill);
  return 0;
}

/* Tarjan's SCCs, iteratively.  SCC ids come out callees first (reverse
 * topological order of the condensation). */
static int tarjan(uint32_t n, const gpd_gcall_t *e, const size_t *ostart, const uint32_t *oidx,
                  uint32_t *scc_of, uint32_t *nsccs) {
  int err = -ENOMEM;
  uint32_t *index = malloc((size_t)n * sizeof *index), *low = malloc((size_t)n * sizeof *low);
  uint32_t *stk = malloc((size_t)n * sizeof *stk);
  uint32_t *cs_v = malloc((size_t)n * sizeof *cs_v);
  size_t *cs_k = malloc((size_t)n * sizeof *cs_k);
  uint8_t *on = calloc(n ? n : 1, 1);
  if (!index || !low || !stk || !cs_v || !cs_k || !on)
    goto out;
  for (uint32_t v = 0; v < n; v++)
    index[v] = UINT32_MAX;
  uint32_t next = 0, sp = 0, count = 0;
  for (uint32_t r = 0; r < n; r++) {
    if (index[r] != UINT32_MAX)
      continue;
    size_t csp = 0;
    cs_v[csp] = r;
    cs_k[csp++] = ostart[r];
    index[r] = low[r] = next++;
    stk[sp++] = r;
    on[r] = 1;
    while (csp) {
      uint32_t v = cs_v[csp - 1];
      if (cs_k[csp - 1] < ostart[v + 1]) {
        uint32_t w = e[oidx[cs_k[csp - 1]++]].callee;
        if (index[w] == UINT32_MAX) {
          index[w] = low[w] = next++;
          stk[sp++] = w;
          on[w] = 1;
          cs_v[csp] = w;
          cs_k[csp++] = ostart[w];
        } else if (on[w] && index[w] < low[v]) {
          low[v] = index[w];
        }
        continue;
      }
      if (low[v] == index[v]) {
        uint32_t w;
        do {
          w = stk[--sp];
          on[w] = 0;
          scc_of[w] = count;
        } while (w != v);
        count++;
      }
      csp--;
      if (csp) {
        uint32_t u = cs_v[csp - 1];
        if (low[v] < low[u])
          low[u] = low[v];
      }
    }
  }
  *nsccs = count;
  err = 0;
out:
  free(index);
  free(low);
  free(stk);
  free(cs_v);
  free(cs_k);
  free(on);
  return err;
}

int gpd__dccg_build(uint32_t nfuncs, const double *samples, const gpd_gcall_t *edges,
                   size_t nedges, gpd__dccg_t *g) {
  int err = -ENOMEM;
  memset(g, 0, sizeof *g);
  if (nfuncs == 0 || samples == NULL || (nedges && edges == NULL))
    return -EINVAL;
  for (size_t i = 0; i < nedges; i++)
    if (edges[i].caller >= nfuncs || edges[i].callee >= nfuncs || !(edges[i].weight >= 0))
      return -EINVAL;
  gpd_gcall_t *e = malloc((nedges ? nedges : 1) * sizeof *e);
  size_t *ostart = NULL;
  uint32_t *oidx = NULL, *work = NULL;
  uint8_t *queued = NULL;
  if (e == NULL)
    goto fail;
  memcpy(e, edges, nedges * sizeof *e);
  if ((err = csr(nfuncs, e, nedges, 0, &ostart, &oidx)) < 0)
    goto fail;
  err = -ENOMEM;

  /* Step 3: recursive groups (SCCs) */
  g->nfuncs = nfuncs;
  g->scc_of = malloc((size_t)nfuncs * sizeof *g->scc_of);
  if (g->scc_of == NULL || (err = tarjan(nfuncs, e, ostart, oidx, g->scc_of, &g->nsccs)) < 0)
    goto fail;
  err = -ENOMEM;
  uint32_t ns = g->nsccs;
  g->scc_size = calloc(ns, sizeof *g->scc_size);
  g->scc_first = malloc(ns * sizeof *g->scc_first);
  g->excl = calloc(ns, sizeof *g->excl);
  g->in_w = calloc(ns, sizeof *g->in_w);
  g->topo = malloc(ns * sizeof *g->topo);
  g->scc_rec = calloc(ns, 1);
  g->out_start = calloc((size_t)ns + 1, sizeof *g->out_start);
  if (!g->scc_size || !g->scc_first || !g->excl || !g->in_w || !g->topo || !g->out_start ||
      !g->scc_rec)
    goto fail;
  for (uint32_t s = 0; s < ns; s++) {
    g->scc_first[s] = UINT32_MAX;
    g->topo[s] = s; /* Tarjan numbers SCCs callees first */
  }
  for (uint32_t f = 0; f < nfuncs; f++) {
    uint32_t s = g->scc_of[f];
    g->scc_size[s]++;
    g->excl[s] += samples[f];
    if (f < g->scc_first[s])
      g->scc_first[s] = f;
  }
  /* external edges, grouped by caller SCC (counting sort) */
  size_t ne = 0;
  for (size_t i = 0; i < nedges; i++)
    if (g->scc_of[e[i].caller] != g->scc_of[e[i].callee]) {
      ne++;
      g->out_start[g->scc_of[e[i].caller] + 1]++;
    }
  for (uint32_t s = 0; s < ns; s++)
    g->out_start[s + 1] += g->out_start[s];
  g->e = malloc((ne ? ne : 1) * sizeof *g->e);
  g->frac = malloc((ne ? ne : 1) * sizeof *g->frac);
  size_t *fill = malloc(((size_t)ns + 1) * sizeof *fill);
  if (!g->e || !g->frac || !fill) {
    free(fill);
    goto fail;
  }
  memcpy(fill, g->out_start, ((size_t)ns + 1) * sizeof *fill);
  for (size_t i = 0; i < nedges; i++) {
    uint32_t a = g->scc_of[e[i].caller], b = g->scc_of[e[i].callee];
    if (a == b)
      continue;
    gpd_gcall_t c = e[i];
    c.caller = a;
    c.callee = b;
    g->e[fill[a]++] = c;
    g->in_w[b] += c.weight;
  }
  free(fill);
  g->ne = ne;
  for (size_t i = 0; i < nedges; i++)
    if (e[i].caller == e[i].callee)
      g->scc_rec[g->scc_of[e[i].caller]] = 1;
  for (uint32_t s = 0; s < ns; s++)
    g->scc_rec[s] |= g->scc_size[s] > 1;

  /* Step 2: a function with samples none of whose incoming call edges has
   * a weight gets weight one on each of them, repeated through its
   * callers until each has a weighted incoming edge.  Applied to recursive
   * groups as units (after step 3): a group entered from outside by an
   * unsampled call would otherwise count as reached through its own
   * internal calls and never be reached from the kernel. */
  {
    size_t *istart2 = NULL;
    uint32_t *iidx2 = NULL;
    if ((err = csr(ns, g->e, ne, 1, &istart2, &iidx2)) < 0) {
      free(istart2);
      free(iidx2);
      goto fail;
    }
    err = -ENOMEM;
    work = malloc((size_t)ns * sizeof *work);
    queued = calloc(ns, 1);
    if (work == NULL || queued == NULL) {
      free(istart2);
      free(iidx2);
      goto fail;
    }
    size_t nw = 0;
    for (uint32_t v = 0; v < ns; v++)
      if (g->excl[v] > 0) {
        work[nw++] = v;
        queued[v] = 1;
      }
    while (nw) {
      uint32_t v = work[--nw];
      if (g->in_w[v] > 0)
        continue;
      for (size_t k = istart2[v]; k < istart2[v + 1]; k++) {
        gpd_gcall_t *c = &g->e[iidx2[k]];
        c->weight = 1;
        g->in_w[v] += 1;
        if (!queued[c->caller]) {
          queued[c->caller] = 1;
          work[nw++] = c->caller;
        }
      }
    }
    free(istart2);
    free(iidx2);
  }
  /* Step 4's ratio: a call site's share of all calls into its callee */
  for (size_t i = 0; i < ne; i++)
    g->frac[i] = g->in_w[g->e[i].callee] > 0 ? g->e[i].weight / g->in_w[g->e[i].callee] : 0;
  err = 0;
fail:
  free(e);
  free(ostart);
  free(oidx);
  free(work);
  free(queued);
  if (err < 0)
    gpd__dccg_free(g);
  return err;
}

void gpd_dccg_free(gpd_dccg_t *d) {
  if (d == NULL)
    return;
  free(d->scc_of);
  free(d->exclusive);
  free(d->inclusive);
  free(d->edges);
  free(d);
}

int gpd_dccg_build(uint32_t nfuncs, uint32_t root, const double *samples,
                   const gpd_gcall_t *edges, size_t nedges, gpd_dccg_t **out) {
  gpd__dccg_t g;
  int err;
  if (out == NULL || root >= nfuncs)
    return -EINVAL;
  *out = NULL;
  if ((err = gpd__dccg_build(nfuncs, samples, edges, nedges, &g)) < 0)
    return err;
  err = -ENOMEM;
  gpd_dccg_t *d = calloc(1, sizeof *d);
  double *paths = NULL;
  if (d == NULL)
    goto fail;
  d->nnodes = g.nsccs;
  d->scc_of = g.scc_of;
  g.scc_of = NULL;
  d->exclusive = g.excl;
  g.excl = NULL;
  d->inclusive = calloc(d->nnodes, sizeof *d->inclusive);
  d->edges = malloc((g.ne ? g.ne : 1) * sizeof *d->edges);
  paths = calloc(d->nnodes, sizeof *paths);
  if (!d->inclusive || !d->edges || !paths)
    goto fail;
  d->nedges = g.ne;
  /* inclusive, callees first: incl(s) = excl(s) + sum over its call
   * sites of (share of the callee through that site) * incl(callee) */
  for (uint32_t i = 0; i < d->nnodes; i++) {
    uint32_t s = g.topo[i];
    double v = d->exclusive[s];
    for (size_t k = g.out_start[s]; k < g.out_start[s + 1]; k++) {
      double through = g.frac[k] * d->inclusive[g.e[k].callee];
      d->edges[k] = (gpd_dccg_edge_t){s, g.e[k].callee, g.e[k].call_off, g.frac[k], through};
      v += through;
    }
    d->inclusive[s] = v;
  }
  /* calling contexts the tree would have below root: paths in the DAG,
   * callers first (reverse of topo) */
  paths[d->scc_of[root]] = 1;
  double total = 0;
  for (uint32_t i = d->nnodes; i-- > 0;) {
    uint32_t s = g.topo[i];
    if (paths[s] == 0)
      continue;
    total += paths[s];
    for (size_t k = g.out_start[s]; k < g.out_start[s + 1]; k++) {
      double p = paths[g.e[k].callee] + paths[s];
      paths[g.e[k].callee] = p < 1e300 ? p : 1e300;
    }
  }
  d->paths = total < 1e300 ? total : 1e300;
  err = 0;
fail:
  free(paths);
  gpd__dccg_free(&g);
  if (err < 0) {
    gpd_dccg_free(d);
    return err;
  }
  *out = d;
  return 0;
}

/* query-gpu.c - GPU PC samples (GINST and its stall reasons) in the live
 * Tree and Top replies.  Main thread, under d->lock (inside
 * gpd_query_start), like the rest of the replies.
 *
 * The samples come from each process's running totals per (function,
 * stall reason) (pcsample.c, gpd_pcsample_totals).  Continuous sampling
 * does not tie a sample to a launch, so a function's samples are shared
 * out over the kernel nodes of that process with the same mangled name in
 * the ratio of their GKER time (equal shares when no GKER is known), as
 * `gpuprof report` does for a saved profile (cli/report-gpu.c).  Samples of
 * a function with no kernel node in the process (no launch recorded) are
 * not shown live.  The reply carries vendor stall-reason names; the CLI
 * maps them to GINST:STL_* (analyzer/stall.c), because the daemon's
 * metric pool holds only metric ids below 64 and GINST comes after those.
 *
 * Visibility is the tree's own: only processes the request selected and
 * the peer may see are read (the caller passes the merge view or the
 * selected profiles).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gpuprof/hash.h"
#include "gpuprof/metric.h"

#include "map.h"
#include "merge.h"
#include "pcsample.h"
#include "query-internal.h"

/* Distinct stall reasons kept per kernel node: CUPTI has about 30. */
#define QG_MAX_REASONS 64u

typedef struct qg_acc_s {
  uint32_t node; /* merged index (tree) */
  uint32_t n;
  const char *reason[QG_MAX_REASONS]; /* profile strings: valid under d->lock */
  double v[QG_MAX_REASONS];
} qg_acc_t;

static void acc_add(qg_acc_t *a, const char *reason, double v) {
  if (reason == NULL)
    reason = "";
  for (uint32_t i = 0; i < a->n; i++)
    if (strcmp(a->reason[i], reason) == 0) {
      a->v[i] += v;
      return;
    }
  if (a->n < QG_MAX_REASONS) {
    a->reason[a->n] = reason;
    a->v[a->n++] = v;
  }
}

/* The accumulator's reasons as reply messages, in the arena. */
static Gpuprof__StallSamples **acc_msgs(const qg_acc_t *a, size_t *n) {
  *n = 0;
  Gpuprof__StallSamples **o = gpd__query_calloc(a->n + 1, sizeof *o);
  for (uint32_t i = 0; o && i < a->n; i++) {
    Gpuprof__StallSamples *s = gpd__query_alloc(sizeof *s);
    if (s == NULL)
      break;
    gpuprof__stall_samples__init(s);
    s->reason = gpd__query_strdup(a->reason[i]);
    s->samples = a->v[i];
    o[(*n)++] = s;
  }
  return o;
}

static uint64_t name_key(const char *s) {
  uint64_t h = gpd_hash64(s, strlen(s), 0x67696e7374ull);
  return h ? h : 1;
}

/* One function of a profile's totals: its name, its kernel nodes' GKER
 * sum and count, and its totals (indexes into tot, contiguous in `order`). */
typedef struct qg_func_s {
  const char *name;
  double gker;
  uint32_t nk, first, n;
} qg_func_t;

/* Add profile p's samples to the kernel nodes of merge view m that the
 * reply holds (depth <= max_depth, 0 all).  accs/byn: the accumulators and
 * merged index + 1 -> accumulator index + 1.  0 or -ENOMEM. */
static int tree_profile(const gpd_merge_t *m, const gpd_profile_t *p, uint32_t max_depth,
                        qg_acc_t **accs, uint32_t *nacc, uint32_t *capacc, gpd_map_t *byn) {
  uint32_t nt;
  const gpd_pcs_total_t *tot = gpd_pcsample_totals(p->pcs, &nt);
  if (nt == 0)
    return 0;
  int err = -ENOMEM;
  gpd_map_t fmap = {0}; /* name key -> func index + 1 */
  qg_func_t *fn = calloc(nt, sizeof *fn);
  uint32_t *tf = malloc(nt * sizeof *tf), *order = malloc(nt * sizeof *order), nf = 0;
  if (fn == NULL || tf == NULL || order == NULL)
    goto out;
  for (uint32_t k = 0; k < nt; k++) {
    const char *name = gpd_profile_string(p, tot[k].func);
    tf[k] = UINT32_MAX;
    if (name == NULL)
      continue;
    int created;
    uint64_t *v = gpd_map_upsert(&fmap, name_key(name), &created);
    if (v == NULL)
      goto out;
    if (created) {
      fn[nf].name = name;
      *v = ++nf;
    } else if (strcmp(fn[*v - 1].name, name) != 0) {
      continue; /* another name with the same 64-bit hash: not shown */
    }
    tf[k] = (uint32_t)*v - 1;
    fn[tf[k]].n++;
  }
  /* totals grouped by function (counting sort) */
  uint32_t at = 0;
  for (uint32_t f = 0; f < nf; f++) {
    fn[f].first = at;
    at += fn[f].n;
    fn[f].n = 0;
  }
  for (uint32_t k = 0; k < nt; k++)
    if (tf[k] != UINT32_MAX) {
      qg_func_t *f = &fn[tf[k]];
      order[f->first + f->n++] = k;
    }
  /* pass 1: GKER of each function's kernel nodes */
  for (uint32_t i = 0; i < p->nnodes; i++) {
    const gpd_node_t *n = &p->nodes[i];
    const char *raw = n->kind == GPD_NODE_KERNEL ? gpd_profile_label(p, n->raw) : NULL;
    uint64_t v;
    if (raw == NULL || !gpd_map_get(&fmap, name_key(raw), &v) || strcmp(fn[v - 1].name, raw))
      continue;
    fn[v - 1].gker += gpd_profile_node_metric(p, n, GPD_M_GKER);
    fn[v - 1].nk++;
  }
  /* pass 2: each kernel node's share onto its merged node */
  for (uint32_t i = 0; i < p->nnodes; i++) {
    const gpd_node_t *n = &p->nodes[i];
    const char *raw = n->kind == GPD_NODE_KERNEL ? gpd_profile_label(p, n->raw) : NULL;
    uint64_t v;
    if (raw == NULL || !gpd_map_get(&fmap, name_key(raw), &v) || strcmp(fn[v - 1].name, raw))
      continue;
    const qg_func_t *f = &fn[v - 1];
    uint32_t j = gpd_merge_index(m, p, i);
    if (j == GPD_NONE || !gpd_merge_in_view(m, j) || (max_depth && m->nodes[j].depth > max_depth))
      continue;
    double w = f->gker > 0 ? gpd_profile_node_metric(p, n, GPD_M_GKER) / f->gker : 1.0 / f->nk;
    if (w == 0)
      continue;
    int created;
    uint64_t *a = gpd_map_upsert(byn, (uint64_t)j + 1, &created);
    if (a == NULL)
      goto out;
    if (created) {
      if (*nacc == *capacc && gpd__query_grow((void **)accs, capacc, sizeof **accs, 16) < 0) {
        gpd_map_del_ref(byn, a);
        goto out;
      }
      (*accs)[*nacc].node = j;
      (*accs)[*nacc].n = 0;
      *a = ++*nacc;
    }
    qg_acc_t *acc = &(*accs)[*a - 1];
    for (uint32_t q = 0; q < f->n; q++) {
      const gpd_pcs_total_t *t = &tot[order[f->first + q]];
      acc_add(acc, gpd_profile_string(p, t->stall), (double)t->samples * w);
    }
  }
  err = 0;
out:
  gpd_map_free(&fmap);
  free(fn);
  free(tf);
  free(order);
  return err;
}

int gpd__query_tree_gpu(const gpd_merge_t *m, uint32_t max_depth, Gpuprof__TreeReply *t) {
  qg_acc_t *accs = NULL;
  uint32_t nacc = 0, capacc = 0;
  gpd_map_t byn = {0};
  int err = 0;
  for (uint32_t i = 0; i < m->nvprofs && err == 0; i++)
    err = tree_profile(m, m->vprofs[i], max_depth, &accs, &nacc, &capacc, &byn);
  if (err == 0 && nacc) {
    t->gpu_samples = gpd__query_calloc(nacc, sizeof *t->gpu_samples);
    for (uint32_t i = 0; t->gpu_samples && i < nacc; i++) {
      Gpuprof__KernelSamples *k = gpd__query_alloc(sizeof *k);
      if (k == NULL) {
        err = -ENOMEM;
        break;
      }
      gpuprof__kernel_samples__init(k);
      k->node = m->view[accs[i].node].out;
      k->stalls = acc_msgs(&accs[i], &k->n_stalls);
      t->gpu_samples[t->n_gpu_samples++] = k;
    }
    if (t->gpu_samples == NULL)
      err = -ENOMEM;
  }
  gpd_map_free(&byn);
  free(accs);
  return err;
}

int gpd__query_top_gpu(const gpd_profile_t *const *profs, size_t nprofs, const char *raw,
                       Gpuprof__TopEntry *e) {
  qg_acc_t *acc = calloc(1, sizeof *acc);
  if (acc == NULL)
    return -ENOMEM;
  for (size_t i = 0; i < nprofs; i++) {
    uint32_t nt, miss = 0, have_miss = 0; /* a func id known not to match */
    const gpd_pcs_total_t *tot = gpd_pcsample_totals(profs[i]->pcs, &nt);
    for (uint32_t k = 0; k < nt; k++) {
      if (have_miss && tot[k].func == miss)
        continue;
      const char *name = gpd_profile_string(profs[i], tot[k].func);
      if (name == NULL || strcmp(name, raw) != 0) {
        miss = tot[k].func;
        have_miss = 1;
        continue;
      }
      acc_add(acc, gpd_profile_string(profs[i], tot[k].stall), (double)tot[k].samples);
    }
  }
  int err = 0;
  if (acc->n && (e->stalls = acc_msgs(acc, &e->n_stalls)) == NULL)
    err = -ENOMEM;
  free(acc);
  return err;
}

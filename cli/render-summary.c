/* render-summary.c - the CLI's summaries by name: the first tables of
 * `report` (kernels by GKER, the other GPU operations by GPUOP, each
 * aggregated over the whole tree) and the summary `record` prints when
 * its profile is written.  Times are stored in ns and shown in seconds.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "gpuprof/metric.h"

typedef struct kagg_s {
  char *label; /* owned */
  double time, count;
} kagg_t;

static int kagg_cmp_label(const void *a, const void *b) {
  return strcmp(((const kagg_t *)a)->label, ((const kagg_t *)b)->label);
}
static int kagg_cmp_val(const void *a, const void *b) {
  const kagg_t *x = a, *y = b;
  if (x->time != y->time) return x->time > y->time ? -1 : 1;
  return strcmp(x->label, y->label);
}

/* Rows of t aggregated by displayed name, heaviest first: kernels (GKER,
 * GKER:COUNT; short names unless long) or, ops != 0, the GPU operations
 * that are not kernels (placeholders: GPUOP and their count).  *n rows;
 * NULL when there are none. */
static kagg_t *aggregate(const gpd_tree_t *t, int ops, int long_names, size_t *n) {
  kagg_t *k = calloc(t->n + 1, sizeof(*k));
  size_t nk = 0, nu = 0;
  char full[4096], name[1024];
  if (!k) abort();
  for (size_t i = 0; i < t->n; i++) {
    const gpd_tnode_t *nd = &t->nodes[i];
    if (nd->parent == SIZE_MAX) continue;
    if (!ops && nd->kind == GPD_NODE_KERNEL) {
      gpd_render_node_name(full, sizeof(full), nd);
      if (long_names)
        snprintf(name, sizeof(name), "%.1023s", full);
      else
        gpd_render_short_name(name, sizeof(name), full);
      k[nk] = (kagg_t){gpd_cli_strdup(name), gpd_tree_mvec_get(&nd->incl, GPD_M_GKER),
                       gpd_tree_mvec_get(&nd->incl, GPD_M_GKER_COUNT)};
    } else if (ops && nd->kind == GPD_NODE_PLACEHOLDER && strcmp(nd->label, "<gpu kernel>")) {
      k[nk] = (kagg_t){gpd_cli_strdup(nd->label), gpd_tree_mvec_get(&nd->excl, GPD_M_GPUOP), gpd_render_op_count(&nd->excl)};
    } else {
      continue;
    }
    if (k[nk].time == 0 && k[nk].count == 0)
      free(k[nk].label);
    else
      nk++;
  }
  qsort(k, nk, sizeof(*k), kagg_cmp_label);
  for (size_t i = 0; i < nk; i++) {
    if (nu && !strcmp(k[nu - 1].label, k[i].label)) {
      k[nu - 1].time += k[i].time;
      k[nu - 1].count += k[i].count;
      free(k[i].label);
    } else {
      k[nu++] = k[i];
    }
  }
  qsort(k, nu, sizeof(*k), kagg_cmp_val);
  *n = nu;
  if (nu == 0) {
    free(k);
    return NULL;
  }
  return k;
}

static void kagg_free(kagg_t *k, size_t n) {
  for (size_t i = 0; i < n; i++) free(k[i].label);
  free(k);
}

void gpd_render_summaries(FILE *f, const gpd_tree_t *t, const gpd_render_opts_t *o) {
  static const char *const title[2] = {"Kernels (GKER)", "GPU operations other than kernels: copies, memsets, "
                                                         "allocations, synchronizations (host waits) (GPUOP)"};
  for (int ops = 0; ops < 2; ops++) {
    size_t n = 0, top = o->wide ? SIZE_MAX : 20;
    kagg_t *k = aggregate(t, ops, o->long_names, &n);
    double total = 0;
    for (size_t i = 0; i < n; i++) total += k[i].time;
    if (n == 0) continue;
    fprintf(f, "%s: %zu name%s, %.6f s\n", title[ops], n, n == 1 ? "" : "s", total / 1e9);
    fprintf(f, "  %12s %7s %10s %12s  %s\n", "time (s)", "time %", "count", "avg (us)", ops ? "operation" : "kernel");
    for (size_t i = 0; i < n && i < top; i++)
      fprintf(f, "  %12.6f %6.1f%% %10.0f %12.3f  %s\n", k[i].time / 1e9, total > 0 ? 100.0 * k[i].time / total : 0.0,
              k[i].count, k[i].count > 0 ? k[i].time / k[i].count / 1e3 : 0.0, k[i].label);
    if (n > top) fprintf(f, "  (%zu more; --wide shows all)\n", n - top);
    fputc('\n', f);
    kagg_free(k, n);
  }
}

void gpd_render_summary(FILE *f, const gpd_tree_t *t, const char *path) {
  const gpd_tnode_t *root = t->root != SIZE_MAX ? &t->nodes[t->root] : NULL;
  double gpuop = root ? gpd_tree_mvec_get(&root->incl, GPD_M_GPUOP) : 0;
  double ops = root ? gpd_render_op_count(&root->incl) : 0;
  unsigned long long drops = 0;
  for (size_t i = 0; i < t->nprocs; i++) drops += t->procs[i].drops;
  fprintf(f, "gpuprof: profile written to %s\n", path);
  fprintf(f, "gpuprof: %zu process%s, %.0f GPU ops, GPUOP %.4g s, %llu dropped records\n", t->nprocs,
          t->nprocs == 1 ? "" : "es", ops, gpuop / 1e9, drops);
  size_t nu = 0;
  kagg_t *k = aggregate(t, 0, 0, &nu); /* short names: a PyTorch kernel's full name is ~5 000 characters */
  if (nu) {
    double gker = root ? gpd_tree_mvec_get(&root->incl, GPD_M_GKER) : 0;
    fprintf(f, "gpuprof: top kernels by GKER:\n");
    for (size_t i = 0; i < nu && i < 5; i++) {
      char pv[16];
      gpd_render_pct(pv, sizeof(pv), k[i].time, gker);
      char lab[1024];
      fprintf(f, "gpuprof:   %10.4g s %6s %8.0fx  %s\n", k[i].time / 1e9, pv, k[i].count,
              gpd_text_line(lab, sizeof lab, k[i].label));
    }
    kagg_free(k, nu);
  }
  for (size_t i = 0; i < t->nprocs; i++)
    for (uint32_t j = 0; j < t->procs[i].nbackends; j++) {
      const gpd_tbackend_t *b = &t->procs[i].backends[j];
      if (!b->enabled)
        fprintf(f, "gpuprof: back end %s disabled in pid %d: %s (code %d)\n", b->api, t->procs[i].pid,
                b->reason && b->reason[0] ? b->reason : "no reason given", b->code);
    }
  for (size_t i = 0; i < t->nprocs; i++)
    if (t->procs[i].error && t->procs[i].error[0])
      fprintf(f, "gpuprof: pid %d: %s\n", t->procs[i].pid, t->procs[i].error);
}

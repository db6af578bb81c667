/* report-stats.c - `gpuprof report --stats`: the statistics a merged file
 * keeps per (context, metric) over its processes (analyzer/mout.c,
 * docs/ANALYZER.md), as a table of the imbalanced contexts: those that
 * hold at least 1 % of the metric's total, highest coefficient of
 * variation first (the load-imbalance view of the HPCToolkit manual's
 * summary statistics).
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "gpuprof/error.h"
#include "gpuprof/metric.h"
#include "store-read.h"

#define HEAVY_FRACTION 0.01

typedef struct stats_ctx_s {
  FILE *f;
  const gpd_tree_t *t;
  unsigned metric;
  int rows;
} stats_ctx_t;

static void where(char *buf, size_t n, const gpd_store_at_t *a) {
  if (a->rank >= 0)
    snprintf(buf, n, "rank %d", a->rank);
  else
    snprintf(buf, n, "%s:%d", a->hostname ? a->hostname : "?", a->pid);
}

static int on_stat(void *c, const gpd_store_stat_t *s) {
  stats_ctx_t *x = c;
  const double val[5] = {s->sum, s->mean, s->stddev, s->min, s->max};
  char v[5][32], at_min[64], at_max[64], name[600], a[256], b[256];
  for (int i = 0; i < 5; i++) gpd_render_value(v[i], sizeof(v[i]), x->metric, val[i]);
  where(at_min, sizeof(at_min), &s->at_min);
  where(at_max, sizeof(at_max), &s->at_max);
  long i = gpd_tree_find(x->t, s->context);
  const gpd_tnode_t *nd = i >= 0 ? &x->t->nodes[i] : NULL;
  const gpd_tnode_t *up = nd && nd->parent != SIZE_MAX ? &x->t->nodes[nd->parent] : NULL;
  /* spelled as the tree spells them (module+offset without a symbol) */
  if (nd) gpd_render_node_name(a, sizeof(a), nd);
  if (up) gpd_render_node_name(b, sizeof(b), up);
  snprintf(name, sizeof(name), "%s%s%s", nd ? a : "?", up ? "  <- " : "", up ? b : "");
  fprintf(x->f, "%7.3f %11s %11s %11s %11s %-14s %11s %-14s  %s\n", s->cv, v[0], v[1], v[2], v[3], at_min, v[4],
          at_max, name);
  x->rows++;
  return 0;
}

int gpd_report_stats(FILE *f, const gpd_tree_t *t, const char *path, unsigned metric, unsigned top, char *err,
                     size_t errn) {
  struct sqlite3 *db = NULL;
  stats_ctx_t x = {f, t, metric, 0};
  int r;
  /* the loader has checked the file; merged files have no WAL, so a
   * read-only open creates nothing beside it */
  if ((r = gpd_store_file_open(path, &db, err, errn)) < 0) return r;
  /* not a merged file: no table, no heading; the reader says why */
  if (!gpd_store_file_has_table(db, "stat")) {
    r = gpd_store_metric_imbalance(db, metric, HEAVY_FRACTION, top, on_stat, &x, path, err, errn);
    gpd_store_file_close(db);
    return r < 0 ? r : GPD_ESTORE;
  }
  fprintf(f, "Imbalance of %s over the processes of %s (contexts with >= 1%% of the total, highest CV first):\n",
          gpd_metric_desc(metric)->name, path);
  fprintf(f, "%7s %11s %11s %11s %11s %-14s %11s %-14s  %s\n", "CV", "sum", "mean", "stddev", "min", "(at)", "max",
          "(at)", "context");
  r = gpd_store_metric_imbalance(db, metric, HEAVY_FRACTION, top, on_stat, &x, path, err, errn);
  if (!x.rows && !r) fprintf(f, "  (no context has a non-zero %s)\n", gpd_metric_desc(metric)->name);
  gpd_store_file_close(db);
  return r;
}

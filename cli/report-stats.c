/* report-stats.c - `gpuprof report --stats`: the statistics a merged file
 * keeps per (context, metric) over its processes (analyzer/mout.c,
 * docs/ANALYZER.md), as a table of the imbalanced contexts: those that
 * hold at least 1 % of the metric's total, highest coefficient of
 * variation first (the load-imbalance view of the HPCToolkit manual's
 * summary statistics).
 */
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "analyzer.h"
#include "cli.h"
#include "gpuprof/error.h"
#include "gpuprof/metric.h"

#define HEAVY_FRACTION 0.01

static void where(char *buf, size_t n, sqlite3_stmt *st, int c) {
  /* columns c: profile id, rank (-1 or NULL: not an MPI rank), hostname, pid */
  if (sqlite3_column_type(st, c + 1) != SQLITE_NULL && sqlite3_column_int(st, c + 1) >= 0)
    snprintf(buf, n, "rank %d", sqlite3_column_int(st, c + 1));
  else
    snprintf(buf, n, "%s:%d", sqlite3_column_text(st, c + 2) ? (const char *)sqlite3_column_text(st, c + 2) : "?",
             sqlite3_column_int(st, c + 3));
}

int gpd_report_stats(FILE *f, const gpd_tree_t *t, const char *path, unsigned metric, unsigned top, char *err,
                     size_t errn) {
  sqlite3 *db = NULL;
  sqlite3_stmt *st = NULL;
  int r = 0, rc, rows = 0;
  /* the loader has checked the file; merged files have no WAL, so a
   * read-only open creates nothing beside it */
  if ((r = gpd_profile_open(path, &db, err, errn)) < 0) return r;
  if (sqlite3_prepare_v2(db,
                         "WITH tot AS (SELECT TOTAL(sum) AS s FROM stat WHERE metric_id = ?1) "
                         "SELECT s.context_id, s.n, s.sum, s.mean, s.stddev, s.cv, s.min, s.max, "
                         "  s.min_profile, a.rank, a.hostname, a.pid, s.max_profile, b.rank, b.hostname, b.pid "
                         "FROM stat s, tot LEFT JOIN profile a ON a.id = s.min_profile "
                         "  LEFT JOIN profile b ON b.id = s.max_profile "
                         "WHERE s.metric_id = ?1 AND s.sum > 0 AND s.sum >= tot.s * ?2 "
                         "ORDER BY s.cv DESC, s.sum DESC, s.context_id LIMIT ?3",
                         -1, &st, NULL) != SQLITE_OK) {
    snprintf(err, errn, "%s: no statistics (%s): only `gpuprof merge` output has them", path,
             db ? sqlite3_errmsg(db) : "out of memory");
    sqlite3_close(db);
    return GPD_ESTORE;
  }
  sqlite3_bind_int(st, 1, (int)metric);
  sqlite3_bind_double(st, 2, HEAVY_FRACTION);
  sqlite3_bind_int(st, 3, (int)top);
  fprintf(f, "Imbalance of %s over the processes of %s (contexts with >= 1%% of the total, highest CV first):\n",
          gpd_metric_desc(metric)->name, path);
  fprintf(f, "%7s %11s %11s %11s %11s %-14s %11s %-14s  %s\n", "CV", "sum", "mean", "stddev", "min", "(at)", "max",
          "(at)", "context");
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    static const int col[5] = {2, 3, 4, 6, 7}; /* sum, mean, stddev, min, max */
    char v[5][32], at_min[64], at_max[64], name[600], a[256], b[256];
    for (int i = 0; i < 5; i++) gpd_render_value(v[i], sizeof(v[i]), metric, sqlite3_column_double(st, col[i]));
    where(at_min, sizeof(at_min), st, 8);
    where(at_max, sizeof(at_max), st, 12);
    long i = gpd_tree_find(t, (uint64_t)sqlite3_column_int64(st, 0));
    const gpd_tnode_t *nd = i >= 0 ? &t->nodes[i] : NULL;
    const gpd_tnode_t *up = nd && nd->parent != SIZE_MAX ? &t->nodes[nd->parent] : NULL;
    /* spelled as the tree spells them (module+offset without a symbol) */
    if (nd) gpd_render_node_name(a, sizeof(a), nd);
    if (up) gpd_render_node_name(b, sizeof(b), up);
    snprintf(name, sizeof(name), "%s%s%s", nd ? a : "?", up ? "  <- " : "", up ? b : "");
    fprintf(f, "%7.3f %11s %11s %11s %11s %-14s %11s %-14s  %s\n", sqlite3_column_double(st, 5), v[0], v[1], v[2],
            v[3], at_min, v[4], at_max, name);
    rows++;
  }
  if (rc != SQLITE_DONE) r = GPD_ESTORE, snprintf(err, errn, "%s: %s", path, sqlite3_errmsg(db));
  if (!rows && !r) fprintf(f, "  (no context has a non-zero %s)\n", gpd_metric_desc(metric)->name);
  sqlite3_finalize(st);
  sqlite3_close(db);
  return r;
}

/* bench-dccg.c - GPU calling contexts of a large generated call graph:
 * the directed calling-context graph (analyzer/dccg.c) against the tree
 * form (analyzer/gcct.c) on the same input, in one run.
 *
 * The graph: 2 000 functions in 20 layers of 100; the kernel calls 10 of
 * the first layer; every function calls one random function of the next
 * layer and, with probability q, a second one; q is raised until the
 * graph has >= 500 000 calling contexts (the size "Efficiently
 * representing CPU-GPU performance" (2025) reports for Mercury, where a
 * tree explodes).  Samples and call weights are random.  Prints a table:
 * time (median of 5) and the bytes each form holds.
 * Usage: bench-dccg [-n FUNCTIONS_PER_LAYER] [-p MIN_PATHS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpu-analysis.h"

#define LAYERS 20

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (uint32_t)(rng >> 11);
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static size_t gen(uint32_t width, double q, gpd_gcall_t *e, double *samples) {
  uint32_t n = 1 + LAYERS * width;
  size_t ne = 0;
  rng = 0x9e3779b97f4a7c15ull;
  for (uint32_t f = 0; f < n; f++)
    samples[f] = rnd() % 1000;
  for (uint32_t i = 0; i < 10; i++)
    e[ne++] = (gpd_gcall_t){0, 1 + i * (width / 10), 16 * i, 1 + rnd() % 100};
  for (uint32_t l = 0; l + 1 < LAYERS; l++)
    for (uint32_t i = 0; i < width; i++) {
      uint32_t f = 1 + l * width + i;
      uint32_t next = 1 + (l + 1) * width;
      e[ne++] = (gpd_gcall_t){f, next + rnd() % width, 16, 1 + rnd() % 100};
      if ((rnd() % 1000) < q * 1000)
        e[ne++] = (gpd_gcall_t){f, next + rnd() % width, 32, 1 + rnd() % 100};
    }
  return ne;
}

int main(int argc, char **argv) {
  uint32_t width = 100;
  double min_paths = 500000;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "-n"))
      width = (uint32_t)atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "-p"))
      min_paths = atof(argv[i + 1]);
  }
  if (width < 10)
    width = 10;
  uint32_t n = 1 + LAYERS * width;
  gpd_gcall_t *e = malloc((10 + 2 * (size_t)LAYERS * width) * sizeof *e);
  double *samples = malloc(n * sizeof *samples);
  if (!e || !samples)
    return 1;
  size_t ne = 0;
  double q = 0.30;
  gpd_dccg_t *d = NULL;
  for (; q <= 1.0; q += 0.01) {
    ne = gen(width, q, e, samples);
    if (gpd_dccg_build(n, 0, samples, e, ne, &d) < 0)
      return 1;
    double p = d->paths;
    gpd_dccg_free(d);
    if (p >= min_paths)
      break;
  }
  double t_dccg[5], t_tree[5], paths = 0, incl = 0, tree_total = 0;
  size_t dccg_bytes = 0, tree_nodes = 0, kernel_nodes = 0;
  for (int r = 0; r < 5; r++) {
    double t0 = now();
    if (gpd_dccg_build(n, 0, samples, e, ne, &d) < 0)
      return 1;
    t_dccg[r] = now() - t0;
    paths = d->paths;
    incl = d->inclusive[d->scc_of[0]];
    dccg_bytes = d->nnodes * (sizeof *d->scc_of + 2 * sizeof(double)) + d->nedges * sizeof *d->edges;
    gpd_dccg_free(d);
    gpd_gcct_t *t;
    t0 = now();
    int rc = gpd_gcct_build(n, 0, samples, e, ne, 50u * 1000 * 1000, &t);
    t_tree[r] = now() - t0;
    if (rc < 0)
      return 1;
    tree_nodes = t->nnodes;
    tree_total = 0;
    /* the kernel's subtree: nodes up to the first unreached root */
    kernel_nodes = 0;
    for (size_t i = 0; i < t->nnodes && (i == 0 || t->nodes[i].parent >= 0); i++) {
      tree_total += t->nodes[i].samples;
      kernel_nodes++;
    }
    gpd_gcct_free(t);
  }
  qsort(t_dccg, 5, sizeof(double), cmp);
  qsort(t_tree, 5, sizeof(double), cmp);
  printf("bench-dccg: %u functions, %zu call edges, q=%.2f, %.0f calling contexts\n", n, ne, q, paths);
  printf("%-28s %12s %14s %16s\n", "form", "time (ms)", "nodes", "bytes");
  printf("%-28s %12.3f %14u %16zu\n", "DCCG (graph, dccg.c)", t_dccg[2] * 1e3, (unsigned)n, dccg_bytes);
  printf("%-28s %12.3f %14zu %16zu\n", "tree (gcct.c, baseline)", t_tree[2] * 1e3, tree_nodes,
         tree_nodes * sizeof(gpd_gctx_t));
  printf("tree: %zu nodes below the kernel (sampled paths), the rest below functions the kernel\n"
         "does not reach (extra roots)\n", kernel_nodes);
  printf("same total samples below the kernel: DCCG %.0f, tree %.0f (%s)\n", incl, tree_total,
         incl - tree_total < 1e-6 * incl && tree_total - incl < 1e-6 * incl ? "equal" : "DIFFER");
  free(e);
  free(samples);
  return 0;
}

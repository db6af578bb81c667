/* test-pyview.c - the Python view of a tree (cli/pyview.c,
 * gpd_tree_python; docs/PYTHON.md "The Python view") on a hand-made tree
 * with exact values:
 *
 *   root
 *     frame _start                       CPUTIME 5 (own)
 *       python main (s.py:9)
 *         frame ffi_call                 CPUTIME 2 (own)
 *           <gpu kernel> > k             GKER 3
 *       frame PyEval
 *         python main (s.py:9)
 *           frame other
 *             <gpu kernel> > k           GKER 4
 *             <backward> > <gpu kernel> > k   GKER 6
 *     frame clone > frame start_thread > <gpu kernel> > k   GKER 1
 *
 * gives root (CPUTIME 5) > main (CPUTIME 2) > <gpu kernel> > k (7) and
 * main > <backward> > <gpu kernel> > k (6), and root > <gpu kernel> > k
 * (1): native frames folded, their own values on the nearest kept
 * ancestor, equal siblings merged, inclusive values summed again.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "gpuprof/metric.h"

static int fails;
#define CHECK(c, ...)                                                                              \
  do {                                                                                             \
    if (!(c)) {                                                                                    \
      printf("FAIL %s:%d: ", __FILE__, __LINE__);                                                  \
      printf(__VA_ARGS__);                                                                         \
      printf("\n");                                                                                \
      fails++;                                                                                     \
    }                                                                                              \
  } while (0)

static uint64_t next_id = 100;

static uint64_t add(gpd_tree_t *t, uint64_t parent, int kind, const char *label, unsigned metric, double v) {
  uint64_t id = next_id++;
  long i = gpd_tree_node_add(t, id, parent, kind, label, "", 0, kind == GPD_NODE_KERNEL ? label : "");
  if (i >= 0 && v)
    gpd_mvec_add(&t->nodes[i].excl, metric, v);
  return id;
}

/* The child of node i labelled label, or -1. */
static long kid(const gpd_tree_t *t, long i, const char *label) {
  if (i < 0)
    return -1;
  for (uint32_t k = 0; k < t->nodes[i].nkids; k++)
    if (strcmp(t->nodes[t->nodes[i].kids[k]].label, label) == 0)
      return (long)t->nodes[i].kids[k];
  return -1;
}

int main(void) {
  gpd_tree_t t;
  gpd_tree_init(&t);
  const unsigned K = GPD_M_GKER, C = GPD_M_CPUTIME;
  uint64_t root = add(&t, 0, GPD_NODE_ROOT, "<root>", 0, 0);
  uint64_t s = add(&t, root, GPD_NODE_FRAME, "_start", C, 5);
  uint64_t m1 = add(&t, s, GPD_NODE_PYTHON, "main (s.py:9)", 0, 0);
  uint64_t ffi = add(&t, m1, GPD_NODE_FRAME, "ffi_call", C, 2);
  add(&t, add(&t, ffi, GPD_NODE_PLACEHOLDER, "<gpu kernel>", 0, 0), GPD_NODE_KERNEL, "k", K, 3);
  uint64_t ev = add(&t, s, GPD_NODE_FRAME, "PyEval", 0, 0);
  uint64_t m2 = add(&t, ev, GPD_NODE_PYTHON, "main (s.py:9)", 0, 0);
  uint64_t o = add(&t, m2, GPD_NODE_FRAME, "other", 0, 0);
  add(&t, add(&t, o, GPD_NODE_PLACEHOLDER, "<gpu kernel>", 0, 0), GPD_NODE_KERNEL, "k", K, 4);
  uint64_t b = add(&t, o, GPD_NODE_PLACEHOLDER, "<backward>", 0, 0);
  add(&t, add(&t, b, GPD_NODE_PLACEHOLDER, "<gpu kernel>", 0, 0), GPD_NODE_KERNEL, "k", K, 6);
  uint64_t st = add(&t, add(&t, root, GPD_NODE_FRAME, "clone", 0, 0), GPD_NODE_FRAME, "start_thread", 0, 0);
  add(&t, add(&t, st, GPD_NODE_PLACEHOLDER, "<gpu kernel>", 0, 0), GPD_NODE_KERNEL, "k", K, 1);
  gpd_tproc_t *p = gpd_tree_proc_new(&t);
  p->pid = 42;
  CHECK(gpd_tree_finish(&t, K) == 0, "finish");
  CHECK(gpd_tree_python(&t, K) == 0, "python view");

  size_t frames = 0;
  for (size_t i = 0; i < t.n; i++)
    frames += t.nodes[i].kind == GPD_NODE_FRAME;
  CHECK(frames == 0, "%zu native frames left", frames);
  /* root, main, its <gpu kernel> and k, <backward> with <gpu kernel> and
   * k, root's <gpu kernel> and k */
  CHECK(t.n == 9, "%zu nodes, want 9", t.n);
  long r = (long)t.root;
  CHECK(gpd_mvec_get(&t.nodes[r].excl, C) == 5, "root CPUTIME excl %g, want 5", gpd_mvec_get(&t.nodes[r].excl, C));
  CHECK(gpd_mvec_get(&t.nodes[r].incl, K) == 14, "root GKER incl %g", gpd_mvec_get(&t.nodes[r].incl, K));
  CHECK(gpd_mvec_get(&t.nodes[r].incl, C) == 7, "root CPUTIME incl %g", gpd_mvec_get(&t.nodes[r].incl, C));
  long mn = kid(&t, r, "main (s.py:9)");
  CHECK(mn >= 0 && t.nodes[r].nkids == 2, "root > main, root has %u kids", t.nodes[r].nkids);
  CHECK(mn >= 0 && gpd_mvec_get(&t.nodes[mn].excl, C) == 2, "main CPUTIME excl (ffi_call's)");
  CHECK(mn >= 0 && gpd_mvec_get(&t.nodes[mn].incl, K) == 13, "main GKER incl");
  long k1 = kid(&t, kid(&t, mn, "<gpu kernel>"), "k");
  CHECK(k1 >= 0 && gpd_mvec_get(&t.nodes[k1].excl, K) == 7, "main > <gpu kernel> > k merged: 7");
  long k2 = kid(&t, kid(&t, kid(&t, mn, "<backward>"), "<gpu kernel>"), "k");
  CHECK(k2 >= 0 && gpd_mvec_get(&t.nodes[k2].excl, K) == 6, "main > <backward> > <gpu kernel> > k: 6");
  long k3 = kid(&t, kid(&t, r, "<gpu kernel>"), "k");
  CHECK(k3 >= 0 && gpd_mvec_get(&t.nodes[k3].excl, K) == 1, "root > <gpu kernel> > k: 1 (a thread without Python)");
  CHECK(t.nprocs == 1 && t.procs[0].pid == 42, "processes moved over");
  gpd_tree_free(&t);
  printf("%s\n", fails ? "FAIL" : "PASS pyview");
  return fails != 0;
}

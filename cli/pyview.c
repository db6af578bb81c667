/* pyview.c - the Python view of a calling-context tree (`report`, `tree`
 * and `export` with --python; docs/PYTHON.md "The Python view"): only
 * Python frames, placeholders (framework operators, `<backward>`,
 * `<graph replay>`, NVTX ranges, `<gpu kernel>`) and the GPU part below
 * them, as py-spy shows Python code; every native frame is folded away.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "gpuprof/hash.h"

/* Id of a kept node below new parent pid: equal (kind, label, module,
 * offset, raw name) below one parent are one node. */
static uint64_t pyview_id(uint64_t pid, const gpd_tnode_t *n) {
  uint64_t h = gpd_hash64(&pid, sizeof pid, (uint64_t)n->kind);
  h = gpd_hash64(n->label, strlen(n->label), h);
  h = gpd_hash64(n->module, strlen(n->module), h);
  h = gpd_hash64(n->raw_name, strlen(n->raw_name), h ^ n->offset);
  return h ? h : 1;
}

static int mvec_add_all(gpd_mvec_t *to, const gpd_mvec_t *from) {
  for (uint32_t j = 0; j < from->n; j++)
    if (gpd_mvec_add(to, from->v[j].id, from->v[j].v) < 0) return -ENOMEM;
  return 0;
}

int gpd_tree_python(gpd_tree_t *t, unsigned sort_metric) {
  if (t->root == SIZE_MAX) return 0;
  gpd_tree_t nt;
  gpd_tree_init(&nt);
  int err = 0;
  /* pre-order: (old node, index of its nearest kept ancestor in nt) */
  size_t *st = malloc(2 * (t->n + 1) * sizeof *st), ns = 0;
  if (!st) return -ENOMEM;
  const gpd_tnode_t *r = &t->nodes[t->root];
  long nr = gpd_tree_node_add(&nt, r->id, 0, r->kind, r->label, r->module, r->offset, r->raw_name);
  if (nr < 0 || (err = mvec_add_all(&nt.nodes[nr].excl, &r->excl)) < 0) {
    err = -ENOMEM;
    goto done;
  }
  for (uint32_t k = 0; k < r->nkids; k++) {
    st[ns++] = r->kids[k];
    st[ns++] = (size_t)nr;
  }
  while (ns) {
    size_t at = st[--ns], i = st[--ns];
    const gpd_tnode_t *n = &t->nodes[i];
    long to = (long)at;
    if (n->kind != GPD_NODE_FRAME) {
      uint64_t pid = nt.nodes[at].id;
      to = gpd_tree_node_add(&nt, pyview_id(pid, n), pid, n->kind, n->label, n->module, n->offset, n->raw_name);
      if (to < 0) {
        err = (int)to;
        goto done;
      }
    }
    /* a folded frame's own values go to its nearest kept ancestor */
    if ((err = mvec_add_all(&nt.nodes[to].excl, &n->excl)) < 0) goto done;
    for (uint32_t k = 0; k < n->nkids; k++) {
      st[ns++] = n->kids[k];
      st[ns++] = (size_t)to;
    }
  }
  /* what describes the tree moves over */
  nt.procs = t->procs;
  nt.nprocs = t->nprocs;
  nt.gpubins = t->gpubins;
  nt.ngpubins = t->ngpubins;
  nt.nhidden = t->nhidden;
  t->procs = NULL;
  t->nprocs = 0;
  t->gpubins = NULL;
  t->ngpubins = 0;
  if ((err = gpd_tree_finish(&nt, sort_metric)) < 0) goto done;
  gpd_tree_free(t);
  *t = nt;
  gpd_tree_init(&nt);
done:
  free(st);
  gpd_tree_free(&nt);
  return err;
}

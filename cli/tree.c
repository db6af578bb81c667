/* tree.c - the CLI's in-memory calling-context tree, shared by `report`
 * (built from SQLite) and the live `tree` (built from a TreeReply).
 *
 * Nodes are kept in one array with an id -> index hash; metrics are
 * sparse vectors.  Inclusive values are the sum of the exclusive values of
 * a node's subtree (FORMATS.md: "inclusive values are computed by summing
 * subtrees").
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "gpuprof/metric.h"

char *gpd_cli_strdup(const char *s) {
  char *r = strdup(s ? s : "");
  if (!r) abort(); /* CLI: out of memory is fatal */
  return r;
}

int gpd_tree_mvec_add(gpd_mvec_t *m, uint32_t id, double x) {
  uint32_t lo = 0, hi = m->n;
  while (lo < hi) {
    uint32_t mid = (lo + hi) / 2;
    if (m->v[mid].id < id)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo < m->n && m->v[lo].id == id) {
    m->v[lo].v += x;
    return 0;
  }
  if (m->n == m->cap) {
    uint32_t cap = m->cap ? m->cap * 2 : 4;
    gpd_mval_t *v = realloc(m->v, cap * sizeof(*v));
    if (!v) return -ENOMEM;
    m->v = v;
    m->cap = cap;
  }
  memmove(&m->v[lo + 1], &m->v[lo], (m->n - lo) * sizeof(*m->v));
  m->v[lo].id = id;
  m->v[lo].v = x;
  m->n++;
  return 0;
}

double gpd_tree_mvec_get(const gpd_mvec_t *m, uint32_t id) {
  for (uint32_t i = 0; i < m->n; i++)
    if (m->v[i].id == id) return m->v[i].v;
  return 0.0;
}

double gpd_tree_mvec_shown(const gpd_mvec_t *m, uint32_t id) {
  const gpd_metric_desc_t *d = gpd_metric_desc(id);
  double v = gpd_tree_mvec_get(m, id);
  if (d && d->unit == GPD_UNIT_MEAN) {
    double c = gpd_tree_mvec_get(m, GPD_M_GKER_COUNT);
    return c > 0 ? v / c : 0.0;
  }
  return v;
}

void gpd_tree_mvec_free(gpd_mvec_t *m) {
  free(m->v);
  memset(m, 0, sizeof(*m));
}

void gpd_tree_init(gpd_tree_t *t) {
  memset(t, 0, sizeof(*t));
  t->root = SIZE_MAX;
}

static void proc_free(gpd_tproc_t *p) {
  free(p->exe);
  free(p->job_id);
  free(p->step_id);
  free(p->hostname);
  free(p->state);
  free(p->error);
  free(p->source);
  free(p->pcs_state);
  for (uint32_t i = 0; i < p->nbackends; i++) {
    free(p->backends[i].api);
    free(p->backends[i].reason);
  }
  free(p->backends);
}

void gpd_tree_free(gpd_tree_t *t) {
  for (size_t i = 0; i < t->n; i++) {
    gpd_tnode_t *n = &t->nodes[i];
    free(n->label);
    free(n->module);
    free(n->raw_name);
    for (uint32_t j = 0; j < n->nframes; j++) {
      free(n->frames[j].function);
      free(n->frames[j].file);
    }
    free(n->frames);
    free(n->kids);
    gpd_tree_mvec_free(&n->excl);
    gpd_tree_mvec_free(&n->incl);
  }
  free(t->nodes);
  free(t->map);
  for (size_t i = 0; i < t->nprocs; i++) proc_free(&t->procs[i]);
  free(t->procs);
  for (size_t i = 0; i < t->ngpubins; i++) {
    free(t->gpubins[i].hash);
    free(t->gpubins[i].kind);
    free(t->gpubins[i].path);
  }
  free(t->gpubins);
  gpd_tree_init(t);
}

static size_t id_slot(uint64_t id, size_t cap) {
  uint64_t h = id * 0x9e3779b97f4a7c15ull;
  return (size_t)(h ^ (h >> 29)) & (cap - 1);
}

long gpd_tree_find(const gpd_tree_t *t, uint64_t id) {
  if (!t->map_cap) return -1;
  for (size_t s = id_slot(id, t->map_cap);; s = (s + 1) & (t->map_cap - 1)) {
    size_t v = t->map[s];
    if (!v) return -1;
    if (t->nodes[v - 1].id == id) return (long)(v - 1);
  }
}

static int map_grow(gpd_tree_t *t) {
  size_t cap = t->map_cap ? t->map_cap * 2 : 1024;
  size_t *m = calloc(cap, sizeof(*m));
  if (!m) return -ENOMEM;
  for (size_t i = 0; i < t->n; i++) {
    size_t s = id_slot(t->nodes[i].id, cap);
    while (m[s]) s = (s + 1) & (cap - 1);
    m[s] = i + 1;
  }
  free(t->map);
  t->map = m;
  t->map_cap = cap;
  return 0;
}

long gpd_tree_node_add(gpd_tree_t *t, uint64_t id, uint64_t parent_id, int kind, const char *label,
                       const char *module, uint64_t offset, const char *raw_name) {
  long have = gpd_tree_find(t, id);
  if (have >= 0) {
    gpd_tnode_t *n = &t->nodes[have];
    if (!n->label[0] && label && label[0]) {
      free(n->label);
      n->label = gpd_cli_strdup(label);
    }
    return have;
  }
  if ((t->n + 1) * 2 > t->map_cap && map_grow(t) < 0) return -ENOMEM;
  if (t->n == t->cap) {
    size_t cap = t->cap ? t->cap * 2 : 256;
    gpd_tnode_t *v = realloc(t->nodes, cap * sizeof(*v));
    if (!v) return -ENOMEM;
    t->nodes = v;
    t->cap = cap;
  }
  gpd_tnode_t *n = &t->nodes[t->n];
  memset(n, 0, sizeof(*n));
  n->id = id;
  n->parent_id = parent_id;
  n->kind = kind;
  n->label = gpd_cli_strdup(label);
  n->module = gpd_cli_strdup(module);
  n->raw_name = gpd_cli_strdup(raw_name);
  n->offset = offset;
  n->parent = SIZE_MAX;
  size_t s = id_slot(id, t->map_cap);
  while (t->map[s]) s = (s + 1) & (t->map_cap - 1);
  t->map[s] = t->n + 1;
  return (long)t->n++;
}

int gpd_tree_frame_add(gpd_tree_t *t, size_t idx, const char *function, const char *file, uint32_t line,
                       int inlined) {
  gpd_tnode_t *n = &t->nodes[idx];
  gpd_tframe_t *f = realloc(n->frames, (n->nframes + 1) * sizeof(*f));
  if (!f) return -ENOMEM;
  /* A CPU frame is labelled with its physical function, the outermost
   * frame of its inline chain (older stores labelled the innermost). */
  if (n->kind == GPD_NODE_FRAME && n->nframes == 0 && function && function[0] && strcmp(function, "??")) {
    free(n->label);
    n->label = gpd_cli_strdup(function);
  }
  n->frames = f;
  f[n->nframes].function = gpd_cli_strdup(function);
  f[n->nframes].file = gpd_cli_strdup(file);
  f[n->nframes].line = line;
  f[n->nframes].inlined = inlined;
  n->nframes++;
  return 0;
}

gpd_tproc_t *gpd_tree_proc_new(gpd_tree_t *t) {
  gpd_tproc_t *p = realloc(t->procs, (t->nprocs + 1) * sizeof(*p));
  if (!p) return NULL;
  t->procs = p;
  p = &t->procs[t->nprocs++];
  memset(p, 0, sizeof(*p));
  p->rank = p->local_rank = -1;
  return p;
}

gpd_tbackend_t *gpd_tree_backend_new(gpd_tproc_t *p) {
  gpd_tbackend_t *b = realloc(p->backends, (p->nbackends + 1) * sizeof(*b));
  if (!b) return NULL;
  p->backends = b;
  b = &p->backends[p->nbackends++];
  memset(b, 0, sizeof(*b));
  return b;
}

gpd_tgpubin_t *gpd_tree_gpubin_new(gpd_tree_t *t) {
  gpd_tgpubin_t *g = realloc(t->gpubins, (t->ngpubins + 1) * sizeof(*g));
  if (!g) return NULL;
  t->gpubins = g;
  g = &t->gpubins[t->ngpubins++];
  memset(g, 0, sizeof(*g));
  return g;
}

static int kid_add(gpd_tnode_t *p, size_t k) {
  if (p->nkids == p->kcap) {
    uint32_t cap = p->kcap ? p->kcap * 2 : 4;
    size_t *v = realloc(p->kids, cap * sizeof(*v));
    if (!v) return -ENOMEM;
    p->kids = v;
    p->kcap = cap;
  }
  p->kids[p->nkids++] = k;
  return 0;
}

/* qsort has no context argument: the tree being sorted and its key. */
static const gpd_tree_t *sort_tree;
static unsigned sort_metric_id;

static int kid_cmp(const void *a, const void *b) {
  const gpd_tnode_t *x = &sort_tree->nodes[*(const size_t *)a];
  const gpd_tnode_t *y = &sort_tree->nodes[*(const size_t *)b];
  double vx = gpd_tree_mvec_get(&x->incl, sort_metric_id), vy = gpd_tree_mvec_get(&y->incl, sort_metric_id);
  if (vx != vy) return vx > vy ? -1 : 1;
  /* ties: the other main metrics, then label, then id (stable output) */
  vx = gpd_tree_mvec_get(&x->incl, GPD_M_GPUOP);
  vy = gpd_tree_mvec_get(&y->incl, GPD_M_GPUOP);
  if (vx != vy) return vx > vy ? -1 : 1;
  int c = strcmp(x->label, y->label);
  if (c) return c;
  return x->id < y->id ? -1 : x->id > y->id;
}

int gpd_tree_finish(gpd_tree_t *t, unsigned sort_metric) {
  int err = 0;
  size_t *order = NULL;
  long root = -1;
  size_t nroots = 0;

  for (size_t i = 0; i < t->n; i++)
    if (t->nodes[i].parent_id == 0) {
      nroots++;
      root = (long)i;
    }
  if (nroots != 1) {
    /* zero or several parentless nodes: hang them below a synthetic root */
    root = gpd_tree_node_add(t, 0, 0, GPD_NODE_ROOT, "<program root>", "", 0, "");
    if (root < 0) return -ENOMEM;
  }
  t->root = (size_t)root;
  for (size_t i = 0; i < t->n; i++) {
    gpd_tnode_t *n = &t->nodes[i];
    n->nkids = 0;
    n->parent = SIZE_MAX;
  }
  for (size_t i = 0; i < t->n; i++) {
    if (i == t->root) continue;
    gpd_tnode_t *n = &t->nodes[i];
    long p = n->parent_id ? gpd_tree_find(t, n->parent_id) : -1;
    if (p < 0 || (size_t)p == i) p = (long)t->root;
    n->parent = (size_t)p;
    if ((err = kid_add(&t->nodes[p], i)) < 0) goto done;
  }
  /* Pre-order from the root; nodes in a parent cycle are never reached. */
  order = malloc((t->n + 1) * sizeof(*order));
  size_t *stack = malloc((t->n + 1) * sizeof(*stack));
  if (!order || !stack) {
    free(stack);
    err = -ENOMEM;
    goto done;
  }
  size_t no = 0, ns = 0;
  stack[ns++] = t->root;
  while (ns) {
    size_t i = stack[--ns];
    order[no++] = i;
    for (uint32_t k = 0; k < t->nodes[i].nkids; k++) stack[ns++] = t->nodes[i].kids[k];
  }
  free(stack);
  if (t->have_incl && nroots != 1) {
    /* the reply gave inclusive values; the synthetic root sums its kids */
    gpd_tnode_t *r = &t->nodes[t->root];
    for (uint32_t k = 0; k < r->nkids; k++) {
      gpd_tnode_t *c = &t->nodes[r->kids[k]];
      for (uint32_t j = 0; j < c->incl.n; j++)
        if ((err = gpd_tree_mvec_add(&r->incl, c->incl.v[j].id, c->incl.v[j].v)) < 0) goto done;
    }
  }
  if (!t->have_incl) {
    for (size_t i = 0; i < t->n; i++) {
      gpd_tnode_t *n = &t->nodes[i];
      n->incl.n = 0;
      for (uint32_t j = 0; j < n->excl.n; j++)
        if ((err = gpd_tree_mvec_add(&n->incl, n->excl.v[j].id, n->excl.v[j].v)) < 0) goto done;
    }
    for (size_t o = no; o-- > 1;) {
      gpd_tnode_t *n = &t->nodes[order[o]];
      gpd_tnode_t *p = &t->nodes[n->parent];
      for (uint32_t j = 0; j < n->incl.n; j++)
        if ((err = gpd_tree_mvec_add(&p->incl, n->incl.v[j].id, n->incl.v[j].v)) < 0) goto done;
    }
  }
  sort_tree = t;
  sort_metric_id = sort_metric;
  for (size_t i = 0; i < t->n; i++)
    if (t->nodes[i].nkids > 1) qsort(t->nodes[i].kids, t->nodes[i].nkids, sizeof(size_t), kid_cmp);
done:
  free(order);
  return err;
}

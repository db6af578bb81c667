/* xwrite.c - what the trace writers (xwrite-perfetto.c,
 * xwrite-chrome.c) share: a trace (trace.h) is written as it is
 * walked in time order (xlayout.c), so memory grows with the
 * distinct names and call paths, not with the events.  Names (events,
 * functions: one string table) get ids 1, 2, ... in the order first
 * used; each tree node's CPU call site and name id are found once.
 *
 * Tracks (both formats): per process, one per CPU thread that made GPU API
 * calls (its launches as instants, its host-measured GPU operations such
 * as synchronizations as slices, its CPU samples as instants), one per GPU
 * stream (device, stream; operations that overlap on one stream go to
 * extra "lanes" so that slices nest), and one "GPU idle" track with the
 * idle intervals and the context each is blamed on (idle.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "xwrite.h"

const char *gpd__xwrite_base(const char *s) {
  const char *b = s ? strrchr(s, '/') : NULL;
  return b ? b + 1 : s ? s : "";
}

/* ------------------------------------------------------- string table */

static uint64_t str_hash(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++)
    h = (h ^ (uint8_t)*s) * 1099511628211ull;
  return h;
}

static const char *strtab_str(const gpd_xwrite_strtab_t *t, uint64_t id) { return t->str[id - 1]; }

/* id of s (added when new); 0 when out of memory */
static uint64_t strtab_id(gpd_xwrite_strtab_t *t, const char *s) {
  if (t->n * 2 >= t->nslot) {
    size_t ns = t->nslot ? t->nslot * 2 : 1024;
    uint32_t *sl = calloc(ns, sizeof *sl);
    if (sl == NULL)
      return 0;
    for (size_t i = 0; i < t->n; i++) {
      size_t h = str_hash(t->str[i]) & (ns - 1);
      while (sl[h])
        h = (h + 1) & (ns - 1);
      sl[h] = (uint32_t)(i + 1);
    }
    free(t->slot);
    t->slot = sl;
    t->nslot = ns;
  }
  size_t h = str_hash(s) & (t->nslot - 1);
  for (; t->slot[h]; h = (h + 1) & (t->nslot - 1))
    if (!strcmp(strtab_str(t, t->slot[h]), s))
      return t->slot[h];
  size_t n = strlen(s) + 1;
  if (t->nblk == 0 || t->used + n > t->blkcap) {
    size_t bc = n > 65536 ? n : 65536;
    if (gpd_xtrace_grow((void **)&t->blk, t->nblk, &t->capblk, sizeof *t->blk) < 0)
      return 0;
    char *b = malloc(bc);
    if (b == NULL)
      return 0;
    t->blk[t->nblk++] = b;
    t->used = 0;
    t->blkcap = bc;
  }
  if (gpd_xtrace_grow((void **)&t->str, t->n, &t->capstr, sizeof *t->str) < 0)
    return 0;
  char *d = t->blk[t->nblk - 1] + t->used;
  memcpy(d, s, n);
  t->used += n;
  t->str[t->n++] = d;
  t->slot[h] = (uint32_t)t->n;
  return t->n;
}

static void strtab_free(gpd_xwrite_strtab_t *t) {
  for (size_t i = 0; i < t->nblk; i++)
    free(t->blk[i]);
  free(t->blk);
  free(t->str);
  free(t->slot);
}

/* ---------------------------------------------------------- bit sets */

int gpd__xwrite_bits_testset(gpd_xwrite_bits_t *b, size_t i) {
  if (i / 64 >= b->nw) {
    size_t nw = b->nw ? b->nw : 16;
    while (nw <= i / 64)
      nw *= 2;
    uint64_t *w = realloc(b->w, nw * sizeof *w);
    if (w == NULL)
      return -ENOMEM;
    memset(w + b->nw, 0, (nw - b->nw) * sizeof *w);
    b->w = w;
    b->nw = nw;
  }
  uint64_t m = 1ull << (i % 64);
  if (b->w[i / 64] & m)
    return 1;
  b->w[i / 64] |= m;
  return 0;
}

/* --------------------------------------------------- contexts, names */

int gpd__xwrite_init(gpd_xwrite_t *c, const gpd_xtrace_t *x) {
  memset(c, 0, sizeof *c);
  c->x = x;
  size_t n = x->tree.n + 1;
  c->cpu = malloc(n * sizeof *c->cpu);
  c->fn = calloc(n, sizeof *c->fn);
  c->ename = calloc(n, sizeof *c->ename);
  if (c->cpu == NULL || c->fn == NULL || c->ename == NULL)
    return -ENOMEM;
  for (size_t i = 0; i < n; i++)
    c->cpu[i] = -1;
  return 0;
}

void gpd__xwrite_free(gpd_xwrite_t *c) {
  strtab_free(&c->names);
  free(c->cpu);
  free(c->fn);
  free(c->ename);
}

uint64_t gpd__xwrite_intern(gpd_xwrite_t *c, const char *s) {
  uint64_t id = strtab_id(&c->names, s);
  if (id == 0)
    c->err = -ENOMEM;
  return id;
}

size_t gpd__xwrite_cpu(gpd_xwrite_t *c, uint64_t node) {
  long i = node ? gpd_tree_find(&c->x->tree, node) : -1;
  if (i < 0)
    return 0;
  if (c->cpu[i] >= 0)
    return (size_t)c->cpu[i];
  size_t j = (size_t)i;
  const gpd_tnode_t *nodes = c->x->tree.nodes;
  while (j != SIZE_MAX && nodes[j].kind != GPD_NODE_ROOT &&
         (nodes[j].kind == GPD_NODE_PLACEHOLDER || nodes[j].kind == GPD_NODE_KERNEL))
    j = nodes[j].parent;
  c->cpu[i] = j == SIZE_MAX || nodes[j].kind == GPD_NODE_ROOT ? 0 : (long)j + 1;
  return (size_t)c->cpu[i];
}

uint64_t gpd__xwrite_fn(gpd_xwrite_t *c, size_t j) {
  if (c->fn[j] == 0) {
    char name[1024];
    gpd_render_node_name(name, sizeof name, &c->x->tree.nodes[j]);
    c->fn[j] = (uint32_t)gpd__xwrite_intern(c, name);
  }
  return c->fn[j];
}

size_t gpd__xwrite_frames(const gpd_xwrite_t *c, size_t cs, size_t *f) {
  size_t n = 0, k = GPD_XWRITE_MAXF;
  const gpd_tnode_t *nodes = c->x->tree.nodes;
  for (size_t j = cs - 1; j != SIZE_MAX && nodes[j].kind != GPD_NODE_ROOT && k > 0;
       j = nodes[j].parent) {
    if (nodes[j].kind == GPD_NODE_PLACEHOLDER || nodes[j].kind == GPD_NODE_KERNEL)
      continue;
    f[--k] = j;
    n++;
  }
  memmove(f, f + k, n * sizeof *f);
  return n;
}

uint64_t gpd__xwrite_ev_name(gpd_xwrite_t *c, const gpd_xev_t *e) {
  long i = e->node ? gpd_tree_find(&c->x->tree, e->node) : -1;
  int kernel = i >= 0 && c->x->tree.nodes[i].kind == GPD_NODE_KERNEL;
  if (kernel && c->ename[i])
    return c->ename[i];
  char name[1024];
  gpd_xtrace_ev_name(c->x, e, name, sizeof name);
  uint64_t id = gpd__xwrite_intern(c, name);
  if (kernel)
    c->ename[i] = (uint32_t)id;
  return id;
}

uint64_t gpd__xwrite_short_name(gpd_xwrite_t *c, size_t k) {
  if (c->ename[k] == 0) {
    char full[4096], name[1024];
    gpd_render_node_name(full, sizeof full, &c->x->tree.nodes[k]);
    gpd_render_short_name(name, sizeof name, full);
    c->ename[k] = (uint32_t)gpd__xwrite_intern(c, name);
  }
  return c->ename[k];
}

uint64_t gpd__xwrite_sample_name(gpd_xwrite_t *c, size_t cs) {
  if (cs == 0)
    return gpd__xwrite_intern(c, "cpu sample: ?");
  if (c->ename[cs - 1] == 0) {
    char name[1100];
    snprintf(name, sizeof name, "cpu sample: %s", strtab_str(&c->names, gpd__xwrite_fn(c, cs - 1)));
    c->ename[cs - 1] = (uint32_t)gpd__xwrite_intern(c, name);
  }
  return c->ename[cs - 1];
}

const char *gpd__xwrite_str(const gpd_xwrite_t *c, uint64_t id) { return strtab_str(&c->names, id); }

/* export-walk.c - what the writers of `gpuprof export` share (export.h;
 * export.c, export-pprof.c, export-speedscope.c call it, it calls none of
 * them): the frames a tree node stands for, which metrics are exported,
 * the walk over the contexts with exclusive values, an interning table
 * and composite frame keys.  CLI thread only.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "export.h"
#include "gpuprof/metric.h"

/* ---- the frames a tree node stands for ---- */

uint32_t gpd__export_nframes(const gpd_tnode_t *nd) {
  return nd->kind == GPD_NODE_FRAME && nd->nframes ? nd->nframes : 1;
}

static int known(const char *s) {
  return s[0] && strcmp(s, "??");
}

void gpd__export_frame(const gpd_tnode_t *nd, uint32_t k, gpd_export_frame_t *x) {
  x->file = x->sysname = "";
  x->line = 0;
  x->inlined = k > 0;
  if (nd->kind == GPD_NODE_PYTHON) {
    /* "qualname (filename:line)" (docs/PYTHON.md): function, file and line */
    snprintf(x->buf, sizeof(x->buf), "%s", nd->label);
    char *open = strstr(x->buf, " ("), *colon = strrchr(x->buf, ':');
    size_t n = strlen(x->buf);
    if (open && colon && colon > open && n && x->buf[n - 1] == ')') {
      x->buf[n - 1] = 0;
      *open = *colon = 0;
      x->file = open + 2;
      x->line = (uint32_t)strtoul(colon + 1, NULL, 10);
    }
    x->name = x->buf;
    return;
  }
  if (nd->kind != GPD_NODE_FRAME) {
    gpd_render_node_name(x->buf, sizeof(x->buf), nd);
    x->name = x->buf;
    if (nd->kind == GPD_NODE_KERNEL) x->sysname = nd->raw_name;
    return;
  }
  const char *fn = nd->nframes ? nd->frames[k].function : "";
  if (nd->nframes && known(nd->frames[k].file)) {
    x->file = nd->frames[k].file;
    x->line = nd->frames[k].line;
  }
  if (known(fn)) {
    x->name = fn;
  } else if (k == 0 && known(nd->label)) {
    x->name = nd->label;
  } else if (k == 0 && nd->module[0]) {
    /* no symbol (a stripped binary): where, as `report` says it */
    const char *b = strrchr(nd->module, '/');
    snprintf(x->buf, sizeof(x->buf), "%s+0x%llx", b ? b + 1 : nd->module, (unsigned long long)nd->offset);
    x->name = x->buf;
  } else {
    x->name = "??";
  }
}

/* ---- metrics: which are exported ---- */

size_t gpd__export_metrics(const gpd_tree_t *t, int present[GPD_M__COUNT]) {
  size_t n = 0;
  memset(present, 0, GPD_M__COUNT * sizeof(int));
  for (size_t i = 0; i < t->n; i++)
    for (uint32_t j = 0; j < t->nodes[i].excl.n; j++) {
      const gpd_mval_t *v = &t->nodes[i].excl.v[j];
      if (v->id < GPD_M__COUNT && v->v != 0 && !present[v->id]) {
        present[v->id] = 1;
        n++;
      }
    }
  return n;
}

/* ---- walking the tree ---- */

int gpd__export_walk(const gpd_tree_t *t, gpd_export_stack_fn fn, void *ctx) {
  size_t *path = malloc((t->n + 1) * sizeof(*path));
  size_t *stk = malloc((t->n + 1) * sizeof(*stk));
  size_t *dep = malloc((t->n + 1) * sizeof(*dep));
  size_t ns = 0;
  int err = 0;
  if (!path || !stk || !dep) {
    err = -ENOMEM;
    goto done;
  }
  stk[ns] = t->root;
  dep[ns++] = 0;
  while (ns && !err) {
    ns--;
    size_t i = stk[ns], d = dep[ns];
    const gpd_tnode_t *nd = &t->nodes[i];
    if (d) path[d - 1] = i;
    int any = 0;
    for (uint32_t j = 0; j < nd->excl.n && !any; j++) any = nd->excl.v[j].v != 0;
    if (any) err = d ? fn(ctx, t, path, d) : fn(ctx, t, &t->root, 1);
    for (uint32_t k = nd->nkids; k-- > 0;) {
      stk[ns] = nd->kids[k];
      dep[ns++] = d + 1;
    }
  }
done:
  free(path);
  free(stk);
  free(dep);
  return err;
}

/* ---- an interning table: byte strings -> dense indices ---- */

static uint64_t fnv1a(const void *p, size_t n) {
  const unsigned char *s = p;
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 0x100000001b3ull;
  return h;
}

static int intern_grow(gpd_export_intern_t *in) {
  size_t cap = in->scap ? in->scap * 2 : 256;
  size_t *s = calloc(cap, sizeof(*s));
  if (!s) return -ENOMEM;
  for (size_t i = 0; i < in->n; i++) {
    size_t j = fnv1a(in->key[i], in->len[i]) & (cap - 1);
    while (s[j]) j = (j + 1) & (cap - 1);
    s[j] = i + 1;
  }
  free(in->slot);
  in->slot = s;
  in->scap = cap;
  return 0;
}

long gpd__export_intern(gpd_export_intern_t *in, const void *key, size_t len) {
  if ((in->n + 1) * 2 > in->scap && intern_grow(in) < 0) return -ENOMEM;
  size_t j = fnv1a(key, len) & (in->scap - 1);
  for (; in->slot[j]; j = (j + 1) & (in->scap - 1)) {
    size_t i = in->slot[j] - 1;
    if (in->len[i] == len && !memcmp(in->key[i], key, len)) return (long)i;
  }
  if (in->n == in->cap) {
    size_t cap = in->cap ? in->cap * 2 : 64;
    char **k = realloc(in->key, cap * sizeof(*k));
    if (!k) return -ENOMEM;
    in->key = k;
    size_t *l = realloc(in->len, cap * sizeof(*l));
    if (!l) return -ENOMEM;
    in->len = l;
    in->cap = cap;
  }
  char *c = malloc(len + 1);
  if (!c) return -ENOMEM;
  memcpy(c, key, len);
  c[len] = 0;
  in->key[in->n] = c;
  in->len[in->n] = len;
  in->slot[j] = in->n + 1;
  return (long)in->n++;
}

long gpd__export_intern_str(gpd_export_intern_t *in, const char *s) {
  return gpd__export_intern(in, s, strlen(s));
}

void gpd__export_intern_free(gpd_export_intern_t *in) {
  for (size_t i = 0; i < in->n; i++) free(in->key[i]);
  free(in->key);
  free(in->len);
  free(in->slot);
  memset(in, 0, sizeof(*in));
}

/* ---- composite keys ---- */

static int kbuf_put(gpd_export_key_t *b, const void *p, size_t n) {
  if (b->n + n > b->cap) {
    size_t c = b->cap ? b->cap : 256;
    while (c < b->n + n) c *= 2;
    char *q = realloc(b->p, c);
    if (!q) return -ENOMEM;
    b->p = q;
    b->cap = c;
  }
  memcpy(b->p + b->n, p, n);
  b->n += n;
  return 0;
}

int gpd__export_key_frame(gpd_export_key_t *b, const gpd_export_frame_t *x, int with_line) {
  char ln[24];
  int w = snprintf(ln, sizeof(ln), "%u", x->line);
  b->n = 0;
  if (kbuf_put(b, x->name, strlen(x->name) + 1) < 0 || kbuf_put(b, x->file, strlen(x->file) + 1) < 0 ||
      kbuf_put(b, x->sysname, strlen(x->sysname) + (with_line ? 1 : 0)) < 0 ||
      (with_line && kbuf_put(b, ln, (size_t)w) < 0))
    return -ENOMEM;
  return 0;
}

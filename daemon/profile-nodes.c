/* profile-nodes.c - the calling context tree's nodes and what names them:
 * the label pool, the strings and modules a process announced, and the
 * shim's node ids (locals); NODE records placed into the tree.
 *
 * Context ids are Merkle hashes (hash.h): a FRAME child is H(parent,
 * module key, offset), a synthetic child is H(parent, key, 0) for a key
 * such as "<gpu kernel>", "kernel:" + mangled name, "<unknown context>",
 * "py:..." or "label:...".  Caller holds the daemon lock. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>

#include "gpuprof/hash.h"

#include "daemon.h"
#include "profile-internal.h"

static uint64_t key_label(const gpd_profile_t *p, uint32_t v) {
  const char *t = p->lp + v;
  return gpd_hash64(t, strlen(t), 0);
}

/* ---------------------------------------------------------- label pool
 *
 * Node labels and kernel names, each stored once per profile (a kernel
 * launched from 10 K call sites has one copy, placeholders one each). */

/* Id of text s in the pool (added if new); 0 for NULL or out of memory. */
static uint32_t label_intern(gpd_profile_t *p, const char *s) {
  if (s == NULL)
    return 0;
  size_t len = strlen(s);
  uint64_t h = gpd_hash64(s, len, 0);
  if (p->lp_ix.cap) {
    uint32_t mask = p->lp_ix.cap - 1;
    for (uint32_t i = gpd__profile_index_home(h, mask); p->lp_ix.slot[i] != 0; i = (i + 1) & mask)
      if (strcmp(p->lp + p->lp_ix.slot[i] - 1, s) == 0)
        return p->lp_ix.slot[i];
  }
  if (len >= UINT32_MAX / 2 || (uint64_t)p->nlp + len + 1 >= UINT32_MAX)
    return 0;
  if (p->nlp + len + 1 > p->caplp) {
    size_t nc = p->caplp ? p->caplp : 256;
    while (nc < p->nlp + len + 1)
      nc *= 2;
    if (nc >= UINT32_MAX)
      nc = UINT32_MAX - 1;
    char *na = realloc(p->lp, nc);
    if (na == NULL)
      return 0;
    p->lp = na;
    p->caplp = (uint32_t)nc;
  }
  uint32_t off = p->nlp;
  memcpy(p->lp + off, s, len + 1);
  if (gpd__profile_index_put(&p->lp_ix, p, h, off, key_label) < 0)
    return 0;
  p->nlp += (uint32_t)len + 1;
  return off + 1;
}

uint32_t gpd__profile_nodes_add(gpd_profile_t *p, uint64_t id, uint32_t parent, uint8_t kind) {
  if (p->nnodes >= GPD_PROFILE_MAX_NODES) {
    p->full = 1;
    return GPD_NONE;
  }
  if (GPD_GROW(p->nodes, p->nnodes, p->capnodes, 64) < 0)
    return GPD_NONE;
  uint32_t i = p->nnodes;
  gpd_node_t *n = &p->nodes[i];
  memset(n, 0, sizeof *n);
  n->id = id;
  n->parent = parent;
  n->kind = kind;
  if (gpd__profile_index_put(&p->by_ctx, p, id, i, gpd__profile_key_ctx) < 0)
    return GPD_NONE;
  p->nnodes++;
  p->tree_gen++;
  return i;
}

uint32_t gpd_profile_find(const gpd_profile_t *p, uint64_t ctx) {
  return gpd__profile_index_get(&p->by_ctx, p, ctx, gpd__profile_key_ctx);
}

uint32_t gpd_profile_local(const gpd_profile_t *p, uint32_t local) {
  return gpd__profile_nodes_local(p, local);
}

const char *gpd_profile_string(const gpd_profile_t *p, uint32_t id) {
  uint64_t v;
  return gpd_map_get(&p->str_by_id, id, &v) ? p->strs[v].text : NULL;
}

const gpd_pmodule_t *gpd_profile_module(const gpd_profile_t *p, uint32_t module) {
  uint64_t v;
  return gpd_map_get(&p->mod_by_id, module, &v) ? &p->mods[v] : NULL;
}

const void *gpd_profile_module_key(const gpd_profile_t *p, uint32_t module, size_t *len) {
  const gpd_pmodule_t *m = gpd_profile_module(p, module);
  *len = 0;
  if (m == NULL)
    return NULL;
  if (m->build_id_len > 0) {
    *len = m->build_id_len;
    return m->build_id;
  }
  *len = strlen(m->path);
  return m->path;
}

int gpd_profile_add_local(gpd_profile_t *p, uint32_t local, uint32_t idx) {
  if (local == 0)
    return -EINVAL;
  if (gpd__profile_index_get(&p->by_local, p, local, gpd__profile_key_local) != GPD_NONE)
    return 0;
  if (GPD_GROW(p->locals, p->nlocals, p->caplocals, 64) < 0)
    return -ENOMEM;
  p->locals[p->nlocals].local = local;
  p->locals[p->nlocals].node = idx;
  if (gpd__profile_index_put(&p->by_local, p, local, p->nlocals, gpd__profile_key_local) < 0)
    return -ENOMEM;
  p->pend_dirty = 1;
  p->nlocals++;
  return 0;
}

/* Copy text[0, len) for string or module id, entry idx of its array, and
 * index it in by_id.  Strings and module paths share one bound
 * (GPD_PROFILE_MAX_STRBYTES: past it *err = -ENOSPC and p->full is set);
 * NULs inside would truncate labels silently, so they become '?'.  The
 * copy (malloc'd), or NULL with *err = -ENOSPC / -ENOMEM. */
static char *text_add(gpd_profile_t *p, gpd_map_t *by_id, uint32_t id, uint32_t idx, const char *text,
                      size_t len, int *err) {
  if (p->str_bytes + len > GPD_PROFILE_MAX_STRBYTES) {
    p->full = 1;
    *err = -ENOSPC;
    return NULL;
  }
  char *t = malloc(len + 1);
  if (t == NULL) {
    *err = -ENOMEM;
    return NULL;
  }
  memcpy(t, text, len);
  t[len] = 0;
  for (size_t i = 0; i < len; i++)
    if (t[i] == 0)
      t[i] = '?';
  if (gpd_map_put(by_id, id, idx) < 0) {
    free(t);
    *err = -ENOMEM;
    return NULL;
  }
  p->str_bytes += len;
  return t;
}

int gpd_profile_add_string(gpd_profile_t *p, uint32_t id, uint32_t kind, const char *text, size_t len) {
  if (id == 0)
    return -EINVAL;
  if (gpd_map_get(&p->str_by_id, id, NULL))
    return 0; /* first announcement wins */
  if (GPD_GROW(p->strs, p->nstrs, p->capstrs, 16) < 0)
    return -ENOMEM;
  int err = 0;
  char *t = text_add(p, &p->str_by_id, id, p->nstrs, text, len, &err);
  if (t == NULL)
    return err;
  p->pend_dirty = 1;
  p->strs[p->nstrs].id = id;
  p->strs[p->nstrs].kind = kind;
  p->strs[p->nstrs].text = t;
  p->nstrs++;
  return 0;
}

int gpd_profile_add_module(gpd_profile_t *p, uint32_t id, const uint8_t *bid, unsigned bid_len,
                           uint64_t base, uint64_t size, const char *path, size_t len) {
  if (id == 0 || bid_len > 20)
    return -EINVAL;
  if (gpd_map_get(&p->mod_by_id, id, NULL))
    return 0;
  if (GPD_GROW(p->mods, p->nmods, p->capmods, 16) < 0)
    return -ENOMEM;
  int err = 0;
  char *t = text_add(p, &p->mod_by_id, id, p->nmods, path, len, &err);
  if (t == NULL)
    return err;
  gpd_pmodule_t *m = &p->mods[p->nmods++];
  memset(m, 0, sizeof *m);
  m->id = id;
  m->build_id_len = (uint8_t)bid_len;
  if (bid_len)
    memcpy(m->build_id, bid, bid_len);
  m->base = base;
  m->size = size;
  m->path = t;
  return 0;
}

uint32_t gpd_profile_child(gpd_profile_t *p, uint32_t parent, uint8_t kind, const char *key,
                           const char *label, const char *raw) {
  uint64_t id = gpd_ctx_id(p->nodes[parent].id, key, strlen(key), 0);
  uint32_t i = gpd_profile_find(p, id);
  if (i != GPD_NONE)
    return i;
  i = gpd__profile_nodes_add(p, id, parent, kind);
  if (i == GPD_NONE)
    return i;
  if (kind == GPD_NODE_KERNEL) {
    char *dm = gpd_demangle(label);
    p->nodes[i].label = label_intern(p, dm ? dm : label);
    free(dm);
  } else {
    p->nodes[i].label = label_intern(p, label);
  }
  if (raw)
    p->nodes[i].raw = label_intern(p, raw);
  return i;
}

uint32_t gpd_profile_restore_node(gpd_profile_t *p, uint64_t id, uint64_t parent_id, uint8_t kind,
                                  uint32_t module, uint64_t offset, const char *label,
                                  const char *raw) {
  uint32_t i = gpd_profile_find(p, id);
  if (i != GPD_NONE)
    return i;
  uint32_t par = gpd_profile_find(p, parent_id);
  if (par == GPD_NONE)
    return GPD_NONE;
  i = gpd__profile_nodes_add(p, id, par, kind);
  if (i == GPD_NONE)
    return i;
  gpd_node_t *n = &p->nodes[i];
  n->module = module;
  n->offset = offset;
  n->saved = 1;
  if (label && kind != GPD_NODE_FRAME)
    n->label = label_intern(p, label);
  if (raw)
    n->raw = label_intern(p, raw);
  return i;
}

/* ------------------------------------------------------------ NODE */

/* A Python frame below par: string r->module is "qualname\tfilename",
 * r->offset the line.  Context id H(parent, "py:" qualname \t filename \t
 * line, 0), label "qualname (filename:line)".  1 placed, 0 string unknown. */
static int node_python(gpd_profile_t *p, uint32_t par, const gpd_rec_node_t *r) {
  const char *t = gpd_profile_string(p, r->module);
  if (t == NULL)
    return 0;
  const char *tab = strchr(t, '\t');
  int qn = tab ? (int)(tab - t) : (int)strlen(t);
  const char *file = tab ? tab + 1 : "?";
  unsigned line = (unsigned)(r->offset > 0xffffffffu ? 0 : r->offset);
  size_t n = strlen(t) + 32;
  char *key = malloc(n), *label = malloc(n);
  if (key && label) {
    snprintf(key, n, "py:%s\t%u", t, line);
    snprintf(label, n, "%.*s (%s:%u)", qn, t, file, line);
    uint32_t i = gpd_profile_child(p, par, GPD_NODE_PYTHON, key, label, NULL);
    if (i != GPD_NONE) {
      p->nodes[i].offset = line;
      gpd_profile_add_local(p, r->id, i);
    }
  }
  free(key);
  free(label);
  return 1;
}

/* A labelled context below par (GPD_NODE_F_LABEL: an OpenMP target
 * construct): string r->module is the label.  Context id H(parent,
 * "label:" label, 0), a PLACEHOLDER with no op.  1 placed, 0 string
 * unknown. */
static int node_label(gpd_profile_t *p, uint32_t par, const gpd_rec_node_t *r) {
  const char *t = gpd_profile_string(p, r->module);
  if (t == NULL)
    return 0;
  size_t n = strlen(t) + 7;
  char *key = malloc(n);
  if (key) {
    snprintf(key, n, "label:%s", t);
    uint32_t i = gpd_profile_child(p, par, GPD_NODE_PLACEHOLDER, key, t, NULL);
    if (i != GPD_NONE)
      gpd_profile_add_local(p, r->id, i);
  }
  free(key);
  return 1;
}

/* 1 placed (or duplicate), 0 not yet (parent or module unknown). */
int gpd__profile_nodes_place(gpd_profile_t *p, const gpd_rec_node_t *r) {
  if (gpd__profile_index_get(&p->by_local, p, r->id, gpd__profile_key_local) != GPD_NONE)
    return 1;
  uint32_t par = gpd_profile_local(p, r->parent);
  if (par == GPD_NONE)
    return 0;
  if (r->h.flags & GPD_NODE_F_PYTHON)
    return node_python(p, par, r);
  if (r->h.flags & GPD_NODE_F_LABEL)
    return node_label(p, par, r);
  size_t klen = 0;
  const void *key = NULL;
  if (r->module != 0) {
    key = gpd_profile_module_key(p, r->module, &klen);
    if (key == NULL)
      return 0;
  }
  uint64_t id = gpd_ctx_id(p->nodes[par].id, key, klen, r->offset);
  uint32_t i = gpd_profile_find(p, id);
  if (i == GPD_NONE) {
    i = gpd__profile_nodes_add(p, id, par, GPD_NODE_FRAME);
    if (i == GPD_NONE)
      return 1; /* bound hit: dropped (p->full) */
    p->nodes[i].module = r->module;
    p->nodes[i].offset = r->offset;
  }
  gpd_profile_add_local(p, r->id, i);
  return 1;
}

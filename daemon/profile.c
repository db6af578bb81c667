/* profile.c - one process's calling context tree, rebuilt from its ring
 * records, and the attribution of GPU activity to it.
 *
 * Attribution (seed 003, "GPU-accelerated applications"): an ACTIVITY is
 * matched to the INVOKE with the same correlation id (either may arrive
 * first, possibly on different rings).  Its metrics go below the INVOKE's
 * CPU context: call site -> <gpu op> placeholder -> kernel (kernels only).
 * Exclusive values sit on the kernel node for named kernels, else on the
 * placeholder; GMEM/GSYNC (host-measured) are attributed the same way with
 * gpd_metric_accumulate.  Context ids are Merkle hashes (hash.h): a FRAME
 * child is H(parent, module key, offset), a synthetic child is
 * H(parent, "<gpu kernel>" | "kernel:" + mangled name | "<unknown context>", 0).
 *
 * Nothing here trusts the shim beyond gpd_rec_validate(): unknown ids wait
 * in bounded pending lists; at the final flush what is still unmatched goes
 * to root -> <unknown context>.  Caller holds the daemon lock.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuprof/error.h"
#include "gpuprof/hash.h"
#include "gpuprof/metric.h"
#include "gpuprof/record.h"

#include "daemon.h"
#include "pcsample.h"

/* ------------------------------------------------------ sparse metrics */

int gpd_mval_add(gpd_mval_t **a, uint32_t *n, uint32_t *cap, uint32_t id, double v) {
  for (uint32_t i = 0; i < *n; i++) {
    if ((*a)[i].id == id) {
      (*a)[i].v += v;
      return 0;
    }
  }
  if (*n == *cap) {
    uint32_t ncap = *cap ? *cap * 2 : 4;
    gpd_mval_t *na = realloc(*a, ncap * sizeof *na);
    if (na == NULL)
      return -ENOMEM;
    *a = na;
    *cap = ncap;
  }
  (*a)[*n].id = id;
  (*a)[*n].v = v;
  (*n)++;
  return 0;
}

double gpd_mval_get(const gpd_mval_t *a, uint32_t n, uint32_t id) {
  for (uint32_t i = 0; i < n; i++)
    if (a[i].id == id)
      return a[i].v;
  return 0;
}

/* --------------------------------------------------------------- helpers */

#define GROW(arr, n, cap, init)                                            \
  ({                                                                       \
    int _e = 0;                                                            \
    if ((n) == (cap)) {                                                    \
      size_t _nc = (cap) ? (size_t)(cap) * 2 : (init);                     \
      void *_na = realloc((arr), _nc * sizeof *(arr));                     \
      if (_na == NULL)                                                     \
        _e = -ENOMEM;                                                      \
      else {                                                               \
        (arr) = _na;                                                       \
        (cap) = (uint32_t)_nc;                                             \
      }                                                                    \
    }                                                                      \
    _e;                                                                    \
  })

static uint32_t add_node(gpd_profile_t *p, uint64_t id, uint32_t parent, uint8_t kind) {
  if (p->nnodes >= GPD_PROFILE_MAX_NODES) {
    p->full = 1;
    return GPD_NONE;
  }
  if (GROW(p->nodes, p->nnodes, p->capnodes, 64) < 0)
    return GPD_NONE;
  uint32_t i = p->nnodes;
  if (gpd_map_put(&p->by_ctx, id, i) < 0)
    return GPD_NONE;
  gpd_node_t *n = &p->nodes[i];
  memset(n, 0, sizeof *n);
  n->id = id;
  n->parent = parent;
  n->parent_id = parent == GPD_NONE ? 0 : p->nodes[parent].id;
  n->kind = kind;
  p->nnodes++;
  return i;
}

int gpd_profile_init(gpd_profile_t *p, uint64_t profile_id) {
  memset(p, 0, sizeof *p);
  p->profile_id = profile_id;
  p->max_corr = GPD_PROFILE_MAX_CORR;
  p->max_corr_age = GPD_PROFILE_MAX_CORR_AGE;
  if (add_node(p, GPD_CTX_ROOT, GPD_NONE, GPD_NODE_ROOT) != 0)
    return -ENOMEM;
  return 0;
}

void gpd_profile_free(gpd_profile_t *p) {
  for (uint32_t i = 0; i < p->nnodes; i++) {
    free(p->nodes[i].label);
    free(p->nodes[i].raw_name);
    free(p->nodes[i].m);
  }
  free(p->nodes);
  for (uint32_t i = 0; i < p->nstrs; i++)
    free(p->strs[i].text);
  free(p->strs);
  for (uint32_t i = 0; i < p->nmods; i++)
    free(p->mods[i].path);
  free(p->mods);
  free(p->pnodes);
  free(p->pacts);
  free(p->locals);
  free(p->corr_fifo);
  gpd_map_free(&p->by_ctx);
  gpd_map_free(&p->by_local);
  gpd_map_free(&p->corr);
  gpd_map_free(&p->pend_corr);
  gpd_map_free(&p->targets);
  gpd_map_free(&p->str_by_id);
  gpd_map_free(&p->mod_by_id);
  gpd_pcsample_free(p->pcs);
  memset(p, 0, sizeof *p);
}

uint32_t gpd_profile_find(const gpd_profile_t *p, uint64_t ctx) {
  uint64_t v;
  return gpd_map_get(&p->by_ctx, ctx, &v) ? (uint32_t)v : GPD_NONE;
}

uint32_t gpd_profile_local(const gpd_profile_t *p, uint32_t local) {
  uint64_t v;
  if (local == 0)
    return 0; /* "none": the root */
  return gpd_map_get(&p->by_local, local, &v) ? (uint32_t)v : GPD_NONE;
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
  if (gpd_map_get(&p->by_local, local, NULL))
    return 0;
  if (GROW(p->locals, p->nlocals, p->caplocals, 64) < 0)
    return -ENOMEM;
  if (gpd_map_put(&p->by_local, local, idx) < 0)
    return -ENOMEM;
  p->pend_dirty = 1;
  p->locals[p->nlocals].local = local;
  p->locals[p->nlocals].ctx = p->nodes[idx].id;
  p->nlocals++;
  return 0;
}

int gpd_profile_add_string(gpd_profile_t *p, uint32_t id, uint32_t kind, const char *text, size_t len) {
  if (id == 0)
    return -EINVAL;
  if (gpd_map_get(&p->str_by_id, id, NULL))
    return 0; /* first announcement wins */
  if (p->str_bytes + len > GPD_PROFILE_MAX_STRBYTES) {
    p->full = 1;
    return -ENOSPC;
  }
  if (GROW(p->strs, p->nstrs, p->capstrs, 16) < 0)
    return -ENOMEM;
  char *t = malloc(len + 1);
  if (t == NULL)
    return -ENOMEM;
  memcpy(t, text, len);
  t[len] = 0;
  /* NULs inside would truncate labels silently; make them visible */
  for (size_t i = 0; i < len; i++)
    if (t[i] == 0)
      t[i] = '?';
  if (gpd_map_put(&p->str_by_id, id, p->nstrs) < 0) {
    free(t);
    return -ENOMEM;
  }
  p->pend_dirty = 1;
  p->strs[p->nstrs].id = id;
  p->strs[p->nstrs].kind = kind;
  p->strs[p->nstrs].text = t;
  p->nstrs++;
  p->str_bytes += len;
  return 0;
}

int gpd_profile_add_module(gpd_profile_t *p, uint32_t id, const uint8_t *bid, unsigned bid_len,
                           uint64_t base, uint64_t size, const char *path, size_t len) {
  if (id == 0 || bid_len > 20)
    return -EINVAL;
  if (gpd_map_get(&p->mod_by_id, id, NULL))
    return 0;
  if (p->str_bytes + len > GPD_PROFILE_MAX_STRBYTES) {
    p->full = 1;
    return -ENOSPC;
  }
  if (GROW(p->mods, p->nmods, p->capmods, 16) < 0)
    return -ENOMEM;
  char *t = malloc(len + 1);
  if (t == NULL)
    return -ENOMEM;
  memcpy(t, path, len);
  t[len] = 0;
  for (size_t i = 0; i < len; i++)
    if (t[i] == 0)
      t[i] = '?';
  if (gpd_map_put(&p->mod_by_id, id, p->nmods) < 0) {
    free(t);
    return -ENOMEM;
  }
  gpd_pmodule_t *m = &p->mods[p->nmods++];
  memset(m, 0, sizeof *m);
  m->id = id;
  m->build_id_len = (uint8_t)bid_len;
  if (bid_len)
    memcpy(m->build_id, bid, bid_len);
  m->base = base;
  m->size = size;
  m->path = t;
  p->str_bytes += len;
  return 0;
}

uint32_t gpd_profile_child(gpd_profile_t *p, uint32_t parent, uint8_t kind, const char *key,
                           const char *label, const char *raw) {
  uint64_t id = gpd_ctx_id(p->nodes[parent].id, key, strlen(key), 0);
  uint32_t i = gpd_profile_find(p, id);
  if (i != GPD_NONE)
    return i;
  i = add_node(p, id, parent, kind);
  if (i == GPD_NONE)
    return i;
  if (kind == GPD_NODE_KERNEL)
    p->nodes[i].label = gpd_demangle(label);
  else
    p->nodes[i].label = strdup(label);
  if (raw)
    p->nodes[i].raw_name = strdup(raw);
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
  i = add_node(p, id, par, kind);
  if (i == GPD_NONE)
    return i;
  gpd_node_t *n = &p->nodes[i];
  n->module = module;
  n->offset = offset;
  n->saved = 1;
  if (label && kind != GPD_NODE_FRAME)
    n->label = strdup(label);
  if (raw)
    n->raw_name = strdup(raw);
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

/* 1 placed (or duplicate), 0 not yet (parent or module unknown). */
static int node_try(gpd_profile_t *p, const gpd_rec_node_t *r) {
  if (gpd_map_get(&p->by_local, r->id, NULL))
    return 1;
  uint32_t par = gpd_profile_local(p, r->parent);
  if (par == GPD_NONE)
    return 0;
  if (r->h.flags & GPD_NODE_F_PYTHON)
    return node_python(p, par, r);
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
    i = add_node(p, id, par, GPD_NODE_FRAME);
    if (i == GPD_NONE)
      return 1; /* bound hit: dropped (p->full) */
    p->nodes[i].module = r->module;
    p->nodes[i].offset = r->offset;
  }
  gpd_profile_add_local(p, r->id, i);
  return 1;
}

/* -------------------------------------------------------- attribution */

static uint32_t target_of(gpd_profile_t *p, uint32_t at, unsigned op, uint32_t name_id, int force) {
  const char *ph = gpd_op_placeholder(op);
  uint32_t target = gpd_profile_child(p, at, GPD_NODE_PLACEHOLDER, ph, ph, NULL);
  if (target == GPD_NONE)
    return at;
  p->nodes[target].op = (uint8_t)op;
  if (op == GPD_OP_KERNEL && name_id != 0) {
    const char *name = gpd_profile_string(p, name_id);
    char buf[64];
    if (name == NULL && force) {
      snprintf(buf, sizeof buf, "<unknown kernel #%u>", name_id);
      name = buf;
    }
    if (name != NULL) {
      size_t nl = strlen(name);
      char kb[256];
      char *key = nl + 8 <= sizeof kb ? kb : malloc(nl + 8);
      if (key) {
        memcpy(key, "kernel:", 7);
        memcpy(key + 7, name, nl + 1);
        uint32_t k = gpd_profile_child(p, target, GPD_NODE_KERNEL, key, name, name);
        if (k != GPD_NONE)
          target = k;
        if (key != kb)
          free(key);
      }
    }
  }
  return target;
}

static void attribute_at(gpd_profile_t *p, uint32_t at, const gpd_rec_activity_t *a, uint8_t inv_op,
                         int force) {
  unsigned op = a->op != GPD_OP_NONE ? a->op : inv_op;
  if (op == GPD_OP_NONE || op >= GPD_OP_MAX)
    op = GPD_OP_KERNEL;
  /* hot path: (call site, kernel name, op) -> node, cached */
  uint32_t name_id = op == GPD_OP_KERNEL ? a->name : 0;
  uint64_t key = name_id < (1u << 28)
                     ? ((uint64_t)at << 32 | (uint64_t)name_id << 4 | op) : 0;
  uint64_t cached;
  uint32_t target;
  if (key && gpd_map_get(&p->targets, key, &cached)) {
    target = (uint32_t)cached;
  } else {
    target = target_of(p, at, op, name_id, force);
    int complete = name_id == 0 || p->nodes[target].kind == GPD_NODE_KERNEL;
    if (key && complete && gpd_profile_string(p, name_id) != NULL)
      gpd_map_put(&p->targets, key, target);
    else if (key && complete && name_id == 0)
      gpd_map_put(&p->targets, key, target);
  }
  double v[GPD_M__COUNT];
  memset(v, 0, sizeof v);
  gpd_rec_activity_t eff = *a;
  eff.op = (uint8_t)op; /* an activity without op takes its invocation's */
  gpd_metric_accumulate(v, &eff);
  gpd_node_t *n = &p->nodes[target];
  for (unsigned m = 0; m < GPD_M__COUNT; m++)
    if (v[m] != 0)
      gpd_mval_add(&n->m, &n->nm, &n->capm, m, v[m]);
  n->dirty = 1;
  p->activities++;
}

static uint32_t unknown_node(gpd_profile_t *p) {
  return gpd_profile_child(p, 0, GPD_NODE_UNKNOWN, GPD_UNKNOWN_LABEL, GPD_UNKNOWN_LABEL, NULL);
}

/* 1 attributed, 0 not yet.  force: attribute whatever is missing to
 * <unknown context> / an unknown kernel name. */
static int activity_try(gpd_profile_t *p, const gpd_rec_activity_t *a, int force) {
  uint64_t v;
  if (!gpd_map_get(&p->corr, a->corr, &v)) {
    if (!force)
      return 0;
    uint32_t u = unknown_node(p);
    attribute_at(p, u == GPD_NONE ? 0 : u, a, GPD_OP_NONE, 1);
    p->unknown++;
    return 1;
  }
  uint32_t local = (uint32_t)v;
  uint8_t op = (uint8_t)(v >> 32);
  int multi = (int)((v >> 40) & 1);
  uint32_t at = gpd_profile_local(p, local);
  if (at == GPD_NONE) {
    if (!force)
      return 0;
    at = unknown_node(p);
    if (at == GPD_NONE)
      at = 0;
    p->unknown++;
  }
  if (!force && a->op == GPD_OP_KERNEL && a->name != 0 && gpd_profile_string(p, a->name) == NULL)
    return 0;
  attribute_at(p, at, a, op, force);
  if (!multi)
    gpd_map_del(&p->corr, a->corr);
  return 1;
}

static void pend_link(gpd_profile_t *p, uint32_t i) {
  uint64_t head;
  p->pacts[i].next = gpd_map_get(&p->pend_corr, p->pacts[i].a.corr, &head) ? (uint32_t)head : GPD_NONE;
  gpd_map_put(&p->pend_corr, p->pacts[i].a.corr, i);
}

static void pend_activity(gpd_profile_t *p, const gpd_rec_activity_t *a) {
  if (p->npacts >= GPD_PROFILE_MAX_PENDING || GROW(p->pacts, p->npacts, p->cappacts, 64) < 0) {
    activity_try(p, a, 1); /* bounded: never lost, goes to <unknown> */
    return;
  }
  uint32_t i = p->npacts++;
  p->pacts[i].a = *a;
  pend_link(p, i);
}

/* An INVOKE arrived: match the activities that waited for its corr. */
static void pend_match(gpd_profile_t *p, uint64_t corr) {
  uint64_t head;
  if (!gpd_map_get(&p->pend_corr, corr, &head))
    return;
  gpd_map_del(&p->pend_corr, corr);
  /* chain is newest first; attribute oldest first */
  uint32_t chain[64], n = 0;
  for (uint32_t i = (uint32_t)head; i != GPD_NONE && n < 64; i = p->pacts[i].next)
    chain[n++] = i;
  uint32_t rest = n == 64 ? p->pacts[chain[63]].next : GPD_NONE;
  if (rest != GPD_NONE)
    gpd_map_put(&p->pend_corr, corr, rest); /* long chains: the rest waits for a rescan */
  while (n-- > 0) {
    uint32_t i = chain[n];
    if (activity_try(p, &p->pacts[i].a, 0)) {
      p->pacts[i].a.h.type = GPD_REC_NONE;
      p->ndead++;
    } else {
      pend_link(p, i);
    }
  }
}

/* ------------------------------------------------ correlation bounds */

/* Rewrite the ring with only the keys still in the map (oldest first). */
static void corr_compact(gpd_profile_t *p) {
  uint32_t w = 0;
  for (uint32_t k = 0; k < p->corr_nfifo; k++) {
    gpd_corr_age_t e = p->corr_fifo[(p->corr_head + k) % p->corr_capfifo];
    if (gpd_map_get(&p->corr, e.corr, NULL))
      p->corr_fifo[w++] = e; /* w <= k: in place once head is folded below */
  }
  p->corr_head = 0;
  p->corr_nfifo = w;
}

/* An invocation entered the map: remember its age, then evict the oldest
 * while a bound is exceeded.  O(1) amortized. */
static void corr_track(gpd_profile_t *p, uint64_t corr) {
  if (p->corr_nfifo == p->corr_capfifo) {
    uint32_t nc = p->corr_capfifo ? p->corr_capfifo * 2 : 64;
    gpd_corr_age_t *na = malloc((size_t)nc * sizeof *na);
    if (na != NULL) {
      for (uint32_t k = 0; k < p->corr_nfifo; k++)
        na[k] = p->corr_fifo[(p->corr_head + k) % p->corr_capfifo];
      free(p->corr_fifo);
      p->corr_fifo = na;
      p->corr_capfifo = nc;
      p->corr_head = 0;
    }
  }
  if (p->corr_nfifo < p->corr_capfifo) {
    p->corr_fifo[(p->corr_head + p->corr_nfifo) % p->corr_capfifo] =
        (gpd_corr_age_t){.corr = corr, .seq = p->records};
    p->corr_nfifo++;
  }
  while (p->corr_nfifo > 0) {
    gpd_corr_age_t *e = &p->corr_fifo[p->corr_head];
    int present = gpd_map_get(&p->corr, e->corr, NULL);
    int over = p->corr.n > p->max_corr || p->records - e->seq > p->max_corr_age;
    if (present && !over)
      break;
    if (present) {
      gpd_map_del(&p->corr, e->corr);
      p->corr_evicted++;
    }
    p->corr_head = (p->corr_head + 1) % p->corr_capfifo;
    p->corr_nfifo--;
  }
  if (p->corr_nfifo > 2 * p->corr.n + 64) {
    /* fold the ring so that compaction can work in place */
    gpd_corr_age_t *na = malloc((size_t)p->corr_capfifo * sizeof *na);
    if (na != NULL) {
      for (uint32_t k = 0; k < p->corr_nfifo; k++)
        na[k] = p->corr_fifo[(p->corr_head + k) % p->corr_capfifo];
      free(p->corr_fifo);
      p->corr_fifo = na;
      p->corr_head = 0;
      corr_compact(p);
    }
  }
}

/* ------------------------------------------------------------ ingest */

void gpd_profile_ingest(void *arg, const void *rec, size_t nbytes) {
  gpd_profile_t *p = arg;
  const gpd_rec_hdr_t *h = rec;
  p->records++;
  switch (h->type) {
  case GPD_REC_NODE: {
    p->pend_gen++;
    const gpd_rec_node_t *r = rec;
    if (!node_try(p, r)) {
      if (p->npnodes >= GPD_PROFILE_MAX_PENDING ||
          GROW(p->pnodes, p->npnodes, p->cappnodes, 64) < 0) {
        p->dropped_nodes++;
        p->full = 1;
        break;
      }
      p->pnodes[p->npnodes++] = *r;
    }
    break;
  }
  case GPD_REC_STRING: {
    const gpd_rec_string_t *r = rec;
    if (sizeof *r + (size_t)h->len <= nbytes)
      gpd_profile_add_string(p, r->id, r->kind, r->text, h->len);
    break;
  }
  case GPD_REC_MODULE: {
    const gpd_rec_module_t *r = rec;
    if (sizeof *r + (size_t)h->len <= nbytes)
      gpd_profile_add_module(p, r->id, r->build_id, r->build_id_len, r->base, r->size, r->path,
                             h->len);
    break;
  }
  case GPD_REC_INVOKE: {
    const gpd_rec_invoke_t *r = rec;
    p->pend_gen++;
    if (r->corr != 0) {
      gpd_map_put(&p->corr, r->corr,
                  GPD_CORR_PACK(r->node, r->op, (r->h.flags & GPD_INVOKE_MULTI) != 0));
      if (p->npacts)
        pend_match(p, r->corr);
      if (gpd_map_get(&p->corr, r->corr, NULL))
        corr_track(p, r->corr); /* still waiting (for more) activities */
    }
    break;
  }
  case GPD_REC_ACTIVITY: {
    const gpd_rec_activity_t *r = rec;
    p->pend_gen++;
    if (!activity_try(p, r, 0))
      pend_activity(p, r);
    break;
  }
  case GPD_REC_STATUS: {
    const gpd_rec_status_t *r = rec;
    if (r->api < GPD_API_MAX) {
      gpd_backend_t *b = &p->backends[r->api];
      b->seen = 1;
      b->enabled = r->state != 0;
      b->code = r->code;
      b->reason = r->reason;
    }
    break;
  }
  case GPD_REC_PCSAMPLE:
  case GPD_REC_PCSTATS:
  case GPD_REC_CUBIN:
    gpd_pcsample_ingest(&p->pcs, rec);
    break;
  default:
    break;
  }
}

static void retry(gpd_profile_t *p, int force) {
  p->pend_gen++;
  /* nodes: chains may arrive child-first across rings; loop to a fixpoint */
  int progress = 1;
  while (progress && p->npnodes > 0) {
    progress = 0;
    uint32_t w = 0;
    for (uint32_t i = 0; i < p->npnodes; i++) {
      if (node_try(p, &p->pnodes[i]))
        progress = 1;
      else
        p->pnodes[w++] = p->pnodes[i];
    }
    p->npnodes = w;
  }
  if (!force && !p->pend_dirty && p->ndead * 2 <= p->npacts)
    return;
  p->pend_dirty = 0;
  /* rescan (or compact) the pending activities; rebuild the chains */
  gpd_map_free(&p->pend_corr);
  uint32_t w = 0;
  for (uint32_t i = 0; i < p->npacts; i++) {
    if (p->pacts[i].a.h.type == GPD_REC_NONE)
      continue;
    if (activity_try(p, &p->pacts[i].a, force))
      continue;
    p->pacts[w] = p->pacts[i];
    pend_link(p, w);
    w++;
  }
  p->npacts = w;
  p->ndead = 0;
}

void gpd_profile_retry(gpd_profile_t *p) {
  if (p->npnodes || p->npacts)
    retry(p, 0);
}

void gpd_profile_finish(gpd_profile_t *p) {
  retry(p, 0);
  p->dropped_nodes += p->npnodes; /* parent/module never announced */
  p->npnodes = 0;
  retry(p, 1);
}

/* ------------------------------------------------- pending persistence */

int gpd_profile_pending_export(const gpd_profile_t *p, gpd_prec_t **out, uint32_t *n) {
  size_t cnt = (size_t)p->npnodes + p->corr.n + p->npacts;
  *out = NULL;
  *n = 0;
  if (cnt == 0)
    return 0;
  gpd_prec_t *v = malloc(cnt * sizeof *v);
  if (v == NULL)
    return -ENOMEM;
  uint32_t k = 0;
  for (uint32_t i = 0; i < p->npnodes; i++) {
    memset(&v[k], 0, sizeof v[k]);
    memcpy(v[k].b, &p->pnodes[i], sizeof p->pnodes[i]);
    v[k].len = GPD_SLOT_SIZE;
    k++;
  }
  for (size_t i = 0; i < p->corr.cap; i++) {
    if (p->corr.keys[i] == 0)
      continue;
    uint64_t val = p->corr.vals[i];
    gpd_rec_invoke_t r;
    memset(&r, 0, sizeof r);
    r.h.type = GPD_REC_INVOKE;
    r.h.version = GPD_REC_VERSION;
    r.h.nslots = 1;
    r.h.flags = ((val >> 40) & 1) ? GPD_INVOKE_MULTI : 0;
    unsigned api = GPD_CORR_API(p->corr.keys[i]); /* not kept in the map; unused */
    r.api = (uint8_t)(api < GPD_API_MAX ? api : GPD_API_NONE);
    r.op = (uint8_t)(val >> 32);
    r.node = (uint32_t)val;
    r.corr = p->corr.keys[i];
    memset(&v[k], 0, sizeof v[k]);
    memcpy(v[k].b, &r, sizeof r);
    v[k].len = GPD_SLOT_SIZE;
    k++;
  }
  for (uint32_t i = 0; i < p->npacts; i++) {
    if (p->pacts[i].a.h.type == GPD_REC_NONE)
      continue; /* tombstone: matched already */
    memset(&v[k], 0, sizeof v[k]);
    memcpy(v[k].b, &p->pacts[i].a, sizeof p->pacts[i].a);
    v[k].len = 2 * GPD_SLOT_SIZE;
    k++;
  }
  *out = v;
  *n = k;
  return 0;
}

int gpd_profile_restore_pending(gpd_profile_t *p, const void *rec, size_t nbytes) {
  _Alignas(64) uint8_t buf[2 * GPD_SLOT_SIZE];
  if (rec == NULL || nbytes < GPD_SLOT_SIZE || nbytes > sizeof buf || nbytes % GPD_SLOT_SIZE)
    return GPD_EBADRECORD;
  memcpy(buf, rec, nbytes);
  const gpd_rec_hdr_t *h = (const gpd_rec_hdr_t *)buf;
  if (gpd_rec_validate(buf, nbytes) < 0 ||
      (h->type != GPD_REC_NODE && h->type != GPD_REC_INVOKE && h->type != GPD_REC_ACTIVITY))
    return GPD_EBADRECORD;
  gpd_profile_ingest(p, buf, nbytes);
  p->records--; /* counted when it was first consumed */
  return 0;
}

double gpd_profile_excl(const gpd_profile_t *p, uint64_t ctx, unsigned metric) {
  uint32_t i = gpd_profile_find(p, ctx);
  if (i == GPD_NONE)
    return 0;
  return gpd_mval_get(p->nodes[i].m, p->nodes[i].nm, metric);
}

double gpd_profile_incl(const gpd_profile_t *p, uint64_t ctx, unsigned metric) {
  uint32_t root = gpd_profile_find(p, ctx);
  if (root == GPD_NONE)
    return 0;
  double sum = 0;
  /* parents precede children: a node is inside the subtree iff walking up
   * reaches root before index drops below root */
  for (uint32_t i = root; i < p->nnodes; i++) {
    uint32_t j = i;
    while (j != GPD_NONE && j > root)
      j = p->nodes[j].parent;
    if (j == root)
      sum += gpd_mval_get(p->nodes[i].m, p->nodes[i].nm, metric);
  }
  return sum;
}

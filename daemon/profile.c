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
#include <stddef.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuprof/error.h"
#include "gpuprof/hash.h"
#include "gpuprof/metric.h"
#include "gpuprof/record.h"

#include "daemon.h"
#include "cpusample.h"
#include "graph.h"
#include "pcsample.h"
#include "trace.h"

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

/* ------------------------------------------------------ uint32 indexes
 *
 * by_ctx, by_local and the label pool's dedup index store 4-byte values
 * (a node, a locals entry, a label offset) whose keys are derived from the
 * value (the node's Merkle id, the shim's local id, the label's hash): a
 * node costs 4 bytes of index at load <= 3/4, against 16 at <= 1/2 for a
 * key -> value map.  Entries are never deleted. */

typedef uint64_t (*ix_key_fn)(const gpd_profile_t *p, uint32_t v);

static inline uint32_t ix_home(uint64_t key, uint32_t mask) {
  key ^= key >> 31;
  key *= 0x9e3779b97f4a7c15ull;
  return (uint32_t)(key >> 32) & mask;
}

static inline __attribute__((always_inline)) uint32_t ix_get(const gpd_ix_t *ix, const gpd_profile_t *p, uint64_t key, ix_key_fn kf) {
  if (ix->cap == 0)
    return GPD_NONE;
  uint32_t mask = ix->cap - 1;
  for (uint32_t i = ix_home(key, mask);; i = (i + 1) & mask) {
    uint32_t s = ix->slot[i];
    if (s == 0)
      return GPD_NONE;
    if (kf(p, s - 1) == key)
      return s - 1;
  }
}

/* Insert v (key not present).  0 or -ENOMEM. */
static int ix_put(gpd_ix_t *ix, const gpd_profile_t *p, uint64_t key, uint32_t v, ix_key_fn kf) {
  if ((uint64_t)(ix->n + 1) * 4 > (uint64_t)ix->cap * 3) {
    uint32_t ncap = ix->cap ? ix->cap * 2 : 64;
    uint32_t *ns = calloc(ncap, sizeof *ns);
    if (ns == NULL)
      return -ENOMEM;
    for (uint32_t j = 0; j < ix->cap; j++) {
      uint32_t s = ix->slot[j];
      if (s == 0)
        continue;
      uint32_t i = ix_home(kf(p, s - 1), ncap - 1);
      while (ns[i] != 0)
        i = (i + 1) & (ncap - 1);
      ns[i] = s;
    }
    free(ix->slot);
    ix->slot = ns;
    ix->cap = ncap;
  }
  uint32_t mask = ix->cap - 1, i = ix_home(key, mask);
  while (ix->slot[i] != 0)
    i = (i + 1) & mask;
  ix->slot[i] = v + 1;
  ix->n++;
  return 0;
}

static void ix_free(gpd_ix_t *ix) {
  free(ix->slot);
  memset(ix, 0, sizeof *ix);
}

static uint64_t key_ctx(const gpd_profile_t *p, uint32_t v) { return p->nodes[v].id; }
static uint64_t key_local(const gpd_profile_t *p, uint32_t v) { return p->locals[v].local; }
/* Attribution cache key (call site, kernel name id, op) of target node v:
 * a KERNEL below its placeholder below the call site (module = the name's
 * string id), or a placeholder below the call site. */
static uint64_t target_key(uint32_t at, uint32_t name_id, unsigned op) {
  return name_id < (1u << 28) ? ((uint64_t)at << 32 | (uint64_t)name_id << 4 | op) : 0;
}
static uint64_t key_target(const gpd_profile_t *p, uint32_t v) {
  const gpd_node_t *t = &p->nodes[v];
  if (t->kind == GPD_NODE_KERNEL && t->parent != GPD_NONE) {
    const gpd_node_t *ph = &p->nodes[t->parent];
    return ph->parent == GPD_NONE ? 0 : target_key(ph->parent, t->module, ph->op);
  }
  if (t->kind == GPD_NODE_PLACEHOLDER && t->parent != GPD_NONE)
    return target_key(t->parent, 0, t->op);
  return 0;
}
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
    for (uint32_t i = ix_home(h, mask); p->lp_ix.slot[i] != 0; i = (i + 1) & mask)
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
  if (ix_put(&p->lp_ix, p, h, off, key_label) < 0)
    return 0;
  p->nlp += (uint32_t)len + 1;
  return off + 1;
}

/* --------------------------------------------------------- metric pool
 *
 * A node's exclusive metrics are one block of the profile's word pool:
 * {mask, values of the set bits}; only non-zero metrics take room (a
 * kernel node with 5 metrics: 48 bytes; a frame node: none).  Blocks grow
 * by moving to a larger one; freed blocks are reused by size. */

static uint32_t mblk_alloc(gpd_profile_t *p, unsigned words) {
  uint32_t b = p->mfree[words];
  if (b != 0) {
    p->mfree[words] = (uint32_t)p->mw[b].mask;
    return b;
  }
  if (p->nmw == 0)
    p->nmw = 1; /* block 0 means "none" */
  if ((uint64_t)p->nmw + words > p->capmw) {
    uint64_t nc = p->capmw ? (uint64_t)p->capmw * 2 : 1024;
    while (nc < (uint64_t)p->nmw + words)
      nc *= 2;
    if (nc > UINT32_MAX)
      return 0;
    gpd_mword_t *na = realloc(p->mw, nc * sizeof *na);
    if (na == NULL)
      return 0;
    p->mw = na;
    p->capmw = (uint32_t)nc;
  }
  b = p->nmw;
  p->nmw += words;
  return b;
}

static void mark_dirty(gpd_profile_t *p, uint32_t i) {
  gpd_node_t *n = &p->nodes[i];
  if (n->dirty)
    return;
  n->dirty = 1;
  if (p->ndirtyv == p->capdirtyv) {
    uint32_t nc = p->capdirtyv ? p->capdirtyv * 2 : 64;
    uint32_t *na = realloc(p->dirtyv, (size_t)nc * sizeof *na);
    if (na == NULL) {
      p->ndirtyv = UINT32_MAX; /* overflowed: the writer scans every node */
      return;
    }
    p->dirtyv = na;
    p->capdirtyv = nc;
  }
  if (p->ndirtyv != UINT32_MAX)
    p->dirtyv[p->ndirtyv++] = i;
}

/* ------------------------------------------------- query change logs */

/* At most this many distinct nodes per change log: past it a reader
 * re-reads every node anyway (merge.c's full sum), so a longer log would
 * only cost memory (bounded to 1/8 of the nodes: 0.5 byte a node). */
static uint32_t qlog_max(const gpd_profile_t *p) { return p->nnodes / 8 > 256 ? p->nnodes / 8 : 256; }

/* Node i's metrics change: append it to each armed log it is not in. */
static void qlog_slow(gpd_profile_t *p, uint32_t i) {
  if (i >= p->capqbit) {
    uint32_t nc = p->capnodes > i ? p->capnodes : i + 1;
    uint8_t *nb = realloc(p->qbit, nc);
    if (nb == NULL) {
      for (unsigned c = 0; c < GPD_QLOG_N; c++)
        p->qlog[c].over |= (p->qarmed >> c) & 1;
      p->qarmed = 0;
      return;
    }
    memset(nb + p->capqbit, 0, nc - p->capqbit);
    p->qbit = nb;
    p->capqbit = nc;
  }
  uint8_t want = p->qarmed & (uint8_t)~p->qbit[i];
  for (unsigned c = 0; c < GPD_QLOG_N; c++) {
    gpd_qlog_t *l = &p->qlog[c];
    if (!((want >> c) & 1))
      continue;
    if (l->n >= qlog_max(p) || GROW(l->v, l->n, l->cap, 64) < 0) {
      l->over = 1; /* incomplete: no more logging until the next take */
      p->qarmed &= (uint8_t)~(1u << c);
      continue;
    }
    l->v[l->n++] = i;
    p->qbit[i] |= (uint8_t)(1u << c);
  }
}

static inline void qlog_note(gpd_profile_t *p, uint32_t i) {
  if (p->qarmed && (i >= p->capqbit || (p->qbit[i] & p->qarmed) != p->qarmed))
    qlog_slow(p, i);
}

void gpd_profile_qlog_take(gpd_profile_t *p, unsigned c, const uint32_t **v, uint32_t *n, int *over) {
  gpd_qlog_t *l = &p->qlog[c];
  *over = l->over || !((p->qarmed >> c) & 1);
  p->qarmed |= (uint8_t)(1u << c);
  for (uint32_t k = 0; k < l->n; k++)
    p->qbit[l->v[k]] &= (uint8_t)~(1u << c);
  *v = l->v;
  *n = *over ? 0 : l->n;
  l->n = 0;
  l->over = 0;
}

/* gpd_profile_metrics_add where only the ids in cand can be non-zero.
 * Returns the ids of v that are non-zero (added, or lost when *err is
 * set to -ENOMEM; *err is left alone otherwise). */
static uint64_t metrics_add_mask(gpd_profile_t *p, uint32_t i, const double *v, uint64_t cand, int *err) {
  uint64_t add = 0;
  for (uint64_t bits = cand; bits; bits &= bits - 1)
    if (v[__builtin_ctzll(bits)] != 0)
      add |= bits & -bits;
  if (add == 0)
    return 0;
  p->mmask |= add;
  p->tree_gen++;
  qlog_note(p, i);
  gpd_node_t *n = &p->nodes[i];
  uint64_t old = n->mb ? p->mw[n->mb].mask : 0;
  if (n->mb == 0 && GROW(p->mnodes, p->nmnodes, p->capmnodes, 64) < 0) {
    *err = -ENOMEM;
    return add;
  }
  if ((old | add) != old) {
    uint64_t nmask = old | add;
    uint32_t nb = mblk_alloc(p, (unsigned)__builtin_popcountll(nmask) + 1);
    if (nb == 0) {
      *err = -ENOMEM;
      return add;
    }
    gpd_mword_t *w = p->mw; /* after the (re)allocation */
    w[nb].mask = nmask;
    unsigned k = 1, j = 1;
    for (uint64_t bits = nmask; bits; bits &= bits - 1, k++)
      w[nb + k].v = (old & bits & -bits) ? w[n->mb + j++].v : 0;
    if (n->mb) {
      unsigned ow = (unsigned)__builtin_popcountll(old) + 1;
      w[n->mb].mask = p->mfree[ow];
      p->mfree[ow] = n->mb;
    } else {
      p->mnodes[p->nmnodes++] = i; /* room made above */
    }
    n->mb = nb;
  }
  /* walk the block's ids in order (no popcount: without -mpopcnt it is a
   * libgcc call per metric on the ingest path) */
  gpd_mword_t *blk = &p->mw[n->mb];
  unsigned k = 1;
  for (uint64_t bits = blk->mask; bits; bits &= bits - 1, k++)
    if (add & bits & -bits)
      blk[k].v += v[__builtin_ctzll(bits)];
  mark_dirty(p, i);
  return add;
}

#define GPD_M_ALL (GPD_M__COUNT >= 64 ? ~0ull : (1ull << GPD_M__COUNT) - 1)

int gpd_profile_metrics_add(gpd_profile_t *p, uint32_t i, const double *v) {
  int err = 0;
  metrics_add_mask(p, i, v, GPD_M_ALL, &err);
  return err;
}

int gpd_profile_metric_add(gpd_profile_t *p, uint32_t i, unsigned id, double v) {
  double d[GPD_M__COUNT];
  if (id >= GPD_M__COUNT || i >= p->nnodes)
    return -EINVAL;
  memset(d, 0, sizeof d);
  d[id] = v;
  return gpd_profile_metrics_add(p, i, d);
}

double gpd_node_metric(const gpd_profile_t *p, const gpd_node_t *n, unsigned id) {
  uint64_t mask = gpd_node_mask(p, n);
  if (id >= GPD_M__COUNT || !(mask & (1ull << id)))
    return 0;
  return p->mw[n->mb + 1 + __builtin_popcountll(mask & ((1ull << id) - 1))].v;
}

unsigned gpd_node_metrics(const gpd_profile_t *p, const gpd_node_t *n, gpd_mval_t *out) {
  uint64_t mask = gpd_node_mask(p, n);
  const gpd_mword_t *v = gpd_node_vals(p, n);
  unsigned k = 0;
  for (uint64_t bits = mask; bits; bits &= bits - 1, k++) {
    out[k].id = (uint32_t)__builtin_ctzll(bits);
    out[k].v = v[k].v;
  }
  return k;
}

/* --------------------------------------------------------------- nodes */

static uint32_t add_node(gpd_profile_t *p, uint64_t id, uint32_t parent, uint8_t kind) {
  if (p->nnodes >= GPD_PROFILE_MAX_NODES) {
    p->full = 1;
    return GPD_NONE;
  }
  if (GROW(p->nodes, p->nnodes, p->capnodes, 64) < 0)
    return GPD_NONE;
  uint32_t i = p->nnodes;
  gpd_node_t *n = &p->nodes[i];
  memset(n, 0, sizeof *n);
  n->id = id;
  n->parent = parent;
  n->kind = kind;
  if (ix_put(&p->by_ctx, p, id, i, key_ctx) < 0)
    return GPD_NONE;
  p->nnodes++;
  p->tree_gen++;
  return i;
}

/* Metric ids gpd_metric_accumulate can make non-zero, per op: derived
 * once from the rule itself (every subkind, every input field non-zero),
 * so attribute_at scans ~11 ids instead of all GPD_M__COUNT and the two
 * cannot disagree. */
static uint64_t op_ids[GPD_OP_MAX];
static pthread_once_t op_ids_once = PTHREAD_ONCE_INIT;

static void op_ids_init(void) {
  for (unsigned op = 0; op < GPD_OP_MAX; op++) {
    for (unsigned sk = 0; sk < 256; sk++) {
      double v[GPD_M__COUNT];
      gpd_rec_activity_t a;
      memset(v, 0, sizeof v);
      memset(&a, 0x01, sizeof a);
      a.op = (uint8_t)op;
      a.subkind = (uint8_t)sk;
      a.start = 1;
      a.end = 2;
      gpd_metric_accumulate(v, &a);
      for (unsigned m = 0; m < GPD_M__COUNT && m < 64; m++) /* daemon metric ids < 64 */
        if (v[m] != 0)
          op_ids[op] |= 1ull << m;
    }
  }
}

int gpd_profile_init(gpd_profile_t *p, uint64_t profile_id) {
  pthread_once(&op_ids_once, op_ids_init); /* attribute_at reads op_ids */
  memset(p, 0, sizeof *p);
  p->profile_id = profile_id;
  p->max_corr = GPD_PROFILE_MAX_CORR;
  p->max_corr_age = GPD_PROFILE_MAX_CORR_AGE;
  p->pend_full = 1; /* rows of an earlier life of this profile go */
  /* correlation ids come in sequence per API (GPD_CORR): runs of 16 share
   * cache lines in the two correlation maps */
  p->corr.run_shift = 4;
  p->pend_corr.run_shift = 4;
  if (add_node(p, GPD_CTX_ROOT, GPD_NONE, GPD_NODE_ROOT) != 0)
    return -ENOMEM;
  return 0;
}

void gpd_profile_free(gpd_profile_t *p) {
  free(p->nodes);
  free(p->mw);
  free(p->mnodes);
  free(p->lp);
  free(p->dirtyv);
  free(p->qbit);
  for (unsigned c = 0; c < GPD_QLOG_N; c++)
    free(p->qlog[c].v);
  for (uint32_t i = 0; i < p->nstrs; i++)
    free(p->strs[i].text);
  free(p->strs);
  for (uint32_t i = 0; i < p->nmods; i++)
    free(p->mods[i].path);
  free(p->mods);
  free(p->pnodes);
  free(p->pnode_seq);
  free(p->pdel);
  free(p->pacts);
  free(p->locals);
  free(p->corr_fifo);
  ix_free(&p->by_ctx);
  ix_free(&p->by_local);
  ix_free(&p->lp_ix);
  gpd_map_free(&p->corr);
  gpd_map_free(&p->pend_corr);
  ix_free(&p->targets);
  gpd_map_free(&p->str_by_id);
  gpd_map_free(&p->mod_by_id);
  gpd_map_free(&p->trace_streams);
  gpd_pcsample_free(p->pcs);
  gpd_cpusample_free(p->cps);
  gpd_graph_free(p);
  gpd_tracewin_free(&p->tw);
  memset(p, 0, sizeof *p);
}

size_t gpd_profile_bytes(const gpd_profile_t *p) {
  size_t b = (size_t)p->capnodes * sizeof *p->nodes + (size_t)p->capmw * sizeof *p->mw + p->caplp +
             ((size_t)p->capdirtyv + p->capmnodes) * 4 + p->capqbit +
             ((size_t)p->by_ctx.cap + p->by_local.cap + p->lp_ix.cap + p->targets.cap) * 4 +
             (size_t)p->caplocals * sizeof *p->locals + (size_t)p->capstrs * sizeof *p->strs +
             (size_t)p->capmods * sizeof *p->mods + p->str_bytes +
             (size_t)p->cappnodes * sizeof *p->pnodes + (size_t)p->cappacts * sizeof *p->pacts +
             (size_t)p->corr_capfifo * sizeof *p->corr_fifo + gpd_tracewin_bytes(&p->tw) +
             gpd_graph_bytes(p);
  for (unsigned c = 0; c < GPD_QLOG_N; c++)
    b += (size_t)p->qlog[c].cap * 4;
  const gpd_map_t *maps[] = {&p->corr, &p->pend_corr, &p->str_by_id, &p->mod_by_id};
  for (size_t i = 0; i < sizeof maps / sizeof *maps; i++)
    b += maps[i]->cap * 16;
  return b;
}

uint32_t gpd_profile_find(const gpd_profile_t *p, uint64_t ctx) {
  return ix_get(&p->by_ctx, p, ctx, key_ctx);
}

/* gpd_profile_local, inlined into the attribution path (one call per
 * activity was 7 % of its CPU, perf, pairs). */
static inline __attribute__((always_inline)) uint32_t local_node(const gpd_profile_t *p, uint32_t local) {
  if (local == 0)
    return 0; /* "none": the root */
  uint32_t k = ix_get(&p->by_local, p, local, key_local);
  return k == GPD_NONE ? GPD_NONE : p->locals[k].node;
}

uint32_t gpd_profile_local(const gpd_profile_t *p, uint32_t local) { return local_node(p, local); }

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
  if (ix_get(&p->by_local, p, local, key_local) != GPD_NONE)
    return 0;
  if (GROW(p->locals, p->nlocals, p->caplocals, 64) < 0)
    return -ENOMEM;
  p->locals[p->nlocals].local = local;
  p->locals[p->nlocals].node = idx;
  if (ix_put(&p->by_local, p, local, p->nlocals, key_local) < 0)
    return -ENOMEM;
  p->pend_dirty = 1;
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
  i = add_node(p, id, par, kind);
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
static int node_try(gpd_profile_t *p, const gpd_rec_node_t *r) {
  if (ix_get(&p->by_local, p, r->id, key_local) != GPD_NONE)
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
        if (k != GPD_NONE) {
          target = k;
          if (p->nodes[k].module == 0)
            p->nodes[k].module = name_id; /* the attribution cache's key */
        }
        if (key != kb)
          free(key);
      }
    }
  }
  return target;
}

/* attribute_at's metric values, indexed by metric id: all zero between
 * calls (it zeroes the ~3 ids an activity writes instead of the ~11 its
 * op may write before each call); one per monitor thread. */
static _Thread_local double attr_v[GPD_M__COUNT];

/* 1 attributed; 0 not yet (!force, the kernel's name string unknown). */
static int attribute_at(gpd_profile_t *p, uint32_t at, const gpd_rec_activity_t *a, uint8_t inv_op,
                        int force) {
  unsigned op = a->op != GPD_OP_NONE ? a->op : inv_op;
  if (op == GPD_OP_NONE || op >= GPD_OP_MAX)
    op = GPD_OP_KERNEL;
  /* hot path: (call site, kernel name, op) -> node, cached; the cache
   * holds node indexes only, its keys are derived from the nodes.  An
   * entry exists only once the name is known (complete, below). */
  uint32_t name_id = op == GPD_OP_KERNEL ? a->name : 0;
  uint64_t key = target_key(at, name_id, op);
  uint32_t target = key ? ix_get(&p->targets, p, key, key_target) : GPD_NONE;
  if (target == GPD_NONE) {
    if (!force && a->op == GPD_OP_KERNEL && a->name != 0 && gpd_profile_string(p, a->name) == NULL)
      return 0;
    target = target_of(p, at, op, name_id, force);
    int complete = name_id == 0 || (p->nodes[target].kind == GPD_NODE_KERNEL &&
                                     gpd_profile_string(p, name_id) != NULL);
    if (key && complete && key_target(p, target) == key)
      ix_put(&p->targets, p, key, target, key_target);
  }
  /* only the ids the op's rule writes are zeroed and read: op_ids[op] is
   * that rule's whole write set (op_ids_init runs it on an activity with
   * every field non-zero).  A memset of all GPD_M__COUNT doubles per
   * activity was a tenth of attribute_at's samples (perf, pairs). */
  const uint64_t ids = op_ids[op]; /* filled by gpd_profile_init */
  double *v = attr_v; /* all zero between calls */
  if (a->op == op) {
    gpd_metric_accumulate(v, a);
  } else {
    gpd_rec_activity_t eff = *a;
    eff.op = (uint8_t)op; /* an activity without op takes its invocation's */
    gpd_metric_accumulate(v, &eff);
  }
  int err = 0; /* out of memory: these values are lost, as before */
  uint64_t nz = metrics_add_mask(p, target, v, ids, &err);
  for (uint64_t b = nz; b; b &= b - 1) /* back to all zero: the ~3 ids written */
    v[__builtin_ctzll(b)] = 0;
  p->activities++;
  if (p->trace)
    gpd_trace_activity(p, target, a, op);
  return 1;
}

/* A stored `pending` row is gone (matched, placed, evicted): delete it at
 * the next snapshot.  Out of memory: rewrite all rows then. */
static void pend_gone(gpd_profile_t *p, uint64_t seq) {
  if (!(seq & GPD_PEND_STORED) || p->pend_full)
    return;
  if (p->npdel == p->cappdel) {
    uint32_t nc = p->cappdel ? p->cappdel * 2 : 64;
    uint64_t *na = realloc(p->pdel, (size_t)nc * sizeof *na);
    if (na == NULL) {
      p->pend_full = 1;
      return;
    }
    p->pdel = na;
    p->cappdel = nc;
  }
  p->pdel[p->npdel++] = seq & ~GPD_PEND_STORED;
}

/* Remove corr from the correlation map (its row goes if stored). */
static void corr_del(gpd_profile_t *p, uint64_t corr, uint64_t val) {
  if (val & GPD_CORR_STORED)
    pend_gone(p, GPD_PEND_SEQ(1, corr) | GPD_PEND_STORED);
  gpd_map_del(&p->corr, corr);
}

/* corr left the map: if it is the fifo's newest entry (an activity that
 * follows its invocation, the common order), drop that entry now, so
 * corr_track need not look it up in the map when it reaches the fifo's
 * head.  An entry from before the last snapshot leaves corr_old's count
 * with it. */
static inline void corr_unlast(gpd_profile_t *p, uint64_t corr) {
  if (p->corr_nfifo == 0)
    return;
  uint32_t last = (p->corr_head + p->corr_nfifo - 1) & (p->corr_capfifo - 1);
  if (p->corr_fifo[last].corr != corr)
    return;
  p->corr_nfifo--;
  if (p->corr_old > p->corr_nfifo)
    p->corr_old = p->corr_nfifo;
}

static uint32_t unknown_node(gpd_profile_t *p) {
  return gpd_profile_child(p, 0, GPD_NODE_UNKNOWN, GPD_UNKNOWN_LABEL, GPD_UNKNOWN_LABEL, NULL);
}

/* What an attribution attempt did. */
enum {
  ACT_WAIT = 0,    /* no invocation with its correlation id yet */
  ACT_DONE = 1,    /* attributed */
  ACT_BLOCKED = 2, /* invocation known, its node or the kernel's name not yet */
};

/* Attribute a under the invocation packed in v (GPD_CORR_PACK); the
 * caller removes a single-activity invocation.  force: as activity_try. */
static int activity_at(gpd_profile_t *p, const gpd_rec_activity_t *a, uint64_t v, int force) {
  uint32_t at = local_node(p, (uint32_t)v);
  if (at == GPD_NONE) {
    if (!force)
      return ACT_BLOCKED;
    at = unknown_node(p);
    if (at == GPD_NONE)
      at = 0;
    p->unknown++;
  }
  if (a->graph_node && (at = gpd_graph_place(p, at, a->graph_node, force)) == GPD_NONE)
    return ACT_BLOCKED; /* run by a CUDA graph: below its node's creation path (graph.c) */
  return attribute_at(p, at, a, (uint8_t)(v >> 32), force) ? ACT_DONE : ACT_BLOCKED;
}

/* ACT_*.  force: attribute whatever is missing to <unknown context> / an
 * unknown kernel name (always ACT_DONE). */
static int activity_try(gpd_profile_t *p, const gpd_rec_activity_t *a, int force) {
  uint64_t *ref = gpd_map_ref(&p->corr, a->corr);
  if (ref == NULL) {
    if (!force)
      return ACT_WAIT;
    uint32_t u = unknown_node(p);
    attribute_at(p, u == GPD_NONE ? 0 : u, a, GPD_OP_NONE, 1);
    p->unknown++;
    return ACT_DONE;
  }
  uint64_t v = *ref;
  int r = activity_at(p, a, v, force); /* leaves the correlation map alone */
  if (r == ACT_DONE && !((v >> 40) & 1)) {
    if (v & GPD_CORR_STORED)
      pend_gone(p, GPD_PEND_SEQ(1, a->corr) | GPD_PEND_STORED);
    gpd_map_del_ref(&p->corr, ref);
    corr_unlast(p, a->corr);
  }
  return r;
}

#define PACT_NONE UINT64_MAX

/* pacts index of logical id l (pbase + index). */
static inline uint32_t pact_ix(const gpd_profile_t *p, uint64_t l) { return (uint32_t)(l - p->pbase); }

static void pend_link(gpd_profile_t *p, uint32_t i) {
  int created;
  uint64_t *head = gpd_map_upsert(&p->pend_corr, p->pacts[i].a.corr, &created);
  if (head == NULL) {
    /* out of memory: unchained, found by the next rescan */
    p->pacts[i].next = PACT_NONE;
    p->pact_blocked++;
    p->pend_dirty = 1;
    return;
  }
  p->pacts[i].next = created ? PACT_NONE : *head;
  *head = p->pbase + i;
}

/* Drop the popped prefix [0, pact0) by moving the rest down: logical ids
 * stay valid (pbase grows by as much), so no chain changes. */
static void pact_shift(gpd_profile_t *p) {
  memmove(p->pacts, p->pacts + p->pact0, (size_t)(p->npacts - p->pact0) * sizeof *p->pacts);
  p->npacts -= p->pact0;
  p->pbase += p->pact0;
  p->pact0 = 0;
}

/* Pop matched activities off the front (in-order matching leaves them
 * there): O(popped), nothing moves or is relinked. */
static void pact_pop(gpd_profile_t *p) {
  while (p->pact0 < p->npacts && p->pacts[p->pact0].a.h.type == GPD_REC_NONE) {
    p->pact0++;
    p->ndead--;
  }
  if (p->pact0 == p->npacts) {
    p->pbase += p->npacts;
    p->npacts = p->pact0 = 0;
  }
}

static void pend_activity(gpd_profile_t *p, const gpd_rec_activity_t *a) {
  /* a full array whose popped prefix is a quarter of it moves down
   * instead of growing (moving costs the live entries, fewer than the
   * appends since the last move) */
  if (p->npacts == p->cappacts && p->pact0 > 0 && p->pact0 >= p->cappacts / 4)
    pact_shift(p);
  if (p->npacts - p->pact0 >= GPD_PROFILE_MAX_PENDING ||
      GROW(p->pacts, p->npacts, p->cappacts, 64) < 0) {
    activity_try(p, a, 1); /* bounded: never lost, goes to <unknown> */
    return;
  }
  uint32_t i = p->npacts++;
  p->pacts[i].a = *a;
  p->pacts[i].seq = GPD_PEND_SEQ(2, ++p->pend_seq);
  pend_link(p, i);
}

/* An INVOKE arrived (val: its GPD_CORR_PACK, in the correlation map):
 * match the activities that waited for its corr.  Returns 0 if that
 * consumed the invocation (removed from the map), 1 if it stays. */
static int pend_match(gpd_profile_t *p, uint64_t corr, uint64_t val) {
  uint64_t head;
  if (!gpd_map_take(&p->pend_corr, corr, &head))
    return 1;
  /* chain is newest first; attribute oldest first */
  uint32_t chain[64], n = 0;
  for (uint64_t l = head; l != PACT_NONE && n < 64; l = p->pacts[pact_ix(p, l)].next)
    chain[n++] = pact_ix(p, l);
  uint64_t rest = n == 64 ? p->pacts[chain[63]].next : PACT_NONE;
  if (rest != PACT_NONE) {
    gpd_map_put(&p->pend_corr, corr, rest); /* long chains: the rest waits for a rescan */
    p->pact_blocked++;
    p->pend_dirty = 1;
  }
  int present = 1, multi = (int)((val >> 40) & 1);
  while (n-- > 0) {
    uint32_t i = chain[n];
    int r = present ? activity_at(p, &p->pacts[i].a, val, 0) : ACT_WAIT;
    if (r == ACT_DONE) {
      p->pacts[i].a.h.type = GPD_REC_NONE;
      pend_gone(p, p->pacts[i].seq);
      p->ndead++;
      if (!multi) {
        corr_del(p, corr, val);
        present = 0;
      }
    } else {
      p->pact_blocked += r == ACT_BLOCKED;
      pend_link(p, i);
    }
  }
  return present;
}

/* ------------------------------------------------ correlation bounds */

/* Rewrite the ring with only the keys still in the map (oldest first). */
static void corr_compact(gpd_profile_t *p) {
  uint32_t w = 0, old = 0;
  for (uint32_t k = 0; k < p->corr_nfifo; k++) {
    gpd_corr_age_t e = p->corr_fifo[(p->corr_head + k) & (p->corr_capfifo - 1)];
    if (k + 16 < p->corr_nfifo) /* a miss per entry with many in flight */
      gpd_map_prefetch(&p->corr, p->corr_fifo[(p->corr_head + k + 16) & (p->corr_capfifo - 1)].corr);
    if (gpd_map_get(&p->corr, e.corr, NULL)) {
      p->corr_fifo[w++] = e; /* w <= k: in place once head is folded below */
      old += k < p->corr_old;
    }
  }
  p->corr_head = 0;
  p->corr_nfifo = w;
  p->corr_old = old;
}

/* An invocation entered the map: remember its age, then evict the oldest
 * while a bound is exceeded.  O(1) amortized. */
static void corr_track(gpd_profile_t *p, uint64_t corr) {
  if (p->corr_nfifo == p->corr_capfifo) {
    uint32_t nc = p->corr_capfifo ? p->corr_capfifo * 2 : 64;
    gpd_corr_age_t *na = malloc((size_t)nc * sizeof *na);
    if (na != NULL) {
      for (uint32_t k = 0; k < p->corr_nfifo; k++)
        na[k] = p->corr_fifo[(p->corr_head + k) & (p->corr_capfifo - 1)];
      free(p->corr_fifo);
      p->corr_fifo = na;
      p->corr_capfifo = nc;
      p->corr_head = 0;
    }
  }
  if (p->corr_nfifo < p->corr_capfifo) {
    p->corr_fifo[(p->corr_head + p->corr_nfifo) & (p->corr_capfifo - 1)] =
        (gpd_corr_age_t){.corr = corr, .seq = p->records};
    p->corr_nfifo++;
  } else {
    p->pend_full = 1; /* untracked: the next snapshot writes every row */
  }
  while (p->corr_nfifo > 0) {
    gpd_corr_age_t *e = &p->corr_fifo[p->corr_head];
    int over = p->corr.n > p->max_corr || p->records - e->seq > p->max_corr_age;
    if (e->corr == corr && !over)
      break; /* the entry just added: in the map, no lookup needed */
    uint64_t val;
    int present = gpd_map_get(&p->corr, e->corr, &val);
    if (present && !over)
      break;
    if (present) {
      corr_del(p, e->corr, val);
      p->corr_evicted++;
    }
    p->corr_head = (p->corr_head + 1) & (p->corr_capfifo - 1);
    p->corr_nfifo--;
    if (p->corr_old)
      p->corr_old--;
  }
  if (p->corr_nfifo > 2 * p->corr.n + 64) {
    /* fold the ring so that compaction can work in place */
    gpd_corr_age_t *na = malloc((size_t)p->corr_capfifo * sizeof *na);
    if (na != NULL) {
      for (uint32_t k = 0; k < p->corr_nfifo; k++)
        na[k] = p->corr_fifo[(p->corr_head + k) & (p->corr_capfifo - 1)];
      free(p->corr_fifo);
      p->corr_fifo = na;
      p->corr_head = 0;
      corr_compact(p);
    }
  }
}

/* ------------------------------------------------------------ ingest */

/* Room for one more pending NODE (pnodes and pnode_seq).  0 or -ENOMEM. */
static int pnode_room(gpd_profile_t *p) {
  if (p->npnodes < p->cappnodes)
    return 0;
  uint32_t nc = p->cappnodes ? p->cappnodes * 2 : 64;
  gpd_rec_node_t *na = realloc(p->pnodes, (size_t)nc * sizeof *na);
  if (na == NULL)
    return -ENOMEM;
  p->pnodes = na;
  uint64_t *ns = realloc(p->pnode_seq, (size_t)nc * sizeof *ns);
  if (ns == NULL)
    return -ENOMEM;
  p->pnode_seq = ns;
  p->cappnodes = nc;
  return 0;
}

void gpd_profile_ingest(void *arg, const void *rec, size_t nbytes) {
  gpd_profile_t *p = arg;
  const gpd_rec_hdr_t *h = rec;
  p->records++;
  switch (h->type) {
  case GPD_REC_NODE: {
    p->pend_gen++;
    const gpd_rec_node_t *r = rec;
    if (!node_try(p, r)) {
      if (p->npnodes >= GPD_PROFILE_MAX_PENDING || pnode_room(p) < 0) {
        p->dropped_nodes++;
        p->full = 1;
        break;
      }
      p->pnode_seq[p->npnodes] = GPD_PEND_SEQ(0, ++p->pend_seq);
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
    if (p->trace)
      gpd_trace_invoke(p, r);
    if (r->corr != 0) {
      int created;
      uint64_t val = GPD_CORR_PACK(r->node, r->op, (r->h.flags & GPD_INVOKE_MULTI) != 0);
      uint64_t *slot = gpd_map_upsert(&p->corr, r->corr, &created);
      if (slot == NULL)
        break; /* out of memory: its activities go to <unknown context> */
      if (!created && (*slot & GPD_CORR_STORED))
        pend_gone(p, GPD_PEND_SEQ(1, r->corr) | GPD_PEND_STORED); /* replaced */
      *slot = val;
      if (p->npacts == 0 || pend_match(p, r->corr, val))
        corr_track(p, r->corr); /* still waiting (for more) activities */
    }
    break;
  }
  case GPD_REC_ACTIVITY: {
    const gpd_rec_activity_t *r = rec;
    p->pend_gen++;
    int st = activity_try(p, r, 0);
    if (st != ACT_DONE) {
      p->pact_blocked += st == ACT_BLOCKED;
      pend_activity(p, r);
    }
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
  case GPD_REC_CPUSAMPLE:
    gpd_cpusample_ingest(p, rec);
    break;
  case GPD_REC_TRACEWIN:
    gpd_tracewin_ingest(&p->tw, rec);
    break;
  case GPD_REC_GRAPHNODE:
    gpd_graph_ingest(p, rec);
    break;
  default:
    break;
  }
}

void gpd_profile_prefetch(void *arg, const void *slot) {
  const gpd_profile_t *p = arg;
  const gpd_rec_hdr_t *h = slot;
  uint8_t type = h->type;
  if (type != GPD_REC_INVOKE && type != GPD_REC_ACTIVITY)
    return;
  /* both records keep corr at the same offset */
  _Static_assert(offsetof(gpd_rec_invoke_t, corr) == offsetof(gpd_rec_activity_t, corr), "corr");
  uint64_t corr;
  memcpy(&corr, (const uint8_t *)slot + offsetof(gpd_rec_invoke_t, corr), sizeof corr);
  gpd_map_prefetch(&p->corr, corr);
  if (p->npacts)
    gpd_map_prefetch(&p->pend_corr, corr);
}

int gpd_profile_consume(gpd_profile_t *p, gpd_region_t *r, uint32_t ring, uint64_t *cursor,
                        unsigned max) {
  return gpd_ring_consume_pf(r, ring, cursor, max, gpd_profile_ingest, gpd_profile_prefetch, p, &p->ring_tid);
}

static void retry(gpd_profile_t *p, int force) {
  p->pend_gen++;
  /* nodes: chains may arrive child-first across rings; loop to a fixpoint */
  int progress = 1;
  while (progress && p->npnodes > 0) {
    progress = 0;
    uint32_t w = 0;
    for (uint32_t i = 0; i < p->npnodes; i++) {
      if (node_try(p, &p->pnodes[i])) {
        progress = 1;
        pend_gone(p, p->pnode_seq[i]);
      } else {
        p->pnode_seq[w] = p->pnode_seq[i];
        p->pnodes[w++] = p->pnodes[i];
      }
    }
    p->npnodes = w;
  }
  /* A new node or string can only complete activities whose invocation
   * is known (ACT_BLOCKED); those waiting for their INVOKE are matched by
   * pend_match when it comes.  So rescan on pend_dirty only if some are
   * blocked (pact_blocked: an upper bound, recounted here), and compact
   * when half the list is tombstones. */
  if (p->pend_dirty && p->pact_blocked == 0)
    p->pend_dirty = 0;
  pact_pop(p);
  if (!force && !p->pend_dirty && p->ndead * 2 <= p->npacts - p->pact0)
    return;
  p->pend_dirty = 0;
  p->pact_blocked = 0;
  /* rescan (or compact) the pending activities; rebuild the chains in a
   * cleared map (its table kept: no regrowth, no fresh pages) */
  gpd_map_reset(&p->pend_corr, p->npacts - p->pact0 - p->ndead);
  uint32_t w = 0;
  for (uint32_t i = p->pact0; i < p->npacts; i++) {
    if (i + 16 < p->npacts) { /* the lookups below miss the cache with many pending */
      gpd_map_prefetch(&p->corr, p->pacts[i + 16].a.corr);
      gpd_map_prefetch(&p->pend_corr, p->pacts[i + 16].a.corr);
    }
    if (p->pacts[i].a.h.type == GPD_REC_NONE)
      continue;
    int st = activity_try(p, &p->pacts[i].a, force);
    if (st == ACT_DONE) {
      pend_gone(p, p->pacts[i].seq);
      continue;
    }
    p->pact_blocked += st == ACT_BLOCKED;
    if (w != i)
      p->pacts[w] = p->pacts[i];
    pend_link(p, w);
    w++;
  }
  p->npacts = w;
  p->pact0 = 0;
  p->ndead = 0;
}

void gpd_profile_retry(gpd_profile_t *p) {
  if (p->npnodes || p->npacts)
    retry(p, 0);
  gpd_cpusample_retry(p, 0);
}

void gpd_profile_finish(gpd_profile_t *p) {
  retry(p, 0);
  p->dropped_nodes += p->npnodes; /* parent/module never announced */
  p->npnodes = 0;
  retry(p, 1);
  gpd_cpusample_retry(p, 1);
  gpd_trace_stat(p); /* drops/refusals after the last event */
}

/* ------------------------------------------------- pending persistence */

/* One row: the record bytes (len) and its id. */
static void prec_set(gpd_prec_t *v, const void *rec, uint32_t len, uint64_t seq) {
  memset(v, 0, sizeof *v);
  memcpy(v->b, rec, len);
  v->len = len;
  v->seq = seq & ~GPD_PEND_STORED;
}

/* The INVOKE record of correlation-map entry (corr, val). */
static void prec_invoke(gpd_prec_t *v, uint64_t corr, uint64_t val) {
  gpd_rec_invoke_t r;
  memset(&r, 0, sizeof r);
  r.h.type = GPD_REC_INVOKE;
  r.h.version = GPD_REC_VERSION;
  r.h.nslots = GPD_REC_NSLOTS(r);
  r.h.flags = ((val >> 40) & 1) ? GPD_INVOKE_MULTI : 0;
  unsigned api = GPD_CORR_API(corr); /* not kept in the map; unused */
  r.api = (uint8_t)(api < GPD_API_MAX ? api : GPD_API_NONE);
  r.op = (uint8_t)(val >> 32);
  r.node = (uint32_t)val;
  r.corr = corr;
  prec_set(v, &r, sizeof r, GPD_PEND_SEQ(1, corr));
}

int gpd_profile_pending_delta(gpd_profile_t *p, gpd_prec_t **add, uint32_t *nadd, uint64_t **del,
                              uint32_t *ndel, int *full) {
  *add = NULL;
  *nadd = 0;
  *del = NULL;
  *ndel = 0;
  *full = p->pend_full;
  /* new rows: pending NODEs / ACTIVITYs are kept in row order, so the new
   * ones are a suffix; new INVOKEs are the correlation fifo past corr_old */
  uint32_t n0 = 0, a0 = p->pact0, f0 = 0;
  if (!*full) {
    n0 = p->npnodes;
    while (n0 > 0 && (p->pnode_seq[n0 - 1] & ~GPD_PEND_STORED) > GPD_PEND_SEQ(0, p->pend_seq_saved))
      n0--;
    a0 = p->npacts;
    while (a0 > p->pact0 && (p->pacts[a0 - 1].seq & ~GPD_PEND_STORED) > GPD_PEND_SEQ(2, p->pend_seq_saved))
      a0--;
    f0 = p->corr_old < p->corr_nfifo ? p->corr_old : p->corr_nfifo;
  }
  size_t cnt = (size_t)(p->npnodes - n0) + (p->npacts - a0) +
               (*full ? p->corr.n : (size_t)(p->corr_nfifo - f0));
  gpd_prec_t *v = cnt ? malloc(cnt * sizeof *v) : NULL;
  if (cnt && v == NULL) {
    p->pend_full = 1;
    return -ENOMEM;
  }
  uint32_t k = 0;
  for (uint32_t i = n0; i < p->npnodes; i++) {
    prec_set(&v[k++], &p->pnodes[i], sizeof p->pnodes[i], p->pnode_seq[i]);
    p->pnode_seq[i] |= GPD_PEND_STORED;
  }
  if (*full) {
    for (size_t i = 0; i < p->corr.cap; i++) {
      if (p->corr.e[i].key == 0)
        continue;
      prec_invoke(&v[k++], p->corr.e[i].key, p->corr.e[i].val);
      p->corr.e[i].val |= GPD_CORR_STORED;
    }
  } else {
    for (uint32_t f = f0; f < p->corr_nfifo; f++) {
      if (f + 16 < p->corr_nfifo)
        gpd_map_prefetch(&p->corr, p->corr_fifo[(p->corr_head + f + 16) & (p->corr_capfifo - 1)].corr);
      uint64_t corr = p->corr_fifo[(p->corr_head + f) & (p->corr_capfifo - 1)].corr, val;
      uint64_t *ref = gpd_map_ref(&p->corr, corr);
      if (ref == NULL || (*ref & GPD_CORR_STORED))
        continue; /* matched since, or listed twice */
      val = *ref;
      prec_invoke(&v[k++], corr, val);
      *ref = val | GPD_CORR_STORED;
    }
  }
  for (uint32_t i = a0; i < p->npacts; i++) {
    if (p->pacts[i].a.h.type == GPD_REC_NONE)
      continue; /* tombstone: matched already */
    prec_set(&v[k++], &p->pacts[i].a, sizeof p->pacts[i].a, p->pacts[i].seq);
    p->pacts[i].seq |= GPD_PEND_STORED;
  }
  if (!*full && p->npdel) {
    *del = p->pdel;
    *ndel = p->npdel;
    p->pdel = NULL;
    p->cappdel = 0;
  }
  p->npdel = 0;
  p->pend_full = 0;
  p->pend_seq_saved = p->pend_seq;
  p->corr_old = p->corr_nfifo;
  if (k == 0) {
    free(v);
    v = NULL;
  }
  *add = v;
  *nadd = k;
  return 0;
}

int gpd_profile_restore_pending(gpd_profile_t *p, const void *rec, size_t nbytes) {
  _Alignas(64) uint8_t buf[GPD_REC_FIXED_MAX];
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
  return gpd_node_metric(p, &p->nodes[i], metric);
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
      sum += gpd_node_metric(p, &p->nodes[i], metric);
  }
  return sum;
}

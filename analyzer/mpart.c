/* mpart.c - a part: what one worker (thread or MPI rank) read from its
 * slice of the inputs, its context-major grouping, and its byte form for
 * the reduction to rank 0 (analyzer.h).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer.h"

void gpd_mpart_init(gpd_mpart_t *p) { memset(p, 0, sizeof(*p)); }

void gpd_mpart_free(gpd_mpart_t *p) {
  if (p->wire) { /* adopted: the arrays lie in it */
    free(p->wire);
    gpd_mpart_index_free(&p->ctx_ix);
    memset(p, 0, sizeof(*p));
    return;
  }
  gpd_buf_free(&p->rows);
  gpd_buf_free(&p->bins);
  gpd_buf_free(&p->ctxrows);
  gpd_buf_free(&p->framerows);
  free(p->prof);
  free(p->pm);
  free(p->ctx);
  free(p->key);
  free(p->cv);
  gpd_mpart_index_free(&p->ctx_ix);
  memset(p, 0, sizeof(*p));
}

/* splitmix64 finalizer over the combined keys */
uint64_t gpd_mpart_hash(int64_t a, int64_t b, int64_t c) {
  uint64_t x = (uint64_t)a * 0x9e3779b97f4a7c15ull ^ (uint64_t)b ^ ((uint64_t)c << 47 | (uint64_t)c >> 17);
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

void gpd_mpart_index_free(gpd_mpart_index_t *ix) {
  free(ix->slot);
  ix->slot = NULL;
  ix->cap = 0;
}

void gpd_mpart_index_insert(gpd_mpart_index_t *ix, uint64_t h, size_t idx) {
  size_t mask = ix->cap - 1, i = h & mask;
  while (ix->slot[i]) i = (i + 1) & mask;
  ix->slot[i] = (uint32_t)(idx + 1);
}

int gpd_mpart_index_reserve(gpd_mpart_index_t *ix, size_t nelem, uint64_t (*hash_of)(const void *c, size_t i), const void *c) {
  if ((nelem + 1) * 2 <= ix->cap) return 0;
  if (nelem >= UINT32_MAX - 1) return -ENOMEM;
  gpd_mpart_index_t n = {NULL, ix->cap ? ix->cap * 2 : 1024};
  while ((nelem + 1) * 2 > n.cap) n.cap *= 2;
  if (!(n.slot = calloc(n.cap, sizeof(*n.slot)))) return -ENOMEM;
  for (size_t i = 0; i < nelem; i++) gpd_mpart_index_insert(&n, hash_of(c, i), i);
  free(ix->slot);
  *ix = n;
  return 0;
}

long gpd_mpart_ctx_find(const gpd_mpart_t *p, int64_t uid, int64_t id) {
  if (!p->ctx_ix.cap) return -1;
  size_t mask = p->ctx_ix.cap - 1;
  for (size_t i = gpd_mpart_hash(uid, id, 0) & mask; p->ctx_ix.slot[i]; i = (i + 1) & mask) {
    const gpd_mctx_t *c = &p->ctx[p->ctx_ix.slot[i] - 1];
    if (c->uid == uid && c->id == id) return (long)(p->ctx_ix.slot[i] - 1);
  }
  return -1;
}

static uint64_t ctx_hash(const void *c, size_t i) {
  const gpd_mctx_t *x = &((const gpd_mpart_t *)c)->ctx[i];
  return gpd_mpart_hash(x->uid, x->id, 0);
}

int gpd_mpart_reindex(gpd_mpart_t *p) {
  gpd_mpart_index_free(&p->ctx_ix);
  int err = gpd_mpart_index_reserve(&p->ctx_ix, p->nctx, ctx_hash, p);
  if (err < 0) return err;
  for (size_t i = 0; i < p->nctx; i++) gpd_mpart_index_insert(&p->ctx_ix, ctx_hash(p, i), i);
  return 0;
}

int gpd_mpart_ctx_add(gpd_mpart_t *p, int64_t uid, int64_t id, uint64_t off, uint64_t len, uint32_t src) {
  int err;
  if (p->nctx == p->capctx) {
    size_t nc = p->capctx ? p->capctx * 2 : 1024;
    gpd_mctx_t *n = realloc(p->ctx, nc * sizeof(*n));
    if (!n) return -ENOMEM;
    gpd_buf_prefault(n, p->capctx * sizeof(*n), nc * sizeof(*n));
    p->ctx = n;
    p->capctx = nc;
  }
  if ((err = gpd_mpart_index_reserve(&p->ctx_ix, p->nctx, ctx_hash, p)) < 0) return err;
  p->ctx[p->nctx] = (gpd_mctx_t){uid, id, off, len, 0, 0, src, 0};
  gpd_mpart_index_insert(&p->ctx_ix, gpd_mpart_hash(uid, id, 0), p->nctx++);
  return 0;
}

static uint64_t key_hash(const void *c, size_t i) {
  const gpd_mkey_t *k = &((const gpd_mpart_t *)c)->key[i];
  return gpd_mpart_hash(k->uid, k->ctx, k->metric);
}

int gpd_mpart_group(gpd_mpart_t *p) {
  gpd_mpart_index_t ix = {NULL, 0};
  uint32_t *kof = NULL;
  size_t capkey = 0;
  int err = 0;
  free(p->key);
  free(p->cv);
  p->key = NULL;
  p->cv = NULL;
  p->nkey = p->ncv = 0;
  if (p->npm && !(kof = malloc(p->npm * sizeof(*kof)))) return -ENOMEM;
  gpd_buf_prefault(kof, 0, p->npm * sizeof(*kof));
  /* pass 1: key of every value, count per key.  A profile's values are
   * sorted by (context, metric) and neighbouring processes hold mostly the
   * same contexts: the previous profile of the same uid is walked
   * alongside, and where it holds the same (context, metric) its key is
   * taken without a hash lookup (a random access into the index and the
   * keys per value otherwise).  Unsorted values only miss the shortcut. */
  for (size_t pi = 0; pi < p->nprof; pi++) {
    const gpd_mpart_prof_t *pr = &p->prof[pi];
    uint64_t q = 0, qe = 0;
    if (pi && p->prof[pi - 1].uid == pr->uid) q = p->prof[pi - 1].pm_off, qe = q + p->prof[pi - 1].pm_n;
    for (uint64_t j = pr->pm_off; j < pr->pm_off + pr->pm_n; j++) {
      const gpd_mval_rec_t *r = &p->pm[j];
      while (q < qe && (p->pm[q].ctx < r->ctx || (p->pm[q].ctx == r->ctx && p->pm[q].metric < r->metric))) q++;
      if (q < qe && p->pm[q].ctx == r->ctx && p->pm[q].metric == r->metric) {
        size_t k = kof[q++];
        p->key[k].n++;
        kof[j] = (uint32_t)k;
        continue;
      }
      uint64_t h = gpd_mpart_hash(pr->uid, r->ctx, r->metric);
      size_t mask = ix.cap ? ix.cap - 1 : 0, k = SIZE_MAX;
      if (ix.cap)
        for (size_t i = h & mask; ix.slot[i]; i = (i + 1) & mask) {
          gpd_mkey_t *x = &p->key[ix.slot[i] - 1];
          if (x->uid == pr->uid && x->ctx == r->ctx && x->metric == r->metric) {
            k = ix.slot[i] - 1;
            break;
          }
        }
      if (k == SIZE_MAX) {
        if (p->nkey == capkey) {
          size_t nc = capkey ? capkey * 2 : 1024;
          gpd_mkey_t *nk = realloc(p->key, nc * sizeof(*nk));
          if (!nk) {
            err = -ENOMEM;
            goto done;
          }
          p->key = nk;
          capkey = nc;
        }
        if ((err = gpd_mpart_index_reserve(&ix, p->nkey, key_hash, p)) < 0) goto done;
        k = p->nkey++;
        p->key[k] = (gpd_mkey_t){pr->uid, r->ctx, r->metric, 0, 0, 0};
        gpd_mpart_index_insert(&ix, h, k);
      }
      p->key[k].n++;
      kof[j] = (uint32_t)k;
    }
  }
  /* pass 2: slices, then values in profile order (stable) */
  uint64_t off = 0;
  for (size_t k = 0; k < p->nkey; k++) {
    p->key[k].off = off;
    off += p->key[k].n;
    p->key[k].n = 0;
  }
  if (p->npm && !(p->cv = malloc(p->npm * sizeof(*p->cv)))) {
    err = -ENOMEM;
    goto done;
  }
  gpd_buf_prefault(p->cv, 0, p->npm * sizeof(*p->cv));
  for (size_t pi = 0; pi < p->nprof; pi++) {
    const gpd_mpart_prof_t *pr = &p->prof[pi];
    for (uint64_t j = pr->pm_off; j < pr->pm_off + pr->pm_n; j++) {
      gpd_mkey_t *k = &p->key[kof[j]];
      p->cv[k->off + k->n++] = (gpd_cval_rec_t){(uint32_t)(pi + 1), 0, p->pm[j].v};
    }
  }
  p->ncv = p->npm;
done:
  free(kof);
  gpd_mpart_index_free(&ix);
  return err;
}

/* ---- byte form ----
 *
 * A head of GPD_MPART_HEAD bytes: magic, inputs read, bytes read, then the
 * element count (u64) of each of the GPD_MPART_NARR arrays; then the
 * arrays' elements, each padded with zeros to a multiple of 8 bytes.  A
 * received part is used in place (gpd_mpart_adopt: the arrays point into
 * the buffer, which is why they are aligned), and a sender hands MPI the
 * arrays themselves (gpd_mpart_segs): no copy on either side but MPI's. */

static const char MAGIC[8] = "GPDPART3";

static size_t pad8(size_t n) { return (8 - (n & 7)) & 7; }

/* the arrays of p in byte-form order: where, how many, element size */
static void arrays(gpd_mpart_t *p, void ***a, size_t **cnt, size_t esz[GPD_MPART_NARR]) {
  void **aa[GPD_MPART_NARR] = {(void **)&p->rows.p,      (void **)&p->bins.p,      (void **)&p->prof,
                               (void **)&p->pm,          (void **)&p->ctx,         (void **)&p->ctxrows.p,
                               (void **)&p->framerows.p, (void **)&p->key,         (void **)&p->cv};
  size_t *cc[GPD_MPART_NARR] = {&p->rows.n, &p->bins.n, &p->nprof, &p->npm, &p->nctx,
                                &p->ctxrows.n, &p->framerows.n, &p->nkey, &p->ncv};
  size_t ee[GPD_MPART_NARR] = {1, 1, sizeof(*p->prof), sizeof(*p->pm), sizeof(*p->ctx), 1, 1, sizeof(*p->key),
                               sizeof(*p->cv)};
  memcpy(a, aa, sizeof(aa));
  memcpy(cnt, cc, sizeof(cc));
  memcpy(esz, ee, sizeof(ee));
}

size_t gpd_mpart_segs(const gpd_mpart_t *p, uint8_t head[GPD_MPART_HEAD], gpd_mseg_t seg[GPD_MPART_NARR]) {
  void **a[GPD_MPART_NARR];
  size_t *cnt[GPD_MPART_NARR], esz[GPD_MPART_NARR], total = GPD_MPART_HEAD;
  uint64_t hdr[2] = {p->ninputs, p->in_bytes};
  arrays((gpd_mpart_t *)p, a, cnt, esz);
  memcpy(head, MAGIC, 8);
  memcpy(head + 8, hdr, 16);
  for (int i = 0; i < GPD_MPART_NARR; i++) {
    uint64_t c = *cnt[i];
    memcpy(head + 24 + 8 * i, &c, 8);
    seg[i].p = *a[i];
    seg[i].n = c * esz[i];
    total += seg[i].n + pad8(seg[i].n);
  }
  return total;
}

int gpd_mpart_pack(const gpd_mpart_t *p, gpd_buf_t *out) {
  uint8_t head[GPD_MPART_HEAD], zero[8] = {0};
  gpd_mseg_t seg[GPD_MPART_NARR];
  size_t total = gpd_mpart_segs(p, head, seg);
  int err = gpd_buf_reserve(out, total);
  if (err < 0 || (err = gpd_buf_put(out, head, sizeof(head))) < 0) return err;
  for (int i = 0; i < GPD_MPART_NARR; i++)
    if ((err = gpd_buf_put(out, seg[i].p, seg[i].n)) < 0 || (err = gpd_buf_put(out, zero, pad8(seg[i].n))) < 0)
      return err;
  return 0;
}

int gpd_mpart_layout(const uint8_t head[GPD_MPART_HEAD], uint64_t off[GPD_MPART_NARR], uint64_t len[GPD_MPART_NARR],
                     uint64_t *total) {
  gpd_mpart_t dummy;
  void **a[GPD_MPART_NARR];
  size_t *cnt[GPD_MPART_NARR], esz[GPD_MPART_NARR];
  uint64_t o = GPD_MPART_HEAD;
  if (memcmp(head, MAGIC, 8)) return -EINVAL;
  arrays(&dummy, a, cnt, esz);
  for (int i = 0; i < GPD_MPART_NARR; i++) {
    uint64_t c;
    memcpy(&c, head + 24 + 8 * i, 8);
    if (c > ((uint64_t)1 << 46) / esz[i]) return -EINVAL; /* 64 TiB: no part is that large */
    off[i] = o;
    len[i] = c * esz[i];
    o += len[i] + pad8(len[i]);
  }
  *total = o;
  return 0;
}

static int in_range(uint64_t off, uint64_t len, uint64_t n) { return off <= n && len <= n - off; }

int gpd_mpart_adopt(gpd_mpart_t *p, uint8_t *b, size_t n) {
  uint64_t off[GPD_MPART_NARR], len[GPD_MPART_NARR], total, hdr[2];
  void **a[GPD_MPART_NARR];
  size_t *cnt[GPD_MPART_NARR], esz[GPD_MPART_NARR];
  int err = -EINVAL;
  gpd_mpart_init(p);
  p->wire = b;
  if (n < GPD_MPART_HEAD || ((uintptr_t)b & 7) || gpd_mpart_layout(b, off, len, &total) < 0 || total != n) goto fail;
  memcpy(hdr, b + 8, 16);
  if (hdr[0] > UINT32_MAX) goto fail;
  p->ninputs = (uint32_t)hdr[0];
  p->in_bytes = hdr[1];
  arrays(p, a, cnt, esz);
  for (int i = 0; i < GPD_MPART_NARR; i++) {
    *a[i] = len[i] ? b + off[i] : NULL;
    *cnt[i] = (size_t)(len[i] / esz[i]);
    for (uint64_t z = off[i] + len[i]; z < off[i] + len[i] + pad8(len[i]); z++)
      if (b[z]) goto fail; /* padding is zeros: a part packs back to the same bytes */
  }
  p->rows.cap = p->rows.n;
  p->bins.cap = p->bins.n;
  p->ctxrows.cap = p->ctxrows.n;
  p->framerows.cap = p->framerows.n;
  p->capprof = p->nprof;
  p->cappm = p->npm;
  p->capctx = p->nctx;
  for (size_t i = 0; i < p->nprof; i++)
    if (!in_range(p->prof[i].pm_off, p->prof[i].pm_n, p->npm)) goto fail;
  for (size_t i = 0; i < p->nctx; i++)
    if (!in_range(p->ctx[i].off, p->ctx[i].len, p->ctxrows.n) ||
        !in_range(p->ctx[i].foff, p->ctx[i].flen, p->framerows.n))
      goto fail;
  for (size_t i = 0; i < p->nkey; i++)
    if (!in_range(p->key[i].off, p->key[i].n, p->ncv)) goto fail;
  for (size_t i = 0; i < p->ncv; i++)
    if (p->cv[i].prof < 1 || p->cv[i].prof > p->nprof) goto fail;
  return 0; /* no context index: an adopted part is only folded */
fail:
  gpd_mpart_free(p);
  return err;
}

int gpd_mpart_unpack(gpd_mpart_t *p, const uint8_t *b, size_t n) {
  uint8_t *c = malloc(n ? n : 1); /* malloc's alignment: the arrays are used in place */
  gpd_mpart_init(p);
  if (!c) return -ENOMEM;
  if (n) memcpy(c, b, n);
  return gpd_mpart_adopt(p, c, n);
}

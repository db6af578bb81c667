/* part.c - a part: what one worker (thread or MPI rank) read from its
 * slice of the inputs, its context-major grouping, and its byte form for
 * the reduction to rank 0 (analyzer.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer.h"

void gpd_mpart_init(gpd_mpart_t *p) { memset(p, 0, sizeof(*p)); }

void gpd_mpart_free(gpd_mpart_t *p) {
  gpd_buf_free(&p->rows);
  gpd_buf_free(&p->bins);
  gpd_buf_free(&p->ctxrows);
  gpd_buf_free(&p->framerows);
  free(p->prof);
  free(p->pm);
  free(p->ctx);
  free(p->key);
  free(p->cv);
  gpd_mindex_free(&p->ctx_ix);
  memset(p, 0, sizeof(*p));
}

/* splitmix64 finalizer over the combined keys */
uint64_t gpd_mhash(int64_t a, int64_t b, int64_t c) {
  uint64_t x = (uint64_t)a * 0x9e3779b97f4a7c15ull ^ (uint64_t)b ^ ((uint64_t)c << 47 | (uint64_t)c >> 17);
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

void gpd_mindex_free(gpd_mindex_t *ix) {
  free(ix->slot);
  ix->slot = NULL;
  ix->cap = 0;
}

void gpd_mindex_insert(gpd_mindex_t *ix, uint64_t h, size_t idx) {
  size_t mask = ix->cap - 1, i = h & mask;
  while (ix->slot[i]) i = (i + 1) & mask;
  ix->slot[i] = (uint32_t)(idx + 1);
}

int gpd_mindex_reserve(gpd_mindex_t *ix, size_t nelem, uint64_t (*hash_of)(const void *c, size_t i), const void *c) {
  if ((nelem + 1) * 2 <= ix->cap) return 0;
  if (nelem >= UINT32_MAX - 1) return -ENOMEM;
  gpd_mindex_t n = {NULL, ix->cap ? ix->cap * 2 : 1024};
  while ((nelem + 1) * 2 > n.cap) n.cap *= 2;
  if (!(n.slot = calloc(n.cap, sizeof(*n.slot)))) return -ENOMEM;
  for (size_t i = 0; i < nelem; i++) gpd_mindex_insert(&n, hash_of(c, i), i);
  free(ix->slot);
  *ix = n;
  return 0;
}

long gpd_mpart_ctx_find(const gpd_mpart_t *p, int64_t uid, int64_t id) {
  if (!p->ctx_ix.cap) return -1;
  size_t mask = p->ctx_ix.cap - 1;
  for (size_t i = gpd_mhash(uid, id, 0) & mask; p->ctx_ix.slot[i]; i = (i + 1) & mask) {
    const gpd_mctx_t *c = &p->ctx[p->ctx_ix.slot[i] - 1];
    if (c->uid == uid && c->id == id) return (long)(p->ctx_ix.slot[i] - 1);
  }
  return -1;
}

static uint64_t ctx_hash(const void *c, size_t i) {
  const gpd_mctx_t *x = &((const gpd_mpart_t *)c)->ctx[i];
  return gpd_mhash(x->uid, x->id, 0);
}

int gpd_mpart_reindex(gpd_mpart_t *p) {
  gpd_mindex_free(&p->ctx_ix);
  int err = gpd_mindex_reserve(&p->ctx_ix, p->nctx, ctx_hash, p);
  if (err < 0) return err;
  for (size_t i = 0; i < p->nctx; i++) gpd_mindex_insert(&p->ctx_ix, ctx_hash(p, i), i);
  return 0;
}

int gpd_mpart_ctx_add(gpd_mpart_t *p, int64_t uid, int64_t id, uint64_t off, uint64_t len, uint32_t src) {
  int err;
  if (p->nctx == p->capctx) {
    size_t nc = p->capctx ? p->capctx * 2 : 1024;
    gpd_mctx_t *n = realloc(p->ctx, nc * sizeof(*n));
    if (!n) return -ENOMEM;
    p->ctx = n;
    p->capctx = nc;
  }
  if ((err = gpd_mindex_reserve(&p->ctx_ix, p->nctx, ctx_hash, p)) < 0) return err;
  p->ctx[p->nctx] = (gpd_mctx_t){uid, id, off, len, 0, 0, src, 0};
  gpd_mindex_insert(&p->ctx_ix, gpd_mhash(uid, id, 0), p->nctx++);
  return 0;
}

static uint64_t key_hash(const void *c, size_t i) {
  const gpd_mkey_t *k = &((const gpd_mpart_t *)c)->key[i];
  return gpd_mhash(k->uid, k->ctx, k->metric);
}

int gpd_mpart_group(gpd_mpart_t *p) {
  gpd_mindex_t ix = {NULL, 0};
  uint32_t *kof = NULL;
  size_t capkey = 0;
  int err = 0;
  free(p->key);
  free(p->cv);
  p->key = NULL;
  p->cv = NULL;
  p->nkey = p->ncv = 0;
  if (p->npm && !(kof = malloc(p->npm * sizeof(*kof)))) return -ENOMEM;
  /* pass 1: key of every value, count per key.  A profile's values are
   * sorted by (context, metric) and neighbouring processes hold mostly the
   * same contexts: the previous profile of the same uid is walked
   * alongside, and where it holds the same (context, metric) its key is
   * taken without a hash lookup (a random access into the index and the
   * keys per value otherwise).  Unsorted values only miss the shortcut. */
  for (size_t pi = 0; pi < p->nprof; pi++) {
    const gpd_mprof_t *pr = &p->prof[pi];
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
      uint64_t h = gpd_mhash(pr->uid, r->ctx, r->metric);
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
        if ((err = gpd_mindex_reserve(&ix, p->nkey, key_hash, p)) < 0) goto done;
        k = p->nkey++;
        p->key[k] = (gpd_mkey_t){pr->uid, r->ctx, r->metric, 0, 0, 0};
        gpd_mindex_insert(&ix, h, k);
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
  for (size_t pi = 0; pi < p->nprof; pi++) {
    const gpd_mprof_t *pr = &p->prof[pi];
    for (uint64_t j = pr->pm_off; j < pr->pm_off + pr->pm_n; j++) {
      gpd_mkey_t *k = &p->key[kof[j]];
      p->cv[k->off + k->n++] = (gpd_cval_rec_t){(uint32_t)(pi + 1), 0, p->pm[j].v};
    }
  }
  p->ncv = p->npm;
done:
  free(kof);
  gpd_mindex_free(&ix);
  return err;
}

/* ---- byte form: magic, then each array as u64 count + raw elements ---- */

static const char MAGIC[8] = "GPDPART2";

static int put_arr(gpd_buf_t *b, const void *a, uint64_t n, size_t esz) {
  int err = gpd_buf_put(b, &n, 8);
  return err < 0 ? err : gpd_buf_put(b, a, n * esz);
}

int gpd_mpart_pack(const gpd_mpart_t *p, gpd_buf_t *out) {
  uint64_t hdr[2] = {p->ninputs, p->in_bytes};
  int err;
  if ((err = gpd_buf_put(out, MAGIC, 8)) < 0 || (err = gpd_buf_put(out, hdr, sizeof(hdr))) < 0 ||
      (err = put_arr(out, p->rows.p, p->rows.n, 1)) < 0 || (err = put_arr(out, p->bins.p, p->bins.n, 1)) < 0 ||
      (err = put_arr(out, p->prof, p->nprof, sizeof(*p->prof))) < 0 ||
      (err = put_arr(out, p->pm, p->npm, sizeof(*p->pm))) < 0 ||
      (err = put_arr(out, p->ctx, p->nctx, sizeof(*p->ctx))) < 0 ||
      (err = put_arr(out, p->ctxrows.p, p->ctxrows.n, 1)) < 0 ||
      (err = put_arr(out, p->framerows.p, p->framerows.n, 1)) < 0 ||
      (err = put_arr(out, p->key, p->nkey, sizeof(*p->key))) < 0 ||
      (err = put_arr(out, p->cv, p->ncv, sizeof(*p->cv))) < 0)
    return err;
  return 0;
}

static int get_arr(const uint8_t *b, size_t n, size_t *o, void **a, size_t *cnt, size_t esz) {
  uint64_t c;
  if (n - *o < 8) return -EINVAL;
  memcpy(&c, b + *o, 8);
  *o += 8;
  if (c > (n - *o) / esz) return -EINVAL;
  *a = NULL;
  *cnt = (size_t)c;
  if (c) {
    if (!(*a = malloc(c * esz))) return -ENOMEM;
    memcpy(*a, b + *o, c * esz);
  }
  *o += c * esz;
  return 0;
}

static int in_range(uint64_t off, uint64_t len, uint64_t n) { return off <= n && len <= n - off; }

int gpd_mpart_unpack(gpd_mpart_t *p, const uint8_t *b, size_t n) {
  size_t o = 8 + 16;
  uint64_t hdr[2];
  int err;
  gpd_mpart_init(p);
  if (n < o || memcmp(b, MAGIC, 8)) return -EINVAL;
  memcpy(hdr, b + 8, 16);
  if (hdr[0] > UINT32_MAX) return -EINVAL;
  p->ninputs = (uint32_t)hdr[0];
  p->in_bytes = hdr[1];
  if ((err = get_arr(b, n, &o, (void **)&p->rows.p, &p->rows.n, 1)) < 0 ||
      (err = get_arr(b, n, &o, (void **)&p->bins.p, &p->bins.n, 1)) < 0 ||
      (err = get_arr(b, n, &o, (void **)&p->prof, &p->nprof, sizeof(*p->prof))) < 0 ||
      (err = get_arr(b, n, &o, (void **)&p->pm, &p->npm, sizeof(*p->pm))) < 0 ||
      (err = get_arr(b, n, &o, (void **)&p->ctx, &p->nctx, sizeof(*p->ctx))) < 0 ||
      (err = get_arr(b, n, &o, (void **)&p->ctxrows.p, &p->ctxrows.n, 1)) < 0 ||
      (err = get_arr(b, n, &o, (void **)&p->framerows.p, &p->framerows.n, 1)) < 0 ||
      (err = get_arr(b, n, &o, (void **)&p->key, &p->nkey, sizeof(*p->key))) < 0 ||
      (err = get_arr(b, n, &o, (void **)&p->cv, &p->ncv, sizeof(*p->cv))) < 0)
    goto fail;
  p->rows.cap = p->rows.n;
  p->bins.cap = p->bins.n;
  p->ctxrows.cap = p->ctxrows.n;
  p->framerows.cap = p->framerows.n;
  p->capprof = p->nprof;
  p->cappm = p->npm;
  p->capctx = p->nctx;
  err = -EINVAL;
  if (o != n) goto fail;
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
  if ((err = gpd_mpart_reindex(p)) < 0) goto fail;
  return 0;
fail:
  gpd_mpart_free(p);
  return err;
}

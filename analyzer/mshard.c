/* mshard.c - the partitioned reduction of the MPI merge (analyzer.h,
 * docs/ANALYZER.md "MPI").
 *
 * The context-major side is partitioned by context id: the signed id
 * order is cut into nown equal ranges and each range has an owner rank.
 * Every rank splits its part by owner (gpd_mshard_split: the contexts with
 * their encoded rows, the keys with their values under global profile
 * ids); each owner reduces what it received from all ranks
 * (gpd_mshard_reduce: contexts matched by (uid, Merkle id) with the first
 * rank's row kept, keys' values concatenated in rank order = profile
 * order, their statistics) into a stream of ready rows, sorted, that goes
 * into a SQLite table as it is (gpd_mshard_write: the owner's in-memory
 * shard, or rank 0's output for its own range).  Calling contexts are
 * matched by hash ids, so no rank agrees on ids with another first (Zhou
 * et al., "Scalable Analysis of GPU-accelerated Applications with
 * HPCToolkit", sec. 6.1-6.2: hpcprof-mpi partitions the context-major
 * side the same way).  The profile-major side of a rank needs no
 * exchange: gpd_mshard_early carries its side rows, GPU-binary records and
 * pmetric blobs to the writer.
 *
 * Buffers cross MPI between ranks of one job (the same program), yet
 * every reader checks bounds: a malformed buffer is -EINVAL, never a read
 * past its end.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer.h"

uint32_t gpd_mshard_owner(int64_t ctx, uint32_t nown, int even) {
  uint64_t u = (uint64_t)ctx ^ ((uint64_t)1 << 63); /* signed order as unsigned */
  if (nown < 2) return 0;
  if (even) return (uint32_t)(((unsigned __int128)u * nown) >> 64);
  /* 2 nown - 1 equal slices: owner 0 (the writer, which also appends the
   * others' shards) one, every other owner two */
  uint32_t slice = (uint32_t)(((unsigned __int128)u * (2 * nown - 1)) >> 64);
  return (slice + 1) / 2;
}

/* ---- reading a buffer with bounds ---- */

typedef struct shard_rd_s {
  const uint8_t *p;
  size_t n, o;
  int bad;
} shard_rd_t;

static const uint8_t *rd_take(shard_rd_t *r, size_t n) {
  if (r->bad || r->n - r->o < n) {
    r->bad = 1;
    return NULL;
  }
  const uint8_t *q = r->p + r->o;
  r->o += n;
  return q;
}

static uint64_t rd_u64(shard_rd_t *r) {
  uint64_t v = 0;
  const uint8_t *q = rd_take(r, 8);
  if (q) memcpy(&v, q, 8);
  return v;
}

static uint32_t rd_u32(shard_rd_t *r) {
  uint32_t v = 0;
  const uint8_t *q = rd_take(r, 4);
  if (q) memcpy(&v, q, 4);
  return v;
}

static int put_u64(gpd_buf_t *b, uint64_t v) { return gpd_buf_put(b, &v, 8); }
static int put_u32(gpd_buf_t *b, uint32_t v) { return gpd_buf_put(b, &v, 4); }

/* ---- split: a part's contexts and keys by owner ----
 *
 * Buffer: u64 nctx, u64 nkey; nctx x {i64 uid, i64 id, u32 row bytes,
 * u32 frame bytes, row, frames}; nkey x {i64 uid, i64 ctx, u32 metric,
 * u32 nv, nv stat.vals records (GPD_CVAL_REC: u32 global profile id, f64
 * value)}.  Contexts and keys in the part's order. */

int gpd_mshard_split(const gpd_mpart_t *p, uint32_t base, uint32_t nown, int even, gpd_buf_t *out) {
  uint64_t *cnt = calloc(2 * (size_t)nown, sizeof(*cnt));
  int err = 0;
  if (!cnt) return -ENOMEM;
  uint64_t *bytes = calloc(nown, sizeof(*bytes));
  if (!bytes) {
    free(cnt);
    return -ENOMEM;
  }
  /* counts and sizes first: each buffer is allocated (and faulted in) once */
  for (size_t i = 0; i < p->nctx; i++) {
    uint32_t j = gpd_mshard_owner(p->ctx[i].id, nown, even);
    cnt[2 * j]++;
    bytes[j] += 24 + p->ctx[i].len + p->ctx[i].flen;
  }
  for (size_t i = 0; i < p->nkey; i++) {
    uint32_t j = gpd_mshard_owner(p->key[i].ctx, nown, even);
    cnt[2 * j + 1]++;
    bytes[j] += 24 + p->key[i].n * GPD_CVAL_REC;
  }
  for (uint32_t j = 0; j < nown && !err; j++)
    if (!(err = gpd_buf_reserve(&out[j], 16 + bytes[j])) && !(err = put_u64(&out[j], cnt[2 * j])))
      err = put_u64(&out[j], cnt[2 * j + 1]);
  free(bytes);
  for (size_t i = 0; i < p->nctx && !err; i++) {
    const gpd_mctx_t *c = &p->ctx[i];
    gpd_buf_t *b = &out[gpd_mshard_owner(c->id, nown, even)];
    if (c->len > UINT32_MAX || c->flen > UINT32_MAX) {
      err = -E2BIG;
      break;
    }
    if ((err = gpd_buf_reserve(b, 24 + c->len + c->flen)) < 0) break;
    put_u64(b, (uint64_t)c->uid);
    put_u64(b, (uint64_t)c->id);
    put_u32(b, (uint32_t)c->len);
    put_u32(b, (uint32_t)c->flen);
    gpd_buf_put(b, p->ctxrows.p + c->off, c->len);
    gpd_buf_put(b, p->framerows.p + c->foff, c->flen);
  }
  for (size_t i = 0; i < p->nkey && !err; i++) {
    const gpd_mkey_t *k = &p->key[i];
    gpd_buf_t *b = &out[gpd_mshard_owner(k->ctx, nown, even)];
    if ((err = gpd_buf_reserve(b, 24 + k->n * GPD_CVAL_REC)) < 0) break;
    put_u64(b, (uint64_t)k->uid);
    put_u64(b, (uint64_t)k->ctx);
    put_u32(b, k->metric);
    put_u32(b, (uint32_t)k->n);
    for (uint64_t j = 0; j < k->n; j++) {
      const gpd_cval_rec_t *v = &p->cv[k->off + j];
      gpd_cval_rec_t g = {v->prof + base, 0, v->v};
      gpd_mout_cval_encode(b->p + b->n, &g, 1);
      b->n += GPD_CVAL_REC;
    }
  }
  free(cnt);
  return err;
}

/* ---- reduce: an owner's contexts and keys from every rank ---- */

typedef struct sctx_s {
  int64_t uid, id;
  const uint8_t *row;
  uint32_t rn, fn;
  uint32_t src, pad;
} sctx_t;

typedef struct skey_s {
  int64_t uid, ctx;
  uint32_t metric, nv;
  uint32_t src, pad;
  const uint8_t *vals;
} skey_t;

static int cmp_sctx(const void *a, const void *b) {
  const sctx_t *x = a, *y = b;
  if (x->uid != y->uid) return x->uid < y->uid ? -1 : 1;
  if (x->id != y->id) return x->id < y->id ? -1 : 1;
  return x->src < y->src ? -1 : x->src > y->src;
}

static int cmp_skey(const void *a, const void *b) {
  const skey_t *x = a, *y = b;
  if (x->uid != y->uid) return x->uid < y->uid ? -1 : 1;
  if (x->ctx != y->ctx) return x->ctx < y->ctx ? -1 : 1;
  if (x->metric != y->metric) return x->metric < y->metric ? -1 : 1;
  return x->src < y->src ? -1 : x->src > y->src;
}

/* uid -> its global profile ids, ascending */
typedef struct suid_s {
  int64_t uid;
  uint32_t *prof;
  size_t n;
} suid_t;

static void uids_free(suid_t *u, size_t n) {
  for (size_t i = 0; i < n; i++) free(u[i].prof);
  free(u);
}

static suid_t *uids_build(const int64_t *uids, uint32_t nprof, size_t *nu) {
  suid_t *u = NULL;
  size_t n = 0;
  for (uint32_t i = 0; i < nprof; i++) {
    size_t k = 0;
    while (k < n && u[k].uid != uids[i]) k++;
    if (k == n) {
      suid_t *nn = realloc(u, (n + 1) * sizeof(*u));
      if (!nn || !(nn[n].prof = malloc(nprof * sizeof(uint32_t)))) {
        uids_free(nn ? nn : u, n);
        return NULL;
      }
      u = nn;
      u[n].uid = uids[i];
      u[n++].n = 0;
    }
    u[k].prof[u[k].n++] = i + 1;
  }
  *nu = n;
  return u ? u : calloc(1, sizeof(*u));
}

/* Write stream: records, each a tag byte and then
 *   'C': u32 row bytes, u32 frame bytes, row, frames
 *   'S': i64 uid, i64 ctx, u32 metric, gpd_mstat_t, u32 vals bytes, vals */

int gpd_mshard_reduce(const gpd_buf_t *in, size_t nin, const int64_t *uids, uint32_t nprof, gpd_buf_t *out,
                      uint64_t *nctx_out, uint64_t *nkey_out) {
  sctx_t *c = NULL;
  skey_t *k = NULL;
  gpd_cval_rec_t *v = NULL;
  suid_t *u = NULL;
  size_t nc = 0, nk = 0, capv = 0, nu = 0;
  int err = 0;
  *nctx_out = *nkey_out = 0;
  /* the counts of every buffer first: the entry arrays are sized once */
  size_t tc = 0, tk = 0;
  for (size_t s = 0; s < nin; s++) {
    shard_rd_t r = {in[s].p, in[s].n, 0, 0};
    if (!in[s].n) continue;
    uint64_t ncx = rd_u64(&r), nky = rd_u64(&r);
    if (r.bad || ncx > in[s].n / 24 || nky > in[s].n / 24) return -EINVAL;
    tc += ncx;
    tk += nky;
  }
  if ((tc && !(c = malloc(tc * sizeof(*c)))) || (tk && !(k = malloc(tk * sizeof(*k))))) {
    err = -ENOMEM;
    goto out;
  }
  for (size_t s = 0; s < nin && !err; s++) {
    shard_rd_t r = {in[s].p, in[s].n, 0, 0};
    if (!in[s].n) continue;
    uint64_t ncx = rd_u64(&r), nky = rd_u64(&r);
    for (uint64_t i = 0; i < ncx && !r.bad; i++) {
      sctx_t *x = &c[nc++];
      x->uid = (int64_t)rd_u64(&r);
      x->id = (int64_t)rd_u64(&r);
      x->rn = rd_u32(&r);
      x->fn = rd_u32(&r);
      x->src = (uint32_t)s;
      x->row = rd_take(&r, (size_t)x->rn + x->fn);
    }
    for (uint64_t i = 0; i < nky && !r.bad; i++) {
      skey_t *x = &k[nk++];
      x->uid = (int64_t)rd_u64(&r);
      x->ctx = (int64_t)rd_u64(&r);
      x->metric = rd_u32(&r);
      x->nv = rd_u32(&r);
      x->src = (uint32_t)s;
      x->vals = rd_take(&r, (size_t)x->nv * GPD_CVAL_REC);
    }
    if (r.bad || r.o != r.n) err = -EINVAL;
  }
  if (err) goto out;
  /* contexts: sorted by (uid, id, rank); the first rank's row of each */
  if (nc) qsort(c, nc, sizeof(*c), cmp_sctx);
  for (size_t i = 0; i < nc && !err; i++) {
    if (i && c[i].uid == c[i - 1].uid && c[i].id == c[i - 1].id) continue;
    uint8_t tag = 'C';
    if ((err = gpd_buf_reserve(out, 9 + (size_t)c[i].rn + c[i].fn)) < 0) break;
    gpd_buf_put(out, &tag, 1);
    put_u32(out, c[i].rn);
    put_u32(out, c[i].fn);
    gpd_buf_put(out, c[i].row, (size_t)c[i].rn + c[i].fn);
    (*nctx_out)++;
  }
  if (err) goto out;
  /* keys: sorted by (uid, context, metric, rank); values concatenated in
   * rank order, which is profile order; statistics as the threaded merge
   * computes them (gpd_mstat_compute over the uid's profiles) */
  if (!(u = uids_build(uids, nprof, &nu))) {
    err = -ENOMEM;
    goto out;
  }
  if (nk) qsort(k, nk, sizeof(*k), cmp_skey);
  for (size_t i = 0, j; i < nk && !err; i = j) {
    size_t nv = 0, q;
    for (j = i; j < nk && k[j].uid == k[i].uid && k[j].ctx == k[i].ctx && k[j].metric == k[i].metric; j++)
      nv += k[j].nv;
    for (q = 0; q < nu && u[q].uid != k[i].uid; q++) {
    }
    if (q == nu || nv > u[q].n) { /* a value of a profile that is not the uid's */
      err = -EINVAL;
      break;
    }
    if (nv > capv) {
      gpd_cval_rec_t *n = realloc(v, nv * sizeof(*v));
      if (!n) {
        err = -ENOMEM;
        break;
      }
      v = n;
      capv = nv;
    }
    uint8_t tag = 'S';
    uint32_t bytes = (uint32_t)(nv * GPD_CVAL_REC);
    gpd_mstat_t st;
    if ((err = gpd_buf_reserve(out, 1 + 24 + sizeof(st) + 4 + (size_t)bytes)) < 0) break;
    gpd_buf_put(out, &tag, 1);
    put_u64(out, (uint64_t)k[i].uid);
    put_u64(out, (uint64_t)k[i].ctx);
    put_u32(out, k[i].metric);
    size_t at = out->n;
    out->n += sizeof(st);
    put_u32(out, bytes);
    nv = 0;
    for (size_t x = i; x < j; x++) {
      gpd_buf_put(out, k[x].vals, (size_t)k[x].nv * GPD_CVAL_REC);
      for (uint32_t y = 0; y < k[x].nv; y++, nv++) {
        memcpy(&v[nv].prof, k[x].vals + (size_t)y * GPD_CVAL_REC, 4);
        memcpy(&v[nv].v, k[x].vals + (size_t)y * GPD_CVAL_REC + 4, 8);
        v[nv].pad = 0;
      }
    }
    gpd_mstat_compute(&st, v, nv, u[q].prof, u[q].n);
    memcpy(out->p + at, &st, sizeof(st));
    (*nkey_out)++;
  }
out:
  free(c);
  free(k);
  free(v);
  if (u) uids_free(u, nu);
  return err;
}

int gpd_mshard_write(gpd_mout_t *o, const uint8_t *p, size_t n) {
  shard_rd_t r = {p, n, 0, 0};
  int err = 0;
  while (!err && r.o < r.n) {
    const uint8_t *tag = rd_take(&r, 1);
    if (*tag == 'C') {
      uint32_t rn = rd_u32(&r), fn = rd_u32(&r);
      const uint8_t *row = rd_take(&r, (size_t)rn + fn);
      if (r.bad) break;
      err = gpd_mout_context(o, row, rn, row + rn, fn);
    } else if (*tag == 'S') {
      gpd_mstat_t st;
      int64_t uid = (int64_t)rd_u64(&r), ctx = (int64_t)rd_u64(&r);
      uint32_t metric = rd_u32(&r);
      const uint8_t *sp = rd_take(&r, sizeof(st));
      uint32_t bytes = rd_u32(&r);
      const uint8_t *vals = rd_take(&r, bytes);
      if (r.bad) break;
      memcpy(&st, sp, sizeof(st));
      err = gpd_mout_stat(o, uid, ctx, metric, &st, vals, bytes);
    } else {
      r.bad = 1;
    }
  }
  return err ? err : r.bad ? -EINVAL : 0;
}

/* ---- early: a rank's profile-major side for the writer ----
 *
 * u64 rows bytes, rows; u64 bins bytes, bins; u64 nprof, then per profile
 * u64 blob bytes, blob; GPD_M__COUNT bytes of metrics used. */

int gpd_mshard_early(const gpd_mpart_t *p, int what, gpd_buf_t *out) {
  gpd_buf_t blob = {0};
  uint8_t used[GPD_M__COUNT] = {0};
  int err, side = what != GPD_EARLY_BLOBS, blobs = what != GPD_EARLY_SIDE;
  if ((err = put_u64(out, side ? p->rows.n : 0)) < 0 || (side && (err = gpd_buf_put(out, p->rows.p, p->rows.n)) < 0) ||
      (err = put_u64(out, side ? p->bins.n : 0)) < 0 || (side && (err = gpd_buf_put(out, p->bins.p, p->bins.n)) < 0) ||
      (err = put_u64(out, blobs ? p->nprof : 0)) < 0)
    return err;
  for (size_t i = 0; blobs && i < p->nprof && !err; i++)
    if (!(err = gpd_mout_pmetric_blob(p, i, &blob, used)) && !(err = put_u64(out, blob.n)))
      err = gpd_buf_put(out, blob.p, blob.n);
  if (!err) err = gpd_buf_put(out, used, sizeof(used));
  gpd_buf_free(&blob);
  return err;
}

int gpd_mshard_early_write(gpd_mout_t *o, const uint8_t *p, size_t n, uint32_t base, gpd_buf_t *bins) {
  shard_rd_t r = {p, n, 0, 0};
  int err;
  uint64_t rn = rd_u64(&r);
  const uint8_t *rows = rd_take(&r, rn);
  uint64_t bn = rd_u64(&r);
  const uint8_t *b = rd_take(&r, bn);
  uint64_t np = rd_u64(&r);
  if (r.bad) return -EINVAL;
  if ((err = gpd_mout_rows(o, rows, rn, base)) < 0) return err;
  bins->p = (uint8_t *)b;
  bins->n = bins->cap = bn;
  for (uint64_t i = 0; i < np; i++) {
    uint64_t bl = rd_u64(&r);
    const uint8_t *blob = rd_take(&r, bl);
    if (r.bad) return -EINVAL;
    if ((err = gpd_mout_pmetric(o, (int64_t)base + (int64_t)i + 1, blob, bl)) < 0) return err;
  }
  const uint8_t *used = rd_take(&r, GPD_M__COUNT);
  if (r.bad || r.o != r.n) return -EINVAL;
  for (unsigned m = 0; m < GPD_M__COUNT; m++) o->used[m] |= used[m] != 0;
  return 0;
}

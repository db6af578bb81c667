/* result.c - the reduction of parts and the merged file (format 3,
 * docs/FORMATS.md "Merged profiles"): what rank 0 / the main thread does
 * after the workers read their inputs.
 *
 * Storage (Zhou et al., "Scalable Analysis of GPU-accelerated Applications
 * with HPCToolkit", sec. 6.2: sparse values, kept both profile-major and
 * context-major):
 *   pmetric(profile_id, vals)  profile-major: one blob per profile,
 *                              (context, metric, value) records sorted
 *   stat(uid, context_id, metric_id, n, nz, sum, min, mean, max, stddev,
 *        cv, min_profile, max_profile, vals)
 *                              context-major: one row per (uid, context,
 *                              metric) with its statistics and a blob of
 *                              (profile, value) records sorted by profile
 * Only non-zero values are stored in either; the `metric` table is empty.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "analyzer.h"
#include "gpuprof/error.h"
#include "gpuprof/metric.h"
#include "store-schema.h"

#include <xxhash.h>

#define GPD_STR_(x) #x
#define GPD_STR(x) GPD_STR_(x)

static const char MERGED_SCHEMA[] =
    "CREATE TABLE pmetric(profile_id INTEGER PRIMARY KEY, vals BLOB NOT NULL);"
    "CREATE TABLE stat(uid INTEGER NOT NULL, context_id INTEGER NOT NULL, metric_id INTEGER NOT NULL,"
    "  n INTEGER NOT NULL, nz INTEGER NOT NULL, sum REAL NOT NULL, min REAL NOT NULL, mean REAL NOT NULL,"
    "  max REAL NOT NULL, stddev REAL NOT NULL, cv REAL NOT NULL, min_profile INTEGER NOT NULL,"
    "  max_profile INTEGER NOT NULL, vals BLOB NOT NULL, PRIMARY KEY(uid, context_id, metric_id)) WITHOUT ROWID;";

/* The merged file's contexts and frames: one B-tree each, keyed as the
 * store's (which has a rowid table and its key's index: two inserts per
 * row); created before GPD_STORE_SCHEMA, whose IF NOT EXISTS then keeps
 * them.  Same columns (docs/FORMATS.md). */
static const char MERGED_CONTEXT[] =
    "CREATE TABLE context(uid INTEGER NOT NULL, id INTEGER NOT NULL, parent INTEGER NOT NULL,"
    "  kind INTEGER NOT NULL, module TEXT, build_id TEXT, offset INTEGER, label TEXT, raw_name TEXT,"
    "  PRIMARY KEY(uid, id)) WITHOUT ROWID;"
    "CREATE TABLE frame(uid INTEGER NOT NULL, context_id INTEGER NOT NULL, depth INTEGER NOT NULL,"
    "  function TEXT, file TEXT, line INTEGER, inlined INTEGER NOT NULL,"
    "  PRIMARY KEY(uid, context_id, depth)) WITHOUT ROWID;";

/* global context: (uid, id) -> first part that has it */
typedef struct gctx_s {
  int64_t uid, id;
  uint32_t part, idx;
} gctx_t;

/* global key: (uid, context, metric) -> nslice slices (the parts that
 * hold it, in part order) at slice[off], n values in all */
typedef struct gkey_s {
  int64_t uid, ctx;
  uint32_t metric, nslice;
  uint64_t off, n;
} gkey_t;

/* one part's values of a global key: parts[part].key[key] */
typedef struct gslice_s {
  uint32_t part, key;
} gslice_t;

/* uid -> its global profile ids, ascending */
typedef struct guid_s {
  int64_t uid;
  uint32_t *prof;
  size_t n, cap;
} guid_t;

typedef struct fold_s {
  gpd_mpart_t *parts;
  size_t nparts;
  uint32_t *base; /* first global profile id of each part, minus 1 */
  uint32_t nprof;
  gctx_t *ctx;
  size_t nctx;
  gpd_mindex_t cix;
  gkey_t *key;
  size_t nkey;
  gpd_mindex_t kix;
  uint32_t **pk; /* per part: its key -> global key */
  gslice_t *slice;
  size_t nslice;
  size_t ncv;
  guid_t *uids;
  size_t nuids;
  char *err;
  size_t errn;
} fold_t;

static int fail(fold_t *f, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(fold_t *f, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(f->err, f->errn, fmt, ap);
  va_end(ap);
  return code;
}

static uint64_t gctx_hash(const void *c, size_t i) {
  const gctx_t *x = &((const fold_t *)c)->ctx[i];
  return gpd_mhash(x->uid, x->id, 0);
}

static uint64_t gkey_hash(const void *c, size_t i) {
  const gkey_t *x = &((const fold_t *)c)->key[i];
  return gpd_mhash(x->uid, x->ctx, x->metric);
}

static guid_t *uid_get(fold_t *f, int64_t uid) {
  for (size_t i = 0; i < f->nuids; i++)
    if (f->uids[i].uid == uid) return &f->uids[i];
  guid_t *n = realloc(f->uids, (f->nuids + 1) * sizeof(*n));
  if (!n) return NULL;
  f->uids = n;
  n[f->nuids] = (guid_t){uid, NULL, 0, 0};
  return &n[f->nuids++];
}

static int fold(fold_t *f) {
  size_t capctx = 0, capkey = 0;
  int err;
  if (!(f->base = calloc(f->nparts, sizeof(*f->base))) || !(f->pk = calloc(f->nparts, sizeof(*f->pk))))
    return -ENOMEM;
  /* profiles: global id = base + local; per-uid lists */
  for (size_t k = 0; k < f->nparts; k++) {
    f->base[k] = f->nprof;
    for (size_t i = 0; i < f->parts[k].nprof; i++) {
      guid_t *u = uid_get(f, f->parts[k].prof[i].uid);
      if (!u) return -ENOMEM;
      if (u->n == u->cap) {
        size_t nc = u->cap ? u->cap * 2 : 64;
        uint32_t *n = realloc(u->prof, nc * sizeof(*n));
        if (!n) return -ENOMEM;
        u->prof = n;
        u->cap = nc;
      }
      u->prof[u->n++] = f->nprof + (uint32_t)i + 1;
    }
    if (f->parts[k].nprof > UINT32_MAX - f->nprof) return -EOVERFLOW;
    f->nprof += (uint32_t)f->parts[k].nprof;
  }
  /* contexts: matched by (uid, Merkle id); the first part's labels win */
  for (size_t k = 0; k < f->nparts; k++) {
    const gpd_mpart_t *p = &f->parts[k];
    for (size_t i = 0; i < p->nctx; i++) {
      uint64_t h = gpd_mhash(p->ctx[i].uid, p->ctx[i].id, 0);
      int found = 0;
      if (k > 0 && f->cix.cap) /* a part's own contexts are distinct: the first part's are all new */
        for (size_t s = h & (f->cix.cap - 1); f->cix.slot[s]; s = (s + 1) & (f->cix.cap - 1)) {
          const gctx_t *g = &f->ctx[f->cix.slot[s] - 1];
          if (g->uid == p->ctx[i].uid && g->id == p->ctx[i].id) {
            found = 1;
            break;
          }
        }
      if (found) continue;
      if (f->nctx == capctx) {
        size_t nc = capctx ? capctx * 2 : 4096;
        gctx_t *n = realloc(f->ctx, nc * sizeof(*n));
        if (!n) return -ENOMEM;
        f->ctx = n;
        capctx = nc;
      }
      /* indexed for the parts still to come (none after the last) */
      if (k + 1 < f->nparts) {
        if ((err = gpd_mindex_reserve(&f->cix, f->nctx, gctx_hash, f)) < 0) return err;
        gpd_mindex_insert(&f->cix, h, f->nctx);
      }
      f->ctx[f->nctx++] = (gctx_t){p->ctx[i].uid, p->ctx[i].id, (uint32_t)k, (uint32_t)i};
    }
  }
  /* keys: each part's (uid, context, metric) slices map to a global key */
  for (size_t k = 0; k < f->nparts; k++) {
    const gpd_mpart_t *p = &f->parts[k];
    if (p->nkey && !(f->pk[k] = malloc(p->nkey * sizeof(uint32_t)))) return -ENOMEM;
    for (size_t i = 0; i < p->nkey; i++) {
      const gpd_mkey_t *x = &p->key[i];
      uint64_t h = gpd_mhash(x->uid, x->ctx, x->metric);
      size_t g = SIZE_MAX;
      if (k > 0 && f->kix.cap) /* likewise its keys */
        for (size_t s = h & (f->kix.cap - 1); f->kix.slot[s]; s = (s + 1) & (f->kix.cap - 1)) {
          const gkey_t *y = &f->key[f->kix.slot[s] - 1];
          if (y->uid == x->uid && y->ctx == x->ctx && y->metric == x->metric) {
            g = f->kix.slot[s] - 1;
            break;
          }
        }
      if (g == SIZE_MAX) {
        if (f->nkey == capkey) {
          size_t nc = capkey ? capkey * 2 : 4096;
          gkey_t *n = realloc(f->key, nc * sizeof(*n));
          if (!n) return -ENOMEM;
          f->key = n;
          capkey = nc;
        }
        if (k + 1 < f->nparts) {
          if ((err = gpd_mindex_reserve(&f->kix, f->nkey, gkey_hash, f)) < 0) return err;
          gpd_mindex_insert(&f->kix, h, f->nkey);
        }
        g = f->nkey++;
        f->key[g] = (gkey_t){x->uid, x->ctx, x->metric, 0, 0, 0};
      }
      f->key[g].n += x->n;
      f->key[g].nslice++;
      f->pk[k][i] = (uint32_t)g;
    }
    f->ncv += p->ncv;
    f->nslice += p->nkey;
  }
  /* per key the parts' slices in part order (= profile order); the values
   * stay in the parts and are gathered per key when it is written */
  uint64_t off = 0;
  for (size_t g = 0; g < f->nkey; g++) {
    f->key[g].off = off;
    off += f->key[g].nslice;
    f->key[g].nslice = 0;
  }
  if (f->nslice && !(f->slice = malloc(f->nslice * sizeof(*f->slice)))) return -ENOMEM;
  gpd_mprefault(f->slice, 0, f->nslice * sizeof(*f->slice));
  for (size_t k = 0; k < f->nparts; k++)
    for (size_t i = 0; i < f->parts[k].nkey; i++) {
      gkey_t *g = &f->key[f->pk[k][i]];
      f->slice[g->off + g->nslice++] = (gslice_t){(uint32_t)k, (uint32_t)i};
    }
  return 0;
}

static void fold_free(fold_t *f) {
  free(f->base);
  if (f->pk)
    for (size_t k = 0; k < f->nparts; k++) free(f->pk[k]);
  free(f->pk);
  free(f->ctx);
  free(f->key);
  free(f->slice);
  gpd_mindex_free(&f->cix);
  gpd_mindex_free(&f->kix);
  for (size_t i = 0; i < f->nuids; i++) free(f->uids[i].prof);
  free(f->uids);
}

static int cmp_gctx(const void *a, const void *b) {
  const gctx_t *x = a, *y = b;
  if (x->uid != y->uid) return x->uid < y->uid ? -1 : 1;
  return x->id < y->id ? -1 : x->id > y->id;
}

static int cmp_gkey(const void *a, const void *b) {
  const gkey_t *x = a, *y = b;
  if (x->uid != y->uid) return x->uid < y->uid ? -1 : 1;
  if (x->ctx != y->ctx) return x->ctx < y->ctx ? -1 : 1;
  return x->metric < y->metric ? -1 : x->metric > y->metric;
}

/* ---- the merged file being written (gpd_mout_t) ---- */

static int ofail(gpd_mout_t *o, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int ofail(gpd_mout_t *o, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(o->err, o->errn, fmt, ap);
  va_end(ap);
  return code;
}

static int exec(gpd_mout_t *o, const char *sql) {
  char *msg = NULL;
  if (sqlite3_exec(o->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
    int e = ofail(o, GPD_ESTORE, "%s", msg ? msg : sqlite3_errmsg(o->db));
    sqlite3_free(msg);
    return e;
  }
  return 0;
}

static int step(gpd_mout_t *o, sqlite3_stmt *st) {
  int rc = sqlite3_step(st);
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  return rc == SQLITE_DONE ? 0 : ofail(o, GPD_ESTORE, "%s", sqlite3_errmsg(o->db));
}

static int prepare(gpd_mout_t *o, const char *sql, sqlite3_stmt **st) {
  return sqlite3_prepare_v2(o->db, sql, -1, st, NULL) == SQLITE_OK ? 0
                                                                    : ofail(o, GPD_ESTORE, "%s", sqlite3_errmsg(o->db));
}

static int write_head(gpd_mout_t *o, uint32_t nprof, uint32_t ninputs) {
  sqlite3_stmt *md = NULL;
  char sql[1024];
  int err;
  if ((err = exec(o, MERGED_CONTEXT)) < 0 || (err = exec(o, GPD_STORE_SCHEMA)) < 0 ||
      (err = exec(o, GPD_PCSAMPLE_SCHEMA)) < 0 || (err = exec(o, GPD_TRACE_SCHEMA)) < 0 ||
      (err = exec(o, GPD_TRACEWIN_SCHEMA)) < 0 ||
      (err = exec(o, MERGED_SCHEMA)) < 0 ||
      (err = exec(o, "PRAGMA user_version=" GPD_STR(GPD_MERGE_FORMAT) "; BEGIN")) < 0)
    return err;
  {
    char host[256] = "";
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    gethostname(host, sizeof(host) - 1);
    char *q = sqlite3_mprintf(
        "INSERT INTO meta VALUES('format','gpuprof'),('format_version','" GPD_STR(GPD_MERGE_FORMAT) "'),"
        "('host',%Q),('created_ns','%llu'),('clock','CLOCK_MONOTONIC_RAW'),('next_profile_id','%u'),"
        "('merged_inputs','%u');",
        host, (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec, nprof + 1, ninputs);
    err = q ? exec(o, q) : -ENOMEM;
    sqlite3_free(q);
    if (err < 0) return err;
  }
  if ((err = prepare(o, "INSERT INTO metric_desc VALUES(?1, ?2, ?3, ?4)", &md)) < 0) return err;
  for (unsigned i = 0; i < GPD_M__COUNT && !err; i++) {
    const gpd_metric_desc_t *d = gpd_metric_desc(i);
    sqlite3_bind_int(md, 1, (int)i);
    sqlite3_bind_text(md, 2, d->name, -1, SQLITE_STATIC);
    sqlite3_bind_text(md, 3, gpd_metric_unit_name(d->unit), -1, SQLITE_STATIC);
    sqlite3_bind_text(md, 4, d->desc, -1, SQLITE_STATIC);
    err = step(o, md);
  }
  sqlite3_finalize(md);
  for (int t = 0; t < GPD_MT__COUNT && !err; t++) {
    char q[64] = "";
    for (int c = 0; c < gpd_mtable_ncols(t); c++) snprintf(q + strlen(q), sizeof(q) - strlen(q), "%s?", c ? "," : "");
    snprintf(sql, sizeof(sql), "INSERT %sINTO %s(%s) VALUES(%s)", t == GPD_MT_GPUBIN ? "OR IGNORE " : "",
             gpd_mtable_name(t), gpd_mtable_cols(t), q);
    err = prepare(o, sql, &o->ins[t]);
  }
  if (!err) err = prepare(o, "INSERT INTO pmetric VALUES(?1, ?2)", &o->pm);
  if (!err) err = prepare(o, "INSERT INTO stat VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14)", &o->stq);
  return err;
}

int gpd_mout_open(gpd_mout_t *o, const char *out, uint32_t nprof, uint32_t ninputs, gpd_mwrite_info_t *info,
                  char *err, size_t errn) {
  int e;
  memset(o, 0, sizeof(*o));
  o->of.fd = -1;
  o->out = out;
  o->err = err;
  o->errn = errn;
  o->info = info;
  memset(info, 0, sizeof(*info));
  /* private, new, never through a planted link (gpuprof/outfile.h) */
  if ((e = gpd_outfile_open(&o->of, out, err, errn)) < 0) return e;
  if (sqlite3_open_v2(o->of.tmp, &o->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
    e = ofail(o, GPD_ESTORE, "%s: %s", o->of.tmp, o->db ? sqlite3_errmsg(o->db) : "out of memory");
    gpd_mout_close(o);
    return e;
  }
  /* a new private file, renamed into place only when complete: no
   * journal is needed; fsync before the rename */
  if ((e = exec(o, "PRAGMA page_size=16384; PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"
                   "PRAGMA locking_mode=EXCLUSIVE;")) < 0 ||
      (e = write_head(o, nprof, ninputs)) < 0)
    gpd_mout_close(o);
  return e;
}

int gpd_mout_open_shard(gpd_mout_t *o, gpd_mwrite_info_t *info, char *err, size_t errn) {
  int e;
  memset(o, 0, sizeof(*o));
  o->of.fd = -1;
  o->err = err;
  o->errn = errn;
  o->info = info;
  memset(info, 0, sizeof(*info));
  /* memdb: one contiguous image that sqlite3_serialize hands out as it is */
  if (sqlite3_open_v2("file:gpd-shard?vfs=memdb", &o->db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX,
                      NULL) != SQLITE_OK) {
    e = ofail(o, GPD_ESTORE, "shard: %s", o->db ? sqlite3_errmsg(o->db) : "out of memory");
    gpd_mout_close(o);
    return e;
  }
  if ((e = exec(o, "PRAGMA page_size=16384; PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;")) < 0 ||
      (e = exec(o, MERGED_CONTEXT)) < 0 || (e = exec(o, MERGED_SCHEMA)) < 0 || (e = exec(o, "BEGIN")) < 0 ||
      (e = prepare(o, "INSERT INTO context VALUES(?,?,?,?,?,?,?,?,?)", &o->ins[GPD_MT_CONTEXT])) < 0 ||
      (e = prepare(o, "INSERT INTO frame VALUES(?,?,?,?,?,?,?)", &o->ins[GPD_MT_FRAME])) < 0 ||
      (e = prepare(o, "INSERT INTO stat VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14)", &o->stq)) < 0 ||
      (e = prepare(o, "INSERT INTO pmetric VALUES(?1, ?2)", &o->pm)) < 0)
    gpd_mout_close(o);
  return e;
}

/* out's directory into dir[n] ("." when none) and its base name */
static const char *split_out(const char *out, char *dir, size_t n) {
  const char *b = strrchr(out, '/');
  if (!b) {
    snprintf(dir, n, ".");
    return out;
  }
  snprintf(dir, n, "%.*s", b == out ? 1 : (int)(b - out), out);
  return b + 1;
}

int gpd_shard_name(const char *out, uint32_t ord, char *name, size_t n) {
  char dir[8];
  const char *b = split_out(out, dir, sizeof(dir));
  int w = snprintf(name, n, "%s.shard-%03u", b, ord);
  return w > 0 && (size_t)w < n && gpd_shard_name_ok(name) ? 0 : -EINVAL;
}

int gpd_mout_shard_save(gpd_mout_t *o, const char *out, uint32_t ord, const char *nonce, gpd_shard_rec_t *rec) {
  char dir[4200], path[4500];
  const uint8_t *img;
  size_t n;
  int e;
  memset(rec, 0, sizeof(*rec));
  split_out(out, dir, sizeof(dir));
  if (gpd_shard_name(out, ord, rec->name, sizeof(rec->name)) < 0) return ofail(o, -EINVAL, "%s: no shard name", out);
  char *q = sqlite3_mprintf("CREATE TABLE shard_of(nonce TEXT NOT NULL, ord INTEGER NOT NULL);"
                            "INSERT INTO shard_of VALUES(%Q, %u)", nonce, ord);
  e = q ? exec(o, q) : ofail(o, -ENOMEM, "out of memory");
  sqlite3_free(q);
  if (e < 0 || (e = gpd_mout_image(o, &img, &n)) < 0) return e;
  snprintf(path, sizeof(path), "%s/%s", dir, rec->name);
  if ((e = gpd_outfile_open(&o->of, path, o->err, o->errn)) < 0) return e;
  if (fwrite(img, 1, n, o->of.f) != n) return ofail(o, -EIO, "%s: %s", o->of.tmp, strerror(errno));
  if ((e = gpd_outfile_commit(&o->of, o->err, o->errn)) < 0) return e;
  rec->ok = 1;
  rec->bytes = n;
  rec->xxh64 = XXH3_64bits(img, n);
  rec->contexts = o->info->contexts;
  rec->keys = o->info->keys;
  rec->values = o->info->values;
  rec->sparse_bytes = o->info->sparse_bytes;
  memcpy(rec->used, o->used, sizeof(rec->used));
  return 0;
}

int gpd_mout_shards(gpd_mout_t *o, const gpd_shard_rec_t *rec, size_t n, const char *nonce) {
  sqlite3_stmt *st = NULL;
  int e;
  if ((e = exec(o, "CREATE TABLE shard(ord INTEGER PRIMARY KEY, name TEXT NOT NULL, bytes INTEGER NOT NULL,"
                   "  xxh64 TEXT NOT NULL, nonce TEXT NOT NULL, contexts INTEGER NOT NULL, keys INTEGER NOT NULL,"
                   "  profiles INTEGER NOT NULL)")) < 0 ||
      (e = prepare(o, "INSERT INTO shard VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)", &st)) < 0)
    return e;
  for (size_t i = 0; i < n && !e; i++) {
    char h[20];
    snprintf(h, sizeof(h), "%016llx", (unsigned long long)rec[i].xxh64);
    sqlite3_bind_int64(st, 1, (int64_t)i + 1);
    sqlite3_bind_text(st, 2, rec[i].name, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, (int64_t)rec[i].bytes);
    sqlite3_bind_text(st, 4, h, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 5, nonce, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 6, (int64_t)rec[i].contexts);
    sqlite3_bind_int64(st, 7, (int64_t)rec[i].keys);
    sqlite3_bind_int64(st, 8, (int64_t)rec[i].profiles);
    e = step(o, st);
    o->info->contexts += rec[i].contexts;
    o->info->keys += rec[i].keys;
    o->info->values += rec[i].values;
    o->info->sparse_bytes += rec[i].sparse_bytes;
    for (unsigned m = 0; m < GPD_M__COUNT; m++) o->used[m] |= rec[i].used[m] != 0;
  }
  o->nshards = (uint32_t)n;
  sqlite3_finalize(st);
  return e;
}

void gpd_shards_remove(const char *out, const gpd_shard_rec_t *rec, size_t n) {
  char dir[4200], path[4500];
  split_out(out, dir, sizeof(dir));
  for (size_t i = 0; i < n; i++)
    if (rec[i].ok && gpd_shard_name_ok(rec[i].name)) {
      snprintf(path, sizeof(path), "%s/%s", dir, rec[i].name);
      unlink(path);
    }
}

int gpd_mout_image(gpd_mout_t *o, const uint8_t **img, size_t *n) {
  sqlite3_int64 sz = 0;
  int e;
  if ((e = exec(o, "COMMIT")) < 0) return e;
  unsigned char *p = sqlite3_serialize(o->db, "main", &sz, SQLITE_SERIALIZE_NOCOPY);
  if (!p) { /* not one contiguous image: a copy */
    if (!(p = o->img = sqlite3_serialize(o->db, "main", &sz, 0))) return ofail(o, -ENOMEM, "shard: out of memory");
  }
  *img = p;
  *n = (size_t)sz;
  return 0;
}

int gpd_mout_shard_add(gpd_mout_t *o, uint8_t *img, size_t n) {
  int e, rc;
  /* ATTACH is refused inside a transaction: the rows so far are written
   * (no journal: that is only their pages) and a new one begins */
  if ((e = exec(o, "COMMIT; ATTACH ':memory:' AS shard")) < 0) return e;
  rc = sqlite3_deserialize(o->db, "shard", img, (sqlite3_int64)n, (sqlite3_int64)n, SQLITE_DESERIALIZE_READONLY);
  if (rc != SQLITE_OK) e = ofail(o, GPD_ESTORE, "shard: %s", sqlite3_errmsg(o->db));
  /* the first shard's rows go into empty tables: SQLite copies them as
   * records (its transfer optimization); later ones are appended in order */
  if (!e)
    e = exec(o, "BEGIN; INSERT INTO main.context SELECT * FROM shard.context;"
                "INSERT INTO main.frame SELECT * FROM shard.frame; INSERT INTO main.stat SELECT * FROM shard.stat;"
                "COMMIT");
  if (!sqlite3_get_autocommit(o->db)) sqlite3_exec(o->db, "ROLLBACK", NULL, NULL, NULL);
  int d = exec(o, "DETACH shard");
  if (!e) e = d;
  if (!e) e = exec(o, "BEGIN");
  return e;
}

int gpd_mout_rows(gpd_mout_t *o, const uint8_t *p, size_t n, int64_t poff) {
  size_t off = 0;
  int err;
  while (off < n) {
    int t = p[off++];
    if (t >= GPD_MT__COUNT || gpd_row_bind(p, n, &off, o->ins[t], gpd_mtable_pcol(t), poff) < 0)
      return ofail(o, -EINVAL, "malformed row");
    if ((err = step(o, o->ins[t])) < 0) return err;
  }
  return 0;
}

int gpd_mout_context(gpd_mout_t *o, const uint8_t *row, size_t rn, const uint8_t *frames, size_t fn) {
  size_t off = 0;
  int err;
  if (gpd_row_bind(row, rn, &off, o->ins[GPD_MT_CONTEXT], -1, 0) < 0) return ofail(o, -EINVAL, "malformed context row");
  if ((err = step(o, o->ins[GPD_MT_CONTEXT])) < 0) return err;
  for (off = 0; off < fn;) {
    if (gpd_row_bind(frames, fn, &off, o->ins[GPD_MT_FRAME], -1, 0) < 0) return ofail(o, -EINVAL, "malformed frame row");
    if ((err = step(o, o->ins[GPD_MT_FRAME])) < 0) return err;
  }
  o->info->contexts++;
  return 0;
}

int gpd_pmetric_blob(const gpd_mpart_t *p, size_t i, gpd_buf_t *blob, uint8_t used[GPD_M__COUNT]) {
  int err;
  blob->n = 0;
  if ((err = gpd_buf_reserve(blob, p->prof[i].pm_n * GPD_PMETRIC_REC)) < 0) return err;
  for (uint64_t j = p->prof[i].pm_off; j < p->prof[i].pm_off + p->prof[i].pm_n; j++) {
    const gpd_mval_rec_t *r = &p->pm[j];
    uint8_t *rec = blob->p + blob->n;
    memcpy(rec, &r->ctx, 8);
    memcpy(rec + 8, &r->metric, 4);
    memcpy(rec + 12, &r->v, 8);
    blob->n += GPD_PMETRIC_REC;
    if (r->metric < GPD_M__COUNT) used[r->metric] = 1;
  }
  return 0;
}

int gpd_mout_pmetric(gpd_mout_t *o, int64_t profile_id, const uint8_t *blob, size_t n) {
  o->info->sparse_bytes += n;
  o->info->values += n / GPD_PMETRIC_REC;
  sqlite3_bind_int64(o->pm, 1, profile_id);
  sqlite3_bind_blob(o->pm, 2, n ? (const void *)blob : "", (int)n, SQLITE_STATIC);
  return step(o, o->pm);
}

void gpd_cval_encode(uint8_t *dst, const gpd_cval_rec_t *v, size_t n) {
  for (size_t j = 0; j < n; j++, dst += GPD_CVAL_REC) {
    memcpy(dst, &v[j].prof, 4);
    memcpy(dst + 4, &v[j].v, 8);
  }
}

int gpd_mout_stat(gpd_mout_t *o, int64_t uid, int64_t ctx, uint32_t metric, const gpd_mstat_t *s,
                  const uint8_t *vals, size_t n) {
  sqlite3_stmt *stq = o->stq;
  o->info->sparse_bytes += n;
  o->info->keys++;
  sqlite3_bind_int64(stq, 1, uid);
  sqlite3_bind_int64(stq, 2, ctx);
  sqlite3_bind_int64(stq, 3, metric);
  sqlite3_bind_int64(stq, 4, (int64_t)s->n);
  sqlite3_bind_int64(stq, 5, (int64_t)s->nz);
  sqlite3_bind_double(stq, 6, s->sum);
  sqlite3_bind_double(stq, 7, s->min);
  sqlite3_bind_double(stq, 8, s->mean);
  sqlite3_bind_double(stq, 9, s->max);
  sqlite3_bind_double(stq, 10, s->stddev);
  sqlite3_bind_double(stq, 11, s->cv);
  sqlite3_bind_int64(stq, 12, s->min_profile);
  sqlite3_bind_int64(stq, 13, s->max_profile);
  sqlite3_bind_blob(stq, 14, n ? (const void *)vals : "", (int)n, SQLITE_STATIC);
  return step(o, stq);
}

int gpd_mout_finish(gpd_mout_t *o, uint32_t nprof, const gpd_mpart_t *parts, size_t nparts) {
  gpd_mwrite_info_t *info = o->info;
  uint64_t nm = 0;
  int e;
  for (unsigned m = 0; m < GPD_M__COUNT; m++) nm += o->used[m];
  info->profiles = nprof;
  info->dense_bytes = (uint64_t)nprof * info->contexts * nm * 8;
  info->dense_all_bytes = (uint64_t)nprof * info->contexts * GPD_M__COUNT * 8;
  if ((e = exec(o, "COMMIT")) < 0) return e;
  for (int t = 0; t < GPD_MT__COUNT; t++) sqlite3_finalize(o->ins[t]), o->ins[t] = NULL;
  sqlite3_finalize(o->pm);
  sqlite3_finalize(o->stq);
  o->pm = o->stq = NULL;
  if (sqlite3_close(o->db) != SQLITE_OK) return ofail(o, GPD_ESTORE, "%s: cannot close", o->of.tmp);
  o->db = NULL;
  /* the binaries first: the merged file appears with them in place */
  if ((e = gpd_mbins_copy(parts, nparts, o->out, info)) < 0) return ofail(o, e, "out of memory");
  if ((e = gpd_outfile_commit(&o->of, o->err, o->errn)) < 0) return e;
  /* an earlier merge's shards under this name that out does not name:
   * nothing reads them any more */
  char dir[4200], name[256], path[4500];
  split_out(o->out, dir, sizeof(dir));
  for (uint32_t k = o->nshards + 1; k < 1000 && gpd_shard_name(o->out, k, name, sizeof(name)) == 0; k++) {
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    if (unlink(path) < 0) break;
  }
  return 0;
}

void gpd_mout_close(gpd_mout_t *o) {
  for (int t = 0; t < GPD_MT__COUNT; t++) sqlite3_finalize(o->ins[t]);
  sqlite3_finalize(o->pm);
  sqlite3_finalize(o->stq);
  if (o->db) sqlite3_close(o->db);
  sqlite3_free(o->img);
  o->img = NULL;
  gpd_outfile_abort(&o->of);
  memset(o->ins, 0, sizeof(o->ins));
  o->pm = o->stq = NULL;
  o->db = NULL;
}

/* the threaded merge's write: every part's rows, then the folded
 * contexts and keys in key order */
static int write_all(fold_t *f, gpd_mout_t *o) {
  gpd_buf_t blob = {0};
  gpd_cval_rec_t *v = NULL; /* one key's values */
  size_t capv = 0;
  int err = 0;

  /* profiles and their side rows, part by part */
  for (size_t k = 0; k < f->nparts; k++)
    if ((err = gpd_mout_rows(o, f->parts[k].rows.p, f->parts[k].rows.n, f->base[k])) < 0) goto out;
  /* contexts and frames, in key order */
  qsort(f->ctx, f->nctx, sizeof(*f->ctx), cmp_gctx);
  for (size_t i = 0; i < f->nctx; i++) {
    const gpd_mpart_t *p = &f->parts[f->ctx[i].part];
    const gpd_mctx_t *c = &p->ctx[f->ctx[i].idx];
    if ((err = gpd_mout_context(o, p->ctxrows.p + c->off, c->len, p->framerows.p + c->foff, c->flen)) < 0) goto out;
  }
  /* profile-major values */
  for (size_t k = 0; k < f->nparts; k++) {
    const gpd_mpart_t *p = &f->parts[k];
    for (size_t i = 0; i < p->nprof; i++)
      if ((err = gpd_pmetric_blob(p, i, &blob, o->used)) < 0 ||
          (err = gpd_mout_pmetric(o, (int64_t)(f->base[k] + i + 1), blob.p, blob.n)) < 0)
        goto out;
  }
  /* context-major values and statistics */
  qsort(f->key, f->nkey, sizeof(*f->key), cmp_gkey);
  for (size_t i = 0; i < f->nkey; i++) {
    const gkey_t *g = &f->key[i];
    guid_t *u = uid_get(f, g->uid);
    gpd_mstat_t s;
    if (!u) {
      err = -ENOMEM;
      goto out;
    }
    /* the key's values from its parts, in part order, global profile ids */
    if (g->n > capv) {
      gpd_cval_rec_t *n = realloc(v, g->n * sizeof(*v));
      if (!n) {
        err = -ENOMEM;
        goto out;
      }
      v = n;
      capv = g->n;
    }
    size_t nv = 0;
    for (uint32_t sl = 0; sl < g->nslice; sl++) {
      const gslice_t *x = &f->slice[g->off + sl];
      const gpd_mpart_t *p = &f->parts[x->part];
      const gpd_cval_rec_t *src = p->cv + p->key[x->key].off;
      for (uint64_t j = 0; j < p->key[x->key].n; j++)
        v[nv++] = (gpd_cval_rec_t){src[j].prof + f->base[x->part], 0, src[j].v};
    }
    gpd_mstat_compute(&s, v, nv, u->prof, u->n);
    if ((err = gpd_buf_reserve(&blob, nv * GPD_CVAL_REC)) < 0) goto out;
    gpd_cval_encode(blob.p, v, nv);
    if ((err = gpd_mout_stat(o, g->uid, g->ctx, g->metric, &s, blob.p, nv * GPD_CVAL_REC)) < 0) goto out;
  }
out:
  if (err == -ENOMEM) ofail(o, err, "out of memory");
  gpd_buf_free(&blob);
  free(v);
  return err;
}

int gpd_mresult_write(gpd_mpart_t *parts, size_t nparts, const char *out, uint32_t ninputs, gpd_mwrite_info_t *info,
                      char *err, size_t errn) {
  fold_t f = {.parts = parts, .nparts = nparts, .err = err, .errn = errn};
  gpd_mwrite_info_t dummy;
  gpd_mout_t o;
  int e;
  if (!info) info = &dummy;
  memset(info, 0, sizeof(*info));
  if ((e = fold(&f)) < 0) {
    if (e == -ENOMEM || e == -EOVERFLOW) fail(&f, e, "%s", e == -ENOMEM ? "out of memory" : "too many profiles");
    goto done;
  }
  if ((e = gpd_mout_open(&o, out, f.nprof, ninputs, info, err, errn)) < 0) goto done;
  if ((e = write_all(&f, &o)) >= 0) e = gpd_mout_finish(&o, f.nprof, parts, nparts);
  gpd_mout_close(&o);
done:
  fold_free(&f);
  return e;
}

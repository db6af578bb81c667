/* minput.c - reading one saved profile (`*.gpdb`, docs/FORMATS.md) into a
 * part: opened read-only, validated (SQLite header and size, meta.format,
 * format_version 2 or 3, metric ids), filtered by job / uid.
 *
 * The file is the user's own input (gpuprof merge runs with the user's
 * rights), but it may be truncated, from another gpuprof version, or not
 * a profile at all: every such case is an error that names the file, and
 * what was read of it is taken back out of the part.  The statements are
 * store/'s (store-read.h, merge-read.c); the rows are carried with the
 * row codec (buf.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyzer.h"
#include "gpuprof/error.h"
#include "gpuprof/metric.h"
#include "store-read.h"

/* an input profile id and its order in the input (the profile query's) */
typedef struct rd_id_s {
  int64_t id;
  size_t ord;
} rd_id_t;

typedef struct rd_s {
  gpd_mpart_t *p;
  gpd_store_merge_t m; /* the connection and the selection (store-read.h) */
  const char *path;
  rd_id_t *ids; /* input profile ids, ascending by id; local ordinal = base + ord + 1 */
  size_t nids;
  size_t base;
  int has_pcs; /* the input has the PC-sample tables */
  uint32_t has_trace; /* bit t - GPD_MT_TRACE_EVENT: the input has trace table t with every column */
  char *err;
  size_t errn;
} rd_t;

static int fail(rd_t *r, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(rd_t *r, int code, const char *fmt, ...) {
  va_list ap;
  int n = snprintf(r->err, r->errn, "%s: ", r->path);
  va_start(ap, fmt);
  if (n >= 0 && (size_t)n < r->errn) vsnprintf(r->err + n, r->errn - (size_t)n, fmt, ap);
  va_end(ap);
  return code;
}

/* part-local ordinal of input profile id, 0 if not selected */
static int64_t local_of(const rd_t *r, int64_t id) {
  size_t lo = 0, hi = r->nids;
  while (lo < hi) {
    size_t m = (lo + hi) / 2;
    if (r->ids[m].id < id)
      lo = m + 1;
    else
      hi = m;
  }
  return lo < r->nids && r->ids[lo].id == id ? (int64_t)(r->base + r->ids[lo].ord + 1) : 0;
}

static int read_meta(rd_t *r, int *version) {
  gpd_store_meta_t meta;
  int err = gpd_store_file_meta(r->m.db, &meta, r->path, r->err, r->errn);
  if (err < 0) return err;
  *version = meta.version ? meta.version : 1; /* format 1 wrote no format_version */
  if (strcmp(meta.format, "gpuprof"))
    return fail(r, GPD_ESTORE, "not a gpuprof profile (meta.format is not 'gpuprof')");
  if (*version > GPD_MERGE_FORMAT)
    return fail(r, GPD_EBADVERSION, "profile format version %d is newer than this gpuprof merges (%d)", *version,
                GPD_MERGE_FORMAT);
  if (*version < 2)
    return fail(r, GPD_EBADVERSION,
                "profile format version %d is older than gpuprof merge reads (2); a gpuprofd that opens the "
                "file upgrades it",
                *version);
  return 0;
}

/* every described metric id must mean the same metric here */
static int metric_desc(void *c, int64_t id, const char *name) {
  rd_t *r = c;
  /* the metrics from GINST on are computed by the CLI from the PC samples
   * and never stored (metric.h): a file that describes one of them at
   * some id stores no value under that id.  (CPUTIME's arrival at 51
   * renumbered them: files from before it say 51 is GINST.) */
  int here = name ? gpd_metric_by_name(name) : -1;
  if (here >= GPD_M_GINST) return 0;
  const gpd_metric_desc_t *d = id >= 0 && id < GPD_M__COUNT ? gpd_metric_desc((unsigned)id) : NULL;
  if (!d || !name || strcmp(d->name, name))
    return fail(r, GPD_EBADVERSION, "metric id %lld is '%s' there but %s%s%s in this gpuprof (another version)",
                (long long)id, name ? name : "", d ? "'" : "", d ? d->name : "unknown", d ? "'" : "");
  return 0;
}

static int check_metrics(rd_t *r) { return gpd_store_metric_descs(r->m.db, metric_desc, r, r->path, r->err, r->errn); }

/* Trace tables: a daemon older than traces (or CPU sampling) did not make
 * them; one whose columns differ from ours is left out too (carried only
 * whole, never guessed). */
static void has_traces(rd_t *r) {
  r->has_trace = 0;
  for (int t = GPD_MT_TRACE_EVENT; t <= GPD_MT_TRACE_DUTY_LAUNCH; t++)
    if (gpd_store_merge_has_cols(r->m.db, gpd_mtable_name(t), gpd_mtable_cols(t)))
      r->has_trace |= 1u << (t - GPD_MT_TRACE_EVENT);
}

static int put_tagged(gpd_buf_t *b, gpd_mtable_t t, sqlite3_stmt *st, int64_t pid_local) {
  uint8_t tag = (uint8_t)t;
  int err = gpd_buf_put(b, &tag, 1);
  return err < 0 ? err : gpd_mtable_row_encode(b, st, gpd_mtable_pcol(t), pid_local);
}

static int id_cmp(const void *a, const void *b) {
  int64_t x = ((const rd_id_t *)a)->id, y = ((const rd_id_t *)b)->id;
  return (x > y) - (x < y);
}

static int read_profiles(rd_t *r) {
  sqlite3_stmt *st = NULL;
  int err = 0, rc;
  size_t cap = 0;
  if ((err = gpd_store_merge_profiles(&r->m, gpd_mtable_cols(GPD_MT_PROFILE), &st)) < 0) return err;
  while ((rc = gpd_store_merge_step(&r->m, st)) == 1) {
    gpd_mpart_t *p = r->p;
    if (r->nids == cap) {
      cap = cap ? cap * 2 : 64;
      rd_id_t *n = realloc(r->ids, cap * sizeof(*n));
      if (!n) goto nomem;
      r->ids = n;
    }
    if (p->nprof == p->capprof) {
      size_t nc = p->capprof ? p->capprof * 2 : 64;
      gpd_mpart_prof_t *n = realloc(p->prof, nc * sizeof(*n));
      if (!n) goto nomem;
      p->prof = n;
      p->capprof = nc;
    }
    r->ids[r->nids] = (rd_id_t){sqlite3_column_int64(st, 0), r->nids};
    r->nids++;
    p->prof[p->nprof++] = (gpd_mpart_prof_t){sqlite3_column_int64(st, 3), 0, 0};
    if ((err = put_tagged(&p->rows, GPD_MT_PROFILE, st, (int64_t)p->nprof)) < 0) goto out;
  }
  if (rc < 0) err = rc;
  /* profiles come in the order they began (store-id.h), not by id */
  if (r->nids) qsort(r->ids, r->nids, sizeof(*r->ids), id_cmp);
  goto out;
nomem:
  err = fail(r, -ENOMEM, "out of memory");
out:
  gpd_store_merge_done(st);
  return err;
}

/* A GPU binary's hash as the daemon names its file: 32 lowercase hex
 * digits (anything else never becomes part of a path). */
static int valid_hash(const unsigned char *h, int n) {
  if (!h || n != 32) return 0;
  for (int i = 0; i < n; i++)
    if (!((h[i] >= '0' && h[i] <= '9') || (h[i] >= 'a' && h[i] <= 'f'))) return 0;
  return 1;
}

/* GPU binary `hash` lies in gpubins/ beside this input */
static int add_bin(rd_t *r, const unsigned char *hash) {
  const char *slash = strrchr(r->path, '/');
  const char *dir = slash ? r->path : ".";
  uint32_t len = slash ? (uint32_t)(slash - r->path) : 1;
  if (slash && len == 0) dir = "/", len = 1;
  int err = gpd_buf_put(&r->p->bins, hash, 32);
  if (!err) err = gpd_buf_put(&r->p->bins, &len, 4);
  return err < 0 ? err : gpd_buf_put(&r->p->bins, dir, len);
}

/* Each row of st (a selection of r->m) through row(r, st, arg) until it
 * returns < 0; st is finished either way.  0, or the first error: the
 * store's GPD_ESTORE (its message already in r->err) or any other code
 * reported as out of memory. */
static int each_row(rd_t *r, sqlite3_stmt *st, int (*row)(rd_t *, sqlite3_stmt *, void *), void *arg) {
  int err = 0, rc;
  while ((rc = gpd_store_merge_step(&r->m, st)) == 1)
    if ((err = row(r, st, arg)) < 0) break;
  if (!err && rc < 0) err = rc;
  gpd_store_merge_done(st);
  return err < 0 && err != GPD_ESTORE ? fail(r, err, "out of memory") : err;
}

/* a row of table *(gpd_mtable_t *)arg, kept when its profile is selected */
static int side_row(rd_t *r, sqlite3_stmt *st, void *arg) {
  gpd_mtable_t t = *(const gpd_mtable_t *)arg;
  int err = 0;
  int64_t l = local_of(r, sqlite3_column_int64(st, gpd_mtable_pcol(t)));
  if (l && (err = put_tagged(&r->p->rows, t, st, l)) < 0) return err;
  if (l && t == GPD_MT_GPUBIN && valid_hash(sqlite3_column_text(st, 0), sqlite3_column_bytes(st, 0)))
    err = add_bin(r, sqlite3_column_text(st, 0));
  return err;
}

/* backend, module, string, gpubin, pcsample* and trace rows of the
 * selected profiles.  A GPU binary is taken when a selected profile loaded it
 * first or sampled in it (pcsample_cubin); its row then names the first
 * such profile. */
static int read_side(rd_t *r, gpd_mtable_t t) {
  sqlite3_stmt *st = NULL;
  int err;
  if (t >= GPD_MT_TRACE_EVENT && t <= GPD_MT_TRACE_DUTY_LAUNCH && !(r->has_trace & (1u << (t - GPD_MT_TRACE_EVENT))))
    return 0;
  if ((err = t == GPD_MT_GPUBIN ? gpd_store_merge_gpubins(&r->m, r->has_pcs, &st)
                                : gpd_store_merge_rows(&r->m, gpd_mtable_name(t), gpd_mtable_cols(t), &st)) < 0)
    return err;
  return each_row(r, st, side_row, &t);
}

/* a context row, kept when no earlier input brought (uid, id); src: this input */
static int context_row(rd_t *r, sqlite3_stmt *st, void *src) {
  gpd_mpart_t *p = r->p;
  int64_t uid = sqlite3_column_int64(st, 0), id = sqlite3_column_int64(st, 1);
  if (gpd_mpart_ctx_find(p, uid, id) >= 0) return 0;
  uint64_t off = p->ctxrows.n;
  int err = gpd_mtable_row_encode(&p->ctxrows, st, -1, 0);
  return err < 0 ? err : gpd_mpart_ctx_add(p, uid, id, off, p->ctxrows.n - off, *(const uint32_t *)src);
}

static int read_contexts(rd_t *r, uint32_t src) {
  sqlite3_stmt *st = NULL;
  int err;
  if ((err = gpd_store_merge_contexts(&r->m, gpd_mtable_cols(GPD_MT_CONTEXT), &st)) < 0) return err;
  return each_row(r, st, context_row, &src);
}

/* a frame row of a context this input (*src) brought */
static int frame_row(rd_t *r, sqlite3_stmt *st, void *src) {
  gpd_mpart_t *p = r->p;
  long c = gpd_mpart_ctx_find(p, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1));
  if (c < 0 || p->ctx[c].src != *(const uint32_t *)src) return 0; /* unknown, or labelled by an earlier input */
  uint64_t off = p->framerows.n;
  int err = gpd_mtable_row_encode(&p->framerows, st, -1, 0);
  if (err < 0) return err;
  if (!p->ctx[c].flen) p->ctx[c].foff = off;
  p->ctx[c].flen += p->framerows.n - off;
  return 0;
}

/* frames of the contexts this input brought (src), in depth order */
static int read_frames(rd_t *r, uint32_t src) {
  sqlite3_stmt *st = NULL;
  int err;
  if ((err = gpd_store_merge_frames(&r->m, gpd_mtable_cols(GPD_MT_FRAME), &st)) < 0) return err;
  return each_row(r, st, frame_row, &src);
}

static int pm_push(gpd_mpart_t *p, int64_t ctx, int64_t metric, double v) {
  if (p->npm == p->cappm) {
    size_t nc = p->cappm ? p->cappm * 2 : 65536;
    gpd_mval_rec_t *n = realloc(p->pm, nc * sizeof(*n));
    if (!n) return -ENOMEM;
    gpd_buf_prefault(n, p->cappm * sizeof(*n), nc * sizeof(*n));
    p->pm = n;
    p->cappm = nc;
  }
  p->pm[p->npm++] = (gpd_mval_rec_t){ctx, (uint32_t)metric, 0, v};
  return 0;
}

/* a value of a pmetric blob: zeros dropped, ids checked */
static int pm_add(void *c, int64_t ctx, uint32_t metric, double v) {
  if (metric >= GPD_M__COUNT) return GPD_EBADVERSION;
  return v != 0 ? pm_push(c, ctx, metric, v) : 0;
}

/* Metric values of the selected profiles, profile by profile in
 * (context, metric) order: format 2 from `metric` rows, format 3 (a merged
 * file) from `pmetric` blobs.  Zeros are dropped (sparse). */
static int read_metrics(rd_t *r, int version) {
  sqlite3_stmt *st = NULL;
  int err = 0, rc;
  gpd_mpart_t *p = r->p;
  int64_t last = 0;
  if ((err = gpd_store_merge_metrics(&r->m, version >= 3, &st)) < 0) return err;
  while ((rc = gpd_store_merge_step(&r->m, st)) == 1) {
    int64_t l = local_of(r, sqlite3_column_int64(st, 0));
    if (!l) continue;
    gpd_mpart_prof_t *pr = &p->prof[l - 1];
    if (l != last) {
      pr->pm_off = p->npm;
      last = l;
    }
    if (version >= 3) {
      int e = gpd_store_metric_decode(sqlite3_column_blob(st, 1), (size_t)sqlite3_column_bytes(st, 1), pm_add, p);
      if (e == -EINVAL)
        err = fail(r, GPD_ESTORE, "corrupt pmetric blob of profile %lld", (long long)sqlite3_column_int64(st, 0));
      else if (e == GPD_EBADVERSION)
        err = fail(r, e, "a metric id unknown to this gpuprof");
      else if (e < 0)
        err = fail(r, e, "out of memory");
    } else {
      int64_t m = sqlite3_column_int64(st, 2);
      double v = sqlite3_column_double(st, 3);
      if (m < 0 || m >= GPD_M__COUNT)
        err = fail(r, GPD_EBADVERSION, "metric id %lld unknown to this gpuprof", (long long)m);
      else if (v != 0 && (err = pm_push(p, sqlite3_column_int64(st, 1), m, v)) < 0)
        err = fail(r, err, "out of memory");
    }
    if (err) break;
    pr->pm_n = p->npm - pr->pm_off;
  }
  if (!err && rc < 0) err = rc;
  gpd_store_merge_done(st);
  return err;
}

int gpd_minput_read(gpd_mpart_t *p, const char *path, const gpd_minput_filter_t *f, char *err, size_t errn) {
  rd_t r = {.p = p, .m = {NULL, f->job_id, f->uid, path, err, errn}, .path = path, .base = p->nprof, .err = err,
            .errn = errn};
  /* what to take back on failure */
  size_t rows_n = p->rows.n, bins_n = p->bins.n, nprof = p->nprof, npm = p->npm, nctx = p->nctx, cr = p->ctxrows.n,
         fr = p->framerows.n;
  struct stat sb, sb2;
  int fd, wal = 0, version, e;

  /* a regular file only: opened without blocking (a FIFO would block
   * SQLite's open), and SQLite must open the same file */
  if ((fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)) < 0 || fstat(fd, &sb) < 0) {
    e = fail(&r, -errno, "cannot open: %s", strerror(errno));
    if (fd >= 0) close(fd);
    return e;
  }
  if (!S_ISREG(sb.st_mode)) {
    close(fd);
    return fail(&r, -EINVAL, "not a regular file, not a gpuprof profile");
  }
  if ((e = gpd_store_file_check_header(fd, (uint64_t)sb.st_size, &wal, path, err, errn)) < 0) goto done;
  /* A WAL database with no -wal file has everything in the main file:
   * open it immutable (no -shm or -wal is created beside someone's file).
   * With a -wal (a daemon is writing) read it normally, read-only.  A
   * sharded merged file: its shards attached, read as one. */
  char walp[4200];
  snprintf(walp, sizeof(walp), "%s-wal", path);
  int has_wal = wal && stat(walp, &sb2) == 0;
  if ((e = gpd_store_file_open_input(path, !has_wal, &r.m.db, err, errn)) < 0) goto done;
  if (stat(path, &sb2) < 0 || sb2.st_dev != sb.st_dev || sb2.st_ino != sb.st_ino) {
    e = fail(&r, GPD_ESTORE, "changed while being opened");
    goto done;
  }
  if ((e = read_meta(&r, &version)) < 0 || (e = check_metrics(&r)) < 0) goto done;
  r.has_pcs = gpd_store_pcsample_has(r.m.db);
  has_traces(&r);
  /* one read transaction: a daemon's commits in between are not seen half */
  if ((e = gpd_store_file_begin(r.m.db, path, err, errn)) < 0) goto done;
  uint32_t src = p->ninputs;
  if ((e = read_profiles(&r)) < 0 || (e = read_side(&r, GPD_MT_BACKEND)) < 0 ||
      (e = read_side(&r, GPD_MT_MODULE)) < 0 || (e = read_side(&r, GPD_MT_STRING)) < 0 ||
      (e = read_side(&r, GPD_MT_GPUBIN)) < 0 ||
      (r.has_pcs && ((e = read_side(&r, GPD_MT_PCSAMPLE)) < 0 || (e = read_side(&r, GPD_MT_PCSAMPLE_CUBIN)) < 0 ||
                     (e = read_side(&r, GPD_MT_PCSAMPLE_STAT)) < 0)) ||
      (e = read_side(&r, GPD_MT_TRACE_EVENT)) < 0 || (e = read_side(&r, GPD_MT_TRACE_LAUNCH)) < 0 ||
      (e = read_side(&r, GPD_MT_TRACE_STAT)) < 0 || (e = read_side(&r, GPD_MT_TRACE_CPU_SAMPLE)) < 0 ||
      (e = read_side(&r, GPD_MT_CPU_SAMPLE_STAT)) < 0 || (e = read_side(&r, GPD_MT_TRACE_DUTY)) < 0 ||
      (e = read_side(&r, GPD_MT_TRACE_WINDOW)) < 0 || (e = read_side(&r, GPD_MT_TRACE_DUTY_LAUNCH)) < 0 ||
      (e = read_contexts(&r, src)) < 0 ||
      (e = read_frames(&r, src)) < 0 || (e = read_metrics(&r, version)) < 0)
    goto done;
  p->ninputs++;
  p->in_bytes += (uint64_t)sb.st_size;
done:
  gpd_store_file_close(r.m.db);
  close(fd);
  free(r.ids);
  if (e < 0) {
    p->rows.n = rows_n;
    p->bins.n = bins_n;
    p->nprof = nprof;
    p->npm = npm;
    p->ctxrows.n = cr;
    p->framerows.n = fr;
    if (p->nctx != nctx) {
      p->nctx = nctx;
      if (gpd_mpart_reindex(p) < 0) {
        /* cannot shrink the index: the part is unusable */
        gpd_mpart_free(p);
        return fail(&r, -ENOMEM, "out of memory");
      }
    }
  }
  return e;
}

/* minput.c - reading one saved profile (`*.gpdb`, docs/FORMATS.md) into a
 * part: opened read-only, validated (SQLite header and size, meta.format,
 * format_version 2 or 3, metric ids), filtered by job / uid.
 *
 * The file is the user's own input (gpuprof merge runs with the user's
 * rights), but it may be truncated, from another gpuprof version, or not
 * a profile at all: every such case is an error that names the file, and
 * what was read of it is taken back out of the part.
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
#include "store-open.h"
#include "gpuprof/metric.h"

/* profiles an input contributes (?1 job id or NULL, ?2 uid or -1) */
#define FILT "(?1 IS NULL OR job_id = ?1) AND (?2 < 0 OR uid = ?2)"
#define SEL_PROFILES "SELECT id FROM profile WHERE " FILT

typedef struct rd_s {
  gpd_mpart_t *p;
  sqlite3 *db;
  const char *path;
  const gpd_minput_filter_t *f;
  int64_t *ids; /* input profile ids, ascending; local ordinal = base + index + 1 */
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

static int prep(rd_t *r, sqlite3_stmt **st, const char *sql) {
  if (sqlite3_prepare_v2(r->db, sql, -1, st, NULL) != SQLITE_OK)
    return fail(r, GPD_ESTORE, "not a gpuprof profile (%s)", sqlite3_errmsg(r->db));
  if (sqlite3_bind_parameter_count(*st) >= 2) {
    if (r->f->job_id)
      sqlite3_bind_text(*st, 1, r->f->job_id, -1, SQLITE_STATIC);
    else
      sqlite3_bind_null(*st, 1);
    sqlite3_bind_int64(*st, 2, r->f->uid);
  }
  return 0;
}

static int step_fail(rd_t *r, int rc) {
  return fail(r, GPD_ESTORE, "cannot read the profile (%s%s)", sqlite3_errmsg(r->db),
              rc == SQLITE_CORRUPT || rc == SQLITE_NOTADB ? ": corrupt or truncated" : "");
}

/* part-local ordinal of input profile id, 0 if not selected */
static int64_t local_of(const rd_t *r, int64_t id) {
  size_t lo = 0, hi = r->nids;
  while (lo < hi) {
    size_t m = (lo + hi) / 2;
    if (r->ids[m] < id)
      lo = m + 1;
    else
      hi = m;
  }
  return lo < r->nids && r->ids[lo] == id ? (int64_t)(r->base + lo + 1) : 0;
}

/* SQLite header: magic, page size, and the page count when it is valid
 * (change counter == version-valid-for): a file shorter than that was
 * truncated.  *wal: the file is in WAL mode. */
static int check_header(rd_t *r, int fd, const struct stat *sb, int *wal) {
  uint8_t h[100];
  ssize_t n = pread(fd, h, sizeof(h), 0);
  if (n < 0) return fail(r, -errno, "cannot read: %s", strerror(errno));
  if (n < (ssize_t)sizeof(h) || memcmp(h, "SQLite format 3", 16))
    return fail(r, GPD_ESTORE, "not a gpuprof profile (no SQLite header%s)", n < 100 ? ": truncated" : "");
  uint32_t psz = (uint32_t)h[16] << 8 | h[17];
  if (psz == 1) psz = 65536;
  uint32_t pages = (uint32_t)h[28] << 24 | (uint32_t)h[29] << 16 | (uint32_t)h[30] << 8 | h[31];
  if (!memcmp(h + 24, h + 92, 4) && (uint64_t)sb->st_size < (uint64_t)pages * psz)
    return fail(r, GPD_ESTORE, "truncated (%lld bytes, its header says %llu)", (long long)sb->st_size,
                (unsigned long long)pages * psz);
  *wal = h[18] == 2 || h[19] == 2;
  return 0;
}

static int read_meta(rd_t *r, int *version) {
  sqlite3_stmt *st = NULL;
  int err, rc, have_format = 0;
  *version = 1; /* format 1 wrote no format_version */
  if ((err = prep(r, &st, "SELECT key, value FROM meta WHERE key IN ('format', 'format_version')")) < 0) return err;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    const char *k = (const char *)sqlite3_column_text(st, 0), *v = (const char *)sqlite3_column_text(st, 1);
    if (!k || !v) continue;
    if (!strcmp(k, "format"))
      have_format = !strcmp(v, "gpuprof");
    else
      *version = atoi(v);
  }
  err = rc == SQLITE_DONE ? 0 : step_fail(r, rc);
  sqlite3_finalize(st);
  if (err < 0) return err;
  if (!have_format) return fail(r, GPD_ESTORE, "not a gpuprof profile (meta.format is not 'gpuprof')");
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
static int check_metrics(rd_t *r) {
  sqlite3_stmt *st = NULL;
  int err, rc;
  if ((err = prep(r, &st, "SELECT id, name FROM metric_desc")) < 0) return err;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    int64_t id = sqlite3_column_int64(st, 0);
    const char *name = (const char *)sqlite3_column_text(st, 1);
    /* the metrics from GINST on are computed by the CLI from the PC
     * samples and never stored (metric.h): a file that describes one of
     * them at some id stores no value under that id.  (CPUTIME's arrival
     * at 51 renumbered them: files from before it say 51 is GINST.) */
    int here = name ? gpd_metric_by_name(name) : -1;
    if (here >= GPD_M_GINST) continue;
    const gpd_metric_desc_t *d = id >= 0 && id < GPD_M__COUNT ? gpd_metric_desc((unsigned)id) : NULL;
    if (!d || !name || strcmp(d->name, name)) {
      err = fail(r, GPD_EBADVERSION, "metric id %lld is '%s' there but %s%s%s in this gpuprof (another version)",
                 (long long)id, name ? name : "", d ? "'" : "", d ? d->name : "unknown", d ? "'" : "");
      break;
    }
  }
  if (!err && rc != SQLITE_DONE) err = step_fail(r, rc);
  sqlite3_finalize(st);
  return err;
}

/* PC-sample tables: a daemon older than PC sampling did not make them */
static int has_pcsample(rd_t *r) {
  sqlite3_stmt *st = NULL;
  int err, rc;
  if ((err = prep(r, &st, "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name IN "
                          "('pcsample', 'pcsample_cubin', 'pcsample_stat')")) < 0)
    return err;
  if ((rc = sqlite3_step(st)) == SQLITE_ROW)
    r->has_pcs = sqlite3_column_int(st, 0) == 3;
  else
    err = step_fail(r, rc);
  sqlite3_finalize(st);
  return err;
}

/* Trace tables: a daemon older than traces (or CPU sampling) did not make
 * them; one whose columns differ from ours is left out too (carried only
 * whole, never guessed). */
static void has_traces(rd_t *r) {
  r->has_trace = 0;
  for (int t = GPD_MT_TRACE_EVENT; t <= GPD_MT_TRACE_DUTY_LAUNCH; t++) {
    char sql[256];
    sqlite3_stmt *st = NULL;
    snprintf(sql, sizeof(sql), "SELECT %s FROM %s LIMIT 0", gpd_mtable_cols(t), gpd_mtable_name(t));
    if (sqlite3_prepare_v2(r->db, sql, -1, &st, NULL) == SQLITE_OK) r->has_trace |= 1u << (t - GPD_MT_TRACE_EVENT);
    sqlite3_finalize(st);
  }
}

static int put_tagged(gpd_buf_t *b, gpd_mtable_t t, sqlite3_stmt *st, int64_t pid_local) {
  uint8_t tag = (uint8_t)t;
  int err = gpd_buf_put(b, &tag, 1);
  return err < 0 ? err : gpd_mtable_row_encode(b, st, gpd_mtable_pcol(t), pid_local);
}

static int read_profiles(rd_t *r) {
  sqlite3_stmt *st = NULL;
  char sql[512];
  int err = 0, rc;
  size_t cap = 0;
  snprintf(sql, sizeof(sql), "SELECT %s FROM profile WHERE " FILT " ORDER BY id", gpd_mtable_cols(GPD_MT_PROFILE));
  if ((err = prep(r, &st, sql)) < 0) return err;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    gpd_mpart_t *p = r->p;
    if (r->nids == cap) {
      cap = cap ? cap * 2 : 64;
      int64_t *n = realloc(r->ids, cap * sizeof(*n));
      if (!n) goto nomem;
      r->ids = n;
    }
    if (p->nprof == p->capprof) {
      size_t nc = p->capprof ? p->capprof * 2 : 64;
      gpd_mprof_t *n = realloc(p->prof, nc * sizeof(*n));
      if (!n) goto nomem;
      p->prof = n;
      p->capprof = nc;
    }
    r->ids[r->nids++] = sqlite3_column_int64(st, 0);
    p->prof[p->nprof++] = (gpd_mprof_t){sqlite3_column_int64(st, 3), 0, 0};
    if ((err = put_tagged(&p->rows, GPD_MT_PROFILE, st, (int64_t)p->nprof)) < 0) goto out;
  }
  if (rc != SQLITE_DONE) err = step_fail(r, rc);
  goto out;
nomem:
  err = fail(r, -ENOMEM, "out of memory");
out:
  sqlite3_finalize(st);
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

/* backend, module, string, gpubin, pcsample* and trace rows of the
 * selected profiles.  A GPU binary is taken when a selected profile loaded it
 * first or sampled in it (pcsample_cubin); its row then names the first
 * such profile. */
static int read_side(rd_t *r, gpd_mtable_t t) {
  sqlite3_stmt *st = NULL;
  char sql[1024];
  int err = 0, rc, pcol = gpd_mtable_pcol(t);
  const char *cols = gpd_mtable_cols(t);
  int plen = (int)strcspn(cols, ","); /* the profile column: the first (trace_cpu_sample's is `profile`) */
  if (t >= GPD_MT_TRACE_EVENT && t <= GPD_MT_TRACE_DUTY_LAUNCH && !(r->has_trace & (1u << (t - GPD_MT_TRACE_EVENT))))
    return 0;
  if (t == GPD_MT_GPUBIN && r->has_pcs)
    snprintf(sql, sizeof(sql),
             "SELECT hash, kind, size, path, COALESCE(CASE WHEN profile_id IN (" SEL_PROFILES
             ") THEN profile_id END, (SELECT MIN(c.profile_id) FROM pcsample_cubin c WHERE c.hash = gpubin.hash "
             "AND c.profile_id IN (" SEL_PROFILES "))) FROM gpubin WHERE profile_id IN (" SEL_PROFILES
             ") OR hash IN (SELECT hash FROM pcsample_cubin WHERE profile_id IN (" SEL_PROFILES "))");
  else
    snprintf(sql, sizeof(sql), "SELECT %s FROM %s WHERE %.*s IN (" SEL_PROFILES ")", cols, gpd_mtable_name(t), plen,
             cols);
  if ((err = prep(r, &st, sql)) < 0) return err;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    int64_t l = local_of(r, sqlite3_column_int64(st, pcol));
    if (l && (err = put_tagged(&r->p->rows, t, st, l)) < 0) break;
    if (l && t == GPD_MT_GPUBIN && valid_hash(sqlite3_column_text(st, 0), sqlite3_column_bytes(st, 0)) &&
        (err = add_bin(r, sqlite3_column_text(st, 0))) < 0)
      break;
  }
  if (!err && rc != SQLITE_DONE) err = step_fail(r, rc);
  sqlite3_finalize(st);
  return err < 0 && err != GPD_ESTORE ? fail(r, err, "out of memory") : err;
}

static int read_contexts(rd_t *r, uint32_t src) {
  sqlite3_stmt *st = NULL;
  char sql[512];
  int err = 0, rc;
  gpd_mpart_t *p = r->p;
  snprintf(sql, sizeof(sql),
           /* +uid: a scan in table order, not the (uid, id) index and a
            * table seek per row (a quarter of the read's CPU) */
           "SELECT %s FROM context WHERE +uid IN (SELECT uid FROM profile WHERE " FILT ")",
           gpd_mtable_cols(GPD_MT_CONTEXT));
  if ((err = prep(r, &st, sql)) < 0) return err;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    int64_t uid = sqlite3_column_int64(st, 0), id = sqlite3_column_int64(st, 1);
    if (gpd_mpart_ctx_find(p, uid, id) >= 0) continue;
    uint64_t off = p->ctxrows.n;
    if ((err = gpd_mtable_row_encode(&p->ctxrows, st, -1, 0)) < 0 ||
        (err = gpd_mpart_ctx_add(p, uid, id, off, p->ctxrows.n - off, src)) < 0)
      break;
  }
  if (!err && rc != SQLITE_DONE) err = step_fail(r, rc);
  sqlite3_finalize(st);
  return err < 0 && err != GPD_ESTORE ? fail(r, err, "out of memory") : err;
}

/* frames of the contexts this input brought (src), in depth order */
static int read_frames(rd_t *r, uint32_t src) {
  sqlite3_stmt *st = NULL;
  char sql[512];
  int err = 0, rc;
  gpd_mpart_t *p = r->p;
  snprintf(sql, sizeof(sql),
           "SELECT %s FROM frame WHERE uid IN (SELECT uid FROM profile WHERE " FILT ") "
           "ORDER BY uid, context_id, depth",
           gpd_mtable_cols(GPD_MT_FRAME));
  if ((err = prep(r, &st, sql)) < 0) return err;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    long c = gpd_mpart_ctx_find(p, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1));
    if (c < 0 || p->ctx[c].src != src) continue; /* unknown, or labelled by an earlier input */
    uint64_t off = p->framerows.n;
    if ((err = gpd_mtable_row_encode(&p->framerows, st, -1, 0)) < 0) break;
    if (!p->ctx[c].flen) p->ctx[c].foff = off;
    p->ctx[c].flen += p->framerows.n - off;
  }
  if (!err && rc != SQLITE_DONE) err = step_fail(r, rc);
  sqlite3_finalize(st);
  return err < 0 && err != GPD_ESTORE ? fail(r, err, "out of memory") : err;
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
  if ((err = prep(r, &st,
                  version >= 3 ? "SELECT profile_id, vals FROM pmetric WHERE profile_id IN (" SEL_PROFILES
                                 ") ORDER BY profile_id"
                               : "SELECT profile_id, context_id, metric_id, value FROM metric WHERE profile_id IN "
                                 "(" SEL_PROFILES ") ORDER BY profile_id, context_id, metric_id")) < 0)
    return err;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    int64_t l = local_of(r, sqlite3_column_int64(st, 0));
    if (!l) continue;
    gpd_mprof_t *pr = &p->prof[l - 1];
    if (l != last) {
      pr->pm_off = p->npm;
      last = l;
    }
    if (version >= 3) {
      int e = gpd_pmetric_decode(sqlite3_column_blob(st, 1), (size_t)sqlite3_column_bytes(st, 1), pm_add, p);
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
  if (!err && rc != SQLITE_DONE) err = step_fail(r, rc);
  sqlite3_finalize(st);
  return err;
}

int gpd_minput_read(gpd_mpart_t *p, const char *path, const gpd_minput_filter_t *f, char *err, size_t errn) {
  rd_t r = {.p = p, .path = path, .f = f, .base = p->nprof, .err = err, .errn = errn};
  /* what to take back on failure */
  size_t rows_n = p->rows.n, bins_n = p->bins.n, nprof = p->nprof, npm = p->npm, nctx = p->nctx, cr = p->ctxrows.n,
         fr = p->framerows.n;
  struct stat sb, sb2;
  int fd, wal = 0, version, e;
  char uri[4200];

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
  if ((e = check_header(&r, fd, &sb, &wal)) < 0) goto done;
  /* A WAL database with no -wal file has everything in the main file:
   * open it immutable (no -shm or -wal is created beside someone's file).
   * With a -wal (a daemon is writing) read it normally, read-only. */
  char walp[4200];
  snprintf(walp, sizeof(walp), "%s-wal", path);
  int has_wal = wal && stat(walp, &sb2) == 0;
  {
    char *rp = realpath(path, NULL); /* the file itself: NOFOLLOW below holds for its shards */
    char *q = sqlite3_mprintf("%s", rp ? rp : path);
    free(rp);
    size_t o = 0;
    o += (size_t)snprintf(uri + o, sizeof(uri) - o, "file:");
    for (const char *s = q; *s && o + 4 < sizeof(uri); s++) {
      if (*s == '?' || *s == '#' || *s == '%')
        o += (size_t)snprintf(uri + o, sizeof(uri) - o, "%%%02X", (unsigned char)*s);
      else
        uri[o++] = *s;
    }
    uri[o] = 0;
    sqlite3_free(q);
    snprintf(uri + o, sizeof(uri) - o, "?mode=ro%s", has_wal ? "" : "&immutable=1");
  }
  /* read-only, its schema checked, under a deadline (store-open.h) */
  {
    char oerr[600];
    if ((e = gpd_store_open_readonly(uri, path, SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, &r.db, oerr, sizeof(oerr))) <
        0) {
      snprintf(r.err, r.errn, "%s", oerr); /* it names the file */
      goto done;
    }
  }
  if (stat(path, &sb2) < 0 || sb2.st_dev != sb.st_dev || sb2.st_ino != sb.st_ino) {
    e = fail(&r, GPD_ESTORE, "changed while being opened");
    goto done;
  }
  sqlite3_busy_timeout(r.db, 5000); /* a daemon may be writing */
  /* a sharded merged file: its shards attached, read as one (profile.c) */
  {
    char aerr[600];
    if ((e = gpd_profile_attach(r.db, path, NULL, aerr, sizeof(aerr))) < 0) {
      snprintf(r.err, r.errn, "%s", aerr); /* it names the file at fault */
      goto done;
    }
  }
  /* reads through a mapping (no pread + copy per page), a larger cache */
  sqlite3_exec(r.db, "PRAGMA mmap_size=1073741824; PRAGMA cache_size=-32768", NULL, NULL, NULL);
  if ((e = read_meta(&r, &version)) < 0 || (e = check_metrics(&r)) < 0 || (e = has_pcsample(&r)) < 0) goto done;
  has_traces(&r);
  /* one read transaction: a daemon's commits in between are not seen half */
  if (sqlite3_exec(r.db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK) {
    e = fail(&r, GPD_ESTORE, "cannot read: %s", sqlite3_errmsg(r.db));
    goto done;
  }
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
  sqlite3_close(r.db);
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

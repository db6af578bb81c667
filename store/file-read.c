/* file-read.c - opening a saved profile for reading, its meta rows,
 * read transactions, and the WAL side files a reader leaves
 * (store-read.h).  Also the row loop every reader here shares
 * (read-internal.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpuprof/error.h"
#include "read-internal.h"
#include "store-open.h"
#include "store-read.h"

/* ms a reader waits for a writing daemon's lock */
#define STORE_BUSY_MS 5000

static void msg(char *err, size_t errn, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void msg(char *err, size_t errn, const char *fmt, ...) {
  va_list ap;
  if (!err || !errn) return;
  va_start(ap, fmt);
  vsnprintf(err, errn, fmt, ap);
  va_end(ap);
}

const char *gpd__store_text(sqlite3_stmt *st, int col) {
  const unsigned char *s = sqlite3_column_text(st, col);
  return s ? (const char *)s : "";
}

int gpd__store_prep(sqlite3 *db, const char *sql, sqlite3_stmt **st, const char *label, char *err, size_t errn) {
  if (sqlite3_prepare_v2(db, sql, -1, st, NULL) == SQLITE_OK) return 0;
  msg(err, errn, "%s: not a gpuprof profile (%s)", label, sqlite3_errmsg(db));
  return GPD_ESTORE;
}

int gpd__store_step_fail(sqlite3 *db, int rc, const char *label, char *err, size_t errn) {
  msg(err, errn, "%s: cannot read the profile (%s%s)", label, sqlite3_errmsg(db),
      rc == SQLITE_CORRUPT || rc == SQLITE_NOTADB ? ": corrupt or truncated" : "");
  return GPD_ESTORE;
}

int gpd__store_each(sqlite3 *db, const char *sql, const int64_t *args, int nargs, gpd__store_row_fn row, void *c,
                    int optional, const char *label, char *err, size_t errn) {
  sqlite3_stmt *st = NULL;
  int rc, r = 0;
  if (optional ? sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK
               : (r = gpd__store_prep(db, sql, &st, label, err, errn)) < 0)
    return r;
  int np = sqlite3_bind_parameter_count(st);
  for (int i = 0; i < nargs && i < np; i++) sqlite3_bind_int64(st, i + 1, args[i]);
  while ((rc = sqlite3_step(st)) == SQLITE_ROW)
    if ((r = row(st, c)) < 0) break;
  if (r < 0)
    msg(err, errn, "%s: %s", label, gpd_strerror(r));
  else if (rc != SQLITE_DONE)
    r = gpd__store_step_fail(db, rc, label, err, errn);
  sqlite3_finalize(st);
  return r;
}

int64_t gpd__store_int(sqlite3 *db, const char *sql, int64_t a) {
  sqlite3_stmt *q = NULL;
  int64_t n = 0;
  if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) == SQLITE_OK) {
    if (sqlite3_bind_parameter_count(q) >= 1) sqlite3_bind_int64(q, 1, a);
    if (sqlite3_step(q) == SQLITE_ROW) n = sqlite3_column_int64(q, 0);
  }
  sqlite3_finalize(q);
  return n;
}

static int open_flags(const char *name, const char *label, int flags, sqlite3 **db, char *err, size_t errn,
                      const char *shards_of) {
  int e;
  /* read-only, its schema checked, under a deadline (store-open.h) */
  if ((e = gpd_store_open_readonly(name, label, flags, db, err, errn)) < 0) return e;
  sqlite3_busy_timeout(*db, STORE_BUSY_MS); /* a daemon may be writing a store */
  if ((e = gpd_store_shard_attach(*db, shards_of, NULL, err, errn)) < 0) {
    sqlite3_close(*db);
    *db = NULL;
  }
  return e;
}

int gpd_store_file_open(const char *path, sqlite3 **db, char *err, size_t errn) {
  char *rp = realpath(path, NULL); /* the file itself: links are resolved once, here */
  int e = open_flags(rp ? rp : path, path, 0, db, err, errn, rp ? rp : path);
  free(rp);
  return e;
}

int gpd_store_file_check_header(int fd, uint64_t size, int *wal, const char *label, char *err, size_t errn) {
  uint8_t h[100];
  ssize_t n = pread(fd, h, sizeof(h), 0);
  if (n < 0) {
    int e = -errno;
    msg(err, errn, "%s: cannot read: %s", label, strerror(-e));
    return e;
  }
  if (n < (ssize_t)sizeof(h) || memcmp(h, "SQLite format 3", 16)) {
    msg(err, errn, "%s: not a gpuprof profile (no SQLite header%s)", label, n < 100 ? ": truncated" : "");
    return GPD_ESTORE;
  }
  uint32_t psz = (uint32_t)h[16] << 8 | h[17];
  if (psz == 1) psz = 65536;
  uint32_t pages = (uint32_t)h[28] << 24 | (uint32_t)h[29] << 16 | (uint32_t)h[30] << 8 | h[31];
  /* the page count is valid when the change counter equals
   * version-valid-for */
  if (!memcmp(h + 24, h + 92, 4) && size < (uint64_t)pages * psz) {
    msg(err, errn, "%s: truncated (%llu bytes, its header says %llu)", label, (unsigned long long)size,
        (unsigned long long)pages * psz);
    return GPD_ESTORE;
  }
  *wal = h[18] == 2 || h[19] == 2;
  return 0;
}

int gpd_store_file_open_input(const char *path, int immutable, sqlite3 **db, char *err, size_t errn) {
  char *rp = realpath(path, NULL); /* the file itself: NOFOLLOW holds for its shards */
  sqlite3_str *u = sqlite3_str_new(NULL);
  sqlite3_str_appendall(u, "file:");
  for (const char *s = rp ? rp : path; *s; s++)
    if (*s == '?' || *s == '#' || *s == '%')
      sqlite3_str_appendf(u, "%%%02X", (unsigned char)*s);
    else
      sqlite3_str_appendchar(u, 1, *s);
  sqlite3_str_appendf(u, "?mode=ro%s", immutable ? "&immutable=1" : "");
  char *uri = sqlite3_str_finish(u);
  int e = uri ? open_flags(uri, path, SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, db, err, errn, path) : -ENOMEM;
  if (!uri) msg(err, errn, "%s: out of memory", path);
  sqlite3_free(uri);
  free(rp);
  /* reads through a mapping (no pread + copy per page), a larger cache */
  if (!e) sqlite3_exec(*db, "PRAGMA mmap_size=1073741824; PRAGMA cache_size=-32768", NULL, NULL, NULL);
  return e;
}

void gpd_store_file_close(sqlite3 *db) { sqlite3_close(db); }

static int exists_suffix(const char *path, const char *suffix) {
  char p[4200];
  struct stat sb;
  snprintf(p, sizeof(p), "%s%s", path, suffix);
  return stat(p, &sb) == 0;
}

unsigned gpd_store_file_wal_before(const char *path) {
  return (exists_suffix(path, "-wal") ? 1u : 0u) | (exists_suffix(path, "-shm") ? 2u : 0u);
}

/* A read-only connection to a WAL database creates <db>-wal and <db>-shm
 * but cannot remove them when it closes: removed again when they were not
 * there before and the log is still empty (nobody wrote meanwhile). */
void gpd_store_file_wal_after(const char *path, unsigned before) {
  char w[4200], s[4200];
  struct stat sb;
  if (before) return;
  snprintf(w, sizeof(w), "%s-wal", path);
  snprintf(s, sizeof(s), "%s-shm", path);
  if (stat(w, &sb) == 0 && sb.st_size == 0) {
    unlink(w);
    unlink(s);
  }
}

int gpd_store_file_begin(sqlite3 *db, const char *label, char *err, size_t errn) {
  if (sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) == SQLITE_OK) return 0;
  msg(err, errn, "%s: cannot read: %s", label, sqlite3_errmsg(db));
  return GPD_ESTORE;
}

void gpd_store_file_end(sqlite3 *db) {
  if (!sqlite3_get_autocommit(db)) sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
}

static int meta_row(sqlite3_stmt *st, void *c) {
  gpd_store_meta_t *m = c;
  const char *k = gpd__store_text(st, 0), *v = gpd__store_text(st, 1);
  if (!strcmp(k, "format")) {
    m->has_format = 1;
    snprintf(m->format, sizeof m->format, "%s", v);
  } else if (!strcmp(k, "format_version") && sqlite3_column_type(st, 1) != SQLITE_NULL) {
    m->version = atoi(v);
  }
  return 0;
}

int gpd_store_file_meta(sqlite3 *db, gpd_store_meta_t *m, const char *label, char *err, size_t errn) {
  memset(m, 0, sizeof *m);
  return gpd__store_each(db, "SELECT key, value FROM meta WHERE key IN ('format', 'format_version')", NULL, 0,
                         meta_row, m, 0, label, err, errn);
}

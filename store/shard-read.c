/* shard-read.c - a sharded merged file's shards attached to its reading
 * connection (store-read.h; docs/FORMATS.md "Sharded merged files").
 *
 * `mpirun -np N gpuprof merge -o job.gpdb` writes the context-major rows
 * of each rank's context range and the profile-major rows of the
 * processes each rank read into that rank's own file beside job.gpdb
 * (job.gpdb.shard-001 ...), all ranks in parallel, as hpcprof-mpi writes
 * its sparse output in parallel (Zhou et al., "Scalable Analysis of
 * GPU-accelerated Applications with HPCToolkit", sec. 6.2).  job.gpdb
 * keeps everything else and a `shard` table naming the files.  A reader
 * attaches them and shadows the four split tables with TEMP VIEWs of the
 * same names (temp is searched before main), so unqualified queries see
 * one table; the views are UNION ALLs, whose WHERE terms SQLite pushes
 * into each arm (each shard's primary key answers them).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gpuprof/error.h"
#include "store-open.h"
#include "store-read.h"

#include <sqlite3.h>

const char *const gpd_store_shard_tables[GPD_STORE_SHARD_NTABLES] = {"context", "frame", "stat", "pmetric"};

int gpd_store_shard_name_ok(const char *name) {
  size_t n = name ? strlen(name) : 0;
  if (n == 0 || n > 200 || name[0] == '.' || strstr(name, "..")) return 0;
  for (size_t i = 0; i < n; i++) {
    char c = name[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
          c == '_'))
      return 0;
  }
  return 1;
}

int gpd_store_shard_max(void) {
  sqlite3 *db = NULL;
  int n = 0;
  if (sqlite3_open_v2(":memory:", &db, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK)
    n = sqlite3_limit(db, SQLITE_LIMIT_ATTACHED, -1);
  sqlite3_close(db);
  return n;
}

/* The shard's own tag (shard_of) must name this merge and this place. */
static int check_tag(sqlite3 *db, int i, const char *nonce, int64_t ord) {
  sqlite3_stmt *st = NULL;
  char sql[96];
  int ok = 0;
  snprintf(sql, sizeof(sql), "SELECT nonce, ord FROM s%d.shard_of", i);
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) {
    const char *n = (const char *)sqlite3_column_text(st, 0);
    ok = n && !strcmp(n, nonce) && sqlite3_column_int64(st, 1) == ord && sqlite3_step(st) == SQLITE_DONE;
  }
  sqlite3_finalize(st);
  return ok;
}

int gpd_store_shard_attach(sqlite3 *db, const char *path, int *nshards, char *err, size_t errn) {
  sqlite3_stmt *st = NULL;
  char dir[4096], sp[4400];
  int e = 0, n = 0;
  if (nshards) *nshards = 0;
  if (!gpd_store_file_has_table(db, "shard")) return 0; /* main's */
  /* shard names are relative to the directory of the file itself (a
   * link's target: the shards were written beside it) */
  char *rp = realpath(path, NULL);
  snprintf(dir, sizeof(dir), "%s", rp ? rp : path);
  free(rp);
  char *slash = strrchr(dir, '/');
  if (slash)
    slash == dir ? (void)(dir[1] = 0) : (void)(*slash = 0);
  else
    snprintf(dir, sizeof(dir), ".");
  int limit = sqlite3_limit(db, SQLITE_LIMIT_ATTACHED, -1);
  if (sqlite3_prepare_v2(db, "SELECT ord, name, bytes, nonce FROM main.shard ORDER BY ord", -1, &st, NULL) !=
      SQLITE_OK) {
    snprintf(err, errn, "%s: bad shard table: %s", path, sqlite3_errmsg(db));
    return GPD_ESTORE;
  }
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    int64_t ord = sqlite3_column_int64(st, 0), bytes = sqlite3_column_int64(st, 2);
    const char *name = (const char *)sqlite3_column_text(st, 1), *nonce = (const char *)sqlite3_column_text(st, 3);
    struct stat sb;
    if (!gpd_store_shard_name_ok(name) || !nonce) {
      snprintf(err, errn, "%s: shard %lld: refused name '%s' (a shard is a plain name beside the file)", path,
               (long long)ord, name ? name : "");
      e = -EINVAL;
      break;
    }
    if (n >= limit) {
      snprintf(err, errn, "%s: more shards than the %d files SQLite attaches; merge it with --single-file", path,
               limit);
      e = -E2BIG;
      break;
    }
    snprintf(sp, sizeof(sp), "%s/%s", dir, name);
    if (lstat(sp, &sb) < 0) {
      snprintf(err, errn, "%s: shard %s: %s", path, sp, strerror(errno));
      e = -errno;
      break;
    }
    if (!S_ISREG(sb.st_mode) || sb.st_size != bytes) {
      snprintf(err, errn, "%s: shard %s: %s (%lld bytes, %lld written)", path, sp,
               S_ISREG(sb.st_mode) ? "truncated or changed" : "not a regular file", (long long)sb.st_size,
               (long long)bytes);
      e = -EINVAL;
      break;
    }
    /* the connection's flags hold for the attached file (read-only, and
     * SQLITE_OPEN_NOFOLLOW from gpd_store_file_open) */
    sqlite3_stmt *at = NULL;
    char q[64];
    snprintf(q, sizeof(q), "ATTACH ?1 AS s%d", n);
    if (sqlite3_prepare_v2(db, q, -1, &at, NULL) != SQLITE_OK ||
        sqlite3_bind_text(at, 1, sp, -1, SQLITE_STATIC) != SQLITE_OK || sqlite3_step(at) != SQLITE_DONE) {
      snprintf(err, errn, "%s: shard %s: %s", path, sp, sqlite3_errmsg(db));
      sqlite3_finalize(at);
      e = GPD_ESTORE;
      break;
    }
    sqlite3_finalize(at);
    snprintf(q, sizeof(q), "s%d", n);
    if ((e = gpd_store_check_schema(db, q, sp, err, errn)) < 0) {
      n++;
      break;
    }
    if (!check_tag(db, n, nonce, ord)) {
      snprintf(err, errn, "%s: shard %s: not the shard %lld of this file (another merge's?)", path, sp,
               (long long)ord);
      e = -EINVAL;
      n++;
      break;
    }
    n++;
  }
  if (!e && rc != SQLITE_DONE) {
    snprintf(err, errn, "%s: bad shard table: %s", path, sqlite3_errmsg(db));
    e = GPD_ESTORE;
  }
  sqlite3_finalize(st);
  /* one view per split table, named as the table (temp comes first) */
  for (int t = 0; !e && n && t < GPD_STORE_SHARD_NTABLES; t++) {
    const char *name = gpd_store_shard_tables[t];
    sqlite3_str *sql = sqlite3_str_new(db);
    sqlite3_str_appendf(sql, "CREATE TEMP VIEW %s AS SELECT * FROM main.%s", name, name);
    for (int i = 0; i < n; i++) sqlite3_str_appendf(sql, " UNION ALL SELECT * FROM s%d.%s", i, name);
    char *q = sqlite3_str_finish(sql), *msg = NULL;
    if (!q) {
      snprintf(err, errn, "%s: out of memory", path);
      e = -ENOMEM;
    } else if (sqlite3_exec(db, q, NULL, NULL, &msg) != SQLITE_OK) {
      snprintf(err, errn, "%s: shards: %s", path, msg ? msg : sqlite3_errmsg(db));
      e = GPD_ESTORE;
    }
    sqlite3_free(msg);
    sqlite3_free(q);
  }
  if (nshards && !e) *nshards = n;
  return e;
}

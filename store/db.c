/* db.c - read-write connections to a .gpdb and their transactions
 * (store-db.h). */
#include "store-db.h"
#include "store-sql.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpuprof/error.h"
#include "gpuprof/log.h"

static _Thread_local int db_quiet;

/* Bytes of the -wal file of db's database `name` (0: none). */
static int64_t wal_bytes(sqlite3 *db, const char *name) {
  const char *file = sqlite3_db_filename(db, name);
  struct stat st;
  if (file == NULL || *file == '\0' || stat(sqlite3_filename_wal(file), &st) < 0)
    return 0;
  return (int64_t)st.st_size;
}

/* wal_checkpoint(TRUNCATE) of db's database `name`, tried again every
 * millisecond for up to wait_ms while readers or writers are in the way.
 * Each try reads the readers' marks afresh and waits for none (SQLite's
 * busy handler, by contrast, waits for one lock slot, which readers that
 * follow each other back to back can hold for ever).  The connection's
 * busy timeout is GPD_STORE_BUSY_MS again afterwards.  Returns the last
 * try's SQLite result code. */
static int wal_truncate(sqlite3 *db, const char *name, unsigned wait_ms) {
  int rc;
  sqlite3_busy_timeout(db, 0);
  for (unsigned t = 0;; t++) {
    rc = sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
    if ((rc != SQLITE_BUSY && rc != SQLITE_LOCKED) || t >= wait_ms)
      break;
    usleep(1000);
  }
  sqlite3_busy_timeout(db, GPD_STORE_BUSY_MS);
  return rc;
}

/* After each commit of a read-write connection (sqlite3_wal_hook; arg: the
 * passive checkpoint's size, frames): the -wal's bound first (a file of
 * GPD_STORE_WAL_MAX bytes or more is checkpointed to zero length, for up
 * to GPD_STORE_BUSY_MS while readers or writers are in the way; the next
 * commit tries again), else what wal_autocheckpoint does. */
static int wal_hook(void *arg, sqlite3 *db, const char *name, int frames) {
  if (wal_bytes(db, name) >= GPD_STORE_WAL_MAX)
    wal_truncate(db, name, GPD_STORE_BUSY_MS);
  else if (frames >= (int)(uintptr_t)arg)
    sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
  return SQLITE_OK;
}

int gpd_store_db_quiet(int on) {
  int was = db_quiet;
  db_quiet = on;
  return was;
}

/* The database file or a side file: never a link, a hard link or someone
 * else's file; 0600 (created so, tightened if an older daemon made it
 * readable). */
static int private_file(const char *path, int create) {
  int fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC | (create ? O_CREAT : 0), 0600);
  if (fd < 0) {
    if (!create && errno == ENOENT)
      return 0;
    GPD_ERR("store: %s: %s", path, errno == ELOOP ? "is a symbolic link; refused" : strerror(errno));
    return GPD_ESTORE;
  }
  struct stat st;
  int err = 0;
  if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || st.st_nlink != 1) {
    GPD_ERR("store: %s is not a regular file of the daemon's own (uid %u, %u links); refused", path,
            (unsigned)st.st_uid, (unsigned)st.st_nlink);
    err = GPD_ESTORE;
  } else if ((st.st_mode & 077) && fchmod(fd, 0600) < 0) {
    GPD_ERR("store: %s: cannot make it private: %s", path, strerror(errno));
    err = GPD_ESTORE;
  }
  close(fd);
  return err;
}

int gpd_store_db_private(const char *path, int create) {
  char side[4096 + 8];
  if (private_file(path, create) < 0)
    return GPD_ESTORE;
  snprintf(side, sizeof side, "%s-wal", path);
  if (private_file(side, 0) < 0)
    return GPD_ESTORE;
  snprintf(side, sizeof side, "%s-shm", path);
  return private_file(side, 0);
}

int gpd_store_db_open(const char *path, int create, sqlite3 **db) {
  /* NOFOLLOW: a database path that is a symbolic link is refused */
  int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW | (create ? SQLITE_OPEN_CREATE : 0);
  *db = NULL;
  if (sqlite3_open_v2(path, db, flags, NULL) != SQLITE_OK) {
    GPD_ERR("store: cannot open %s: %s", path, *db ? sqlite3_errmsg(*db) : "out of memory");
    sqlite3_close(*db);
    *db = NULL;
    return GPD_ESTORE;
  }
  sqlite3_busy_timeout(*db, GPD_STORE_BUSY_MS);
  /* a restarted log is cut back to GPD_STORE_WAL_KEEP at its first
   * commit, and wal_hook bounds it (the store's cap counts the file,
   * docs/STORE.md) */
  char sql[64];
  snprintf(sql, sizeof sql, "PRAGMA journal_size_limit=%lld;", (long long)GPD_STORE_WAL_KEEP);
  sqlite3_exec(*db, sql, NULL, NULL, NULL);
  sqlite3_wal_hook(*db, wal_hook, (void *)(uintptr_t)GPD_STORE_WAL_PASSIVE);
  return 0;
}

int gpd_store_db_open_read(const char *path, int busy_ms, sqlite3 **db) {
  *db = NULL;
  if (sqlite3_open_v2(path, db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOFOLLOW, NULL) != SQLITE_OK) {
    GPD_WARN("store: cannot open %s: %s", path, *db ? sqlite3_errmsg(*db) : "no memory");
    sqlite3_close(*db);
    *db = NULL;
    return GPD_ESTORE;
  }
  sqlite3_busy_timeout(*db, busy_ms);
  return 0;
}

void gpd_store_db_close(sqlite3 *db) {
  if (db)
    sqlite3_close(db);
}

int gpd_store_db_exec(sqlite3 *db, const char *sql) {
  char *msg = NULL;
  if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
    if (!db_quiet)
      GPD_ERR("store: %s: %s", sql, msg ? msg : sqlite3_errmsg(db));
    sqlite3_free(msg);
    return GPD_ESTORE;
  }
  return 0;
}

int gpd_store_db_begin(sqlite3 *db) { return gpd_store_db_exec(db, "BEGIN IMMEDIATE;"); }

int gpd_store_db_begin_read(sqlite3 *db) {
  return sqlite3_exec(db, "BEGIN;", NULL, NULL, NULL) == SQLITE_OK ? 0 : GPD_ESTORE;
}

int gpd_store_db_commit(sqlite3 *db) { return gpd_store_db_exec(db, "COMMIT;"); }

void gpd_store_db_rollback(sqlite3 *db) { sqlite3_exec(db, "ROLLBACK;", NULL, NULL, NULL); }

int gpd_store_db_run(sqlite3_stmt *st) {
  int rc = sqlite3_step(st);
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  if (rc != SQLITE_DONE) {
    if (!db_quiet)
      GPD_ERR("store: %s", sqlite3_errmsg(sqlite3_db_handle(st)));
    return GPD_ESTORE;
  }
  return 0;
}

int gpd_store_db_prepare(sqlite3 *db, const char *what, const char *const *sql, sqlite3_stmt **st, int n) {
  for (int i = 0; i < n; i++)
    if (sqlite3_prepare_v2(db, sql[i], -1, &st[i], NULL) != SQLITE_OK) {
      GPD_ERR("store: %s: prepare: %s", what, sqlite3_errmsg(db));
      return GPD_ESTORE;
    }
  return 0;
}

struct gpd_store_stmts_s *gpd_store_stmts_new(sqlite3 *db, const char *what, const char *const *sql, int n) {
  struct gpd_store_stmts_s *s = calloc(1, sizeof *s + (size_t)n * sizeof s->st[0]);
  if (s == NULL) {
    GPD_ERR("store: %s: out of memory", what);
    return NULL;
  }
  s->db = db;
  s->n = n;
  if (gpd_store_db_prepare(db, what, sql, s->st, n) < 0) {
    gpd_store_stmts_free(s);
    return NULL;
  }
  return s;
}

void gpd_store_stmts_free(struct gpd_store_stmts_s *s) {
  if (s == NULL)
    return;
  gpd_store_db_finalize(s->st, s->n);
  free(s);
}

void gpd_store_db_finalize(sqlite3_stmt **st, int n) {
  for (int i = 0; i < n; i++) {
    sqlite3_finalize(st[i]);
    st[i] = NULL;
  }
}

void gpd_store_db_text(sqlite3_stmt *st, int i, const char *s) {
  if (s)
    sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT);
  else
    sqlite3_bind_null(st, i);
}

int64_t gpd_store_db_int(sqlite3 *db, const char *sql, int64_t dflt) {
  sqlite3_stmt *q = NULL;
  int64_t v = dflt;
  if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) == SQLITE_OK && sqlite3_step(q) == SQLITE_ROW &&
      sqlite3_column_type(q, 0) != SQLITE_NULL)
    v = sqlite3_column_int64(q, 0);
  sqlite3_finalize(q);
  return v;
}

int64_t gpd_store_db_size(sqlite3 *db) {
  sqlite3_stmt *q = NULL;
  int64_t pc = 0, ps = 0, fl = 0;
  if (sqlite3_prepare_v2(db, "SELECT * FROM pragma_page_count, pragma_page_size, pragma_freelist_count", -1, &q,
                         NULL) == SQLITE_OK &&
      sqlite3_step(q) == SQLITE_ROW) {
    pc = sqlite3_column_int64(q, 0);
    ps = sqlite3_column_int64(q, 1);
    fl = sqlite3_column_int64(q, 2);
  }
  sqlite3_finalize(q);
  return (pc - fl) * ps;
}

int64_t gpd_store_db_free(sqlite3 *db) {
  return gpd_store_db_int(db, "SELECT freelist_count * page_size FROM pragma_freelist_count, pragma_page_size", 0);
}

int gpd_store_db_vacuum(sqlite3 *db, unsigned pages, int64_t *left) {
  char sql[64];
  snprintf(sql, sizeof sql, "PRAGMA incremental_vacuum(%u);", pages);
  *left = 0;
  if (gpd_store_db_exec(db, sql) < 0)
    return GPD_ESTORE;
  *left = gpd_store_db_int(db, "PRAGMA freelist_count", 0);
  return 0;
}

int gpd_store_db_autocheckpoint(sqlite3 *db, unsigned pages) {
  sqlite3_wal_hook(db, wal_hook, (void *)(uintptr_t)(pages ? pages : GPD_STORE_WAL_PASSIVE));
  return 0;
}

int64_t gpd_store_db_wal_size(sqlite3 *db) { return wal_bytes(db, "main"); }

int gpd_store_db_wal_truncate(sqlite3 *db) {
  if (wal_bytes(db, "main") <= GPD_STORE_WAL_KEEP)
    return 0;
  int rc = wal_truncate(db, "main", 0);
  if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED)
    return 1;
  if (rc != SQLITE_OK) {
    if (!db_quiet)
      GPD_ERR("store: wal_checkpoint(TRUNCATE): %s", sqlite3_errmsg(db));
    return GPD_ESTORE;
  }
  return 0;
}

/* store.c - the SQLite profile store: schema, open (format upgrade, private
 * files), profile-id reservation and the helpers the store's files share.
 *
 * The store's nouns, one file each:
 *   store.c       schema, open/close, profile ids (this file)
 *   checkpoint.c  the writer thread and the exactly-once protocol:
 *                 snapshot under the lock -> symbolize -> write -> COMMIT ->
 *                 release the rings to the committed cursors
 *   handback.c    reload of a stored profile (hand-back, restart restore)
 *   retention.c   deleting old profiles (by age, per-uid quota, size)
 *   gpubin.c      GPU-binary files
 * Two connections to one WAL database: the writer thread's (flushes,
 * retention) and the main thread's (hand-back reload, restore, and the
 * rare profile-id reservation when the writer fell behind).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "gpuprof/clock.h"
#include "gpuprof/error.h"
#include "gpuprof/log.h"
#include "gpuprof/metric.h"
#include "gpuprof/store-schema.h"

#include "daemon.h"
#include "store-internal.h"
#include "tracewin.h"

#define GPD_STR_(x) #x
#define GPD_STR(x) GPD_STR_(x)

static const char *SCHEMA = GPD_STORE_SCHEMA
    /* device monitoring series (devices-series.c, docs/FORMATS.md) */
    "CREATE TABLE IF NOT EXISTS device(id INTEGER PRIMARY KEY, api TEXT NOT NULL,"
    "  idx INTEGER NOT NULL, name TEXT, uuid TEXT NOT NULL, UNIQUE(api, uuid));"
    "CREATE TABLE IF NOT EXISTS device_sample(device INTEGER NOT NULL, t_ns INTEGER NOT NULL,"
    "  util_gpu REAL, util_mem REAL, mem_used INTEGER, mem_total INTEGER, power_w REAL,"
    "  temp_c REAL, clock_sm_mhz INTEGER, clock_mem_mhz INTEGER, pcie_tx_bps INTEGER,"
    "  pcie_rx_bps INTEGER, ecc_corrected INTEGER, ecc_uncorrected INTEGER, xid_events INTEGER,"
    "  nvlink_tx_bps INTEGER, nvlink_rx_bps INTEGER,"
    "  PRIMARY KEY(device, t_ns)) WITHOUT ROWID;"
    "CREATE INDEX IF NOT EXISTS device_sample_t ON device_sample(t_ns);"
    "CREATE TABLE IF NOT EXISTS device_proc(device INTEGER NOT NULL, t_ns INTEGER NOT NULL,"
    "  pid INTEGER NOT NULL, uid INTEGER, profile_id INTEGER, job_id TEXT, mem_used INTEGER,"
    "  sm_util REAL, mem_util REAL, PRIMARY KEY(device, t_ns, pid)) WITHOUT ROWID;"
    "CREATE INDEX IF NOT EXISTS device_proc_t ON device_proc(t_ns);"
    "CREATE TABLE IF NOT EXISTS cpu_counter(profile_id INTEGER NOT NULL, t_ns INTEGER NOT NULL,"
    "  event TEXT NOT NULL, value INTEGER NOT NULL, PRIMARY KEY(profile_id, event, t_ns))"
    "  WITHOUT ROWID;"
    "CREATE INDEX IF NOT EXISTS cpu_counter_t ON cpu_counter(t_ns);"
    /* GPU PC samples (daemon/pcsample.c, docs/FORMATS.md) */
    GPD_PCSAMPLE_SCHEMA
    /* traces (daemon/trace.c, docs/TRACE.md) and CPU-time samples
     * (daemon/cpusample.c): docs/FORMATS.md */
    GPD_TRACE_SCHEMA
    /* tracing windows (daemon/tracewin.c, docs/FORMATS.md) */
    GPD_TRACEWIN_SCHEMA;

/* Retention's indexes and bookkeeping (daemon/retention.c, docs/FORMATS.md
 * "Retention"): the orphan checks look up metric and cct_local by context,
 * context by (uid, parent); victims come by age and by uid; gpubin_ref
 * says which profiles (of which uid) sent a binary; profile_size caches a
 * profile's estimated bytes; retain_drop, retain_ctx and retain_bin are the
 * work lists that let a removal span many short transactions and survive
 * a restart.  Made after the format upgrades (one of them rebuilds
 * context). */
static const char *RETAIN_SCHEMA =
    "CREATE INDEX IF NOT EXISTS metric_context ON metric(context_id, profile_id);"
    "CREATE INDEX IF NOT EXISTS cct_local_context ON cct_local(context_id, profile_id);"
    "CREATE INDEX IF NOT EXISTS context_parent ON context(uid, parent);"
    "CREATE INDEX IF NOT EXISTS profile_end ON profile(end_ns);"
    "CREATE INDEX IF NOT EXISTS profile_uid_age ON profile(uid, COALESCE(end_ns, start_ns, 0), id);"
    "CREATE TABLE IF NOT EXISTS gpubin_ref(profile_id INTEGER NOT NULL, hash TEXT NOT NULL,"
    "  uid INTEGER NOT NULL, PRIMARY KEY(profile_id, hash)) WITHOUT ROWID;"
    "CREATE INDEX IF NOT EXISTS gpubin_ref_hash ON gpubin_ref(hash);"
    "CREATE INDEX IF NOT EXISTS gpubin_ref_uid ON gpubin_ref(uid, hash);"
    "CREATE TABLE IF NOT EXISTS profile_size(profile_id INTEGER PRIMARY KEY, uid INTEGER NOT NULL,"
    "  bytes INTEGER NOT NULL, final INTEGER NOT NULL, t_ns INTEGER NOT NULL);"
    "CREATE INDEX IF NOT EXISTS profile_size_uid ON profile_size(uid);"
    "CREATE TABLE IF NOT EXISTS retain_drop(profile_id INTEGER PRIMARY KEY, uid INTEGER NOT NULL);"
    "CREATE TABLE IF NOT EXISTS retain_ctx(uid INTEGER NOT NULL, id INTEGER NOT NULL,"
    "  PRIMARY KEY(uid, id)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS retain_bin(hash TEXT PRIMARY KEY) WITHOUT ROWID;";

/* Files from before the retention lists: each binary is referred to by
 * the profile that sent it first (the only one recorded); every binary
 * and every context is checked by the next retention passes (none
 * referred to: removed; older daemons left such rows behind). */
static const char *MIGRATE_RETAIN =
    "INSERT OR IGNORE INTO gpubin_ref SELECT g.profile_id, g.hash, p.uid FROM gpubin g"
    "  JOIN profile p ON p.id = g.profile_id;"
    "INSERT OR IGNORE INTO retain_bin SELECT hash FROM gpubin;"
    "INSERT OR IGNORE INTO retain_ctx SELECT uid, id FROM context WHERE parent != 0;";

_Thread_local int gpd__store_quiet;

int gpd__db_exec(sqlite3 *db, const char *sql) {
  char *msg = NULL;
  if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
    if (!gpd__store_quiet)
      GPD_ERR("store: %s: %s", sql, msg ? msg : sqlite3_errmsg(db));
    sqlite3_free(msg);
    return GPD_ESTORE;
  }
  return 0;
}

int gpd__db_run(sqlite3_stmt *st) {
  int rc = sqlite3_step(st);
  sqlite3_reset(st);
  return rc == SQLITE_DONE ? 0 : -EIO;
}

int gpd__db_prepare(sqlite3 *db, const char *const *sql, sqlite3_stmt **st, int n) {
  for (int i = 0; i < n; i++)
    if (sqlite3_prepare_v2(db, sql[i], -1, &st[i], NULL) != SQLITE_OK)
      return -EIO;
  return 0;
}

static int db_open(sqlite3 **db, const char *path) {
  /* NOFOLLOW: a database path that is a symbolic link is refused */
  if (sqlite3_open_v2(path, db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX |
                          SQLITE_OPEN_NOFOLLOW,
                      NULL) != SQLITE_OK) {
    GPD_ERR("store: cannot open %s: %s", path, *db ? sqlite3_errmsg(*db) : "out of memory");
    return GPD_ESTORE;
  }
  sqlite3_busy_timeout(*db, 10000);
  return 0;
}

int gpd_store_private_dir(const char *dir, int create, char *errmsg, size_t errlen) {
  int err = 0, fd = -1;
  struct stat st;
  if (create && mkdir(dir, 0700) < 0 && errno != EEXIST) {
    err = -errno;
    snprintf(errmsg, errlen, "%s: cannot create: %s", dir, strerror(-err));
    goto fail;
  }
  fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    err = -errno;
    snprintf(errmsg, errlen, "%s: %s", dir,
             err == -ELOOP || err == -ENOTDIR ? "is a symbolic link or not a directory"
                                              : strerror(-err));
    goto fail;
  }
  if (fstat(fd, &st) < 0) {
    err = -errno;
    snprintf(errmsg, errlen, "%s: %s", dir, strerror(-err));
    goto fail;
  }
  if (st.st_uid != geteuid()) {
    err = -EPERM;
    snprintf(errmsg, errlen, "%s is owned by uid %u, not by the daemon (uid %u)", dir,
             (unsigned)st.st_uid, (unsigned)geteuid());
    goto fail;
  }
  if (st.st_mode & (S_IWGRP | S_IWOTH)) {
    err = -EPERM;
    snprintf(errmsg, errlen, "%s is writable by group or others (mode %03o)", dir,
             (unsigned)(st.st_mode & 07777));
    goto fail;
  }
  if ((st.st_mode & 077) && fchmod(fd, st.st_mode & 07700) < 0) {
    err = -errno;
    snprintf(errmsg, errlen, "%s: cannot make it private: %s", dir, strerror(-err));
    goto fail;
  }
  return fd;
fail:
  if (fd >= 0)
    close(fd);
  return err;
}

/* The database file and its -wal/-shm: never a link, a hard link or
 * someone else's file; 0600 (created so, tightened if an older daemon
 * made them readable).  create: the database itself may be created. */
static int private_file(const char *path, int create) {
  int fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC | (create ? O_CREAT : 0), 0600);
  if (fd < 0) {
    if (!create && errno == ENOENT)
      return 0;
    GPD_ERR("store: %s: %s", path,
            errno == ELOOP ? "is a symbolic link; refused" : strerror(errno));
    return GPD_ESTORE;
  }
  struct stat st;
  int err = 0;
  if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || st.st_nlink != 1) {
    GPD_ERR("store: %s is not a regular file of the daemon's own (uid %u, %u links); refused",
            path, (unsigned)st.st_uid, (unsigned)st.st_nlink);
    err = GPD_ESTORE;
  } else if ((st.st_mode & 077) && fchmod(fd, 0600) < 0) {
    GPD_ERR("store: %s: cannot make it private: %s", path, strerror(errno));
    err = GPD_ESTORE;
  }
  close(fd);
  return err;
}

/* Old databases (user_version 1): context and frame were one table for
 * all users.  Each row is copied to every uid that owns a profile, so
 * what each user saw stays what it was, and from now on writes of one
 * uid never change another's rows. */
static const char *MIGRATE_1_2 =
    "CREATE TABLE context_v2(uid INTEGER NOT NULL, id INTEGER NOT NULL,"
    "  parent INTEGER NOT NULL, kind INTEGER NOT NULL, module TEXT, build_id TEXT,"
    "  offset INTEGER, label TEXT, raw_name TEXT, PRIMARY KEY(uid, id));"
    "INSERT INTO context_v2 SELECT u.uid, c.id, c.parent, c.kind, c.module, c.build_id,"
    "  c.offset, c.label, c.raw_name FROM context c, (SELECT DISTINCT uid FROM profile) u;"
    "DROP TABLE context; ALTER TABLE context_v2 RENAME TO context;"
    "CREATE TABLE frame_v2(uid INTEGER NOT NULL, context_id INTEGER NOT NULL,"
    "  depth INTEGER NOT NULL, function TEXT, file TEXT, line INTEGER, inlined INTEGER NOT NULL,"
    "  PRIMARY KEY(uid, context_id, depth));"
    "INSERT INTO frame_v2 SELECT u.uid, f.context_id, f.depth, f.function, f.file, f.line,"
    "  f.inlined FROM frame f, (SELECT DISTINCT uid FROM profile) u;"
    "DROP TABLE frame; ALTER TABLE frame_v2 RENAME TO frame;";

static int64_t db_int(sqlite3 *db, const char *sql, int64_t dflt) {
  sqlite3_stmt *q = NULL;
  int64_t v = dflt;
  if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) == SQLITE_OK && sqlite3_step(q) == SQLITE_ROW &&
      sqlite3_column_type(q, 0) != SQLITE_NULL)
    v = sqlite3_column_int64(q, 0);
  sqlite3_finalize(q);
  return v;
}

int gpd__store_id_hw(sqlite3 *db, uint64_t hw) {
  char *sql = sqlite3_mprintf(
      "INSERT INTO meta VALUES('next_profile_id','%llu') ON CONFLICT(key) DO UPDATE SET"
      " value=MAX(CAST(value AS INTEGER), CAST(excluded.value AS INTEGER));",
      (unsigned long long)hw);
  int e = sql ? gpd__db_exec(db, sql) : -ENOMEM;
  sqlite3_free(sql);
  return e;
}

int gpd_store_open(gpd_store_t **out, const char *path) {
  int err = GPD_ESTORE;
  gpd_store_t *s = calloc(1, sizeof *s);
  if (s == NULL)
    return -ENOMEM;
  s->bindir = -1;
  s->rbindir = -1;
  snprintf(s->path, sizeof s->path, "%s", path);
  snprintf(s->dir, sizeof s->dir, "%s", path);
  char *slash = strrchr(s->dir, '/');
  if (slash == NULL)
    snprintf(s->dir, sizeof s->dir, ".");
  else if (slash == s->dir)
    s->dir[1] = 0;
  else
    *slash = 0;
  {
    char side[PATH_MAX + 8];
    if (private_file(path, 1) < 0)
      goto fail;
    snprintf(side, sizeof side, "%s-wal", path);
    if (private_file(side, 0) < 0)
      goto fail;
    snprintf(side, sizeof side, "%s-shm", path);
    if (private_file(side, 0) < 0)
      goto fail;
  }
  if (db_open(&s->wdb, path) < 0)
    goto fail;
  /* auto_vacuum must precede the first table */
  if (gpd__db_exec(s->wdb, "PRAGMA auto_vacuum=INCREMENTAL; PRAGMA journal_mode=WAL;"
                      " PRAGMA synchronous=NORMAL;") < 0)
    goto fail;
  if (gpd__db_exec(s->wdb, "BEGIN IMMEDIATE;") < 0)
    goto fail;
  int64_t ver = db_int(s->wdb, "PRAGMA user_version", 0);
  if (ver > GPD_STORE_FORMAT) {
    GPD_ERR("store: %s has format version %lld, newer than this daemon's (%d); refused", path,
            (long long)ver, GPD_STORE_FORMAT);
    goto rollback;
  }
  if (gpd__db_exec(s->wdb, SCHEMA) < 0)
    goto rollback;
  if (db_int(s->wdb, "SELECT COUNT(*) FROM pragma_table_info('context') WHERE name='uid'", 0) ==
      0) {
    GPD_INFO("store: %s: upgrading contexts and frames to per-user rows (format 2)", path);
    if (gpd__db_exec(s->wdb, MIGRATE_1_2) < 0)
      goto rollback;
  }
  if (db_int(s->wdb, "SELECT COUNT(*) FROM pragma_table_info('profile') WHERE name='proc_start'",
             0) == 0 &&
      gpd__db_exec(s->wdb, "ALTER TABLE profile ADD COLUMN proc_start INTEGER;") < 0)
    goto rollback;
  /* device series written before NVLink was read */
  if (db_int(s->wdb,
             "SELECT COUNT(*) FROM pragma_table_info('device_sample') WHERE name='nvlink_tx_bps'",
             0) == 0 &&
      gpd__db_exec(s->wdb, "ALTER TABLE device_sample ADD COLUMN nvlink_tx_bps INTEGER;"
                           "ALTER TABLE device_sample ADD COLUMN nvlink_rx_bps INTEGER;") < 0)
    goto rollback;
  {
    int had_ref = db_int(s->wdb, "SELECT COUNT(*) FROM sqlite_master WHERE name='gpubin_ref'", 0) > 0;
    if (db_int(s->wdb, "SELECT COUNT(*) FROM sqlite_master WHERE name='metric_context'", 0) == 0)
      GPD_INFO("store: %s: adding the retention indexes (once; large files take a while)", path);
    if (gpd__db_exec(s->wdb, RETAIN_SCHEMA) < 0 ||
        (!had_ref && gpd__db_exec(s->wdb, MIGRATE_RETAIN) < 0))
      goto rollback;
  }
  if (gpd__db_exec(s->wdb, "PRAGMA user_version=" GPD_STR(GPD_STORE_FORMAT) ";") < 0)
    goto rollback;
  {
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    char *sql = sqlite3_mprintf(
        "INSERT OR REPLACE INTO meta VALUES('format_version','" GPD_STR(GPD_STORE_FORMAT) "');"
        "INSERT OR IGNORE INTO meta VALUES('format','gpuprof'),"
        "('host',%Q),('created_ns','%llu'),('clock','CLOCK_MONOTONIC_RAW');",
        host, (unsigned long long)gpd_clock_ns());
    int e = gpd__db_exec(s->wdb, sql);
    sqlite3_free(sql);
    if (e < 0)
      goto rollback;
    for (unsigned i = 0; i < GPD_M__COUNT; i++) {
      const gpd_metric_desc_t *md = gpd_metric_desc(i);
      if (md == NULL)
        continue;
      sql = sqlite3_mprintf("INSERT OR REPLACE INTO metric_desc VALUES(%u,%Q,%Q,%Q);", i,
                            md->name, gpd_metric_unit_name(md->unit), md->desc);
      e = gpd__db_exec(s->wdb, sql);
      sqlite3_free(sql);
      if (e < 0)
        goto rollback;
    }
  }
  /* profiles a dead daemon left running: their shims may hand them back */
  if (gpd__db_exec(s->wdb, "UPDATE profile SET state='lost' WHERE state='running';") < 0)
    goto rollback;
  /* Profile ids are never handed out twice, even ids a killed daemon gave
   * out and never committed: the first id is past both the stored
   * profiles and the reserved mark, and a block is reserved now. */
  {
    int64_t maxid = db_int(s->wdb, "SELECT MAX(id) FROM profile", 0);
    int64_t hw = db_int(s->wdb, "SELECT CAST(value AS INTEGER) FROM meta"
                                " WHERE key='next_profile_id'", 1);
    s->first_id = (uint64_t)(maxid + 1 > hw ? maxid + 1 : hw);
    if (s->first_id == 0)
      s->first_id = 1;
    s->id_hw = s->first_id + GPD_STORE_ID_BLOCK;
    if (gpd__store_id_hw(s->wdb, s->id_hw) < 0)
      goto rollback;
  }
  if (gpd__db_exec(s->wdb, "COMMIT;") < 0)
    goto fail;
  if (db_open(&s->rdb, path) < 0)
    goto fail;
  *out = s;
  return 0;
rollback:
  gpd__db_exec(s->wdb, "ROLLBACK;");
fail:
  gpd_store_close(s);
  return err;
}

void gpd_store_close(gpd_store_t *s) {
  if (s == NULL)
    return;
  while (s->gpubins) { /* only left if the last flush failed */
    gpubin_row_t *g = s->gpubins;
    s->gpubins = g->next;
    free(g);
  }
  if (s->bindir >= 0)
    close(s->bindir);
  if (s->rbindir >= 0)
    close(s->rbindir);
  free(s->uses);
  if (s->wdb)
    sqlite3_close(s->wdb);
  if (s->rdb)
    sqlite3_close(s->rdb);
  free(s);
}

int gpd_store_connect(gpd_store_t *s, sqlite3 **db) {
  *db = NULL;
  return db_open(db, s->path);
}

uint64_t gpd_store_first_profile_id(gpd_store_t *s) { return s->first_id; }

int gpd_store_take_profile_id(gpd_daemon_t *d, uint64_t *id) {
  gpd_store_t *s = d->store;
  pthread_mutex_lock(&d->reg_lock);
  if (s == NULL || d->next_profile_id < s->id_hw) {
    *id = d->next_profile_id++;
    /* under half a block left: the writer reserves the next one now, not
     * at its next interval (a lost wake-up costs one interval) */
    int low = s && s->id_hw - d->next_profile_id < GPD_STORE_ID_BLOCK / 2;
    pthread_mutex_unlock(&d->reg_lock);
    if (low) {
      __atomic_store_n(&d->flush_now, 1, __ATOMIC_RELAXED);
      pthread_cond_signal(&d->writer_cv);
    }
    return 0;
  }
  uint64_t hw = d->next_profile_id + GPD_STORE_ID_BLOCK;
  pthread_mutex_unlock(&d->reg_lock);
  /* The writer did not keep the reservation ahead (more than half a block
   * of registrations within one flush interval): reserve here, once per
   * block, on the main thread's own connection. */
  int err = gpd__db_exec(s->rdb, "BEGIN IMMEDIATE;");
  if (err == 0 && (err = gpd__store_id_hw(s->rdb, hw)) == 0)
    err = gpd__db_exec(s->rdb, "COMMIT;");
  if (err < 0) {
    gpd__db_exec(s->rdb, "ROLLBACK;");
    return err;
  }
  pthread_mutex_lock(&d->reg_lock);
  if (s->id_hw < hw)
    s->id_hw = hw;
  *id = d->next_profile_id++;
  pthread_mutex_unlock(&d->reg_lock);
  return 0;
}

char *gpd__xdup(const char *s) { return s ? strdup(s) : NULL; }

char *gpd__hex(const uint8_t *b, unsigned n) {
  if (n == 0)
    return NULL;
  char *h = malloc(2 * n + 1);
  if (h)
    for (unsigned i = 0; i < n; i++)
      sprintf(h + 2 * i, "%02x", b[i]);
  return h;
}

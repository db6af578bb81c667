/* store.c - the SQLite profile store (docs/FORMATS.md) and its writer.
 *
 * Two connections to one WAL database: the writer thread's (batched
 * flushes, retention) and the main thread's (hand-back reload, gpubin
 * rows).  A flush copies dirty data under the daemon lock (new modules,
 * strings, contexts and cct_local rows past each profile's watermarks,
 * the metrics of dirty nodes, the profile rows), then writes them in ONE
 * transaction outside the lock.  Metric rows hold a node's running total
 * (INSERT OR REPLACE), only non-zero values.  FRAME contexts are
 * symbolized (symbols.c) by the writer, outside the lock.
 *
 * Exactly once across a daemon crash: the snapshot also takes each ring's
 * monitor cursor and the process's unmatched correlation state (pending
 * NODE/INVOKE/ACTIVITY records); both are written in the same transaction
 * as the metrics (tables ring_cursor and pending), and only after COMMIT
 * returned are the rings' shared tails released to those cursors.  So the
 * tail never passes what is stored; a daemon killed after COMMIT but
 * before the release is covered by ring_cursor (gpd_store_load skips to
 * it).  A snapshot that could not be copied completely (out of memory) is
 * not written at all and the process is rewritten in full next time.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "gpuprof/clock.h"
#include "gpuprof/error.h"
#include "gpuprof/hash.h"
#include "gpuprof/log.h"
#include "gpuprof/metric.h"
#include "gpuprof.pb-c.h"

#include "daemon.h"

/* A stored GPU binary's row, waiting for the writer's next transaction
 * (the main thread never writes to SQLite: a busy writer would stall the
 * event loop and with it every shim's socket). */
typedef struct gpubin_row_s {
  struct gpubin_row_s *next;
  char hash[33], kind[32];
  uint64_t size;
  int64_t profile_id;
} gpubin_row_t;

struct gpd_store_s {
  sqlite3 *wdb; /* writer thread */
  sqlite3 *rdb; /* main thread: reads, and a profile-id reservation when
                   the writer fell behind (gpd_store_reserve_ids) */
  gpubin_row_t *gpubins; /* pending rows, under d->lock */
  char path[PATH_MAX];
  char dir[PATH_MAX];
  uint64_t flushes;
  int bindir;     /* gpubins/ (verified, O_PATH-free dirfd), -1 until needed */
  uint64_t id_hw; /* ids below this are reserved durably (meta), d->lock */
  uint64_t first_id; /* first id this daemon hands out */
  int failing;        /* the last flush failed (writer thread) */
  char why[160];      /* its reason, for the processes' error text */
};

#define GPD_STR_(x) #x
#define GPD_STR(x) GPD_STR_(x)
/* ids reserved per meta write; the writer tops up at half */
#define GPD_STORE_ID_BLOCK 1024u

static const char *SCHEMA =
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS metric_desc(id INTEGER PRIMARY KEY, name TEXT NOT NULL,"
    "  unit TEXT NOT NULL, description TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS profile(id INTEGER PRIMARY KEY,"
    "  pid INTEGER NOT NULL, ppid INTEGER, uid INTEGER NOT NULL, gid INTEGER NOT NULL,"
    "  exe TEXT, argv TEXT, hostname TEXT, job_id TEXT, step_id TEXT, rank INTEGER,"
    "  local_rank INTEGER, start_ns INTEGER, end_ns INTEGER, state TEXT NOT NULL,"
    "  records INTEGER NOT NULL DEFAULT 0, drops INTEGER NOT NULL DEFAULT 0, error TEXT,"
    "  proc_start INTEGER);"
    "CREATE TABLE IF NOT EXISTS backend(profile_id INTEGER NOT NULL, api TEXT NOT NULL,"
    "  enabled INTEGER NOT NULL, code INTEGER, reason TEXT, PRIMARY KEY(profile_id, api));"
    "CREATE TABLE IF NOT EXISTS module(profile_id INTEGER NOT NULL, id INTEGER NOT NULL,"
    "  path TEXT NOT NULL, build_id TEXT, base INTEGER, size INTEGER,"
    "  PRIMARY KEY(profile_id, id));"
    "CREATE TABLE IF NOT EXISTS string(profile_id INTEGER NOT NULL, id INTEGER NOT NULL,"
    "  kind INTEGER NOT NULL, text TEXT NOT NULL, PRIMARY KEY(profile_id, id));"
    "CREATE TABLE IF NOT EXISTS context(uid INTEGER NOT NULL, id INTEGER NOT NULL,"
    "  parent INTEGER NOT NULL, kind INTEGER NOT NULL, module TEXT, build_id TEXT,"
    "  offset INTEGER, label TEXT, raw_name TEXT, PRIMARY KEY(uid, id));"
    "CREATE TABLE IF NOT EXISTS frame(uid INTEGER NOT NULL, context_id INTEGER NOT NULL,"
    "  depth INTEGER NOT NULL, function TEXT, file TEXT, line INTEGER, inlined INTEGER NOT NULL,"
    "  PRIMARY KEY(uid, context_id, depth));"
    "CREATE TABLE IF NOT EXISTS cct_local(profile_id INTEGER NOT NULL,"
    "  local_id INTEGER NOT NULL, context_id INTEGER NOT NULL,"
    "  PRIMARY KEY(profile_id, local_id)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS metric(profile_id INTEGER NOT NULL,"
    "  context_id INTEGER NOT NULL, metric_id INTEGER NOT NULL, value REAL NOT NULL,"
    "  PRIMARY KEY(profile_id, context_id, metric_id)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS gpubin(hash TEXT PRIMARY KEY, kind TEXT NOT NULL,"
    "  size INTEGER NOT NULL, path TEXT NOT NULL, profile_id INTEGER);"
    "CREATE TABLE IF NOT EXISTS pending(profile_id INTEGER NOT NULL, seq INTEGER NOT NULL,"
    "  rec BLOB NOT NULL, PRIMARY KEY(profile_id, seq)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS ring_cursor(profile_id INTEGER NOT NULL,"
    "  ring INTEGER NOT NULL, pos INTEGER NOT NULL, PRIMARY KEY(profile_id, ring)) WITHOUT ROWID;";

/* Set on the writer thread while the database refuses writes (disk full):
 * the state change is logged once, not every statement of every flush. */
static _Thread_local int store_quiet;

static int db_exec(sqlite3 *db, const char *sql) {
  char *msg = NULL;
  if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
    if (!store_quiet)
      GPD_ERR("store: %s: %s", sql, msg ? msg : sqlite3_errmsg(db));
    sqlite3_free(msg);
    return GPD_ESTORE;
  }
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

static const char *unit_name(gpd_unit_t u) {
  switch (u) {
  case GPD_UNIT_NS: return "ns";
  case GPD_UNIT_BYTES: return "bytes";
  case GPD_UNIT_COUNT: return "count";
  default: return "mean";
  }
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

/* Raise the durable profile-id high-water mark to at least hw (inside the
 * caller's transaction). */
static int store_id_hw(sqlite3 *db, uint64_t hw) {
  char *sql = sqlite3_mprintf(
      "INSERT INTO meta VALUES('next_profile_id','%llu') ON CONFLICT(key) DO UPDATE SET"
      " value=MAX(CAST(value AS INTEGER), CAST(excluded.value AS INTEGER));",
      (unsigned long long)hw);
  int e = sql ? db_exec(db, sql) : -ENOMEM;
  sqlite3_free(sql);
  return e;
}

int gpd_store_open(gpd_store_t **out, const char *path) {
  int err = GPD_ESTORE;
  gpd_store_t *s = calloc(1, sizeof *s);
  if (s == NULL)
    return -ENOMEM;
  s->bindir = -1;
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
  if (db_exec(s->wdb, "PRAGMA auto_vacuum=INCREMENTAL; PRAGMA journal_mode=WAL;"
                      " PRAGMA synchronous=NORMAL;") < 0)
    goto fail;
  if (db_exec(s->wdb, "BEGIN IMMEDIATE;") < 0)
    goto fail;
  int64_t ver = db_int(s->wdb, "PRAGMA user_version", 0);
  if (ver > GPD_STORE_FORMAT) {
    GPD_ERR("store: %s has format version %lld, newer than this daemon's (%d); refused", path,
            (long long)ver, GPD_STORE_FORMAT);
    goto rollback;
  }
  if (db_exec(s->wdb, SCHEMA) < 0)
    goto rollback;
  if (db_int(s->wdb, "SELECT COUNT(*) FROM pragma_table_info('context') WHERE name='uid'", 0) ==
      0) {
    GPD_INFO("store: %s: upgrading contexts and frames to per-user rows (format 2)", path);
    if (db_exec(s->wdb, MIGRATE_1_2) < 0)
      goto rollback;
  }
  if (db_int(s->wdb, "SELECT COUNT(*) FROM pragma_table_info('profile') WHERE name='proc_start'",
             0) == 0 &&
      db_exec(s->wdb, "ALTER TABLE profile ADD COLUMN proc_start INTEGER;") < 0)
    goto rollback;
  if (db_exec(s->wdb, "PRAGMA user_version=" GPD_STR(GPD_STORE_FORMAT) ";") < 0)
    goto rollback;
  {
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    char *sql = sqlite3_mprintf(
        "INSERT OR IGNORE INTO meta VALUES('format','gpuprof'),('format_version','1'),"
        "('host',%Q),('created_ns','%llu'),('clock','CLOCK_MONOTONIC_RAW');",
        host, (unsigned long long)gpd_clock_ns());
    int e = db_exec(s->wdb, sql);
    sqlite3_free(sql);
    if (e < 0)
      goto rollback;
    for (unsigned i = 0; i < GPD_M__COUNT; i++) {
      const gpd_metric_desc_t *md = gpd_metric_desc(i);
      if (md == NULL)
        continue;
      sql = sqlite3_mprintf("INSERT OR REPLACE INTO metric_desc VALUES(%u,%Q,%Q,%Q);", i,
                            md->name, unit_name(md->unit), md->desc);
      e = db_exec(s->wdb, sql);
      sqlite3_free(sql);
      if (e < 0)
        goto rollback;
    }
  }
  /* profiles a dead daemon left running: their shims may hand them back */
  if (db_exec(s->wdb, "UPDATE profile SET state='lost' WHERE state='running';") < 0)
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
    if (store_id_hw(s->wdb, s->id_hw) < 0)
      goto rollback;
  }
  if (db_exec(s->wdb, "COMMIT;") < 0)
    goto fail;
  if (db_open(&s->rdb, path) < 0)
    goto fail;
  *out = s;
  return 0;
rollback:
  db_exec(s->wdb, "ROLLBACK;");
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
  if (s->wdb)
    sqlite3_close(s->wdb);
  if (s->rdb)
    sqlite3_close(s->rdb);
  free(s);
}

uint64_t gpd_store_first_profile_id(gpd_store_t *s) { return s->first_id; }

int gpd_store_take_profile_id(gpd_daemon_t *d, uint64_t *id) {
  gpd_store_t *s = d->store;
  pthread_mutex_lock(&d->lock);
  if (s == NULL || d->next_profile_id < s->id_hw) {
    *id = d->next_profile_id++;
    pthread_mutex_unlock(&d->lock);
    return 0;
  }
  uint64_t hw = d->next_profile_id + GPD_STORE_ID_BLOCK;
  pthread_mutex_unlock(&d->lock);
  /* The writer did not keep the reservation ahead (more than half a block
   * of registrations within one flush interval): reserve here, once per
   * block, on the main thread's own connection. */
  int err = db_exec(s->rdb, "BEGIN IMMEDIATE;");
  if (err == 0 && (err = store_id_hw(s->rdb, hw)) == 0)
    err = db_exec(s->rdb, "COMMIT;");
  if (err < 0) {
    db_exec(s->rdb, "ROLLBACK;");
    return err;
  }
  pthread_mutex_lock(&d->lock);
  if (s->id_hw < hw)
    s->id_hw = hw;
  *id = d->next_profile_id++;
  pthread_mutex_unlock(&d->lock);
  return 0;
}

/* ----------------------------------------------------------- snapshot */

typedef struct snap_ctx_s {
  uint64_t id, parent;
  int kind;
  char *module, *build_id, *label, *raw;
  uint64_t offset;
  const gpd_sframe_t *fr; /* FRAME: source frames (symbols.c cache), before BEGIN */
  unsigned nfr;
} snap_ctx_t;

typedef struct snap_met_s {
  uint64_t ctx;
  gpd_mval_t *m;
  uint32_t n;
} snap_met_t;

typedef struct snap_proc_s {
  gpd_proc_t *proc; /* identity only: compared, never dereferenced unlocked */
  uint64_t id;
  int64_t pid, ppid, uid, gid, rank, local_rank;
  char *exe, *argv, *hostname, *job, *step, *error;
  uint64_t start_ns, end_ns, records, drops, proc_start;
  const char *state;
  int exited;
  struct { const char *api; int enabled, code; char *reason; } be[GPD_API_MAX];
  int nbe;
  gpd_pmodule_t *mods;
  uint32_t nmods;
  gpd_pstring_t *strs;
  uint32_t nstrs;
  snap_ctx_t *ctxs;
  uint32_t nctxs;
  gpd_plocal_t *locals;
  uint32_t nlocals;
  snap_met_t *mets;
  uint32_t nmets;
  int incomplete;        /* an allocation failed: write nothing, redo all */
  uint64_t *cursor;      /* all rings' monitor cursors (ncursor), or NULL */
  uint64_t *cursor_prev; /* the committed ones at snapshot time */
  uint32_t ncursor;
  int pend_write;        /* replace the pending rows */
  gpd_prec_t *pend;
  uint32_t npend;
} snap_proc_t;

static char *xdup(const char *s) { return s ? strdup(s) : NULL; }

static char *hex(const uint8_t *b, unsigned n) {
  if (n == 0)
    return NULL;
  char *h = malloc(2 * n + 1);
  if (h)
    for (unsigned i = 0; i < n; i++)
      sprintf(h + 2 * i, "%02x", b[i]);
  return h;
}

static void snap_proc_free(snap_proc_t *s) {
  free(s->exe); free(s->argv); free(s->hostname); free(s->job); free(s->step); free(s->error);
  for (int i = 0; i < s->nbe; i++)
    free(s->be[i].reason);
  for (uint32_t i = 0; i < s->nmods; i++)
    free(s->mods[i].path);
  free(s->mods);
  for (uint32_t i = 0; i < s->nstrs; i++)
    free(s->strs[i].text);
  free(s->strs);
  for (uint32_t i = 0; i < s->nctxs; i++) {
    free(s->ctxs[i].module); free(s->ctxs[i].build_id);
    free(s->ctxs[i].label); free(s->ctxs[i].raw);
  }
  free(s->ctxs);
  free(s->locals);
  for (uint32_t i = 0; i < s->nmets; i++)
    free(s->mets[i].m);
  free(s->mets);
  free(s->cursor);
  free(s->cursor_prev);
  free(s->pend);
}

/* After a failed or skipped write: everything of p is written next time. */
static void proc_rewrite_all(gpd_proc_t *p) {
  p->prof.nmods_saved = p->prof.nstrs_saved = p->prof.nlocals_saved = 0;
  for (uint32_t k = 0; k < p->prof.nnodes; k++) {
    p->prof.nodes[k].saved = 0;
    p->prof.nodes[k].dirty = 1;
  }
  p->prof.pend_gen++;
  p->meta_dirty = 1;
}

/* Copy what is new in p (lock held). */
static void snap_copy(gpd_daemon_t *d, gpd_proc_t *p, snap_proc_t *s) {
  gpd_profile_t *pr = &p->prof;
  memset(s, 0, sizeof *s);
  s->proc = p;
  s->id = p->profile_id;
  s->pid = p->pid; s->ppid = p->ppid; s->uid = p->uid; s->gid = p->gid;
  s->rank = p->rank; s->local_rank = p->local_rank;
  s->exe = xdup(p->exe); s->argv = xdup(p->argv_json); s->hostname = xdup(p->hostname);
  s->job = xdup(p->job_id); s->step = xdup(p->step_id);
  s->error = p->error[0] && !p->store_error ? strdup(p->error) : NULL; /* not our own retry note */
  s->start_ns = p->start_ns;
  s->proc_start = p->proc_start;
  s->end_ns = p->end_ns;
  s->records = pr->records;
  s->drops = p->drops;
  s->exited = p->state == GPD_PROC_EXITED;
  s->state = s->exited ? "exited" : (d->writer_stop ? "lost" : "running");
  for (unsigned a = 1; a < GPD_API_MAX; a++) {
    if (!pr->backends[a].seen)
      continue;
    s->be[s->nbe].api = gpd_api_name(a);
    s->be[s->nbe].enabled = pr->backends[a].enabled;
    s->be[s->nbe].code = pr->backends[a].code;
    s->be[s->nbe].reason = xdup(gpd_profile_string(pr, pr->backends[a].reason));
    s->nbe++;
  }
  if (pr->nmods > pr->nmods_saved) {
    uint32_t n = pr->nmods - pr->nmods_saved;
    s->mods = calloc(n, sizeof *s->mods);
    if (s->mods == NULL)
      s->incomplete = 1;
    for (uint32_t i = 0; s->mods && i < n; i++) {
      s->mods[i] = pr->mods[pr->nmods_saved + i];
      s->mods[i].path = strdup(s->mods[i].path);
      s->nmods++;
      if (s->mods[i].path == NULL)
        s->incomplete = 1;
    }
    pr->nmods_saved = pr->nmods;
  }
  if (pr->nstrs > pr->nstrs_saved) {
    uint32_t n = pr->nstrs - pr->nstrs_saved;
    s->strs = calloc(n, sizeof *s->strs);
    if (s->strs == NULL)
      s->incomplete = 1;
    for (uint32_t i = 0; s->strs && i < n; i++) {
      s->strs[i] = pr->strs[pr->nstrs_saved + i];
      s->strs[i].text = strdup(s->strs[i].text);
      s->nstrs++;
      if (s->strs[i].text == NULL)
        s->incomplete = 1;
    }
    pr->nstrs_saved = pr->nstrs;
  }
  uint32_t nnew = 0, ndirty = 0;
  for (uint32_t i = 0; i < pr->nnodes; i++) {
    nnew += !pr->nodes[i].saved;
    ndirty += pr->nodes[i].dirty;
  }
  if (nnew && (s->ctxs = calloc(nnew, sizeof *s->ctxs)) == NULL)
    s->incomplete = 1;
  if (ndirty && (s->mets = calloc(ndirty, sizeof *s->mets)) == NULL)
    s->incomplete = 1;
  for (uint32_t i = 0; i < pr->nnodes; i++) {
    gpd_node_t *n = &pr->nodes[i];
    if (!n->saved && s->ctxs) {
      snap_ctx_t *c = &s->ctxs[s->nctxs++];
      c->id = n->id;
      c->parent = n->parent_id;
      c->kind = n->kind;
      c->offset = n->offset;
      c->label = xdup(n->label);
      c->raw = xdup(n->raw_name);
      if (n->kind == GPD_NODE_FRAME) {
        const gpd_pmodule_t *m = gpd_profile_module(pr, n->module);
        if (m) {
          c->module = strdup(m->path);
          c->build_id = hex(m->build_id, m->build_id_len);
        }
      }
      n->saved = 1;
    }
    if (n->dirty && s->mets) {
      snap_met_t *m = &s->mets[s->nmets];
      m->ctx = n->id;
      m->m = malloc((n->nm ? n->nm : 1) * sizeof *m->m);
      if (m->m) {
        if (n->nm)
          memcpy(m->m, n->m, n->nm * sizeof *m->m);
        m->n = n->nm;
        s->nmets++;
      } else {
        s->incomplete = 1;
      }
      n->dirty = 0;
    }
  }
  if (pr->nlocals > pr->nlocals_saved) {
    uint32_t n = pr->nlocals - pr->nlocals_saved;
    s->locals = malloc(n * sizeof *s->locals);
    if (s->locals) {
      memcpy(s->locals, pr->locals + pr->nlocals_saved, n * sizeof *s->locals);
      s->nlocals = n;
    } else {
      s->incomplete = 1;
    }
    pr->nlocals_saved = pr->nlocals;
  }
  /* the consumer position and the unmatched state that go with it */
  if (p->has_region && p->cursor) {
    uint32_t n = p->region.nrings;
    s->cursor = malloc(n * sizeof *s->cursor);
    s->cursor_prev = malloc(n * sizeof *s->cursor_prev);
    if (s->cursor && s->cursor_prev) {
      memcpy(s->cursor, p->cursor, n * sizeof *s->cursor);
      memcpy(s->cursor_prev, p->cursor_saved, n * sizeof *s->cursor_prev);
      s->ncursor = n;
    } else {
      s->incomplete = 1;
    }
  }
  if (pr->pend_gen != pr->pend_gen_saved || s->exited) {
    s->pend_write = 1;
    /* a finished profile has resolved or forced everything: no rows */
    if (!s->exited && gpd_profile_pending_export(pr, &s->pend, &s->npend) < 0)
      s->incomplete = 1;
    pr->pend_gen_saved = pr->pend_gen;
  }
  p->meta_dirty = 0;
}

/* ------------------------------------------------------------- write */

enum { ST_PROFILE, ST_BACKEND, ST_MODULE, ST_STRING, ST_CONTEXT, ST_FRAME, ST_LOCAL, ST_METRIC,
       ST_PEND_DEL, ST_PEND, ST_CURSOR, ST__N };
static const char *ST_SQL[ST__N] = {
    "INSERT INTO profile(id,pid,ppid,uid,gid,exe,argv,hostname,job_id,step_id,rank,local_rank,"
    "start_ns,end_ns,state,records,drops,error,proc_start) VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,"
    "?10,?11,?12,?13,?14,?15,?16,?17,?18,?19) ON CONFLICT(id) DO UPDATE SET pid=?2,ppid=?3,"
    "uid=?4,gid=?5,exe=?6,argv=?7,hostname=?8,job_id=?9,step_id=?10,rank=?11,local_rank=?12,"
    "start_ns=?13,end_ns=?14,state=?15,records=?16,drops=?17,error=?18,proc_start=?19",
    "INSERT OR REPLACE INTO backend VALUES(?1,?2,?3,?4,?5)",
    "INSERT OR REPLACE INTO module VALUES(?1,?2,?3,?4,?5,?6)",
    "INSERT OR REPLACE INTO string VALUES(?1,?2,?3,?4)",
    "INSERT OR IGNORE INTO context(uid,id,parent,kind,module,build_id,offset,label,raw_name)"
    " VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9)",
    "INSERT OR IGNORE INTO frame(uid,context_id,depth,function,file,line,inlined)"
    " VALUES(?1,?2,?3,?4,?5,?6,?7)",
    "INSERT OR REPLACE INTO cct_local VALUES(?1,?2,?3)",
    "INSERT OR REPLACE INTO metric VALUES(?1,?2,?3,?4)",
    "DELETE FROM pending WHERE profile_id=?1",
    "INSERT INTO pending VALUES(?1,?2,?3)",
    "INSERT OR REPLACE INTO ring_cursor VALUES(?1,?2,?3)",
};

static int step(sqlite3 *db, sqlite3_stmt *st) {
  int rc = sqlite3_step(st);
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  if (rc != SQLITE_DONE) {
    if (!store_quiet)
      GPD_ERR("store: %s", sqlite3_errmsg(db));
    return GPD_ESTORE;
  }
  return 0;
}

static void bind_text(sqlite3_stmt *st, int i, const char *s) {
  if (s)
    sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT);
  else
    sqlite3_bind_null(st, i);
}

static int write_proc(gpd_store_t *s, sqlite3_stmt **st, snap_proc_t *p) {
  sqlite3 *db = s->wdb;
  int e = 0;
  sqlite3_stmt *q = st[ST_PROFILE];
  sqlite3_bind_int64(q, 1, (int64_t)p->id);
  sqlite3_bind_int64(q, 2, p->pid);
  sqlite3_bind_int64(q, 3, p->ppid);
  sqlite3_bind_int64(q, 4, p->uid);
  sqlite3_bind_int64(q, 5, p->gid);
  bind_text(q, 6, p->exe);
  bind_text(q, 7, p->argv);
  bind_text(q, 8, p->hostname);
  bind_text(q, 9, p->job);
  bind_text(q, 10, p->step);
  sqlite3_bind_int64(q, 11, p->rank);
  sqlite3_bind_int64(q, 12, p->local_rank);
  sqlite3_bind_int64(q, 13, (int64_t)p->start_ns);
  if (p->exited)
    sqlite3_bind_int64(q, 14, (int64_t)p->end_ns);
  else
    sqlite3_bind_null(q, 14);
  bind_text(q, 15, p->state);
  sqlite3_bind_int64(q, 16, (int64_t)p->records);
  sqlite3_bind_int64(q, 17, (int64_t)p->drops);
  bind_text(q, 18, p->error);
  sqlite3_bind_int64(q, 19, (int64_t)p->proc_start);
  if ((e = step(db, q)) < 0)
    return e;
  for (int i = 0; i < p->nbe; i++) {
    q = st[ST_BACKEND];
    sqlite3_bind_int64(q, 1, (int64_t)p->id);
    bind_text(q, 2, p->be[i].api);
    sqlite3_bind_int(q, 3, p->be[i].enabled);
    sqlite3_bind_int(q, 4, p->be[i].code);
    bind_text(q, 5, p->be[i].reason);
    if ((e = step(db, q)) < 0)
      return e;
  }
  for (uint32_t i = 0; i < p->nmods; i++) {
    q = st[ST_MODULE];
    char *bid = hex(p->mods[i].build_id, p->mods[i].build_id_len);
    sqlite3_bind_int64(q, 1, (int64_t)p->id);
    sqlite3_bind_int64(q, 2, p->mods[i].id);
    bind_text(q, 3, p->mods[i].path);
    bind_text(q, 4, bid);
    sqlite3_bind_int64(q, 5, (int64_t)p->mods[i].base);
    sqlite3_bind_int64(q, 6, (int64_t)p->mods[i].size);
    free(bid);
    if ((e = step(db, q)) < 0)
      return e;
  }
  for (uint32_t i = 0; i < p->nstrs; i++) {
    q = st[ST_STRING];
    sqlite3_bind_int64(q, 1, (int64_t)p->id);
    sqlite3_bind_int64(q, 2, p->strs[i].id);
    sqlite3_bind_int64(q, 3, p->strs[i].kind);
    bind_text(q, 4, p->strs[i].text);
    if ((e = step(db, q)) < 0)
      return e;
  }
  for (uint32_t i = 0; i < p->nctxs; i++) {
    snap_ctx_t *c = &p->ctxs[i];
    const gpd_sframe_t *fr = c->fr;
    unsigned nfr = c->nfr;
    char buf[64];
    const char *label = c->label;
    if (c->kind == GPD_NODE_FRAME) {
      if (nfr > 0)
        label = fr[nfr - 1].function; /* innermost: where the call is */
      else {
        snprintf(buf, sizeof buf, "0x%" PRIx64, c->offset);
        label = buf;
      }
    } else if (c->kind == GPD_NODE_ROOT) {
      label = "<root>";
    }
    /* rows of this profile's owner only: another user's announcement of
     * the same module key never changes them (PRIMARY KEY(uid, id)) */
    q = st[ST_CONTEXT];
    sqlite3_bind_int64(q, 1, p->uid);
    sqlite3_bind_int64(q, 2, (int64_t)c->id);
    sqlite3_bind_int64(q, 3, (int64_t)c->parent);
    sqlite3_bind_int(q, 4, c->kind);
    bind_text(q, 5, c->module);
    bind_text(q, 6, c->build_id);
    sqlite3_bind_int64(q, 7, (int64_t)c->offset);
    bind_text(q, 8, label);
    bind_text(q, 9, c->raw);
    if ((e = step(db, q)) < 0)
      return e;
    for (unsigned k = 0; k < nfr; k++) {
      q = st[ST_FRAME];
      sqlite3_bind_int64(q, 1, p->uid);
      sqlite3_bind_int64(q, 2, (int64_t)c->id);
      sqlite3_bind_int(q, 3, (int)k);
      bind_text(q, 4, fr[k].function);
      bind_text(q, 5, fr[k].file);
      sqlite3_bind_int(q, 6, (int)fr[k].line);
      sqlite3_bind_int(q, 7, fr[k].inlined);
      if ((e = step(db, q)) < 0)
        return e;
    }
  }
  for (uint32_t i = 0; i < p->nlocals; i++) {
    q = st[ST_LOCAL];
    sqlite3_bind_int64(q, 1, (int64_t)p->id);
    sqlite3_bind_int64(q, 2, p->locals[i].local);
    sqlite3_bind_int64(q, 3, (int64_t)p->locals[i].ctx);
    if ((e = step(db, q)) < 0)
      return e;
  }
  for (uint32_t i = 0; i < p->nmets; i++) {
    for (uint32_t k = 0; k < p->mets[i].n; k++) {
      if (p->mets[i].m[k].v == 0)
        continue; /* sparse: only non-zero */
      q = st[ST_METRIC];
      sqlite3_bind_int64(q, 1, (int64_t)p->id);
      sqlite3_bind_int64(q, 2, (int64_t)p->mets[i].ctx);
      sqlite3_bind_int64(q, 3, p->mets[i].m[k].id);
      sqlite3_bind_double(q, 4, p->mets[i].m[k].v);
      if ((e = step(db, q)) < 0)
        return e;
    }
  }
  if (p->pend_write) {
    q = st[ST_PEND_DEL];
    sqlite3_bind_int64(q, 1, (int64_t)p->id);
    if ((e = step(db, q)) < 0)
      return e;
    for (uint32_t i = 0; i < p->npend; i++) {
      q = st[ST_PEND];
      sqlite3_bind_int64(q, 1, (int64_t)p->id);
      sqlite3_bind_int64(q, 2, i);
      sqlite3_bind_blob(q, 3, p->pend[i].b, (int)p->pend[i].len, SQLITE_STATIC);
      if ((e = step(db, q)) < 0)
        return e;
    }
  }
  /* Kept after the process exited too: a daemon killed between this
   * COMMIT and the release must still skip what is stored here when the
   * process hands its region back (deleted with the profile). */
  for (uint32_t i = 0; i < p->ncursor; i++) {
    if (p->cursor[i] == p->cursor_prev[i])
      continue;
    q = st[ST_CURSOR];
    sqlite3_bind_int64(q, 1, (int64_t)p->id);
    sqlite3_bind_int64(q, 2, i);
    sqlite3_bind_int64(q, 3, (int64_t)p->cursor[i]);
    if ((e = step(db, q)) < 0)
      return e;
  }
  return 0;
}

int gpd_store_flush(gpd_daemon_t *d) {
  gpd_store_t *s = d->store;
  if (s == NULL)
    return 0;
  snap_proc_t *snaps = NULL;
  uint32_t n = 0;
  int err = 0;
  pthread_mutex_lock(&d->lock);
  if (d->nprocs)
    snaps = calloc(d->nprocs, sizeof *snaps);
  for (gpd_proc_t *p = d->procs; p && snaps && n < d->nprocs; p = p->next) {
    if ((p->state == GPD_PROC_EXITED || p->state == GPD_PROC_LOST) && p->flushed)
      continue; /* written already, or restored from the store unchanged */
    snap_copy(d, p, &snaps[n++]);
  }
  gpubin_row_t *gbrows = s->gpubins;
  s->gpubins = NULL;
  /* keep a reserved block of profile ids ahead of the registry */
  uint64_t id_hw = 0;
  if (s->id_hw - d->next_profile_id < GPD_STORE_ID_BLOCK / 2)
    id_hw = d->next_profile_id + GPD_STORE_ID_BLOCK;
  pthread_mutex_unlock(&d->lock);
  if (n == 0 && gbrows == NULL && id_hw == 0)
    goto out;
  /* Symbolize before BEGIN: the resolver opens client-named module files
   * (with the owner's rights) and may be slow; the write transaction must
   * not wait on it. */
  for (uint32_t i = 0; i < n; i++)
    for (uint32_t k = 0; !snaps[i].incomplete && k < snaps[i].nctxs; k++) {
      snap_ctx_t *c = &snaps[i].ctxs[k];
      if (c->kind == GPD_NODE_FRAME && c->module)
        gpd_symbols_resolve(c->module, (uid_t)snaps[i].uid, (gid_t)snaps[i].gid, c->offset, &c->fr,
                            &c->nfr);
    }

  store_quiet = s->failing;
  char why[128] = "";
  sqlite3_stmt *st[ST__N] = {0};
  for (int i = 0; i < ST__N; i++) {
    if (sqlite3_prepare_v2(s->wdb, ST_SQL[i], -1, &st[i], NULL) != SQLITE_OK) {
      GPD_ERR("store: prepare: %s", sqlite3_errmsg(s->wdb));
      err = GPD_ESTORE;
      goto fin;
    }
  }
  if ((err = db_exec(s->wdb, "BEGIN IMMEDIATE;")) < 0)
    goto fin;
  for (uint32_t i = 0; i < n && err == 0; i++)
    if (!snaps[i].incomplete)
      err = write_proc(s, st, &snaps[i]);
  for (gpubin_row_t *g = gbrows; g && err == 0; g = g->next) {
    char rel[64];
    snprintf(rel, sizeof rel, "gpubins/%s.gpubin", g->hash);
    char *sql = sqlite3_mprintf("INSERT OR IGNORE INTO gpubin VALUES(%Q,%Q,%llu,%Q,%lld);", g->hash, g->kind,
                                (unsigned long long)g->size, rel, (long long)g->profile_id);
    err = sql ? db_exec(s->wdb, sql) : -ENOMEM;
    sqlite3_free(sql);
  }
  if (err == 0 && id_hw)
    err = store_id_hw(s->wdb, id_hw);
  if (err == 0)
    err = db_exec(s->wdb, "COMMIT;");
  if (err < 0) {
    snprintf(why, sizeof why, "%s", sqlite3_errmsg(s->wdb));
    store_quiet = 1; /* SQLite may have rolled back already */
    db_exec(s->wdb, "ROLLBACK;");
  }
fin:
  for (int i = 0; i < ST__N; i++)
    sqlite3_finalize(st[i]);
  store_quiet = 0;
  /* one log line when writes start failing and one when they resume */
  if (err < 0 && !s->failing) {
    if (why[0] == 0)
      snprintf(why, sizeof why, "%s", sqlite3_errmsg(s->wdb));
    snprintf(s->why, sizeof s->why, "not stored yet: %s; kept in memory, retried", why);
    GPD_ERR("store: writes to %s fail (%s); profiles are kept in memory and written when "
            "it works again", s->path, why);
    s->failing = 1;
  } else if (err == 0 && s->failing) {
    GPD_INFO("store: writes to %s work again", s->path);
    s->failing = 0;
  }
  pthread_mutex_lock(&d->lock);
  if (err < 0 && gbrows) { /* again at the next flush */
    gpubin_row_t **t = &gbrows;
    while (*t)
      t = &(*t)->next;
    *t = s->gpubins;
    s->gpubins = gbrows;
    gbrows = NULL;
  }
  if (err == 0 && id_hw > s->id_hw)
    s->id_hw = id_hw;
  for (uint32_t i = 0; i < n; i++) {
    gpd_proc_t *p = NULL;
    for (p = d->procs; p && p != snaps[i].proc; p = p->next)
      ;
    if (p == NULL)
      continue;
    if (err < 0 || snaps[i].incomplete) {
      /* write everything again next time; the tails stay where they are */
      proc_rewrite_all(p);
      if (err < 0 && (p->error[0] == 0 || p->store_error)) {
        snprintf(p->error, sizeof p->error, "%s", s->why); /* ps shows it */
        p->store_error = 1;
      }
      /* A process that ended was drained completely into its profile:
       * nobody will hand its region back, so the region (memfd and
       * mapping) is freed now; the profile stays until it is written. */
      if (err < 0 && snaps[i].exited && p->state == GPD_PROC_EXITED)
        gpd_registry_close_region(p);
      continue;
    }
    if (p->store_error) {
      p->error[0] = 0;
      p->store_error = 0;
      p->meta_dirty = 1;
    }
    /* committed: the state up to these cursors is durable, give the
     * producer its slots back (and reclaim drained RETIRED rings) */
    if (snaps[i].ncursor && p->has_region && p->cursor && p->region.nrings == snaps[i].ncursor) {
      for (uint32_t k = 0; k < snaps[i].ncursor; k++) {
        gpd_ring_release(&p->region, k, snaps[i].cursor[k]);
        p->cursor_saved[k] = snaps[i].cursor[k];
      }
    }
    /* still EXITED: a hand-back to this daemon may have revived it since
     * the snapshot (gpd_registry_hello), then it keeps its region */
    if (snaps[i].exited && p->state == GPD_PROC_EXITED) {
      p->flushed = 1;
      gpd_registry_close_region(p);
    }
  }
  s->flushes++;
  pthread_mutex_unlock(&d->lock);
out:
  for (uint32_t i = 0; i < n; i++)
    snap_proc_free(&snaps[i]);
  free(snaps);
  while (gbrows) {
    gpubin_row_t *g = gbrows;
    gbrows = g->next;
    free(g);
  }
  return err;
}

/* -------------------------------------------------------------- load */

static unsigned unhex(const char *h, uint8_t *out, unsigned max) {
  unsigned n = 0;
  if (h == NULL)
    return 0;
  while (h[0] && h[1] && n < max) {
    unsigned v;
    if (sscanf(h, "%2x", &v) != 1)
      break;
    out[n++] = (uint8_t)v;
    h += 2;
  }
  return n;
}

int gpd_store_load(gpd_store_t *s, gpd_proc_t *proc, uid_t uid) {
  sqlite3 *db = s->rdb;
  gpd_profile_t *p = &proc->prof;
  sqlite3_stmt *q = NULL;
  int ret = 0;
  int64_t pid = (int64_t)p->profile_id;
  if (sqlite3_prepare_v2(db, "SELECT uid, records, pid, proc_start FROM profile WHERE id=?1", -1,
                         &q, NULL) != SQLITE_OK)
    goto dberr;
  sqlite3_bind_int64(q, 1, pid);
  if (sqlite3_step(q) != SQLITE_ROW) {
    ret = 0;
    goto out;
  }
  if ((uid_t)sqlite3_column_int64(q, 0) != uid) {
    ret = -EPERM;
    goto out;
  }
  /* A hand-back (a region to adopt) must come from the very process the
   * profile was made for: its pid (SO_PEERCRED) and its kernel start
   * time (NULL in a profile an older daemon stored: pid only). */
  uint64_t pstart = (uint64_t)sqlite3_column_int64(q, 3);
  if (proc->has_region && ((pid_t)sqlite3_column_int64(q, 2) != proc->pid ||
                           (pstart != 0 && pstart != proc->proc_start))) {
    ret = -ESRCH;
    goto out;
  }
  p->records = (uint64_t)sqlite3_column_int64(q, 1);
  sqlite3_finalize(q);
  q = NULL;

  if (sqlite3_prepare_v2(db, "SELECT id, path, build_id, base, size FROM module WHERE profile_id=?1",
                         -1, &q, NULL) != SQLITE_OK)
    goto dberr;
  sqlite3_bind_int64(q, 1, pid);
  while (sqlite3_step(q) == SQLITE_ROW) {
    uint8_t bid[20];
    unsigned nb = unhex((const char *)sqlite3_column_text(q, 2), bid, 20);
    const char *path = (const char *)sqlite3_column_text(q, 1);
    gpd_profile_add_module(p, (uint32_t)sqlite3_column_int64(q, 0), bid, nb,
                           (uint64_t)sqlite3_column_int64(q, 3),
                           (uint64_t)sqlite3_column_int64(q, 4), path ? path : "",
                           path ? strlen(path) : 0);
  }
  sqlite3_finalize(q);
  q = NULL;

  if (sqlite3_prepare_v2(db, "SELECT id, kind, text FROM string WHERE profile_id=?1", -1, &q,
                         NULL) != SQLITE_OK)
    goto dberr;
  sqlite3_bind_int64(q, 1, pid);
  while (sqlite3_step(q) == SQLITE_ROW) {
    const char *t = (const char *)sqlite3_column_text(q, 2);
    gpd_profile_add_string(p, (uint32_t)sqlite3_column_int64(q, 0),
                           (uint32_t)sqlite3_column_int64(q, 1), t ? t : "", t ? strlen(t) : 0);
  }
  sqlite3_finalize(q);
  q = NULL;

  /* back-end states (the reason text gets a string id of its own, above
   * any the shim hands out) */
  if (sqlite3_prepare_v2(db, "SELECT api, enabled, code, reason FROM backend WHERE profile_id=?1",
                         -1, &q, NULL) != SQLITE_OK)
    goto dberr;
  sqlite3_bind_int64(q, 1, pid);
  while (sqlite3_step(q) == SQLITE_ROW) {
    const char *api = (const char *)sqlite3_column_text(q, 0);
    for (unsigned a = 1; api && a < GPD_API_MAX; a++) {
      if (strcmp(api, gpd_api_name(a)) != 0)
        continue;
      const char *why = (const char *)sqlite3_column_text(q, 3);
      uint32_t sid = 0;
      if (why && *why && gpd_profile_add_string(p, 0xffffff00u + a, GPD_STR_REASON, why, strlen(why)) == 0)
        sid = 0xffffff00u + a;
      p->backends[a].seen = 1;
      p->backends[a].enabled = sqlite3_column_int(q, 1);
      p->backends[a].code = sqlite3_column_int(q, 2);
      p->backends[a].reason = sid;
    }
  }
  sqlite3_finalize(q);
  q = NULL;

  /* contexts of this profile and all their ancestors */
  if (sqlite3_prepare_v2(
          db,
          "WITH RECURSIVE c(id) AS (SELECT context_id FROM cct_local WHERE profile_id=?1"
          " UNION SELECT context_id FROM metric WHERE profile_id=?1"
          " UNION SELECT context.parent FROM context JOIN c ON context.uid=?2 AND context.id=c.id"
          " WHERE context.parent != 0)"
          " SELECT context.id, parent, kind, module, build_id, offset, label, raw_name"
          " FROM context JOIN c ON context.uid=?2 AND context.id=c.id",
          -1, &q, NULL) != SQLITE_OK)
    goto dberr;
  sqlite3_bind_int64(q, 1, pid);
  sqlite3_bind_int64(q, 2, (int64_t)uid);
  typedef struct { uint64_t id, parent, off; int kind; uint32_t mod; char *label, *raw; } row_t;
  row_t *rows = NULL;
  size_t nrows = 0, caprows = 0;
  while (sqlite3_step(q) == SQLITE_ROW) {
    if (nrows == caprows) {
      size_t nc = caprows ? caprows * 2 : 256;
      row_t *nr = realloc(rows, nc * sizeof *nr);
      if (nr == NULL)
        break;
      rows = nr;
      caprows = nc;
    }
    row_t *r = &rows[nrows++];
    r->id = (uint64_t)sqlite3_column_int64(q, 0);
    r->parent = (uint64_t)sqlite3_column_int64(q, 1);
    r->kind = sqlite3_column_int(q, 2);
    r->off = (uint64_t)sqlite3_column_int64(q, 5);
    const char *mpath = (const char *)sqlite3_column_text(q, 3);
    const char *mbid = (const char *)sqlite3_column_text(q, 4);
    r->mod = 0;
    for (uint32_t k = 0; mpath && k < p->nmods; k++) {
      char *h = hex(p->mods[k].build_id, p->mods[k].build_id_len);
      int same = strcmp(p->mods[k].path, mpath) == 0 &&
                 ((h == NULL && mbid == NULL) || (h && mbid && strcmp(h, mbid) == 0));
      free(h);
      if (same) {
        r->mod = p->mods[k].id;
        break;
      }
    }
    r->label = xdup((const char *)sqlite3_column_text(q, 6));
    r->raw = xdup((const char *)sqlite3_column_text(q, 7));
  }
  sqlite3_finalize(q);
  q = NULL;
  /* insert parents first: passes until no progress */
  int progress = 1;
  size_t left = nrows;
  while (progress && left) {
    progress = 0;
    for (size_t i = 0; i < nrows; i++) {
      if (rows[i].id == 0)
        continue;
      if (rows[i].id == GPD_CTX_ROOT ||
          gpd_profile_restore_node(p, rows[i].id, rows[i].parent, (uint8_t)rows[i].kind,
                                   rows[i].mod, rows[i].off, rows[i].label, rows[i].raw) !=
              GPD_NONE) {
        rows[i].id = 0;
        left--;
        progress = 1;
      }
    }
  }
  for (size_t i = 0; i < nrows; i++) {
    free(rows[i].label);
    free(rows[i].raw);
  }
  free(rows);
  p->nodes[0].saved = 1;

  if (sqlite3_prepare_v2(db, "SELECT context_id, metric_id, value FROM metric WHERE profile_id=?1",
                         -1, &q, NULL) != SQLITE_OK)
    goto dberr;
  sqlite3_bind_int64(q, 1, pid);
  while (sqlite3_step(q) == SQLITE_ROW) {
    uint32_t i = gpd_profile_find(p, (uint64_t)sqlite3_column_int64(q, 0));
    if (i == GPD_NONE)
      continue;
    gpd_node_t *n = &p->nodes[i];
    gpd_mval_add(&n->m, &n->nm, &n->capm, (uint32_t)sqlite3_column_int64(q, 1),
                 sqlite3_column_double(q, 2));
  }
  sqlite3_finalize(q);
  q = NULL;

  if (sqlite3_prepare_v2(db, "SELECT local_id, context_id FROM cct_local WHERE profile_id=?1", -1,
                         &q, NULL) != SQLITE_OK)
    goto dberr;
  sqlite3_bind_int64(q, 1, pid);
  while (sqlite3_step(q) == SQLITE_ROW) {
    uint32_t i = gpd_profile_find(p, (uint64_t)sqlite3_column_int64(q, 1));
    if (i != GPD_NONE)
      gpd_profile_add_local(p, (uint32_t)sqlite3_column_int64(q, 0), i);
  }
  sqlite3_finalize(q);
  q = NULL;
  p->nmods_saved = p->nmods;
  p->nstrs_saved = p->nstrs;
  p->nlocals_saved = p->nlocals;
  for (uint32_t i = 0; i < p->nnodes; i++)
    p->nodes[i].dirty = 0;

  /* the unmatched records that were stored with this state, in order:
   * they match records that are still in (or come back to) the rings */
  if (sqlite3_prepare_v2(db, "SELECT rec FROM pending WHERE profile_id=?1 ORDER BY seq", -1, &q,
                         NULL) != SQLITE_OK)
    goto dberr;
  sqlite3_bind_int64(q, 1, pid);
  uint64_t refed = 0, bad = 0;
  while (sqlite3_step(q) == SQLITE_ROW) {
    const void *b = sqlite3_column_blob(q, 0);
    int len = sqlite3_column_bytes(q, 0);
    if (gpd_profile_restore_pending(p, b, len > 0 ? (size_t)len : 0) == 0)
      refed++;
    else
      bad++;
  }
  sqlite3_finalize(q);
  q = NULL;
  gpd_profile_retry(p);
  p->pend_gen_saved = p->pend_gen; /* what is stored */

  /* committed ring positions: ahead of the shared tail only when the old
   * daemon died between its COMMIT and the release */
  if (sqlite3_prepare_v2(db, "SELECT ring, pos FROM ring_cursor WHERE profile_id=?1", -1, &q,
                         NULL) != SQLITE_OK)
    goto dberr;
  sqlite3_bind_int64(q, 1, pid);
  uint64_t skipped = 0;
  while (proc->cursor && sqlite3_step(q) == SQLITE_ROW) {
    int64_t ring = sqlite3_column_int64(q, 0);
    uint64_t pos = (uint64_t)sqlite3_column_int64(q, 1);
    if (ring < 0 || ring >= (int64_t)proc->region.nrings)
      continue;
    gpd_ring_ctl_t *c = &proc->region.ctl[ring];
    uint64_t tail = atomic_load_explicit(&c->tail, memory_order_acquire);
    uint64_t head = atomic_load_explicit(&c->head, memory_order_acquire);
    proc->cursor_saved[ring] = pos;
    if (pos > tail && pos <= head && pos - tail <= proc->region.ring_slots) {
      skipped += pos - tail;
      proc->cursor[ring] = pos;
      gpd_ring_release(&proc->region, (uint32_t)ring, pos);
    }
  }
  if (refed || bad || skipped)
    GPD_INFO("profile %lld reloaded: %llu pending records re-fed (%llu unusable), %llu slots "
             "already stored skipped", (long long)pid, (unsigned long long)refed,
             (unsigned long long)bad, (unsigned long long)skipped);
  ret = 1;
  goto out;
dberr:
  GPD_ERR("store: load profile %lld: %s", (long long)pid, sqlite3_errmsg(db));
  ret = GPD_ESTORE;
out:
  sqlite3_finalize(q);
  return ret;
}

/* --------------------------------------------------------- retention */

static int64_t db_size(sqlite3 *db) {
  sqlite3_stmt *q = NULL;
  int64_t pc = 0, ps = 0, fl = 0;
  if (sqlite3_prepare_v2(db, "SELECT * FROM pragma_page_count, pragma_page_size,"
                             " pragma_freelist_count", -1, &q, NULL) == SQLITE_OK &&
      sqlite3_step(q) == SQLITE_ROW) {
    pc = sqlite3_column_int64(q, 0);
    ps = sqlite3_column_int64(q, 1);
    fl = sqlite3_column_int64(q, 2);
  }
  sqlite3_finalize(q);
  return (pc - fl) * ps;
}

static int delete_profile(sqlite3 *db, int64_t id) {
  static const char *tabs[] = {"metric", "cct_local", "string", "module", "backend", "pending",
                               "ring_cursor"};
  char sql[128];
  for (size_t i = 0; i < sizeof tabs / sizeof tabs[0]; i++) {
    snprintf(sql, sizeof sql, "DELETE FROM %s WHERE profile_id=%lld;", tabs[i], (long long)id);
    if (db_exec(db, sql) < 0)
      return GPD_ESTORE;
  }
  snprintf(sql, sizeof sql, "DELETE FROM profile WHERE id=%lld;", (long long)id);
  return db_exec(db, sql);
}

static char *col_dup(sqlite3_stmt *q, int i) {
  const char *t = (const char *)sqlite3_column_text(q, i);
  return t ? strdup(t) : NULL;
}

/* Restore the live view after a (re)start: the newest `keep` stored
 * profiles come back into memory as EXITED, or LOST when the store says
 * the process was running when the previous daemon died (its shim may
 * still hand its region back: gpd_registry_hello then takes the place of
 * the LOST entry).  Neither is written again by the writer (flushed = 1).
 * Called once from main before the threads start.  Returns the number of
 * profiles restored or a negative code. */
int gpd_store_restore(gpd_daemon_t *d, unsigned keep) {
  gpd_store_t *s = d->store;
  sqlite3_stmt *q = NULL;
  int n = 0;
  if (s == NULL)
    return 0;
  if (sqlite3_prepare_v2(s->rdb,
                         "SELECT id, pid, ppid, uid, gid, exe, job_id, step_id, hostname, rank,"
                         " local_rank, start_ns, end_ns, state, drops, error, argv, proc_start"
                         " FROM profile ORDER BY id DESC LIMIT ?1",
                         -1, &q, NULL) != SQLITE_OK) {
    GPD_ERR("store: restore: %s", sqlite3_errmsg(s->rdb));
    return GPD_ESTORE;
  }
  sqlite3_bind_int64(q, 1, keep);
  gpd_proc_t *head = NULL, **tail = &head;
  while (sqlite3_step(q) == SQLITE_ROW) {
    gpd_proc_t *p = calloc(1, sizeof *p);
    if (p == NULL)
      break;
    p->profile_id = (uint64_t)sqlite3_column_int64(q, 0);
    p->pid = (pid_t)sqlite3_column_int64(q, 1);
    p->ppid = (pid_t)sqlite3_column_int64(q, 2);
    p->uid = (uid_t)sqlite3_column_int64(q, 3);
    p->gid = (gid_t)sqlite3_column_int64(q, 4);
    p->exe = col_dup(q, 5);
    p->job_id = col_dup(q, 6);
    p->step_id = col_dup(q, 7);
    p->hostname = col_dup(q, 8);
    p->rank = (int32_t)sqlite3_column_int64(q, 9);
    p->local_rank = (int32_t)sqlite3_column_int64(q, 10);
    p->start_ns = (uint64_t)sqlite3_column_int64(q, 11);
    p->end_ns = (uint64_t)sqlite3_column_int64(q, 12);
    const char *st = (const char *)sqlite3_column_text(q, 13);
    p->state = st && strcmp(st, "exited") == 0 ? GPD_PROC_EXITED : GPD_PROC_LOST;
    p->drops = (uint64_t)sqlite3_column_int64(q, 14);
    const char *er = (const char *)sqlite3_column_text(q, 15);
    if (er)
      snprintf(p->error, sizeof p->error, "%s", er);
    p->argv_json = col_dup(q, 16);
    p->proc_start = (uint64_t)sqlite3_column_int64(q, 17);
    p->flushed = 1;
    gpd_profile_init(&p->prof, p->profile_id);
    p->prof.uid = p->uid;
    p->prof.gid = p->gid;
    if (gpd_store_load(s, p, p->uid) < 0) {
      gpd_registry_free_proc(p);
      continue;
    }
    *tail = p; /* keep newest first, as the registry list is */
    tail = &p->next;
    n++;
  }
  sqlite3_finalize(q);
  pthread_mutex_lock(&d->lock);
  *tail = d->procs;
  d->procs = head;
  d->nprocs += (uint32_t)n;
  pthread_mutex_unlock(&d->lock);
  if (n)
    GPD_INFO("store: restored %d stored profiles into the live view", n);
  return n;
}

int gpd_store_retain(gpd_daemon_t *d) {
  gpd_store_t *s = d->store;
  if (s == NULL)
    return 0;
  uint64_t max_bytes = __atomic_load_n(&d->cfg.retain_bytes, __ATOMIC_RELAXED);
  uint64_t max_age = __atomic_load_n(&d->cfg.retain_age_s, __ATOMIC_RELAXED);
  uint64_t now = gpd_clock_ns();
  int64_t cutoff = max_age && now > max_age * 1000000000ull
                       ? (int64_t)(now - max_age * 1000000000ull) : INT64_MIN;
  /* ids that live in memory and are not finished: never deleted */
  uint64_t *live = NULL;
  size_t nlive = 0;
  pthread_mutex_lock(&d->lock);
  live = calloc(d->nprocs + 1, sizeof *live);
  for (gpd_proc_t *p = d->procs; p && live; p = p->next)
    if (p->state != GPD_PROC_EXITED)
      live[nlive++] = p->profile_id;
  pthread_mutex_unlock(&d->lock);

  int deleted = 0, err = 0;
  for (int round = 0; round < 4096; round++) {
    int64_t size = db_size(s->wdb);
    int over = max_bytes && (uint64_t)size > max_bytes;
    sqlite3_stmt *q = NULL;
    /* oldest finished profile that is too old, or any oldest when over size */
    if (sqlite3_prepare_v2(s->wdb,
                           "SELECT id FROM profile WHERE state != 'running'"
                           " AND (?1 OR (end_ns IS NOT NULL AND end_ns < ?2))"
                           " ORDER BY COALESCE(end_ns, start_ns, 0), id LIMIT 64",
                           -1, &q, NULL) != SQLITE_OK)
      break;
    sqlite3_bind_int(q, 1, over);
    sqlite3_bind_int64(q, 2, cutoff);
    int64_t victim = -1;
    while (sqlite3_step(q) == SQLITE_ROW) {
      int64_t id = sqlite3_column_int64(q, 0);
      int is_live = 0;
      for (size_t i = 0; i < nlive; i++)
        if ((int64_t)live[i] == id)
          is_live = 1;
      if (!is_live) {
        victim = id;
        break;
      }
    }
    sqlite3_finalize(q);
    if (victim < 0)
      break;
    if ((err = db_exec(s->wdb, "BEGIN IMMEDIATE;")) < 0)
      break;
    err = delete_profile(s->wdb, victim);
    if (err == 0)
      err = db_exec(s->wdb, "COMMIT;");
    if (err < 0) {
      db_exec(s->wdb, "ROLLBACK;");
      break;
    }
    GPD_INFO("store: retention removed profile %lld", (long long)victim);
    deleted++;
    if (over) {
      /* contexts no profile refers to any more, leaves first */
      for (int k = 0; k < 256; k++) {
        if (db_exec(s->wdb,
                    "DELETE FROM context AS x WHERE parent != 0 AND NOT EXISTS"
                    " (SELECT 1 FROM metric m JOIN profile p ON p.id=m.profile_id"
                    "  WHERE m.context_id=x.id AND p.uid=x.uid)"
                    " AND NOT EXISTS (SELECT 1 FROM cct_local l JOIN profile p ON p.id=l.profile_id"
                    "  WHERE l.context_id=x.id AND p.uid=x.uid)"
                    " AND NOT EXISTS (SELECT 1 FROM context y WHERE y.uid=x.uid AND y.parent=x.id);") <
                0 ||
            sqlite3_changes(s->wdb) == 0)
          break;
      }
      db_exec(s->wdb, "DELETE FROM frame AS f WHERE NOT EXISTS (SELECT 1 FROM context c"
                      " WHERE c.uid=f.uid AND c.id=f.context_id);");
      db_exec(s->wdb, "PRAGMA incremental_vacuum;");
    }
  }
  if (deleted && s->flushes % 64 == 0)
    db_exec(s->wdb, "PRAGMA incremental_vacuum;");
  free(live);
  return err;
}

/* ------------------------------------------------------------ writer */

static void *writer_main(void *arg) {
  gpd_daemon_t *d = arg;
  for (;;) {
    pthread_mutex_lock(&d->lock);
    if (!d->flush_now && !d->writer_stop) {
      struct timespec ts;
      clock_gettime(CLOCK_MONOTONIC, &ts);
      uint32_t ms = __atomic_load_n(&d->cfg.flush_ms, __ATOMIC_RELAXED);
      ms = ms ? ms : 1000;
      ts.tv_sec += ms / 1000;
      ts.tv_nsec += (long)(ms % 1000) * 1000000L;
      if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
      }
      pthread_cond_timedwait(&d->writer_cv, &d->lock, &ts);
    }
    d->flush_now = 0;
    int stop = d->writer_stop;
    pthread_mutex_unlock(&d->lock);
    if (gpd_store_flush(d) == 0)
      gpd_store_retain(d);
    if (stop)
      break;
  }
  return NULL;
}

int gpd_store_writer_start(gpd_daemon_t *d) {
  int err = pthread_create(&d->writer_tid, NULL, writer_main, d);
  if (err)
    return -err;
  d->writer_started = 1;
  return 0;
}

void gpd_store_writer_stop(gpd_daemon_t *d) {
  if (!d->writer_started)
    return;
  pthread_mutex_lock(&d->lock);
  d->writer_stop = 1;
  pthread_cond_signal(&d->writer_cv);
  pthread_mutex_unlock(&d->lock);
  pthread_join(d->writer_tid, NULL);
  d->writer_started = 0;
}

/* ------------------------------------------------------------ gpubins */

void gpd_gpubin_abort(gpd_gpubin_t *g) {
  if (g->fd >= 0) {
    close(g->fd);
    unlinkat(g->dirfd, g->tmp, 0);
  }
  g->fd = -1;
  g->hash[0] = 0;
  g->received = g->total = 0;
}

static int valid_hash(const char *h) {
  size_t n = strlen(h);
  if (n != 32)
    return 0;
  for (size_t i = 0; i < n; i++)
    if (!((h[i] >= '0' && h[i] <= '9') || (h[i] >= 'a' && h[i] <= 'f')))
      return 0;
  return 1;
}

static int valid_kind(const char *k) {
  size_t n = strlen(k);
  if (n == 0 || n >= 32)
    return 0;
  for (size_t i = 0; i < n; i++)
    if (!((k[i] >= 'a' && k[i] <= 'z') || (k[i] >= '0' && k[i] <= '9') || k[i] == '_' ||
          k[i] == '-'))
      return 0;
  return 1;
}

/* The gpubin row of a complete binary goes to the writer thread. */
static void gpubin_queue_row(gpd_daemon_t *d, const gpd_gpubin_t *g, uint64_t profile_id) {
  gpubin_row_t *row = calloc(1, sizeof *row);
  if (row == NULL)
    return;
  snprintf(row->hash, sizeof row->hash, "%s", g->hash);
  snprintf(row->kind, sizeof row->kind, "%s", g->kind);
  row->size = g->total;
  row->profile_id = (int64_t)profile_id;
  pthread_mutex_lock(&d->lock);
  row->next = d->store->gpubins;
  d->store->gpubins = row;
  d->flush_now = 1; /* soon, not at the next interval */
  pthread_cond_signal(&d->writer_cv);
  pthread_mutex_unlock(&d->lock);
}

/* The gpubins directory beside the database, opened once and verified
 * (gpd_store_private_dir): every name below is opened relative to this fd,
 * so a directory swapped or planted later is never written through. */
static int gpubin_dir(gpd_store_t *s, char *errmsg, size_t errlen) {
  if (s->bindir >= 0)
    return s->bindir;
  char dir[PATH_MAX + 16];
  snprintf(dir, sizeof dir, "%s/gpubins", s->dir);
  int fd = gpd_store_private_dir(dir, 1, errmsg, errlen);
  if (fd < 0)
    GPD_ERR("gpubin: %s", errmsg); /* once per try; uploads are refused */
  else
    s->bindir = fd;
  return fd;
}

/* A new private temporary file: a name no one else uses (pid, counter,
 * random), created O_EXCL|O_NOFOLLOW so that nothing planted is ever
 * opened.  Two uploads of one binary write two files; the later rename
 * replaces the earlier with the same content. */
static int gpubin_tmp(gpd_gpubin_t *g, int dirfd) {
  static uint64_t seq;
  for (int tries = 0; tries < 16; tries++) {
    uint64_t r = 0;
    if (getentropy(&r, sizeof r) < 0)
      r = gpd_clock_ns();
    snprintf(g->tmp, sizeof g->tmp, ".%s.%d.%llu.%016llx.tmp", g->hash, (int)getpid(),
             (unsigned long long)++seq, (unsigned long long)r);
    /* read-write: the complete file is mapped to verify its hash */
    int fd = openat(dirfd, g->tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0 || errno != EEXIST)
      return fd < 0 ? -errno : fd;
  }
  return -EEXIST;
}

int gpd_store_gpubin(gpd_daemon_t *d, gpd_gpubin_t *g, uint64_t profile_id,
                     const Gpuprof__GpuBinary *m, char *errmsg, size_t errlen) {
  gpd_store_t *s = d->store;
  int err = 0;
  if (s == NULL) {
    snprintf(errmsg, errlen, "no store");
    return GPD_ESTORE;
  }
  if (m->hash == NULL || !valid_hash(m->hash) || m->kind == NULL || !valid_kind(m->kind)) {
    snprintf(errmsg, errlen, "gpubin: bad hash or kind");
    return GPD_EBADFRAME;
  }
  if (m->total_size == 0 || m->total_size > GPD_GPUBIN_MAX_BYTES ||
      m->offset > m->total_size || m->data.len > m->total_size - m->offset) {
    snprintf(errmsg, errlen, "gpubin %s: bad size/offset (%llu+%zu of %llu)", m->hash,
             (unsigned long long)m->offset, m->data.len, (unsigned long long)m->total_size);
    return GPD_EBADFRAME;
  }
  char final[64];
  snprintf(final, sizeof final, "%s.gpubin", m->hash);
  if (strcmp(g->hash, m->hash) != 0) {
    gpd_gpubin_abort(g);
    if (m->offset != 0) {
      snprintf(errmsg, errlen, "gpubin %s: first chunk at offset %llu", m->hash,
               (unsigned long long)m->offset);
      return GPD_EPROTO;
    }
    int dirfd = gpubin_dir(s, errmsg, errlen);
    if (dirfd < 0)
      return dirfd;
    snprintf(g->hash, sizeof g->hash, "%s", m->hash);
    snprintf(g->kind, sizeof g->kind, "%s", m->kind);
    g->total = m->total_size;
    g->received = 0;
    g->dirfd = dirfd;
    struct stat st;
    /* stored before: a regular file of that size (a link is not) */
    if (fstatat(dirfd, final, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
        (uint64_t)st.st_size == g->total) {
      g->fd = -2; /* swallow the chunks */
    } else if ((g->fd = gpubin_tmp(g, dirfd)) < 0) {
      err = g->fd;
      g->fd = -1;
      snprintf(errmsg, errlen, "gpubin %s: temporary file: %s", m->hash, strerror(-err));
      g->hash[0] = 0;
      return err;
    }
  }
  if (m->offset != g->received || m->total_size != g->total) {
    snprintf(errmsg, errlen, "gpubin %s: chunk at %llu, expected %llu", m->hash,
             (unsigned long long)m->offset, (unsigned long long)g->received);
    gpd_gpubin_abort(g);
    return GPD_EPROTO;
  }
  if (g->fd >= 0 && m->data.len &&
      pwrite(g->fd, m->data.data, m->data.len, (off_t)m->offset) != (ssize_t)m->data.len) {
    err = errno ? -errno : -EIO;
    snprintf(errmsg, errlen, "gpubin %s: write: %s", m->hash, strerror(-err));
    gpd_gpubin_abort(g);
    return err;
  }
  g->received += m->data.len;
  if (g->received < g->total)
    return 0;
  /* complete: verify the content hash, then publish */
  if (g->fd >= 0) {
    int ok = 0;
    void *map = mmap(NULL, g->total, PROT_READ, MAP_PRIVATE, g->fd, 0);
    if (map != MAP_FAILED) {
      char h[33];
      gpd_hash128_hex(map, g->total, h);
      ok = strcmp(h, g->hash) == 0;
      munmap(map, g->total);
    }
    close(g->fd);
    g->fd = -1;
    /* renameat replaces whatever is at the final name (a planted link
     * included) without following it */
    if (!ok || renameat(g->dirfd, g->tmp, g->dirfd, final) < 0) {
      unlinkat(g->dirfd, g->tmp, 0);
      snprintf(errmsg, errlen, "gpubin %s: %s", g->hash,
               map == MAP_FAILED ? "cannot map the received file to check it" : !ok ? "content does not match its hash" : "cannot rename into place");
      g->hash[0] = 0;
      return GPD_EBADFRAME;
    }
    gpubin_queue_row(d, g, profile_id);
    GPD_INFO("stored gpubin %s (%s, %llu bytes)", g->hash, g->kind, (unsigned long long)g->total);
  } else if (g->fd == -2) {
    gpubin_queue_row(d, g, profile_id); /* stored before, by another profile: listed here too */
    GPD_INFO("gpubin %s (%s, %llu bytes) was stored before", g->hash, g->kind,
             (unsigned long long)g->total);
  }
  g->fd = -1;
  g->hash[0] = 0;
  return 0;
}

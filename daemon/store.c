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
  sqlite3 *rdb; /* main thread: reads only */
  gpubin_row_t *gpubins; /* pending rows, under d->lock */
  char path[PATH_MAX];
  char dir[PATH_MAX];
  uint64_t flushes;
};

static const char *SCHEMA =
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS metric_desc(id INTEGER PRIMARY KEY, name TEXT NOT NULL,"
    "  unit TEXT NOT NULL, description TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS profile(id INTEGER PRIMARY KEY,"
    "  pid INTEGER NOT NULL, ppid INTEGER, uid INTEGER NOT NULL, gid INTEGER NOT NULL,"
    "  exe TEXT, argv TEXT, hostname TEXT, job_id TEXT, step_id TEXT, rank INTEGER,"
    "  local_rank INTEGER, start_ns INTEGER, end_ns INTEGER, state TEXT NOT NULL,"
    "  records INTEGER NOT NULL DEFAULT 0, drops INTEGER NOT NULL DEFAULT 0, error TEXT);"
    "CREATE TABLE IF NOT EXISTS backend(profile_id INTEGER NOT NULL, api TEXT NOT NULL,"
    "  enabled INTEGER NOT NULL, code INTEGER, reason TEXT, PRIMARY KEY(profile_id, api));"
    "CREATE TABLE IF NOT EXISTS module(profile_id INTEGER NOT NULL, id INTEGER NOT NULL,"
    "  path TEXT NOT NULL, build_id TEXT, base INTEGER, size INTEGER,"
    "  PRIMARY KEY(profile_id, id));"
    "CREATE TABLE IF NOT EXISTS string(profile_id INTEGER NOT NULL, id INTEGER NOT NULL,"
    "  kind INTEGER NOT NULL, text TEXT NOT NULL, PRIMARY KEY(profile_id, id));"
    "CREATE TABLE IF NOT EXISTS context(id INTEGER PRIMARY KEY, parent INTEGER NOT NULL,"
    "  kind INTEGER NOT NULL, module TEXT, build_id TEXT, offset INTEGER, label TEXT,"
    "  raw_name TEXT);"
    "CREATE TABLE IF NOT EXISTS frame(context_id INTEGER NOT NULL, depth INTEGER NOT NULL,"
    "  function TEXT, file TEXT, line INTEGER, inlined INTEGER NOT NULL,"
    "  PRIMARY KEY(context_id, depth));"
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

static int db_exec(sqlite3 *db, const char *sql) {
  char *msg = NULL;
  if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
    GPD_ERR("store: %s: %s", sql, msg ? msg : sqlite3_errmsg(db));
    sqlite3_free(msg);
    return GPD_ESTORE;
  }
  return 0;
}

static int db_open(sqlite3 **db, const char *path) {
  if (sqlite3_open_v2(path, db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                      NULL) != SQLITE_OK) {
    GPD_ERR("store: cannot open %s: %s", path, *db ? sqlite3_errmsg(*db) : "out of memory");
    return GPD_ESTORE;
  }
  sqlite3_busy_timeout(*db, 10000);
  return 0;
}

static const char *unit_name(gpd_unit_t u) {
  switch (u) {
  case GPD_UNIT_NS: return "ns";
  case GPD_UNIT_BYTES: return "bytes";
  case GPD_UNIT_COUNT: return "count";
  default: return "mean";
  }
}

int gpd_store_open(gpd_store_t **out, const char *path) {
  int err = GPD_ESTORE;
  gpd_store_t *s = calloc(1, sizeof *s);
  if (s == NULL)
    return -ENOMEM;
  snprintf(s->path, sizeof s->path, "%s", path);
  snprintf(s->dir, sizeof s->dir, "%s", path);
  char *slash = strrchr(s->dir, '/');
  if (slash == NULL)
    snprintf(s->dir, sizeof s->dir, ".");
  else if (slash == s->dir)
    s->dir[1] = 0;
  else
    *slash = 0;
  if (db_open(&s->wdb, path) < 0)
    goto fail;
  /* auto_vacuum must precede the first table */
  if (db_exec(s->wdb, "PRAGMA auto_vacuum=INCREMENTAL; PRAGMA journal_mode=WAL;"
                      " PRAGMA synchronous=NORMAL;") < 0)
    goto fail;
  if (db_exec(s->wdb, "BEGIN IMMEDIATE;") < 0)
    goto fail;
  if (db_exec(s->wdb, SCHEMA) < 0 || db_exec(s->wdb, "PRAGMA user_version=1;") < 0)
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
  if (s->wdb)
    sqlite3_close(s->wdb);
  if (s->rdb)
    sqlite3_close(s->rdb);
  free(s);
}

uint64_t gpd_store_max_profile_id(gpd_store_t *s) {
  sqlite3_stmt *st = NULL;
  uint64_t id = 0;
  if (sqlite3_prepare_v2(s->rdb, "SELECT MAX(id) FROM profile", -1, &st, NULL) == SQLITE_OK &&
      sqlite3_step(st) == SQLITE_ROW)
    id = (uint64_t)sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  return id;
}

/* ----------------------------------------------------------- snapshot */

typedef struct snap_ctx_s {
  uint64_t id, parent;
  int kind;
  char *module, *build_id, *label, *raw;
  uint64_t offset;
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
  uint64_t start_ns, end_ns, records, drops;
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
  s->error = p->error[0] ? strdup(p->error) : NULL;
  s->start_ns = p->start_ns;
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
       ST_PEND_DEL, ST_PEND, ST_CURSOR, ST_CURSOR_DEL, ST__N };
static const char *ST_SQL[ST__N] = {
    "INSERT INTO profile(id,pid,ppid,uid,gid,exe,argv,hostname,job_id,step_id,rank,local_rank,"
    "start_ns,end_ns,state,records,drops,error) VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,"
    "?13,?14,?15,?16,?17,?18) ON CONFLICT(id) DO UPDATE SET pid=?2,ppid=?3,uid=?4,gid=?5,"
    "exe=?6,argv=?7,hostname=?8,job_id=?9,step_id=?10,rank=?11,local_rank=?12,start_ns=?13,"
    "end_ns=?14,state=?15,records=?16,drops=?17,error=?18",
    "INSERT OR REPLACE INTO backend VALUES(?1,?2,?3,?4,?5)",
    "INSERT OR REPLACE INTO module VALUES(?1,?2,?3,?4,?5,?6)",
    "INSERT OR REPLACE INTO string VALUES(?1,?2,?3,?4)",
    "INSERT OR IGNORE INTO context VALUES(?1,?2,?3,?4,?5,?6,?7,?8)",
    "INSERT OR IGNORE INTO frame VALUES(?1,?2,?3,?4,?5,?6)",
    "INSERT OR REPLACE INTO cct_local VALUES(?1,?2,?3)",
    "INSERT OR REPLACE INTO metric VALUES(?1,?2,?3,?4)",
    "DELETE FROM pending WHERE profile_id=?1",
    "INSERT INTO pending VALUES(?1,?2,?3)",
    "INSERT OR REPLACE INTO ring_cursor VALUES(?1,?2,?3)",
    "DELETE FROM ring_cursor WHERE profile_id=?1",
};

static int step(sqlite3 *db, sqlite3_stmt *st) {
  int rc = sqlite3_step(st);
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  if (rc != SQLITE_DONE) {
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
    const gpd_sframe_t *fr = NULL;
    unsigned nfr = 0;
    char buf[64];
    const char *label = c->label;
    if (c->kind == GPD_NODE_FRAME) {
      if (c->module)
        gpd_symbols_resolve(c->module, (uid_t)p->uid, (gid_t)p->gid, c->offset, &fr, &nfr);
      if (nfr > 0)
        label = fr[nfr - 1].function; /* innermost: where the call is */
      else {
        snprintf(buf, sizeof buf, "0x%" PRIx64, c->offset);
        label = buf;
      }
    } else if (c->kind == GPD_NODE_ROOT) {
      label = "<root>";
    }
    q = st[ST_CONTEXT];
    sqlite3_bind_int64(q, 1, (int64_t)c->id);
    sqlite3_bind_int64(q, 2, (int64_t)c->parent);
    sqlite3_bind_int(q, 3, c->kind);
    bind_text(q, 4, c->module);
    bind_text(q, 5, c->build_id);
    sqlite3_bind_int64(q, 6, (int64_t)c->offset);
    bind_text(q, 7, label);
    bind_text(q, 8, c->raw);
    if ((e = step(db, q)) < 0)
      return e;
    for (unsigned k = 0; k < nfr; k++) {
      q = st[ST_FRAME];
      sqlite3_bind_int64(q, 1, (int64_t)c->id);
      sqlite3_bind_int(q, 2, (int)k);
      bind_text(q, 3, fr[k].function);
      bind_text(q, 4, fr[k].file);
      sqlite3_bind_int(q, 5, (int)fr[k].line);
      sqlite3_bind_int(q, 6, fr[k].inlined);
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
  if (p->exited) {
    /* nothing will be handed back: the positions are of no further use */
    q = st[ST_CURSOR_DEL];
    sqlite3_bind_int64(q, 1, (int64_t)p->id);
    if ((e = step(db, q)) < 0)
      return e;
  } else {
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
  pthread_mutex_unlock(&d->lock);
  if (n == 0 && gbrows == NULL)
    goto out;

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
  if (err == 0)
    err = db_exec(s->wdb, "COMMIT;");
  if (err < 0)
    db_exec(s->wdb, "ROLLBACK;");
fin:
  for (int i = 0; i < ST__N; i++)
    sqlite3_finalize(st[i]);
  pthread_mutex_lock(&d->lock);
  if (err < 0 && gbrows) { /* again at the next flush */
    gpubin_row_t **t = &gbrows;
    while (*t)
      t = &(*t)->next;
    *t = s->gpubins;
    s->gpubins = gbrows;
    gbrows = NULL;
  }
  for (uint32_t i = 0; i < n; i++) {
    gpd_proc_t *p = NULL;
    for (p = d->procs; p && p != snaps[i].proc; p = p->next)
      ;
    if (p == NULL)
      continue;
    if (err < 0 || snaps[i].incomplete) {
      /* write everything again next time; the tails stay where they are */
      proc_rewrite_all(p);
      continue;
    }
    /* committed: the state up to these cursors is durable, give the
     * producer its slots back (and reclaim drained RETIRED rings) */
    if (snaps[i].ncursor && p->has_region && p->cursor && p->region.nrings == snaps[i].ncursor) {
      for (uint32_t k = 0; k < snaps[i].ncursor; k++) {
        gpd_ring_release(&p->region, k, snaps[i].cursor[k]);
        p->cursor_saved[k] = snaps[i].cursor[k];
      }
    }
    if (snaps[i].exited) {
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
  if (sqlite3_prepare_v2(db, "SELECT uid, records FROM profile WHERE id=?1", -1, &q, NULL) !=
      SQLITE_OK)
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
          " UNION SELECT context.parent FROM context JOIN c ON context.id=c.id"
          " WHERE context.parent != 0)"
          " SELECT context.id, parent, kind, module, build_id, offset, label, raw_name"
          " FROM context JOIN c ON context.id=c.id",
          -1, &q, NULL) != SQLITE_OK)
    goto dberr;
  sqlite3_bind_int64(q, 1, pid);
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
                         " local_rank, start_ns, end_ns, state, drops, error, argv"
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
        if (db_exec(s->wdb, "DELETE FROM context WHERE id NOT IN (SELECT context_id FROM metric)"
                            " AND id NOT IN (SELECT context_id FROM cct_local)"
                            " AND id NOT IN (SELECT parent FROM context) AND parent != 0;") < 0 ||
            sqlite3_changes(s->wdb) == 0)
          break;
      }
      db_exec(s->wdb, "DELETE FROM frame WHERE context_id NOT IN (SELECT id FROM context);");
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
    unlink(g->tmp);
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
  char dir[PATH_MAX + 16], final[PATH_MAX + 64];
  snprintf(dir, sizeof dir, "%s/gpubins", s->dir);
  snprintf(final, sizeof final, "%s/%s.gpubin", dir, m->hash);
  if (strcmp(g->hash, m->hash) != 0) {
    gpd_gpubin_abort(g);
    if (m->offset != 0) {
      snprintf(errmsg, errlen, "gpubin %s: first chunk at offset %llu", m->hash,
               (unsigned long long)m->offset);
      return GPD_EPROTO;
    }
    snprintf(g->hash, sizeof g->hash, "%s", m->hash);
    snprintf(g->kind, sizeof g->kind, "%s", m->kind);
    g->total = m->total_size;
    g->received = 0;
    if (access(final, F_OK) == 0) {
      g->fd = -2; /* already stored: swallow the chunks */
    } else {
      mkdir(dir, 0755);
      snprintf(g->tmp, sizeof g->tmp, "%s/%s.gpubin.tmp", dir, m->hash);
      /* read-write: the complete file is mapped to verify its hash */
      g->fd = open(g->tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (g->fd < 0) {
        err = -errno;
        snprintf(errmsg, errlen, "gpubin: %s: %s", g->tmp, strerror(-err));
        g->hash[0] = 0;
        return err;
      }
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
    err = -errno;
    snprintf(errmsg, errlen, "gpubin %s: write: %s", m->hash, strerror(errno));
    gpd_gpubin_abort(g);
    return err ? err : -EIO;
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
    if (!ok || rename(g->tmp, final) < 0) {
      unlink(g->tmp);
      snprintf(errmsg, errlen, "gpubin %s: %s", g->hash,
               map == MAP_FAILED ? "cannot map the received file to check it" : !ok ? "content does not match its hash" : "cannot rename into place");
      g->hash[0] = 0;
      return GPD_EBADFRAME;
    }
    gpubin_queue_row(d, g, profile_id);
    GPD_INFO("stored gpubin %s (%s, %llu bytes)", g->hash, g->kind, (unsigned long long)g->total);
  } else if (g->fd == -2) {
    gpubin_queue_row(d, g, profile_id); /* stored before, by another profile: listed here too */
  }
  g->fd = -1;
  g->hash[0] = 0;
  return 0;
}

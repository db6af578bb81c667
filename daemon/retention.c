/* retention.c - the store's retention pass (writer thread, after a
 * flush): removes finished profiles by age, by per-uid quota and by the
 * store's size, then the contexts, frames and GPU binaries no profile
 * refers to any more (docs/DAEMON.md "Retention", docs/FORMATS.md).
 *
 * Fast: every statement is an index lookup or range (the retention
 * indexes in store.c; tests/store/test-retention.c checks each plan), and
 * a profile's rows go CHUNK at a time, so the cost is what is removed,
 * not the size of the store.
 *
 * Never holds the writer: work runs in short transactions, each committed
 * once it ran TXN_BUDGET_NS; between two, the lock stays free for GAP_US
 * (the other connections' turn), a flush that is due (interval or
 * flush_now) runs, and a stopping daemon (SIGTERM: retain_stop, or
 * writer_stop) ends the pass.  A
 * removal that spans transactions is kept in work lists in the database
 * (retain_drop: profiles whose row is gone and whose data is being
 * removed; retain_ctx: contexts that may have lost their last reference;
 * retain_bin: binaries that may have), so that the next pass, or the next
 * daemon, finishes it.  The profile row goes in the first transaction:
 * readers never see half a profile.
 *
 * Fair: each uid has a share (gpd_store_uid_quota).  Its use is estimated
 * (profile_size: rows times a per-table size, plus text lengths; its
 * contexts and frames; the GPU binaries its profiles sent, each counted
 * whole for every uid that sent it).  Victims, oldest finished first:
 *   1. profiles that ended more than retention_max_age_s ago (any uid);
 *   2. a uid over its share loses its own oldest, the uid furthest over
 *      first, until it is within; no one else's profile goes for it;
 *   3. while the store (database pages in use + GPU binaries) is over
 *      retention_max_bytes, the uid furthest over its share (use - share
 *      largest, even when every uid is within) loses its oldest.
 * A profile live in memory (running, or lost and waiting for a hand-back)
 * is never removed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "gpuprof/clock.h"
#include "gpuprof/error.h"
#include "gpuprof/log.h"

#include "daemon.h"
#include "store-internal.h"

#define CHUNK 256                          /* rows per delete statement */
#define TXN_BUDGET_NS (10ull * 1000000)    /* a transaction commits after this */
#define RESIZE_RUNNING_NS (10ull * 1000000000) /* a running profile's size, this often */
#define USE_EVERY_NS (10ull * 1000000000)  /* per-uid use counted at least this often */
#define MAX_ROUNDS 4096                    /* profiles removed per pass at most */
#define GAP_US 3000                        /* the lock left free after a transaction */
#define SAMPLE 256                         /* rows of a context looked at before by uid */
#define GPD_RSTR_(x) #x
#define GPD_RSTR(x) GPD_RSTR_(x)

/* One profile's rows, CHUNK at a time: ?1 profile id, ?2 CHUNK. */
#define DEL_KEYS(t, keys, pcol)                                                                    \
  "DELETE FROM " t " WHERE (" keys ") IN (SELECT " keys " FROM " t " WHERE " pcol "=?1 LIMIT ?2)"
#define DEL_ROWID(t, pcol)                                                                         \
  "DELETE FROM " t " WHERE rowid IN (SELECT rowid FROM " t " WHERE " pcol "=?1 LIMIT ?2)"
#define DEL_ONE(t) "DELETE FROM " t " WHERE profile_id=?1"

enum {
  P_METRIC, /* RETURNING context_id */
  P_LOCAL,  /* RETURNING context_id */
  P_BINREF, /* RETURNING hash */
  P_STRING, P_MODULE, P_BACKEND, P_PENDING, P_CURSOR, P_CPUCTR, P_PCS, P_PCSCUBIN, P_PCSSTAT,
  P_CPSSTAT, P_TEVENT, P_TLAUNCH, P_TSTAT, P_TDUTY, P_TWINDOW, P_TDUTYL, P_TCPU,
  P__N,
  R_CTX_LIST = P__N, R_CTX_METRIC, R_CTX_METRIC_UID, R_CTX_LOCAL, R_CTX_LOCAL_UID, R_CTX_CHILD, R_CTX_PARENT, R_CTX_DEL_FRAME,
  R_CTX_DEL, R_CTX_DONE, R_CTX_ADD,
  R_BIN_LIST, R_BIN_REF, R_BIN_DEL, R_BIN_DONE, R_BIN_ADD, R_BIN_ROW,
  R_DROP_LIST, R_DROP_ADD, R_DROP_PROFILE, R_DROP_SIZE, R_DROP_DONE,
  R_AGE, R_UID_OLDEST,
  R_SIZE_TODO, R_SIZE_PROFILE, R_SIZE_SET,
  R_UIDS, R_UID_PROFILES, R_UID_CTX, R_UID_BINS, R_LIVE_SIZE, R_LIVE_BINS, R_BINS_TOTAL,
  R__N
};

static const char *const SQL[R__N] = {
    [P_METRIC] = DEL_KEYS("metric", "profile_id, context_id, metric_id", "profile_id")
        " RETURNING context_id",
    [P_LOCAL] = DEL_KEYS("cct_local", "profile_id, local_id", "profile_id") " RETURNING context_id",
    [P_BINREF] = DEL_KEYS("gpubin_ref", "profile_id, hash", "profile_id") " RETURNING hash",
    [P_STRING] = DEL_ROWID("string", "profile_id"),
    [P_MODULE] = DEL_ROWID("module", "profile_id"),
    [P_BACKEND] = DEL_ROWID("backend", "profile_id"),
    [P_PENDING] = DEL_KEYS("pending", "profile_id, seq", "profile_id"),
    [P_CURSOR] = DEL_KEYS("ring_cursor", "profile_id, ring", "profile_id"),
    [P_CPUCTR] = DEL_KEYS("cpu_counter", "profile_id, event, t_ns", "profile_id"),
    [P_PCS] = DEL_KEYS("pcsample", "profile_id, cubin_id, func, pc, stall, device", "profile_id"),
    [P_PCSCUBIN] = DEL_KEYS("pcsample_cubin", "profile_id, cubin_id", "profile_id"),
    [P_PCSSTAT] = DEL_KEYS("pcsample_stat", "profile_id, device", "profile_id"),
    [P_CPSSTAT] = DEL_ONE("cpu_sample_stat"),
    [P_TEVENT] = DEL_KEYS("trace_event", "profile_id, start_ns, stream, corr", "profile_id"),
    [P_TLAUNCH] = DEL_KEYS("trace_launch", "profile_id, ts_ns, tid, corr", "profile_id"),
    [P_TSTAT] = DEL_ONE("trace_stat"),
    [P_TDUTY] = DEL_ONE("trace_duty"),
    [P_TWINDOW] = DEL_KEYS("trace_window", "profile_id, start_ns", "profile_id"),
    [P_TDUTYL] = DEL_ONE("trace_duty_launch"),
    [P_TCPU] = DEL_ROWID("trace_cpu_sample", "profile"),
    /* contexts that may have lost their last reference (?1 uid, ?2 id) */
    [R_CTX_LIST] = "SELECT uid, id FROM retain_ctx LIMIT ?1",
    /* a context id is a hash of the calling path: other users running the
     * same program have rows with the same id.  First up to SAMPLE rows by
     * context (how many, and whether one is uid's); when they were all
     * another uid's, uid's own profiles are looked through instead */
    [R_CTX_METRIC] = "SELECT COUNT(*), COALESCE(MAX(p.uid = ?1), 0) FROM (SELECT profile_id FROM metric"
                     " WHERE context_id = ?2 LIMIT " GPD_RSTR(SAMPLE) ") m"
                     " LEFT JOIN profile p ON p.id = m.profile_id",
    [R_CTX_METRIC_UID] = "SELECT 1 FROM profile p CROSS JOIN metric m"
                         " ON m.profile_id = p.id AND m.context_id = ?2 WHERE p.uid = ?1 LIMIT 1",
    [R_CTX_LOCAL] = "SELECT COUNT(*), COALESCE(MAX(p.uid = ?1), 0) FROM (SELECT profile_id FROM cct_local"
                    " WHERE context_id = ?2 LIMIT " GPD_RSTR(SAMPLE) ") l"
                    " LEFT JOIN profile p ON p.id = l.profile_id",
    [R_CTX_LOCAL_UID] = "SELECT 1 FROM profile p CROSS JOIN cct_local l"
                        " ON l.profile_id = p.id AND l.context_id = ?2 WHERE p.uid = ?1 LIMIT 1",
    [R_CTX_CHILD] = "SELECT 1 FROM context WHERE uid = ?1 AND parent = ?2 LIMIT 1",
    [R_CTX_PARENT] = "SELECT parent FROM context WHERE uid = ?1 AND id = ?2",
    [R_CTX_DEL_FRAME] = "DELETE FROM frame WHERE uid = ?1 AND context_id = ?2",
    [R_CTX_DEL] = "DELETE FROM context WHERE uid = ?1 AND id = ?2",
    [R_CTX_DONE] = "DELETE FROM retain_ctx WHERE uid = ?1 AND id = ?2",
    [R_CTX_ADD] = "INSERT OR IGNORE INTO retain_ctx VALUES(?1, ?2)",
    /* binaries that may have lost their last reference (?1 hash) */
    [R_BIN_LIST] = "SELECT hash FROM retain_bin WHERE hash > ?1 ORDER BY hash LIMIT ?2",
    [R_BIN_REF] = "SELECT 1 FROM gpubin_ref WHERE hash = ?1 LIMIT 1",
    [R_BIN_DEL] = "DELETE FROM gpubin WHERE hash = ?1",
    [R_BIN_DONE] = "DELETE FROM retain_bin WHERE hash = ?1",
    [R_BIN_ADD] = "INSERT OR IGNORE INTO retain_bin VALUES(?1)",
    [R_BIN_ROW] = "SELECT 1 FROM gpubin WHERE hash = ?1",
    /* profiles being removed (?1 id) */
    [R_DROP_LIST] = "SELECT profile_id, uid FROM retain_drop LIMIT 1",
    [R_DROP_ADD] = "INSERT OR IGNORE INTO retain_drop SELECT id, uid FROM profile WHERE id = ?1",
    [R_DROP_PROFILE] = "DELETE FROM profile WHERE id = ?1",
    [R_DROP_SIZE] = "DELETE FROM profile_size WHERE profile_id = ?1",
    [R_DROP_DONE] = "DELETE FROM retain_drop WHERE profile_id = ?1",
    /* victims, oldest first */
    [R_AGE] = "SELECT id, uid FROM profile WHERE end_ns < ?1 AND state != 'running'"
              " ORDER BY end_ns, id LIMIT 64",
    [R_UID_OLDEST] = "SELECT id FROM profile WHERE uid = ?1 AND state != 'running'"
                     " ORDER BY COALESCE(end_ns, start_ns, 0), id LIMIT 64",
    /* profile sizes: never counted, running and older than ?1, or ended
     * since counted */
    [R_SIZE_TODO] = "SELECT p.id, p.uid, p.state = 'running' FROM profile p"
                    " LEFT JOIN profile_size z ON z.profile_id = p.id"
                    " WHERE z.profile_id IS NULL"
                    "  OR (p.state = 'running' AND z.t_ns < ?1)"
                    "  OR (z.final = 0 AND p.state != 'running') LIMIT 64",
    /* estimated bytes of one profile: rows times the size of a row of each
     * table (record, b-tree cell and index entries), text and blobs by
     * their length; 512 for the profile row and its one-row tables */
    [R_SIZE_PROFILE] =
        "SELECT 512"
        " + (SELECT COUNT(*) * 40 FROM metric WHERE profile_id = ?1)"
        " + (SELECT COUNT(*) * 36 FROM cct_local WHERE profile_id = ?1)"
        " + (SELECT COUNT(*) * 24 + COALESCE(SUM(LENGTH(text)), 0) FROM string WHERE profile_id = ?1)"
        " + (SELECT COUNT(*) * 64 + COALESCE(SUM(LENGTH(path)), 0) FROM module WHERE profile_id = ?1)"
        " + (SELECT COUNT(*) * 16 + COALESCE(SUM(LENGTH(rec)), 0) FROM pending WHERE profile_id = ?1)"
        " + (SELECT COUNT(*) * 32 FROM cpu_counter WHERE profile_id = ?1)"
        " + (SELECT COUNT(*) * 40 FROM pcsample WHERE profile_id = ?1)"
        " + (SELECT COUNT(*) * 56 FROM trace_event WHERE profile_id = ?1)"
        " + (SELECT COUNT(*) * 36 FROM trace_launch WHERE profile_id = ?1)"
        " + (SELECT COUNT(*) * 24 FROM trace_window WHERE profile_id = ?1)"
        " + (SELECT COUNT(*) * 40 FROM trace_cpu_sample WHERE profile = ?1)",
    [R_SIZE_SET] = "INSERT OR REPLACE INTO profile_size VALUES(?1, ?2, ?3, ?4, ?5)",
    /* per uid (?1 uid; live: ?1 profile id) */
    [R_UIDS] = "SELECT DISTINCT uid FROM profile",
    [R_UID_PROFILES] = "SELECT COALESCE(SUM(bytes), 0) FROM profile_size WHERE uid = ?1",
    [R_UID_CTX] = "SELECT (SELECT COUNT(*) * 96 FROM context WHERE uid = ?1)"
                  " + (SELECT COUNT(*) * 64 FROM frame WHERE uid = ?1)",
    [R_UID_BINS] = "SELECT COALESCE(SUM(size), 0) FROM gpubin"
                   " WHERE hash IN (SELECT hash FROM gpubin_ref WHERE uid = ?1)",
    [R_LIVE_SIZE] = "SELECT bytes FROM profile_size WHERE profile_id = ?1",
    [R_LIVE_BINS] = "SELECT COALESCE(SUM(g.size), 0) FROM gpubin_ref r"
                    " JOIN gpubin g ON g.hash = r.hash WHERE r.profile_id = ?1",
    [R_BINS_TOTAL] = "SELECT COALESCE(SUM(size), 0) FROM gpubin",
};

/* Statements that read a work list, the profile table (one row per
 * process) or gpubin (one row per binary) whole by design. */
static const unsigned char SCAN_OK[R__N] = {
    [R_CTX_LIST] = 1, [R_BIN_LIST] = 1, [R_DROP_LIST] = 1, [R_SIZE_TODO] = 1, [R_UIDS] = 1,
    [R_BINS_TOTAL] = 1,
};

const char *const *gpd__retain_sql(size_t *n, const unsigned char **scan) {
  *n = R__N;
  if (scan)
    *scan = SCAN_OK;
  return SQL;
}

typedef struct {
  uint64_t id;
  uint32_t uid;
} live_t;

/* One pass's state (writer thread). */
typedef struct {
  gpd_daemon_t *d;
  gpd_store_t *s;
  sqlite3 *db;
  sqlite3_stmt *st[R__N];
  uint64_t t_txn;   /* when the open transaction began; 0: none open */
  uint64_t t_flush; /* the last flush */
  live_t *live;     /* profiles live in memory: never removed */
  size_t nlive;
  uint64_t removed0; /* s->rstats.profiles when the pass began */
} rt_t;

enum { RT_STOP = 1 }; /* the writer is stopping: end the pass */

/* The profiles live in memory (daemon lock taken briefly).  0 or -ENOMEM. */
static int live_list(rt_t *r) {
  gpd_daemon_t *d = r->d;
  free(r->live);
  r->nlive = 0;
  gpd_daemon_lock(d);
  r->live = calloc(d->nprocs + 1, sizeof *r->live);
  for (gpd_proc_t *p = d->procs; p && r->live; p = p->next)
    if (p->state != GPD_PROC_EXITED) {
      r->live[r->nlive].id = p->profile_id;
      r->live[r->nlive++].uid = (uint32_t)p->uid;
    }
  pthread_mutex_unlock(&d->lock);
  return r->live ? 0 : -ENOMEM;
}

/* Which profiles are live: a count is redone when it changes (a process
 * that ended no longer holds its uid's uploads back). */
static uint64_t live_sig(const rt_t *r) {
  uint64_t sig = r->nlive;
  for (size_t i = 0; i < r->nlive; i++)
    sig += (r->live[i].id + 1) * 0x9e3779b97f4a7c15ull;
  return sig;
}

static int is_live(const rt_t *r, int64_t id) {
  for (size_t i = 0; i < r->nlive; i++)
    if ((int64_t)r->live[i].id == id)
      return 1;
  return 0;
}

static int rt_begin(rt_t *r) {
  if (r->t_txn)
    return 0;
  if (gpd_store_db_begin(r->db) < 0)
    return GPD_ESTORE;
  r->t_txn = gpd_clock_ns();
  return 0;
}

static int rt_commit(rt_t *r) {
  if (r->t_txn == 0)
    return 0;
  int err = gpd_store_db_commit(r->db);
  uint64_t dt = gpd_clock_ns() - r->t_txn;
  r->s->rstats.txn_slow += dt > 100000000ull;
  r->t_txn = 0;
  r->s->rstats.txns++;
  if (dt > r->s->rstats.txn_max_ns)
    r->s->rstats.txn_max_ns = dt;
  return err;
}

/* Between two steps: once the transaction ran its budget, commit it, run
 * a flush that is due, and end the pass if the writer is stopping.
 * 0 go on, RT_STOP, or a negative code. */
static int rt_check(rt_t *r) {
  gpd_daemon_t *d = r->d;
  uint64_t now = gpd_clock_ns();
  if (r->t_txn && now - r->t_txn < TXN_BUDGET_NS)
    return 0;
  int had = r->t_txn != 0;
  int err = rt_commit(r);
  if (err < 0)
    return err;
  if (__atomic_load_n(&d->writer_stop, __ATOMIC_RELAXED) ||
      __atomic_load_n(&d->retain_stop, __ATOMIC_RELAXED))
    return RT_STOP;
  /* The tracing threads and the device sampler write through their own
   * connections; their busy handler retries at intervals up to 100 ms and
   * would rarely find the lock free between two transactions that follow
   * each other at once. */
  if (had)
    usleep(GAP_US);
  uint32_t ms = __atomic_load_n(&d->cfg.flush_ms, __ATOMIC_RELAXED);
  ms = ms ? ms : 1000;
  if (__atomic_load_n(&d->flush_now, __ATOMIC_RELAXED) ||
      now - r->t_flush >= (uint64_t)ms * 1000000) {
    __atomic_store_n(&d->flush_now, 0, __ATOMIC_RELAXED);
    gpd_store_flush(d); /* a failure is the flush's to log and retry */
    r->t_flush = gpd_clock_ns();
    r->s->rstats.flushes++;
    if ((err = live_list(r)) < 0)
      return err;
  }
  return 0;
}

/* Step q to its end; its first column's integers into out (at most cap),
 * or the first text column's values into hashes (33 bytes each).  Returns
 * the rows changed, or a negative code. */
static int run_returning(rt_t *r, sqlite3_stmt *q, int64_t *out, char (*hashes)[33], int cap) {
  int n = 0, rc;
  while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
    if (n < cap && out)
      out[n] = sqlite3_column_int64(q, 0);
    if (n < cap && hashes) {
      const char *h = (const char *)sqlite3_column_text(q, 0);
      snprintf(hashes[n], 33, "%s", h ? h : "");
    }
    n++;
  }
  int changes = sqlite3_changes(r->db);
  sqlite3_reset(q);
  if (rc != SQLITE_DONE) {
    GPD_ERR("store: retention: %s", sqlite3_errmsg(r->db));
    return GPD_ESTORE;
  }
  return changes;
}

static int run1(rt_t *r, int k, int64_t a, int64_t b) {
  sqlite3_stmt *q = r->st[k];
  sqlite3_bind_int64(q, 1, a);
  if (sqlite3_bind_parameter_count(q) >= 2)
    sqlite3_bind_int64(q, 2, b);
  return run_returning(r, q, NULL, NULL, 0);
}

/* First column of the first row of statement k bound to (a[, b]); dflt
 * when there is no row (*found 0). */
static int64_t query1f(rt_t *r, int k, int64_t a, int64_t b, int64_t dflt, int *found) {
  sqlite3_stmt *q = r->st[k];
  if (sqlite3_bind_parameter_count(q) >= 1)
    sqlite3_bind_int64(q, 1, a);
  if (sqlite3_bind_parameter_count(q) >= 2)
    sqlite3_bind_int64(q, 2, b);
  int64_t v = dflt;
  int row = sqlite3_step(q) == SQLITE_ROW;
  if (row && sqlite3_column_type(q, 0) != SQLITE_NULL)
    v = sqlite3_column_int64(q, 0);
  sqlite3_reset(q);
  if (found)
    *found = row;
  return v;
}

static int64_t query1(rt_t *r, int k, int64_t a, int64_t b, int64_t dflt) {
  return query1f(r, k, a, b, dflt, NULL);
}

/* Every row of profile id (uid), CHUNK at a time; the contexts and
 * binaries it referred to become candidates.  0, RT_STOP or < 0. */
static int purge(rt_t *r, int64_t id, int64_t uid) {
  int64_t ctx[CHUNK];
  char(*hash)[33] = malloc(CHUNK * sizeof *hash);
  int err = hash ? 0 : -ENOMEM;
  for (int k = 0; k < P__N && err == 0; k++) {
    for (;;) {
      if ((err = rt_begin(r)) < 0)
        break;
      sqlite3_stmt *q = r->st[k];
      sqlite3_bind_int64(q, 1, id);
      if (sqlite3_bind_parameter_count(q) >= 2)
        sqlite3_bind_int(q, 2, CHUNK);
      int n = run_returning(r, q, k == P_BINREF ? NULL : ctx, k == P_BINREF ? hash : NULL, CHUNK);
      if (n < 0) {
        err = n;
        break;
      }
      for (int i = 0; (k == P_METRIC || k == P_LOCAL) && i < n && i < CHUNK && err == 0; i++)
        if (run1(r, R_CTX_ADD, uid, ctx[i]) < 0)
          err = GPD_ESTORE;
      for (int i = 0; k == P_BINREF && i < n && i < CHUNK && err == 0; i++) {
        sqlite3_stmt *a = r->st[R_BIN_ADD];
        sqlite3_bind_text(a, 1, hash[i], -1, SQLITE_STATIC);
        if (run_returning(r, a, NULL, NULL, 0) < 0)
          err = GPD_ESTORE;
      }
      if (err < 0)
        break;
      int more = sqlite3_bind_parameter_count(q) >= 2 && n >= CHUNK;
      if ((err = rt_check(r)) != 0 || !more)
        break;
    }
  }
  free(hash);
  if (err == 0 && (err = rt_begin(r)) == 0 && run1(r, R_DROP_DONE, id, 0) < 0)
    err = GPD_ESTORE;
  return err;
}

/* 1 when a metric (k = R_CTX_METRIC) or cct_local row (R_CTX_LOCAL) of a
 * profile of uid refers to context c. */
static int ctx_referenced(rt_t *r, int k, int64_t uid, int64_t c) {
  sqlite3_stmt *q = r->st[k];
  sqlite3_bind_int64(q, 1, uid);
  sqlite3_bind_int64(q, 2, c);
  int64_t n = 0, mine = 0;
  if (sqlite3_step(q) == SQLITE_ROW) {
    n = sqlite3_column_int64(q, 0);
    mine = sqlite3_column_int64(q, 1);
  }
  sqlite3_reset(q);
  if (mine || n < SAMPLE)
    return mine != 0;
  return query1(r, k + 1, uid, c, 0) != 0; /* the _UID statement follows */
}

/* Contexts on the candidate list that nothing refers to any more (no
 * metric or cct_local row of a profile of their uid, no child): removed
 * with their frames, and their parent becomes a candidate.  Roots stay.
 * 0, RT_STOP or < 0. */
static int sweep_contexts(rt_t *r) {
  int err = 0;
  for (;;) {
    int64_t u[64], c[64];
    int n = 0;
    if ((err = rt_begin(r)) < 0)
      return err;
    sqlite3_stmt *q = r->st[R_CTX_LIST];
    sqlite3_bind_int(q, 1, 64);
    while (n < 64 && sqlite3_step(q) == SQLITE_ROW) {
      u[n] = sqlite3_column_int64(q, 0);
      c[n++] = sqlite3_column_int64(q, 1);
    }
    sqlite3_reset(q);
    if (n == 0)
      return 0;
    for (int i = 0; i < n; i++) {
      int found = 0;
      int64_t parent = query1f(r, R_CTX_PARENT, u[i], c[i], 0, &found);
      int used = !found || parent == 0 || /* gone already, or a root */
                 ctx_referenced(r, R_CTX_METRIC, u[i], c[i]) ||
                 ctx_referenced(r, R_CTX_LOCAL, u[i], c[i]) ||
                 query1(r, R_CTX_CHILD, u[i], c[i], 0);
      if (!used) {
        if (run1(r, R_CTX_DEL_FRAME, u[i], c[i]) < 0 || run1(r, R_CTX_DEL, u[i], c[i]) < 0 ||
            run1(r, R_CTX_ADD, u[i], parent) < 0)
          return GPD_ESTORE;
        r->s->rstats.contexts++;
      }
      if (run1(r, R_CTX_DONE, u[i], c[i]) < 0)
        return GPD_ESTORE;
    }
    if ((err = rt_check(r)) != 0)
      return err;
  }
}

/* The gpubins folder for unlinks, opened once (no folder: no files). */
static int bin_dir(gpd_store_t *s) {
  if (s->rbindir >= 0)
    return s->rbindir;
  char dir[PATH_MAX + 16], msg[256];
  snprintf(dir, sizeof dir, "%s/gpubins", s->dir);
  int fd = gpd_store_private_dir(dir, 0, msg, sizeof msg);
  if (fd >= 0)
    s->rbindir = fd;
  return fd;
}

/* Binaries on the candidate list that no profile refers to: the file and
 * the row go, unless the hash is queued or being uploaded (then it stays
 * listed: the upload adds a reference).  0, RT_STOP or < 0. */
static int sweep_bins(rt_t *r) {
  char last[33] = "", h[64][33];
  int err = 0;
  for (;;) {
    int n = 0;
    if ((err = rt_begin(r)) < 0)
      return err;
    sqlite3_stmt *q = r->st[R_BIN_LIST];
    sqlite3_bind_text(q, 1, last, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(q, 2, 64);
    while (n < 64 && sqlite3_step(q) == SQLITE_ROW) {
      const char *t = (const char *)sqlite3_column_text(q, 0);
      snprintf(h[n++], 33, "%s", t ? t : "");
    }
    sqlite3_reset(q);
    if (n == 0)
      return 0;
    for (int i = 0; i < n; i++) {
      memcpy(last, h[i], sizeof last);
      sqlite3_stmt *ref = r->st[R_BIN_REF];
      sqlite3_bind_text(ref, 1, h[i], -1, SQLITE_STATIC);
      int used = sqlite3_step(ref) == SQLITE_ROW;
      sqlite3_reset(ref);
      int busy = 0;
      if (!used) {
        int dfd = gpd__gpubin_valid_hash(h[i]) ? bin_dir(r->s) : -1;
        pthread_mutex_lock(&r->d->reg_lock);
        busy = gpd__gpubin_busy(r->s, h[i]);
        if (!busy && dfd >= 0) {
          char name[64];
          snprintf(name, sizeof name, "%.32s.gpubin", h[i]);
          unlinkat(dfd, name, 0); /* ENOENT: gone already */
        }
        pthread_mutex_unlock(&r->d->reg_lock);
        if (!busy) {
          sqlite3_stmt *del = r->st[R_BIN_DEL];
          sqlite3_bind_text(del, 1, h[i], -1, SQLITE_STATIC);
          if (run_returning(r, del, NULL, NULL, 0) < 0)
            return GPD_ESTORE;
          r->s->rstats.gpubins++;
        }
      }
      if (!busy) {
        sqlite3_stmt *done = r->st[R_BIN_DONE];
        sqlite3_bind_text(done, 1, h[i], -1, SQLITE_STATIC);
        if (run_returning(r, done, NULL, NULL, 0) < 0)
          return GPD_ESTORE;
      }
    }
    if ((err = rt_check(r)) != 0)
      return err;
  }
}

/* Once per daemon: files in gpubins/ that no row names (a daemon killed
 * between the rename and the commit of its row) and temporary files with
 * no upload of their hash in progress (a killed daemon's).  Best effort:
 * no error of its own. */
static int sweep_stray_files(rt_t *r) {
  int dfd = bin_dir(r->s), err = 0;
  if (dfd < 0)
    return 0;
  int fd = dup(dfd);
  DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
  if (dir == NULL) {
    if (fd >= 0)
      close(fd);
    return 0;
  }
  struct dirent *e;
  unsigned n = 0;
  while ((e = readdir(dir)) != NULL) {
    char h[33] = "";
    size_t len = strlen(e->d_name);
    if (len == 32 + 7 && strcmp(e->d_name + 32, ".gpubin") == 0) {
      memcpy(h, e->d_name, 32);
      if (!gpd__gpubin_valid_hash(h))
        continue;
      sqlite3_stmt *q = r->st[R_BIN_ROW];
      sqlite3_bind_text(q, 1, h, -1, SQLITE_STATIC);
      int has_row = sqlite3_step(q) == SQLITE_ROW;
      sqlite3_reset(q);
      if (has_row)
        continue;
    } else if (e->d_name[0] == '.' && len > 34 + 4 && e->d_name[33] == '.' &&
               strcmp(e->d_name + len - 4, ".tmp") == 0) {
      memcpy(h, e->d_name + 1, 32); /* .<hash>.<pid>.<n>.<random>.tmp (gpubin.c) */
    } else {
      continue; /* "." and "..", what gpubin.c does not make */
    }
    pthread_mutex_lock(&r->d->reg_lock);
    if (!gpd__gpubin_busy(r->s, h)) /* an upload of that hash: maybe its file */
      unlinkat(dfd, e->d_name, 0);
    pthread_mutex_unlock(&r->d->reg_lock);
    if (++n % 64 == 0 && (err = rt_check(r)) != 0)
      break;
  }
  closedir(dir);
  return err;
}

/* Removals left unfinished (by the last pass or a previous daemon) and
 * candidates left on the lists.  0, RT_STOP or < 0. */
static int finish_removals(rt_t *r) {
  int err;
  for (;;) {
    if ((err = rt_begin(r)) < 0)
      return err;
    sqlite3_stmt *q = r->st[R_DROP_LIST];
    int64_t id = -1, uid = 0;
    if (sqlite3_step(q) == SQLITE_ROW) {
      id = sqlite3_column_int64(q, 0);
      uid = sqlite3_column_int64(q, 1);
    }
    sqlite3_reset(q);
    if (id < 0)
      break;
    if ((err = purge(r, id, uid)) != 0)
      return err;
  }
  if ((err = sweep_contexts(r)) != 0)
    return err;
  return sweep_bins(r);
}

/* Remove profile id: its row now (one transaction with the work-list
 * entry), then its rows and what only it referred to. */
static int drop(rt_t *r, int64_t id, int64_t uid, const char *why) {
  int err = rt_begin(r);
  if (err < 0)
    return err;
  if (run1(r, R_DROP_ADD, id, 0) < 0 || run1(r, R_DROP_PROFILE, id, 0) < 0 ||
      run1(r, R_DROP_SIZE, id, 0) < 0)
    return GPD_ESTORE;
  GPD_INFO("store: retention removed profile %lld (uid %lld: %s)", (long long)id, (long long)uid,
           why);
  r->s->rstats.profiles++;
  if ((err = purge(r, id, uid)) != 0)
    return err;
  if ((err = sweep_contexts(r)) != 0)
    return err;
  return sweep_bins(r);
}

/* Estimate the size of profiles never counted, running ones every
 * RESIZE_RUNNING_NS, and ended ones once more.  The counts (a large
 * running profile: 100 ms and more) run outside any transaction; their
 * results are written 64 at a time.  0, RT_STOP or < 0. */
static int size_profiles(rt_t *r) {
  uint64_t now = gpd_clock_ns();
  int err = 0;
  for (;;) {
    int64_t id[64], uid[64], run[64], bytes[64];
    int n = 0;
    if ((err = rt_commit(r)) < 0)
      return err;
    sqlite3_stmt *q = r->st[R_SIZE_TODO];
    sqlite3_bind_int64(q, 1, (int64_t)(now - RESIZE_RUNNING_NS));
    while (n < 64 && sqlite3_step(q) == SQLITE_ROW) {
      id[n] = sqlite3_column_int64(q, 0);
      uid[n] = sqlite3_column_int64(q, 1);
      run[n++] = sqlite3_column_int64(q, 2);
    }
    sqlite3_reset(q);
    if (n == 0)
      return 0;
    for (int i = 0; i < n; i++) {
      bytes[i] = query1(r, R_SIZE_PROFILE, id[i], 0, 0);
      if ((err = rt_check(r)) != 0) /* no transaction open: a stop and flush point */
        return err;
    }
    if ((err = rt_begin(r)) < 0)
      return err;
    for (int i = 0; i < n; i++) {
      sqlite3_stmt *set = r->st[R_SIZE_SET];
      sqlite3_bind_int64(set, 1, id[i]);
      sqlite3_bind_int64(set, 2, uid[i]);
      sqlite3_bind_int64(set, 3, bytes[i]);
      sqlite3_bind_int(set, 4, !run[i]);
      sqlite3_bind_int64(set, 5, (int64_t)now);
      if (run_returning(r, set, NULL, NULL, 0) < 0)
        return GPD_ESTORE;
    }
  }
}

/* uid's estimated use, and the part retention cannot remove (its live
 * profiles and the binaries they sent). */
static void uid_use(rt_t *r, uint32_t uid, uint64_t *use, uint64_t *live) {
  *use = (uint64_t)query1(r, R_UID_PROFILES, uid, 0, 0) + (uint64_t)query1(r, R_UID_CTX, uid, 0, 0) +
         (uint64_t)query1(r, R_UID_BINS, uid, 0, 0);
  *live = 0;
  for (size_t i = 0; i < r->nlive; i++)
    if (r->live[i].uid == uid)
      *live += (uint64_t)query1(r, R_LIVE_SIZE, (int64_t)r->live[i].id, 0, 0) +
               (uint64_t)query1(r, R_LIVE_BINS, (int64_t)r->live[i].id, 0, 0);
}

typedef struct {
  uint32_t uid;
  uint64_t use, live;
  int exhausted; /* nothing of this uid can be removed in this pass */
} uid_row_t;

/* Count every uid's use and publish the undeletable part for uploads
 * (s->uses, reg_lock).  0, RT_STOP or < 0. */
static int count_uses(rt_t *r, uid_row_t **rows, size_t *nrows) {
  gpd_store_t *s = r->s;
  /* binaries committed from now on count as unseen again */
  pthread_mutex_lock(&r->d->reg_lock);
  for (size_t i = 0; i < s->nuses; i++)
    s->uses[i].unseen = 0;
  pthread_mutex_unlock(&r->d->reg_lock);
  int err = size_profiles(r);
  if (err == 0)
    err = rt_commit(r); /* the counts below only read */
  if (err != 0)
    return err;
  size_t n = 0, cap = 16;
  uid_row_t *u = calloc(cap, sizeof *u);
  if (u == NULL)
    return -ENOMEM;
  sqlite3_stmt *q = r->st[R_UIDS];
  while (sqlite3_step(q) == SQLITE_ROW) {
    if (n == cap) {
      uid_row_t *nu = realloc(u, 2 * cap * sizeof *nu);
      if (nu == NULL)
        break;
      u = nu;
      cap *= 2;
    }
    memset(&u[n], 0, sizeof u[n]);
    u[n++].uid = (uint32_t)sqlite3_column_int64(q, 0);
  }
  sqlite3_reset(q);
  for (size_t i = 0; i < n; i++)
    uid_use(r, u[i].uid, &u[i].use, &u[i].live);
  pthread_mutex_lock(&r->d->reg_lock);
  for (size_t i = 0; i < s->nuses; i++)
    s->uses[i].live = 0;
  for (size_t i = 0; i < n; i++) {
    gpd_uid_use_t *e = gpd__store_uid_use(s, u[i].uid);
    if (e)
      e->live = u[i].live;
  }
  pthread_mutex_unlock(&r->d->reg_lock);
  free(*rows);
  *rows = u;
  *nrows = n;
  s->use_t_ns = gpd_clock_ns();
  s->use_live_sig = live_sig(r);
  return 0;
}

/* The oldest removable profile of uid, or -1. */
static int64_t oldest_of(rt_t *r, uint32_t uid) {
  sqlite3_stmt *q = r->st[R_UID_OLDEST];
  sqlite3_bind_int64(q, 1, uid);
  int64_t victim = -1;
  while (victim < 0 && sqlite3_step(q) == SQLITE_ROW) {
    int64_t id = sqlite3_column_int64(q, 0);
    if (!is_live(r, id))
      victim = id;
  }
  sqlite3_reset(q);
  return victim;
}

/* The uid furthest over its share (use - quota largest) with something
 * removable; with over_only, only a uid above its share.  NULL: none. */
static uid_row_t *furthest_over(rt_t *r, uid_row_t *u, size_t n, uint64_t quota, int over_only,
                                int64_t *victim) {
  for (;;) {
    uid_row_t *best = NULL;
    for (size_t i = 0; i < n; i++) {
      if (u[i].exhausted || (over_only && (!quota || u[i].use <= quota)))
        continue;
      if (best == NULL || (int64_t)(u[i].use - quota) > (int64_t)(best->use - quota))
        best = &u[i];
    }
    if (best == NULL)
      return NULL;
    if ((*victim = oldest_of(r, best->uid)) >= 0)
      return best;
    best->exhausted = 1;
  }
}

static int pass(rt_t *r) {
  gpd_daemon_t *d = r->d;
  gpd_store_t *s = r->s;
  uint64_t max_bytes = __atomic_load_n(&d->cfg.retain_bytes, __ATOMIC_RELAXED);
  uint64_t max_age = __atomic_load_n(&d->cfg.retain_age_s, __ATOMIC_RELAXED);
  uint64_t quota = gpd_store_uid_quota(d);
  uint64_t now = gpd_clock_ns();
  int64_t cutoff = max_age && now > max_age * 1000000000ull
                       ? (int64_t)(now - max_age * 1000000000ull) : INT64_MIN;
  int err = s->rstats.passes == 0 ? sweep_stray_files(r) : 0;
  if (err == 0)
    err = finish_removals(r);
  if (err != 0)
    return err;
  uint64_t total = (uint64_t)gpd_store_db_size(r->db) + (uint64_t)query1(r, R_BINS_TOTAL, 0, 0, 0);
  int unseen = 0;
  pthread_mutex_lock(&d->reg_lock);
  for (size_t i = 0; i < s->nuses; i++)
    unseen |= s->uses[i].unseen != 0;
  pthread_mutex_unlock(&d->reg_lock);
  uint64_t step = quota ? quota / 16 : max_bytes / 16;
  uint64_t moved = total > s->use_total ? total - s->use_total : s->use_total - total;
  uid_row_t *u = NULL;
  size_t nu = 0;
  int counted = 0;
  if (quota || max_bytes) {
    if (s->use_t_ns == 0 || now - s->use_t_ns >= USE_EVERY_NS || unseen || moved >= step ||
        live_sig(r) != s->use_live_sig || (max_bytes && total > max_bytes)) {
      if ((err = count_uses(r, &u, &nu)) != 0)
        goto out;
      s->use_total = total;
      counted = 1;
    }
  }
  for (int round = 0; round < MAX_ROUNDS; round++) {
    char why[160];
    int64_t victim = -1, vuid = -1;
    uid_row_t *who = NULL;
    /* 1. too old, whoever owns it */
    if (cutoff != INT64_MIN) {
      sqlite3_stmt *q = r->st[R_AGE];
      sqlite3_bind_int64(q, 1, cutoff);
      while (victim < 0 && sqlite3_step(q) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(q, 0);
        if (!is_live(r, id)) {
          victim = id;
          vuid = sqlite3_column_int64(q, 1);
        }
      }
      sqlite3_reset(q);
      snprintf(why, sizeof why, "ended more than %llu s ago", (unsigned long long)max_age);
    }
    /* 2. a uid over its share loses its own oldest */
    if (victim < 0 && counted && quota &&
        (who = furthest_over(r, u, nu, quota, 1, &victim)) != NULL)
      snprintf(why, sizeof why, "over its share: %llu of %llu bytes",
               (unsigned long long)who->use, (unsigned long long)quota);
    /* 3. the store over its limit: the uid furthest over its share */
    if (victim < 0 && counted && max_bytes && total > max_bytes &&
        (who = furthest_over(r, u, nu, quota, 0, &victim)) != NULL)
      snprintf(why, sizeof why, "store over its limit: %llu of %llu bytes; this uid uses %llu",
               (unsigned long long)total, (unsigned long long)max_bytes,
               (unsigned long long)who->use);
    if (victim < 0)
      break;
    if (who)
      vuid = who->uid;
    if ((err = drop(r, victim, vuid, why)) != 0)
      goto out;
    if ((err = rt_check(r)) != 0)
      goto out;
    for (size_t i = 0; i < nu; i++) /* counted again: what it freed, contexts and binaries included */
      if ((int64_t)u[i].uid == vuid)
        uid_use(r, u[i].uid, &u[i].use, &u[i].live);
    total = (uint64_t)gpd_store_db_size(r->db) + (uint64_t)query1(r, R_BINS_TOTAL, 0, 0, 0);
    s->use_total = total;
  }
  /* give free pages back to the file system, a little at a time */
  if (s->rstats.profiles != r->removed0) {
    for (int k = 0; k < 4096; k++) {
      if ((err = rt_begin(r)) < 0)
        goto out;
      int64_t fl = 0;
      if (gpd_store_db_vacuum(r->db, 256, &fl) < 0) {
        err = GPD_ESTORE;
        goto out;
      }
      if (fl == 0)
        break;
      if ((err = rt_check(r)) != 0)
        goto out;
    }
  }
out:
  free(u);
  return err;
}

int gpd_store_retain(gpd_daemon_t *d) {
  gpd_store_t *s = d->store;
  if (s == NULL || __atomic_load_n(&d->writer_stop, __ATOMIC_RELAXED) ||
      __atomic_load_n(&d->retain_stop, __ATOMIC_RELAXED))
    return 0;
  uint64_t t0 = gpd_clock_ns(), removed0 = s->rstats.profiles;
  rt_t r = {.d = d, .s = s, .db = s->wdb, .removed0 = removed0};
  r.t_flush = t0;
  int err = gpd_store_db_prepare(s->wdb, "retention", SQL, r.st, R__N);
  if (err == 0)
    err = live_list(&r);
  /* Removals dirty many pages: checkpoint the log every 128 pages (512
   * KiB) rather than every 1000, so that no COMMIT copies 4 MiB back into
   * the file (measured: 40-110 ms on a loaded machine). */
  gpd_store_db_autocheckpoint(s->wdb, 128);
  if (err == 0)
    err = pass(&r);
  if (err >= 0)
    err = rt_commit(&r) < 0 ? GPD_ESTORE : err;
  if (err < 0 && r.t_txn) {
    gpd_store_db_quiet(1); /* SQLite may have rolled back already */
    gpd_store_db_rollback(s->wdb);
    gpd_store_db_quiet(0);
    r.t_txn = 0;
  }
  gpd_store_db_autocheckpoint(s->wdb, 1000);
  for (int i = 0; i < R__N; i++)
    sqlite3_finalize(r.st[i]);
  free(r.live);
  uint64_t dt = gpd_clock_ns() - t0;
  s->rstats.passes++;
  s->rstats.pass_ns = dt;
  if (dt > s->rstats.pass_max_ns)
    s->rstats.pass_max_ns = dt;
  s->rstats.stopped = err == RT_STOP;
  if (s->rstats.profiles != removed0)
    GPD_INFO("store: retention pass removed %llu profiles in %.1f ms%s",
             (unsigned long long)(s->rstats.profiles - removed0), (double)dt / 1e6,
             err == RT_STOP ? " (stopped: the daemon is stopping)" : "");
  return err == RT_STOP ? 0 : err;
}

/* purge.c - the statements of the retention pass (store-purge.h): a
 * profile's rows removed a chunk at a time, the work lists, the orphan
 * checks of contexts and GPU binaries, victims and size estimates.
 *
 * Fast: every statement is an index lookup or range (the retention
 * indexes in schema.c; tests/store/test-retention.c checks each plan), so
 * the cost is what is removed, not the size of the store.
 */
#include "store-purge.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuprof/error.h"
#include "gpuprof/log.h"

#include "store-db.h"
#include "store-sql.h"

#define SAMPLE 256 /* rows of a context looked at before by uid */
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
    [R_SIZE_TODO] = "SELECT p.id, p.uid, CASE WHEN p.state = 'running' THEN 1"
                    "  WHEN COALESCE(p.end_ns, 0) >= ?2 THEN 2 ELSE 0 END FROM profile p"
                    " LEFT JOIN profile_size z ON z.profile_id = p.id"
                    " WHERE z.profile_id IS NULL"
                    "  OR (p.state = 'running' AND z.t_ns < ?1)"
                    "  OR (z.final = 0 AND p.state != 'running' AND z.t_ns < ?3) LIMIT 64",
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
        /* trace rows: the tracing threads' own count of the events handed
         * to them (?2: a running profile's, from memory; else trace_stat,
         * written when the profile ended), at a GPU event's 56 bytes;
         * counted only for a file without it (a count over millions of
         * rows holds the writer for seconds) */
        " + CASE WHEN ?2 >= 0 THEN ?2 * 56 ELSE COALESCE("
        "   (SELECT events * 56 FROM trace_stat WHERE profile_id = ?1 AND events > 0),"
        "   (SELECT COUNT(*) * 56 FROM trace_event WHERE profile_id = ?1)"
        "   + (SELECT COUNT(*) * 36 FROM trace_launch WHERE profile_id = ?1)) END"
        " + (SELECT COUNT(*) * 24 FROM trace_window WHERE profile_id = ?1)"
        " + (SELECT COUNT(*) * 40 FROM trace_cpu_sample WHERE profile = ?1)",
    /* a profile removed since it was sized (sizer.c) gets no row */
    [R_SIZE_SET] = "INSERT OR REPLACE INTO profile_size SELECT ?1, ?2, ?3, ?4, ?5"
                   " WHERE EXISTS (SELECT 1 FROM profile WHERE id = ?1)",
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

const char *const *gpd__store_retain_sql(size_t *n, const unsigned char **scan) {
  *n = R__N;
  if (scan)
    *scan = SCAN_OK;
  return SQL;
}



int gpd_store_purge_open(sqlite3 *db, gpd_store_purge_t **out) {
  return (*out = gpd_store_stmts_new(db, "retention", SQL, R__N)) ? 0 : GPD_ESTORE;
}

void gpd_store_purge_close(gpd_store_purge_t *r) { gpd_store_stmts_free(r); }

/* Step q to its end; its first column's integers into out (at most cap),
 * or the first text column's values into hashes (33 bytes each).  Returns
 * the rows changed, or a negative code. */
static int run_returning(gpd_store_purge_t *r, sqlite3_stmt *q, int64_t *out, char (*hashes)[33], int cap) {
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

static int run1(gpd_store_purge_t *r, int k, int64_t a, int64_t b) {
  sqlite3_stmt *q = r->st[k];
  sqlite3_bind_int64(q, 1, a);
  if (sqlite3_bind_parameter_count(q) >= 2)
    sqlite3_bind_int64(q, 2, b);
  return run_returning(r, q, NULL, NULL, 0);
}

/* First column of the first row of statement k bound to (a[, b]); dflt
 * when there is no row (*found 0). */
static int64_t query1f(gpd_store_purge_t *r, int k, int64_t a, int64_t b, int64_t dflt, int *found) {
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

static int64_t query1(gpd_store_purge_t *r, int k, int64_t a, int64_t b, int64_t dflt) {
  return query1f(r, k, a, b, dflt, NULL);
}


/* 1 when a metric (k = R_CTX_METRIC) or cct_local row (R_CTX_LOCAL) of a
 * profile of uid refers to context c. */
static int ctx_referenced(gpd_store_purge_t *r, int k, int64_t uid, int64_t c) {
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


unsigned gpd_store_purge_tables(void) { return P__N; }

int gpd_store_purge_rows(gpd_store_purge_t *r, unsigned k, int64_t id, int64_t uid, int *more) {
  int64_t ctx[GPD_STORE_PURGE_CHUNK];
  char(*hash)[33] = k == P_BINREF ? malloc(GPD_STORE_PURGE_CHUNK * sizeof *hash) : NULL;
  *more = 0;
  if (k >= P__N)
    return -EINVAL;
  if (k == P_BINREF && hash == NULL)
    return -ENOMEM;
  sqlite3_stmt *q = r->st[k];
  sqlite3_bind_int64(q, 1, id);
  if (sqlite3_bind_parameter_count(q) >= 2)
    sqlite3_bind_int(q, 2, GPD_STORE_PURGE_CHUNK);
  int n = run_returning(r, q, k == P_BINREF ? NULL : ctx, hash, GPD_STORE_PURGE_CHUNK), err = n < 0 ? n : 0;
  for (int i = 0; (k == P_METRIC || k == P_LOCAL) && i < n && i < GPD_STORE_PURGE_CHUNK && err == 0; i++)
    if (run1(r, R_CTX_ADD, uid, ctx[i]) < 0)
      err = GPD_ESTORE;
  for (int i = 0; k == P_BINREF && i < n && i < GPD_STORE_PURGE_CHUNK && err == 0; i++) {
    sqlite3_stmt *a = r->st[R_BIN_ADD];
    sqlite3_bind_text(a, 1, hash[i], -1, SQLITE_STATIC);
    if (run_returning(r, a, NULL, NULL, 0) < 0)
      err = GPD_ESTORE;
  }
  free(hash);
  *more = err == 0 && sqlite3_bind_parameter_count(q) >= 2 && n >= GPD_STORE_PURGE_CHUNK;
  return err;
}

int gpd_store_purge_drop(gpd_store_purge_t *r, int64_t id) {
  if (run1(r, R_DROP_ADD, id, 0) < 0 || run1(r, R_DROP_PROFILE, id, 0) < 0 || run1(r, R_DROP_SIZE, id, 0) < 0)
    return GPD_ESTORE;
  return 0;
}

int gpd_store_purge_dropped(gpd_store_purge_t *r, int64_t id) {
  return run1(r, R_DROP_DONE, id, 0) < 0 ? GPD_ESTORE : 0;
}

int gpd_store_purge_next_drop(gpd_store_purge_t *r, int64_t *id, int64_t *uid) {
  sqlite3_stmt *q = r->st[R_DROP_LIST];
  int found = sqlite3_step(q) == SQLITE_ROW;
  if (found) {
    *id = sqlite3_column_int64(q, 0);
    *uid = sqlite3_column_int64(q, 1);
  }
  sqlite3_reset(q);
  return found;
}

int gpd_store_purge_ctx_list(gpd_store_purge_t *r, int64_t *uid, int64_t *ctx, int cap) {
  int n = 0;
  sqlite3_stmt *q = r->st[R_CTX_LIST];
  sqlite3_bind_int(q, 1, cap);
  while (n < cap && sqlite3_step(q) == SQLITE_ROW) {
    uid[n] = sqlite3_column_int64(q, 0);
    ctx[n++] = sqlite3_column_int64(q, 1);
  }
  sqlite3_reset(q);
  return n;
}

int gpd_store_purge_ctx(gpd_store_purge_t *r, int64_t uid, int64_t c) {
  int found = 0, removed = 0;
  int64_t parent = query1f(r, R_CTX_PARENT, uid, c, 0, &found);
  int used = !found || parent == 0 || /* gone already, or a root */
             ctx_referenced(r, R_CTX_METRIC, uid, c) || ctx_referenced(r, R_CTX_LOCAL, uid, c) ||
             query1(r, R_CTX_CHILD, uid, c, 0);
  if (!used) {
    if (run1(r, R_CTX_DEL_FRAME, uid, c) < 0 || run1(r, R_CTX_DEL, uid, c) < 0 || run1(r, R_CTX_ADD, uid, parent) < 0)
      return GPD_ESTORE;
    removed = 1;
  }
  if (run1(r, R_CTX_DONE, uid, c) < 0)
    return GPD_ESTORE;
  return removed;
}

int gpd_store_purge_bin_list(gpd_store_purge_t *r, const char *after, char (*hash)[33], int cap) {
  int n = 0;
  sqlite3_stmt *q = r->st[R_BIN_LIST];
  sqlite3_bind_text(q, 1, after, -1, SQLITE_TRANSIENT);
  sqlite3_bind_int(q, 2, cap);
  while (n < cap && sqlite3_step(q) == SQLITE_ROW) {
    const char *t = (const char *)sqlite3_column_text(q, 0);
    snprintf(hash[n++], 33, "%s", t ? t : "");
  }
  sqlite3_reset(q);
  return n;
}

/* 1 when statement k bound to hash has a row. */
static int bin_query(gpd_store_purge_t *r, int k, const char *hash) {
  sqlite3_stmt *q = r->st[k];
  sqlite3_bind_text(q, 1, hash, -1, SQLITE_STATIC);
  int row = sqlite3_step(q) == SQLITE_ROW;
  sqlite3_reset(q);
  return row;
}

int gpd_store_purge_bin_used(gpd_store_purge_t *r, const char *hash) { return bin_query(r, R_BIN_REF, hash); }

int gpd_store_purge_bin_stored(gpd_store_purge_t *r, const char *hash) { return bin_query(r, R_BIN_ROW, hash); }

/* Run statement k bound to hash. */
static int bin_run(gpd_store_purge_t *r, int k, const char *hash) {
  sqlite3_stmt *q = r->st[k];
  sqlite3_bind_text(q, 1, hash, -1, SQLITE_STATIC);
  return run_returning(r, q, NULL, NULL, 0) < 0 ? GPD_ESTORE : 0;
}

int gpd_store_purge_bin_drop(gpd_store_purge_t *r, const char *hash) { return bin_run(r, R_BIN_DEL, hash); }

int gpd_store_purge_bin_done(gpd_store_purge_t *r, const char *hash) { return bin_run(r, R_BIN_DONE, hash); }

/* Up to cap rows of statement k bound to a: column 0 into a0, column 1
 * (when b1) into b1.  Returns how many. */
static int list2(gpd_store_purge_t *r, int k, int64_t a, int64_t *c0, int64_t *c1, int64_t *c2, int cap) {
  int n = 0;
  sqlite3_stmt *q = r->st[k];
  sqlite3_bind_int64(q, 1, a);
  while (n < cap && sqlite3_step(q) == SQLITE_ROW) {
    c0[n] = sqlite3_column_int64(q, 0);
    if (c1)
      c1[n] = sqlite3_column_int64(q, 1);
    if (c2)
      c2[n] = sqlite3_column_int64(q, 2);
    n++;
  }
  sqlite3_reset(q);
  return n;
}

int gpd_store_purge_aged(gpd_store_purge_t *r, int64_t before, int64_t *id, int64_t *uid, int cap) {
  return list2(r, R_AGE, before, id, uid, NULL, cap);
}

int gpd_store_purge_oldest(gpd_store_purge_t *r, uint32_t uid, int64_t *id, int cap) {
  return list2(r, R_UID_OLDEST, uid, id, NULL, NULL, cap);
}

int gpd_store_purge_size_todo(gpd_store_purge_t *r, int64_t before, int64_t traced, int64_t now, int64_t *id,
                              int64_t *uid, int64_t *running, int cap) {
  sqlite3_bind_int64(r->st[R_SIZE_TODO], 2, traced);
  sqlite3_bind_int64(r->st[R_SIZE_TODO], 3, now);
  return list2(r, R_SIZE_TODO, before, id, uid, running, cap);
}

int64_t gpd_store_purge_size_of(gpd_store_purge_t *r, int64_t id, int64_t events) {
  return query1(r, R_SIZE_PROFILE, id, events, 0);
}

int gpd_store_purge_size_set(gpd_store_purge_t *r, int64_t id, int64_t uid, int64_t bytes, int final, uint64_t t_ns) {
  sqlite3_stmt *set = r->st[R_SIZE_SET];
  sqlite3_bind_int64(set, 1, id);
  sqlite3_bind_int64(set, 2, uid);
  sqlite3_bind_int64(set, 3, bytes);
  sqlite3_bind_int(set, 4, final);
  sqlite3_bind_int64(set, 5, (int64_t)t_ns);
  return run_returning(r, set, NULL, NULL, 0) < 0 ? GPD_ESTORE : 0;
}

int gpd_store_purge_uids(gpd_store_purge_t *r, uint32_t **uids, size_t *n) {
  size_t cap = 16;
  uint32_t *u = malloc(cap * sizeof *u);
  *uids = NULL;
  *n = 0;
  if (u == NULL)
    return -ENOMEM;
  sqlite3_stmt *q = r->st[R_UIDS];
  while (sqlite3_step(q) == SQLITE_ROW) {
    if (*n == cap) {
      uint32_t *nu = realloc(u, 2 * cap * sizeof *nu);
      if (nu == NULL)
        break;
      u = nu;
      cap *= 2;
    }
    u[(*n)++] = (uint32_t)sqlite3_column_int64(q, 0);
  }
  sqlite3_reset(q);
  *uids = u;
  return 0;
}

uint64_t gpd_store_purge_uid_use(gpd_store_purge_t *r, uint32_t uid) {
  return (uint64_t)query1(r, R_UID_PROFILES, uid, 0, 0) + (uint64_t)query1(r, R_UID_CTX, uid, 0, 0) +
         (uint64_t)query1(r, R_UID_BINS, uid, 0, 0);
}

uint64_t gpd_store_purge_live_use(gpd_store_purge_t *r, uint64_t id) {
  return (uint64_t)query1(r, R_LIVE_SIZE, (int64_t)id, 0, 0) + (uint64_t)query1(r, R_LIVE_BINS, (int64_t)id, 0, 0);
}

uint64_t gpd_store_purge_total(gpd_store_purge_t *r) {
  return (uint64_t)gpd_store_db_size(r->db) + (uint64_t)gpd_store_db_wal_size(r->db) +
         (uint64_t)query1(r, R_BINS_TOTAL, 0, 0, 0);
}

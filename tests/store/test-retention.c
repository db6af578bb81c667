/* test-retention.c - the store's retention pass (daemon/retention.c) on
 * real SQLite files made by gpd_dstore_open and filled with SQL
 * (store-fixture-retain.h):
 *   plans       every statement of the pass uses an index (EXPLAIN QUERY
 *               PLAN: no SCAN of a table but the work lists, no automatic
 *               index);
 *               the old orphan query on a file without the indexes does scan
 *   pass20k     20 000 contexts, 40 profiles, the store 40% over its
 *               limit: the oldest profiles go, exactly the contexts and
 *               frames no remaining profile reaches are removed, at most
 *               1 in 20 transactions over 100 ms (the budget is 10 ms; a
 *               loaded CI machine preempts some; times printed)
 *   stop        a pass over everything stops within 1 s of writer_stop,
 *               leaves no half-removed profile visible, and the next pass
 *               finishes the removal
 *   quota       uid A over its share loses its own oldest; uid B, within
 *               its share and with older profiles, loses nothing; the store
 *               over its limit with both within: the bigger user loses
 *   live_over   a uid over its share with only running profiles, the store
 *               over its limit: the other uid (within its share) keeps
 *               everything; once they end, the first loses its own oldest
 *   shared_ids  another user's rows with the same context ids (more than
 *               the pass samples) neither keep nor remove a user's contexts
 *   gpubins     a binary goes with the last profile that sent it (file and
 *               row), not while queued; a file without a row and a dead
 *               process's temporary file go at the first pass; uploads beyond a uid's share are
 *               refused with -EDQUOT, another uid's are not
 *   wal_bound   readers that keep the -wal busy (two threads, a read
 *               transaction each, always one open) while the writer's
 *               connection commits 20 MiB in 64 KiB transactions: after
 *               every commit the -wal (stat) is shorter than
 *               GPD_STORE_WAL_MAX, and a tight sampler never sees it past
 *               GPD_STORE_WAL_MAX plus one commit (< 32 frames; without
 *               the bound it grows past the 20 MiB); the pass's size total
 *               counts the -wal's bytes; after a pass the -wal is cut to 0
 *               bytes unless a reader holds it (then the pass does not wait
 *               for it, and the next pass cuts it)
 * With arguments it makes a store for the scripts instead:
 *   test-retention fill PATH UID NPROF NCTX WINDOW TRACE
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "gpuprof/clock.h"
#include "gpuprof/hash.h"
#include "gpuprof.pb-c.h"

#include "daemon.h"
#include "store-db.h"
#include "store-fixture-retain.h"
#include "dstore-internal.h"
#include "store-purge.h"
#include "sizer.h"
#include "store-sql.h"

typedef struct {
  gpd_daemon_t d;
  char dir[64], path[96];
  sqlite3 *db; /* the test's own connection */
} env_t;

static env_t *env_new(void) {
  env_t *e = calloc(1, sizeof *e);
  assert_non_null(e);
  snprintf(e->dir, sizeof e->dir, "/tmp/gpd-retain-XXXXXX");
  assert_non_null(mkdtemp(e->dir));
  snprintf(e->path, sizeof e->path, "%s/t.gpdb", e->dir);
  pthread_mutex_init(&e->d.lock, NULL);
  pthread_mutex_init(&e->d.reg_lock, NULL);
  pthread_cond_init(&e->d.writer_cv, NULL);
  e->d.cfg.flush_ms = 3600000; /* no flush between transactions unless asked */
  assert_int_equal(gpd_dstore_open(&e->d.store, e->path), 0);
  assert_int_equal(sqlite3_open(e->path, &e->db), SQLITE_OK);
  sqlite3_busy_timeout(e->db, 10000);
  return e;
}

static void env_free(env_t *e) {
  sqlite3_close(e->db);
  gpd_dstore_close(e->d.store);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", e->dir);
  assert_int_equal(system(cmd), 0);
  free(e);
}

static int64_t q1(env_t *e, const char *fmt, ...) {
  char sql[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(sql, sizeof sql, fmt, ap);
  va_end(ap);
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(e->db, sql, -1, &st, NULL) != SQLITE_OK)
    fail_msg("%s: %s", sql, sqlite3_errmsg(e->db));
  int64_t v = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
  sqlite3_finalize(st);
  return v;
}

static void fill(env_t *e, uint32_t uid, int64_t first, int nprof, int nctx, int window, int trace,
                 int64_t t0) {
  gpd_store_fixture_fill_t f = {uid, first, nprof, nctx, window, trace, t0};
  assert_int_equal(gpd_store_fixture_retain_fill(e->path, &f), 0);
}

static int64_t db_bytes(env_t *e) {
  return (q1(e, "PRAGMA page_count") - q1(e, "PRAGMA freelist_count")) * q1(e, "PRAGMA page_size");
}

/* contexts of uid reachable from its remaining profiles (root included) */
static int64_t reachable(env_t *e, uint32_t uid) {
  return q1(e,
            "WITH RECURSIVE r(id) AS (SELECT l.context_id FROM cct_local l JOIN profile p"
            " ON p.id = l.profile_id WHERE p.uid = %u UNION SELECT c.parent FROM context c"
            " JOIN r ON c.uid = %u AND c.id = r.id WHERE c.parent != 0)"
            " SELECT COUNT(*) FROM (SELECT id FROM r UNION SELECT 1)",
            uid, uid);
}

/* ------------------------------------------------------------- plans */

/* 1 when the plan of sql scans a table or builds an automatic index (a
 * scan of a bounded subquery's rows, CO-ROUTINE or MATERIALIZE, is not a
 * table scan). */
static int plan_scans(sqlite3 *db, const char *sql, char *why, size_t n) {
  char eq[4096], subs[8][64];
  int nsubs = 0;
  snprintf(eq, sizeof eq, "EXPLAIN QUERY PLAN %s", sql);
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(db, eq, -1, &st, NULL) != SQLITE_OK)
    fail_msg("%s: %s", sql, sqlite3_errmsg(db));
  char rows[32][256];
  int nrows = 0;
  while (sqlite3_step(st) == SQLITE_ROW && nrows < 32) {
    const char *d = (const char *)sqlite3_column_text(st, 3);
    snprintf(rows[nrows++], sizeof rows[0], "%.255s", d ? d : "");
    if (d && nsubs < 8 && (sscanf(d, "CO-ROUTINE %63s", subs[nsubs]) == 1 ||
                           sscanf(d, "MATERIALIZE %63s", subs[nsubs]) == 1))
      nsubs++;
  }
  sqlite3_finalize(st);
  int bad = 0;
  for (int i = 0; i < nrows; i++) {
    char what[64] = "";
    if (strstr(rows[i], "AUTOMATIC")) {
      bad = 1;
    } else if (sscanf(rows[i], "SCAN %63s", what) == 1 && strcmp(what, "CONSTANT") != 0) {
      int sub = 0;
      for (int k = 0; k < nsubs; k++)
        sub |= strcmp(subs[k], what) == 0;
      bad |= !sub;
    } else {
      continue;
    }
    if (bad) {
      snprintf(why, n, "%.255s", rows[i]);
      break;
    }
  }
  return bad;
}

static void test_plans(void **state) {
  (void)state;
  env_t *e = env_new();
  fill(e, 1000, 1, 4, 64, 16, 4, 1000); /* plans of a file with rows */
  size_t n = 0;
  const unsigned char *scan_ok = NULL;
  const char *const *sql = gpd__store_retain_sql(&n, &scan_ok);
  assert_true(n > 40);
  char why[256];
  for (size_t i = 0; i < n; i++) {
    int bad = plan_scans(e->db, sql[i], why, sizeof why);
    if (bad && !scan_ok[i])
      fail_msg("statement %zu scans (%s): %s", i, why, sql[i]);
  }
  /* the check catches the old statement on a file without the indexes */
  assert_int_equal(sqlite3_exec(e->db, "DROP INDEX metric_context; DROP INDEX cct_local_context;"
                                       " DROP INDEX context_parent;", NULL, NULL, NULL),
                   SQLITE_OK);
  assert_int_equal(plan_scans(e->db,
                              "DELETE FROM context AS x WHERE parent != 0 AND NOT EXISTS"
                              " (SELECT 1 FROM metric m JOIN profile p ON p.id=m.profile_id"
                              "  WHERE m.context_id=x.id AND p.uid=x.uid)",
                              why, sizeof why),
                   1);
  /* reopening makes them again (the upgrade of an older file) */
  gpd_dstore_close(e->d.store);
  assert_int_equal(gpd_dstore_open(&e->d.store, e->path), 0);
  assert_int_equal(q1(e, "SELECT COUNT(*) FROM sqlite_master WHERE name IN"
                         " ('metric_context','cct_local_context','context_parent')"),
                   3);
  env_free(e);
}

/* ------------------------------------------------------------ pass20k */

static void test_pass20k(void **state) {
  (void)state;
  env_t *e = env_new();
  fill(e, 1000, 1, 40, 20000, 1000, 2000, 1000000);
  int64_t before = db_bytes(e);
  assert_int_equal(q1(e, "SELECT COUNT(*) FROM context"), 20000);
  e->d.cfg.retain_bytes = (uint64_t)before * 6 / 10;
  e->d.cfg.retain_uid_bytes = 1ull << 40; /* one uid: the store's limit decides */
  uint64_t t0 = gpd_clock_ns();
  assert_int_equal(gpd_retention_run(&e->d, gpd_checkpoint_flush), 0);
  uint64_t dt = gpd_clock_ns() - t0;
  gpd_retain_stats_t *rs = &e->d.store->rstats;
  int64_t left = q1(e, "SELECT COUNT(*) FROM profile");
  int64_t after = db_bytes(e);
  printf("pass20k: %.1f MiB -> %.1f MiB (limit %.1f MiB), %lld of 40 profiles removed, %llu "
         "contexts; pass %.1f ms, %llu transactions, longest %.2f ms, %llu over 100 ms\n",
         before / 1048576.0, after / 1048576.0, e->d.cfg.retain_bytes / 1048576.0,
         (long long)(40 - left), (unsigned long long)rs->contexts, dt / 1e6,
         (unsigned long long)rs->txns, rs->txn_max_ns / 1e6, (unsigned long long)rs->txn_slow);
  assert_true(left > 0 && left < 40);
  assert_true((uint64_t)after <= e->d.cfg.retain_bytes);
  /* the oldest went: ids 1 .. 40-left */
  assert_int_equal(q1(e, "SELECT MIN(id) FROM profile"), 40 - left + 1);
  /* exactly the unreachable contexts went, with their frames */
  assert_int_equal(q1(e, "SELECT COUNT(*) FROM context"), reachable(e, 1000));
  assert_int_equal(q1(e, "SELECT COUNT(*) FROM frame"), q1(e, "SELECT COUNT(*) FROM context"));
  assert_int_equal(q1(e, "SELECT COUNT(*) FROM metric WHERE profile_id NOT IN (SELECT id FROM profile)"), 0);
  assert_int_equal(q1(e, "SELECT COUNT(*) FROM trace_event WHERE profile_id NOT IN (SELECT id FROM profile)"), 0);
  assert_int_equal(q1(e, "SELECT COUNT(*) FROM retain_drop") + q1(e, "SELECT COUNT(*) FROM retain_ctx"), 0);
  /* the work went in several short transactions (each commits after its
   * time budget, retention.c TXN_BUDGET_NS), not one; how long each took
   * is bench-retention's to measure, not a threshold here */
  assert_true(rs->txns >= 2);
  env_free(e);
}

/* --------------------------------------------------------------- stop */

static void *retain_thread(void *arg) {
  env_t *e = arg;
  intptr_t rc = gpd_retention_run(&e->d, gpd_checkpoint_flush);
  return (void *)rc;
}

static void test_stop(void **state) {
  (void)state;
  env_t *e = env_new();
  fill(e, 1000, 1, 40, 20000, 1000, 5000, 1000000);
  e->d.cfg.retain_bytes = 1; /* everything finished goes */
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, retain_thread, e), 0);
  /* wait (deadline 30 s) until the pass removed a profile, then stop it */
  uint64_t deadline = gpd_clock_ns() + 30000000000ull;
  while (q1(e, "SELECT COUNT(*) FROM profile") == 40 && gpd_clock_ns() < deadline)
    usleep(2000);
  assert_true(q1(e, "SELECT COUNT(*) FROM profile") < 40);
  pthread_mutex_lock(&e->d.lock);
  __atomic_store_n(&e->d.writer_stop, 1, __ATOMIC_RELAXED);
  pthread_mutex_unlock(&e->d.lock);
  uint64_t t_stop = gpd_clock_ns();
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_sec += 5;
  void *rc = NULL;
  assert_int_equal(pthread_timedjoin_np(t, &rc, &ts), 0);
  uint64_t dt = gpd_clock_ns() - t_stop;
  int64_t left = q1(e, "SELECT COUNT(*) FROM profile");
  printf("stop: returned %.1f ms after writer_stop, %lld of 40 profiles left, stopped=%d\n",
         dt / 1e6, (long long)left, e->d.store->rstats.stopped);
  assert_int_equal((intptr_t)rc, 0);
  assert_int_equal(e->d.store->rstats.stopped, 1);
  assert_true(left > 0); /* it stopped within the 5 s: the join's deadline */
  /* every profile still listed is whole */
  assert_int_equal(q1(e, "SELECT COUNT(*) FROM profile p WHERE (SELECT COUNT(*) FROM cct_local l"
                         " WHERE l.profile_id = p.id) != 1000"),
                   0);
  /* the next pass finishes the removal */
  e->d.writer_stop = 0;
  assert_int_equal(gpd_retention_run(&e->d, gpd_checkpoint_flush), 0);
  assert_int_equal(q1(e, "SELECT COUNT(*) FROM profile"), 0);
  assert_int_equal(q1(e, "SELECT COUNT(*) FROM context"), 1); /* the root */
  assert_int_equal(q1(e, "SELECT COUNT(*) FROM frame"), 1);
  assert_int_equal(q1(e, "SELECT COUNT(*) FROM metric") + q1(e, "SELECT COUNT(*) FROM cct_local") +
                       q1(e, "SELECT COUNT(*) FROM trace_event") + q1(e, "SELECT COUNT(*) FROM string"),
                   0);
  assert_int_equal(q1(e, "SELECT COUNT(*) FROM retain_drop") + q1(e, "SELECT COUNT(*) FROM retain_ctx"), 0);
  env_free(e);
}

/* -------------------------------------------------------------- quota */

/* the pass's estimate of uid's use (retention.c's per-row sizes) */
static int64_t use_of(env_t *e, uint32_t uid) {
  return q1(e, "SELECT COALESCE(SUM(bytes), 0) FROM profile_size WHERE uid = %u", uid) +
         96 * q1(e, "SELECT COUNT(*) FROM context WHERE uid = %u", uid) +
         64 * q1(e, "SELECT COUNT(*) FROM frame WHERE uid = %u", uid);
}

static void test_quota(void **state) {
  (void)state;
  env_t *e = env_new();
  /* B: 3 small profiles, older than all of A's 30 */
  fill(e, 2000, 1, 3, 500, 400, 200, 1000);
  fill(e, 1000, 100, 30, 2000, 200, 500, 1000000);
  e->d.cfg.retain_bytes = 1ull << 40;
  e->d.cfg.retain_uid_bytes = 1ull << 40;
  assert_int_equal(gpd_retention_run(&e->d, gpd_checkpoint_flush), 0); /* counts, removes nothing */
  assert_int_equal(q1(e, "SELECT COUNT(*) FROM profile"), 33);
  int64_t ua = use_of(e, 1000), ub = use_of(e, 2000);
  printf("quota: use A %lld, B %lld bytes (estimates)\n", (long long)ua, (long long)ub);
  assert_true(ua > 3 * ub);
  /* a share between the two: A is over it, B within */
  uint64_t share = (uint64_t)(ub + (ua - ub) / 2);
  e->d.cfg.retain_uid_bytes = share;
  e->d.store->use_t_ns = 0; /* count at once */
  assert_int_equal(gpd_retention_run(&e->d, gpd_checkpoint_flush), 0);
  int64_t a_left = q1(e, "SELECT COUNT(*) FROM profile WHERE uid = 1000");
  printf("quota: share %llu: A keeps %lld of 30 (use %lld), B %lld of 3\n",
         (unsigned long long)share, (long long)a_left, (long long)use_of(e, 1000),
         (long long)q1(e, "SELECT COUNT(*) FROM profile WHERE uid = 2000"));
  assert_int_equal(q1(e, "SELECT COUNT(*) FROM profile WHERE uid = 2000"), 3);
  assert_true(a_left > 0 && a_left < 30);
  assert_true(use_of(e, 1000) <= (int64_t)share);
  /* A's oldest went */
  assert_int_equal(q1(e, "SELECT MIN(id) FROM profile WHERE uid = 1000"), 100 + 30 - a_left);
  assert_int_equal(q1(e, "SELECT COUNT(*) FROM context WHERE uid = 1000"), reachable(e, 1000));
  assert_int_equal(q1(e, "SELECT COUNT(*) FROM context WHERE uid = 2000"), 500);

  /* both within their shares, the store over its limit: A (the bigger
   * use, the furthest over a share) loses first, B nothing */
  e->d.cfg.retain_uid_bytes = 1ull << 40;
  int64_t total = db_bytes(e);
  e->d.cfg.retain_bytes = (uint64_t)total - (uint64_t)total / 8;
  e->d.store->use_t_ns = 0;
  assert_int_equal(gpd_retention_run(&e->d, gpd_checkpoint_flush), 0);
  int64_t a2 = q1(e, "SELECT COUNT(*) FROM profile WHERE uid = 1000");
  printf("quota: store limit %llu: A keeps %lld, B %lld; store %lld bytes\n",
         (unsigned long long)e->d.cfg.retain_bytes, (long long)a2,
         (long long)q1(e, "SELECT COUNT(*) FROM profile WHERE uid = 2000"), (long long)db_bytes(e));
  assert_true(a2 < a_left);
  assert_int_equal(q1(e, "SELECT COUNT(*) FROM profile WHERE uid = 2000"), 3);
  assert_true((uint64_t)db_bytes(e) <= e->d.cfg.retain_bytes);
  env_free(e);
}

/* A uid over its share whose every profile is live (running: never
 * removed) and the store over its limit: the other uid, within its share,
 * keeps every profile (rule 3 waits while a uid is over its share; it used
 * to take the within-share uid's oldest, the over-share one having nothing
 * removable). */
static void test_live_over(void **state) {
  (void)state;
  env_t *e = env_new();
  fill(e, 2000, 1, 3, 500, 400, 200, 1000);          /* B: older, small */
  fill(e, 1000, 100, 10, 2000, 400, 500, 1000000);   /* A: big, all running */
  gpd_proc_t *procs = calloc(10, sizeof *procs);
  assert_non_null(procs);
  for (int i = 0; i < 10; i++) {
    procs[i].profile_id = (uint64_t)(100 + i);
    procs[i].uid = 1000;
    procs[i].state = GPD_PROC_RUNNING;
    procs[i].next = i + 1 < 10 ? &procs[i + 1] : NULL;
  }
  e->d.procs = procs;
  e->d.nprocs = 10;
  e->d.cfg.retain_bytes = 1ull << 40;
  e->d.cfg.retain_uid_bytes = 1ull << 40;
  assert_int_equal(gpd_retention_run(&e->d, gpd_checkpoint_flush), 0); /* counts, removes nothing */
  int64_t ua = use_of(e, 1000), ub = use_of(e, 2000), total = db_bytes(e);
  assert_true(ua > 3 * ub);
  e->d.cfg.retain_uid_bytes = (uint64_t)(ub + (ua - ub) / 2); /* A over, B within */
  e->d.cfg.retain_bytes = (uint64_t)(total - total / 8);     /* the store over */
  e->d.store->use_t_ns = 0;
  assert_int_equal(gpd_retention_run(&e->d, gpd_checkpoint_flush), 0);
  printf("live_over: use A %lld (all live), B %lld; share %llu, limit %llu, store %lld: "
         "A keeps %lld of 10, B %lld of 3\n", (long long)ua, (long long)ub,
         (unsigned long long)e->d.cfg.retain_uid_bytes, (unsigned long long)e->d.cfg.retain_bytes,
         (long long)db_bytes(e), (long long)q1(e, "SELECT COUNT(*) FROM profile WHERE uid = 1000"),
         (long long)q1(e, "SELECT COUNT(*) FROM profile WHERE uid = 2000"));
  assert_int_equal(q1(e, "SELECT COUNT(*) FROM profile WHERE uid = 1000"), 10);
  assert_int_equal(q1(e, "SELECT COUNT(*) FROM profile WHERE uid = 2000"), 3);
  assert_int_equal(q1(e, "SELECT COUNT(*) FROM context WHERE uid = 2000"), 500);
  /* A's processes end: A loses its own oldest until within its share */
  for (int i = 0; i < 10; i++)
    procs[i].state = GPD_PROC_EXITED;
  e->d.store->use_t_ns = 0;
  assert_int_equal(gpd_retention_run(&e->d, gpd_checkpoint_flush), 0);
  int64_t a_left = q1(e, "SELECT COUNT(*) FROM profile WHERE uid = 1000");
  printf("live_over: A ended: A keeps %lld of 10, B %lld of 3\n", (long long)a_left,
         (long long)q1(e, "SELECT COUNT(*) FROM profile WHERE uid = 2000"));
  assert_true(a_left > 0 && a_left < 10);
  assert_int_equal(q1(e, "SELECT MIN(id) FROM profile WHERE uid = 1000"), 100 + 10 - a_left);
  assert_int_equal(q1(e, "SELECT COUNT(*) FROM profile WHERE uid = 2000"), 3);
  e->d.procs = NULL;
  e->d.nprocs = 0;
  free(procs);
  env_free(e);
}

/* ------------------------------------------------------- trace sizes */

/* A profile's trace rows are sized from the tracing threads' counts, not
 * counted row by row (retention.c, size_profiles): a running profile's
 * from memory (trace_n), an ended one's from its trace_stat row, and a
 * file without one (an older daemon's) by counting.  Profiles 1-3 are
 * alike but for that: 1000 trace rows each; 1 has trace_stat events 10,
 * 2 none (counted: 1000), 3 is running with 5000 events handed over. */
static void test_trace_size(void **state) {
  (void)state;
  env_t *e = env_new();
  fill(e, 1000, 1, 3, 50, 50, 1000, 1000);
  assert_int_equal(sqlite3_exec(e->db, "INSERT INTO trace_stat VALUES(1, 10, 0, 0);"
                                       "UPDATE profile SET state = 'running' WHERE id = 3",
                                NULL, NULL, NULL),
                   SQLITE_OK);
  gpd_proc_t live;
  memset(&live, 0, sizeof live);
  live.profile_id = 3;
  live.uid = 1000;
  live.state = GPD_PROC_RUNNING;
  live.prof.trace_n = 5000;
  e->d.procs = &live;
  e->d.nprocs = 1;
  e->d.cfg.retain_bytes = 1ull << 40;
  e->d.cfg.retain_uid_bytes = 1ull << 40;
  assert_int_equal(gpd_retention_run(&e->d, gpd_checkpoint_flush), 0);
  int64_t b1 = q1(e, "SELECT bytes FROM profile_size WHERE profile_id = 1");
  int64_t b2 = q1(e, "SELECT bytes FROM profile_size WHERE profile_id = 2");
  int64_t b3 = q1(e, "SELECT bytes FROM profile_size WHERE profile_id = 3");
  assert_true(b1 > 0);
  assert_int_equal(b2 - b1, (1000 - 10) * 56);
  assert_int_equal(b3 - b1, (5000 - 10) * 56);
  e->d.procs = NULL;
  e->d.nprocs = 0;
  env_free(e);
}

/* The sizer thread (sizer.c) estimates on its own connection what the
 * writer would: its three results equal the sizes an inline pass stores. */
static void test_sizer(void **state) {
  (void)state;
  env_t *e = env_new();
  fill(e, 1000, 1, 3, 50, 50, 100, 1000);
  assert_int_equal(gpd_sizer_start(&e->d), 0);
  assert_non_null(e->d.sizer);
  gpd_size_res_t res[8];
  uint32_t n = 0;
  uint64_t deadline = gpd_clock_ns() + 10000000000ull;
  while (n < 3 && gpd_clock_ns() < deadline) {
    n += gpd_sizer_take(&e->d, res + n, 8 - n);
    if (n < 3)
      usleep(10000);
  }
  gpd_sizer_free(&e->d);
  assert_null(e->d.sizer);
  assert_int_equal(n, 3);
  e->d.cfg.retain_bytes = 1ull << 40;
  e->d.cfg.retain_uid_bytes = 1ull << 40;
  assert_int_equal(gpd_retention_run(&e->d, gpd_checkpoint_flush), 0); /* inline now */
  for (uint32_t i = 0; i < n; i++) {
    assert_int_equal(res[i].final, 1);
    assert_int_equal(res[i].uid, 1000);
    assert_int_equal(res[i].bytes, q1(e, "SELECT bytes FROM profile_size WHERE profile_id = %lld", (long long)res[i].id));
  }
  env_free(e);
}

/* --------------------------------------------------------- shared ids */

/* Context ids are hashes of calling paths: another user running the same
 * program has rows with the same ids.  uid 2000's 300 profiles come first
 * in every context's rows (more than the pass samples by context), so
 * uid 1000's reference is found through its own profiles. */
static void test_shared_ids(void **state) {
  (void)state;
  env_t *e = env_new();
  uint64_t later = gpd_clock_ns() + 3600000000000ull;
  fill(e, 2000, 1, 300, 10, 8, 0, (int64_t)later);
  fill(e, 1000, 1001, 2, 10, 8, 0, 1000);
  char sql[128];
  snprintf(sql, sizeof sql, "UPDATE profile SET end_ns = %llu WHERE id = 1002",
           (unsigned long long)later);
  assert_int_equal(sqlite3_exec(e->db, sql, NULL, NULL, NULL), SQLITE_OK);
  e->d.cfg.retain_age_s = 1;
  assert_int_equal(gpd_retention_run(&e->d, gpd_checkpoint_flush), 0);
  assert_int_equal(q1(e, "SELECT COUNT(*) FROM profile WHERE uid = 1000"), 1);
  assert_int_equal(q1(e, "SELECT COUNT(*) FROM context WHERE uid = 1000"), 10); /* 1002 keeps them */
  assert_int_equal(sqlite3_exec(e->db, "UPDATE profile SET end_ns = 5 WHERE id = 1002", NULL, NULL, NULL),
                   SQLITE_OK);
  assert_int_equal(gpd_retention_run(&e->d, gpd_checkpoint_flush), 0);
  assert_int_equal(q1(e, "SELECT COUNT(*) FROM profile WHERE uid = 1000"), 0);
  assert_int_equal(q1(e, "SELECT COUNT(*) FROM context WHERE uid = 1000"), 1);
  assert_int_equal(q1(e, "SELECT COUNT(*) FROM context WHERE uid = 2000"), 10);
  assert_int_equal(q1(e, "SELECT COUNT(*) FROM profile WHERE uid = 2000"), 300);
  env_free(e);
}

/* ------------------------------------------------------------ gpubins */

static void put_bin(env_t *e, const char *hash, size_t size) {
  char p[256];
  snprintf(p, sizeof p, "%s/gpubins/%s.gpubin", e->dir, hash);
  int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  assert_true(fd >= 0);
  assert_int_equal(ftruncate(fd, (off_t)size), 0);
  close(fd);
}

static int has_file(env_t *e, const char *hash) {
  char p[256];
  snprintf(p, sizeof p, "%s/gpubins/%s.gpubin", e->dir, hash);
  return access(p, F_OK) == 0;
}

static int upload(env_t *e, uint32_t uid, uint64_t profile, unsigned seed, size_t size) {
  uint8_t *b = malloc(size);
  assert_non_null(b);
  for (size_t i = 0; i < size; i++)
    b[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 9));
  char h[33];
  gpd_hash128_hex(b, size, h);
  Gpuprof__GpuBinary m = GPUPROF__GPU_BINARY__INIT;
  m.hash = h;
  m.kind = "cubin";
  m.total_size = size;
  m.data.data = b;
  m.data.len = size;
  gpd_gpubin_t g;
  memset(&g, 0, sizeof g);
  g.fd = -1;
  char err[256] = "";
  int rc = gpd_gpubin_store(&e->d, &g, profile, uid, &m, err, sizeof err);
  if (rc < 0)
    printf("upload uid %u: %s\n", uid, err);
  free(b);
  return rc;
}

static void test_gpubins(void **state) {
  (void)state;
  env_t *e = env_new();
  const char *h1 = "11111111111111111111111111111111", *h2 = "22222222222222222222222222222222",
             *h3 = "33333333333333333333333333333333";
  char dir[128];
  snprintf(dir, sizeof dir, "%s/gpubins", e->dir);
  assert_int_equal(mkdir(dir, 0700), 0);
  put_bin(e, h1, 1000);
  put_bin(e, h2, 2000);
  put_bin(e, h3, 3000);
  /* left by a killed daemon: a file whose row was never committed and an
   * upload's temporary file (pid 999999): gone after the first pass */
  const char *h4 = "44444444444444444444444444444444";
  put_bin(e, h4, 4000);
  char tmpf[256];
  snprintf(tmpf, sizeof tmpf, "%s/gpubins/.%s.999999.1.0123456789abcdef.tmp", e->dir, h4);
  int tfd = open(tmpf, O_WRONLY | O_CREAT, 0600);
  assert_true(tfd >= 0);
  close(tfd);
  uint64_t now = gpd_clock_ns();
  char sql[2048];
  snprintf(sql, sizeof sql,
           "INSERT INTO profile(id,pid,uid,gid,start_ns,end_ns,state) VALUES"
           " (1,1,1000,1000,1,2,'exited'),(2,2,1000,1000,%llu,%llu,'exited');"
           "INSERT INTO gpubin VALUES('%s','cubin',1000,'gpubins/%s.gpubin',1),"
           " ('%s','cubin',2000,'gpubins/%s.gpubin',1),('%s','cubin',3000,'gpubins/%s.gpubin',1);"
           "INSERT INTO gpubin_ref VALUES(1,'%s',1000),(2,'%s',1000),(1,'%s',1000);"
           "INSERT INTO retain_bin VALUES('%s');",
           (unsigned long long)now, (unsigned long long)now + 10000000000ull, h1, h1, h2, h2, h3, h3, h1, h1, h2, h3);
  assert_int_equal(sqlite3_exec(e->db, sql, NULL, NULL, NULL), SQLITE_OK);
  /* h3: no profile refers to it, but a row of it is queued */
  gpubin_row_t *row = calloc(1, sizeof *row);
  assert_non_null(row);
  snprintf(row->hash, sizeof row->hash, "%s", h3);
  e->d.store->gpubins = row;
  e->d.cfg.retain_age_s = 1; /* profile 1 is too old, 2 ends in the future */
  assert_int_equal(gpd_retention_run(&e->d, gpd_checkpoint_flush), 0);
  assert_int_equal(q1(e, "SELECT COUNT(*) FROM profile"), 1);
  assert_false(has_file(e, h4));
  assert_int_equal(access(tmpf, F_OK), -1);
  assert_false(has_file(e, h2));
  assert_int_equal(q1(e, "SELECT COUNT(*) FROM gpubin WHERE hash='%s'", h2), 0);
  assert_true(has_file(e, h1)); /* profile 2 still refers to it */
  assert_true(has_file(e, h3)); /* queued */
  assert_int_equal(q1(e, "SELECT COUNT(*) FROM retain_bin"), 1);
  e->d.store->gpubins = NULL;
  free(row);
  assert_int_equal(sqlite3_exec(e->db, "UPDATE profile SET end_ns = 5 WHERE id = 2", NULL, NULL, NULL),
                   SQLITE_OK);
  assert_int_equal(gpd_retention_run(&e->d, gpd_checkpoint_flush), 0);
  assert_false(has_file(e, h1));
  assert_false(has_file(e, h3));
  assert_int_equal(q1(e, "SELECT COUNT(*) FROM gpubin") + q1(e, "SELECT COUNT(*) FROM gpubin_ref") +
                       q1(e, "SELECT COUNT(*) FROM retain_bin"),
                   0);

  /* uploads: share 2 MiB (half of 4 MiB); 1 MiB binaries */
  e->d.cfg.retain_bytes = 4u << 20;
  e->d.cfg.retain_age_s = 0;
  assert_int_equal(upload(e, 1000, 7, 1, 1u << 20), 0);
  assert_int_equal(upload(e, 1000, 7, 2, 1u << 20), 0);
  assert_int_equal(upload(e, 1000, 7, 3, 1u << 20), -EDQUOT); /* 2 MiB queued */
  assert_int_equal(upload(e, 2000, 8, 4, 1u << 20), 0);      /* another uid */
  assert_int_equal(upload(e, 1000, 7, 1, 1u << 20), 0);      /* stored already: no new bytes */
  assert_int_equal(gpd_checkpoint_flush(&e->d), 0);
  assert_int_equal(q1(e, "SELECT COUNT(*) FROM gpubin"), 3);
  assert_int_equal(q1(e, "SELECT COUNT(*) FROM gpubin_ref WHERE uid = 1000"), 2);
  assert_int_equal(upload(e, 1000, 7, 5, 1u << 20), -EDQUOT); /* committed, not counted yet */
  assert_int_equal(upload(e, 1000, 7, 6, 3u << 20), -EDQUOT); /* over the share alone */
  env_free(e);
}

/* ---------------------------------------------------------- wal_bound */

typedef struct {
  env_t *e;
  int stop;         /* atomic: the threads end */
  int64_t seen_max; /* the sampler's longest -wal, bytes */
  int reading;      /* atomic: readers that opened a read transaction */
  int errors;       /* atomic: the readers' failed statements */
} walrun_t;

static int64_t wal_stat(env_t *e) {
  char p[128];
  struct stat st;
  snprintf(p, sizeof p, "%s-wal", e->path);
  return stat(p, &st) == 0 ? (int64_t)st.st_size : 0;
}

/* A read transaction open for ~1 ms, over and over, on its own connection. */
static void *wal_reader(void *arg) {
  walrun_t *r = arg;
  sqlite3 *db = NULL; /* failures are counted: cmocka asserts on the test's thread only */
  if (sqlite3_open_v2(r->e->path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
    __atomic_fetch_add(&r->errors, 1, __ATOMIC_RELAXED);
  sqlite3_busy_timeout(db, 10000);
  while (!__atomic_load_n(&r->stop, __ATOMIC_RELAXED)) {
    if (sqlite3_exec(db, "BEGIN; SELECT COUNT(*) FROM wal_fill;", NULL, NULL, NULL) != SQLITE_OK)
      __atomic_fetch_add(&r->errors, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&r->reading, 1, __ATOMIC_RELAXED);
    usleep(1000);
    if (sqlite3_exec(db, "COMMIT;", NULL, NULL, NULL) != SQLITE_OK)
      __atomic_fetch_add(&r->errors, 1, __ATOMIC_RELAXED);
  }
  sqlite3_close(db);
  return NULL;
}

/* stat of the -wal as often as it can */
static void *wal_sampler(void *arg) {
  walrun_t *r = arg;
  while (!__atomic_load_n(&r->stop, __ATOMIC_RELAXED)) {
    int64_t n = wal_stat(r->e);
    if (n > r->seen_max)
      r->seen_max = n;
  }
  return NULL;
}

static void test_wal_bound(void **state) {
  (void)state;
  env_t *e = env_new();
  sqlite3 *w = e->d.store->wdb; /* the writer's connection (gpd_store_db_open) */
  assert_int_equal(gpd_store_db_exec(w, "CREATE TABLE wal_fill(b BLOB);"), 0);
  walrun_t r = {.e = e};
  pthread_t rd[2], sm;
  for (int i = 0; i < 2; i++) {
    assert_int_equal(pthread_create(&rd[i], NULL, wal_reader, &r), 0);
    usleep(500); /* the second reader half a transaction later: always one open */
  }
  assert_int_equal(pthread_create(&sm, NULL, wal_sampler, &r), 0);
  int64_t after_max = 0, grow_max = 0;
  for (int i = 0; i < 320; i++) { /* 20 MiB */
    int64_t before = wal_stat(e);
    assert_int_equal(gpd_store_db_begin(w), 0);
    assert_int_equal(gpd_store_db_exec(w, "INSERT INTO wal_fill VALUES(randomblob(65536));"), 0);
    assert_int_equal(gpd_store_db_commit(w), 0);
    int64_t after = wal_stat(e);
    if (after > after_max)
      after_max = after;
    if (after > before && after - before > grow_max)
      grow_max = after - before;
  }
  __atomic_store_n(&r.stop, 1, __ATOMIC_RELAXED);
  for (int i = 0; i < 2; i++)
    pthread_join(rd[i], NULL);
  pthread_join(sm, NULL);
  printf("wal_bound: -wal after a commit at most %lld bytes, sampled at most %lld (bound %lld; "
         "largest commit seen %lld), %d read transactions\n",
         (long long)after_max, (long long)r.seen_max, (long long)GPD_STORE_WAL_MAX, (long long)grow_max,
         r.reading);
  assert_int_equal(r.errors, 0);
  assert_true(r.reading > 100); /* the readers were there all along */
  assert_true(after_max < GPD_STORE_WAL_MAX);
  /* a commit is 64 KiB of blob plus its b-tree and pointer-map pages:
   * fewer than 32 frames (a page and its 24-byte header each) */
  int64_t frames32 = 32 * (q1(e, "PRAGMA page_size") + 24);
  assert_true(grow_max > 0 && grow_max < frames32);
  assert_true(r.seen_max < GPD_STORE_WAL_MAX + frames32);

  /* the pass's total counts the -wal (passive checkpoints off: the -wal
   * keeps what is written, a reader's snapshot stays in it) */
  assert_int_equal(gpd_store_db_autocheckpoint(w, 1u << 30), 0);
  while (wal_stat(e) <= GPD_STORE_WAL_KEEP) {
    assert_int_equal(gpd_store_db_begin(w), 0);
    assert_int_equal(gpd_store_db_exec(w, "DELETE FROM wal_fill WHERE rowid IN (SELECT rowid FROM wal_fill LIMIT 4);"
                                          " INSERT INTO wal_fill VALUES(randomblob(65536));"),
                     0);
    assert_int_equal(gpd_store_db_commit(w), 0);
  }
  gpd_store_purge_t *pg = NULL;
  assert_int_equal(gpd_store_purge_open(w, &pg), 0);
  int64_t wal = wal_stat(e);
  assert_int_equal((int64_t)gpd_store_purge_total(pg), db_bytes(e) + wal);
  gpd_store_purge_close(pg);

  /* a reader holds the -wal: the pass does not wait for it, the -wal stays */
  sqlite3 *hold = NULL;
  assert_int_equal(sqlite3_open_v2(e->path, &hold, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
  assert_int_equal(sqlite3_exec(hold, "BEGIN; SELECT COUNT(*) FROM wal_fill;", NULL, NULL, NULL), SQLITE_OK);
  /* frames newer than its snapshot: no checkpoint can finish while it reads */
  assert_int_equal(gpd_store_db_exec(w, "INSERT INTO wal_fill VALUES(randomblob(100));"), 0);
  uint64_t t0 = gpd_clock_ns();
  assert_int_equal(gpd_retention_run(&e->d, gpd_checkpoint_flush), 0);
  uint64_t dt = gpd_clock_ns() - t0;
  printf("wal_bound: pass beside a reader %.1f ms, -wal %lld -> %lld bytes\n", dt / 1e6, (long long)wal,
         (long long)wal_stat(e));
  assert_true(wal_stat(e) > GPD_STORE_WAL_KEEP);
  assert_true(dt < 5000000000ull); /* not the 10 s busy timeout */
  /* once it ends, the next pass cuts the -wal to nothing */
  assert_int_equal(sqlite3_exec(hold, "COMMIT;", NULL, NULL, NULL), SQLITE_OK);
  sqlite3_close(hold);
  assert_int_equal(gpd_retention_run(&e->d, gpd_checkpoint_flush), 0);
  assert_int_equal(wal_stat(e), 0);
  env_free(e);
}

int main(int argc, char **argv) {
  if (argc == 8 && strcmp(argv[1], "fill") == 0) {
    gpd_dstore_t *st = NULL;
    gpd_store_fixture_fill_t f = {(uint32_t)atoi(argv[3]), 1, atoi(argv[4]), atoi(argv[5]), atoi(argv[6]),
                                  atoi(argv[7]), 1000000};
    if (gpd_dstore_open(&st, argv[2]) < 0)
      return 1;
    int rc = gpd_store_fixture_retain_fill(argv[2], &f) == 0 ? 0 : 1;
    gpd_dstore_close(st);
    return rc;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_plans), cmocka_unit_test(test_pass20k), cmocka_unit_test(test_stop),
      cmocka_unit_test(test_quota), cmocka_unit_test(test_live_over), cmocka_unit_test(test_shared_ids),
      cmocka_unit_test(test_gpubins), cmocka_unit_test(test_wal_bound), cmocka_unit_test(test_trace_size),
      cmocka_unit_test(test_sizer),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

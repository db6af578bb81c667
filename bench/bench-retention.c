/* bench-retention - one retention pass at 5 000 and 20 000 contexts: the
 * daemon's pass (daemon/retention.c) against the statements it replaced
 * (the baseline: no index on metric / cct_local by context or on context
 * by (uid, parent), each profile removed in one transaction, then the
 * orphan DELETE ... NOT EXISTS repeated until it removes nothing), on
 * copies of one synthetic store (tests/store/retain-fill.h: 40 finished
 * profiles of one uid, each over a twentieth of the contexts, 2 000
 * trace rows each), the limit at 60 % of the store's size
 * (docs/PERFORMANCE.md, "Retention").
 *
 *   bench-retention [--contexts 5000,20000] [--old-limit-s 120] [--dir DIR]
 *
 * The baseline stops after --old-limit-s (then its time is a lower bound,
 * marked ">").  "longest hold" is the longest time the writer's
 * connection held the write lock without a break: one transaction of the
 * new pass; one statement of the old one (each ran on its own).  The
 * last column is what the retention indexes cost the writes: the store's
 * rows written in one transaction into a file with them and without.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "gpuprof/clock.h"

#include "daemon.h"
#include "retain-fill.h"
#include "store-internal.h"

static void die(const char *what) {
  fprintf(stderr, "bench-retention: %s\n", what);
  exit(1);
}

static int64_t q1(sqlite3 *db, const char *sql) {
  sqlite3_stmt *st = NULL;
  int64_t v = -1;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
    v = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  return v;
}

static int64_t db_bytes(sqlite3 *db) {
  return (q1(db, "PRAGMA page_count") - q1(db, "PRAGMA freelist_count")) * q1(db, "PRAGMA page_size");
}

/* ------------------------------------------------- the old statements */

typedef struct {
  uint64_t hold_max_ns;
  int removed, timed_out;
} old_run_t;

static int old_exec(sqlite3 *db, const char *sql, old_run_t *o, int timed) {
  uint64_t t = gpd_clock_ns();
  int rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
  uint64_t dt = gpd_clock_ns() - t;
  if (timed && dt > o->hold_max_ns)
    o->hold_max_ns = dt;
  return rc == SQLITE_OK ? 0 : -1;
}

/* retention.c before issue 23, by size only; stops at deadline */
static void old_retain(sqlite3 *db, uint64_t max_bytes, uint64_t deadline, old_run_t *o) {
  static const char *tabs[] = {"metric", "cct_local", "string", "module", "backend", "pending",
                               "ring_cursor", "cpu_counter", "pcsample", "pcsample_cubin",
                               "pcsample_stat", "cpu_sample_stat", "trace_event", "trace_launch",
                               "trace_stat", "trace_duty", "trace_duty_launch", "trace_window"};
  for (int round = 0; round < 4096; round++) {
    if (gpd_clock_ns() > deadline) {
      o->timed_out = 1;
      return;
    }
    if ((uint64_t)db_bytes(db) <= max_bytes)
      return;
    int64_t victim = q1(db, "SELECT id FROM profile WHERE state != 'running'"
                            " ORDER BY COALESCE(end_ns, start_ns, 0), id LIMIT 1");
    if (victim < 0)
      return;
    char sql[4096];
    int n = snprintf(sql, sizeof sql, "BEGIN IMMEDIATE;");
    for (size_t i = 0; i < sizeof tabs / sizeof tabs[0]; i++)
      n += snprintf(sql + n, sizeof sql - (size_t)n, "DELETE FROM %s WHERE profile_id=%lld;", tabs[i],
                    (long long)victim);
    snprintf(sql + n, sizeof sql - (size_t)n,
             "DELETE FROM trace_cpu_sample WHERE profile=%lld; DELETE FROM profile WHERE id=%lld;"
             " COMMIT;",
             (long long)victim, (long long)victim);
    if (old_exec(db, sql, o, 1) < 0)
      die("old: delete profile");
    o->removed++;
    for (int k = 0; k < 256; k++) {
      if (gpd_clock_ns() > deadline) {
        o->timed_out = 1;
        return;
      }
      if (old_exec(db,
                   "DELETE FROM context AS x WHERE parent != 0 AND NOT EXISTS"
                   " (SELECT 1 FROM metric m JOIN profile p ON p.id=m.profile_id"
                   "  WHERE m.context_id=x.id AND p.uid=x.uid)"
                   " AND NOT EXISTS (SELECT 1 FROM cct_local l JOIN profile p ON p.id=l.profile_id"
                   "  WHERE l.context_id=x.id AND p.uid=x.uid)"
                   " AND NOT EXISTS (SELECT 1 FROM context y WHERE y.uid=x.uid AND y.parent=x.id);",
                   o, 1) < 0)
        die("old: contexts");
      if (sqlite3_changes(db) == 0)
        break;
    }
    old_exec(db, "DELETE FROM frame AS f WHERE NOT EXISTS (SELECT 1 FROM context c"
                 " WHERE c.uid=f.uid AND c.id=f.context_id);", o, 1);
    old_exec(db, "PRAGMA incremental_vacuum;", o, 1);
  }
}

/* ------------------------------------------------------------- driver */

static void copy_file(const char *from, const char *to) {
  char cmd[2 * PATH_MAX + 16];
  snprintf(cmd, sizeof cmd, "cp '%s' '%s'", from, to);
  if (system(cmd) != 0)
    die("cp");
}

static void one(const char *dir, int nctx, double old_limit_s) {
  char a[1024], b[1024];
  snprintf(a, sizeof a, "%s/ret-%d.gpdb", dir, nctx);
  snprintf(b, sizeof b, "%s/ret-%d-old.gpdb", dir, nctx);
  unlink(a);
  unlink(b);
  gpd_store_t *st = NULL;
  sqlite3 *db = NULL;
  retain_fill_t f = {1000, 1, 40, nctx, nctx / 20, 2000, 1000000};
  /* what the indexes cost the writes: the same rows into a file without
   * them (one transaction, as a flush writes) */
  char c[1100];
  snprintf(c, sizeof c, "%s/ret-%d-noidx.gpdb", dir, nctx);
  unlink(c);
  if (gpd_store_open(&st, c) < 0 || sqlite3_open(c, &db) != SQLITE_OK)
    die("open");
  sqlite3_exec(db, "DROP INDEX metric_context; DROP INDEX cct_local_context; DROP INDEX context_parent;"
                   " DROP INDEX profile_end; DROP INDEX profile_uid_age;", NULL, NULL, NULL);
  uint64_t tf = gpd_clock_ns();
  if (retain_fill(db, &f) < 0)
    die("fill");
  double fill_plain = (double)(gpd_clock_ns() - tf) / 1e9;
  sqlite3_close(db);
  gpd_store_close(st);
  unlink(c);
  if (gpd_store_open(&st, a) < 0 || sqlite3_open(a, &db) != SQLITE_OK)
    die("open");
  tf = gpd_clock_ns();
  if (retain_fill(db, &f) < 0)
    die("fill");
  double fill_idx = (double)(gpd_clock_ns() - tf) / 1e9;
  sqlite3_exec(db, "PRAGMA wal_checkpoint(TRUNCATE);", NULL, NULL, NULL);
  int64_t size = db_bytes(db);
  uint64_t limit = (uint64_t)size * 6 / 10;
  sqlite3_close(db);
  gpd_store_close(st);
  copy_file(a, b);

  /* after: the daemon's pass */
  gpd_daemon_t d;
  memset(&d, 0, sizeof d);
  pthread_mutex_init(&d.lock, NULL);
  pthread_mutex_init(&d.reg_lock, NULL);
  pthread_cond_init(&d.writer_cv, NULL);
  d.cfg.flush_ms = 1000;
  d.cfg.retain_bytes = limit;
  d.cfg.retain_uid_bytes = 1ull << 40;
  if (gpd_store_open(&d.store, a) < 0)
    die("open a");
  uint64_t t = gpd_clock_ns();
  if (gpd_store_retain(&d, gpd_store_flush) < 0)
    die("retain");
  double new_s = (double)(gpd_clock_ns() - t) / 1e9;
  gpd_retain_stats_t rs = d.store->rstats;
  gpd_store_close(d.store);

  /* before: the old statements on the old schema */
  if (sqlite3_open(b, &db) != SQLITE_OK)
    die("open b");
  sqlite3_busy_timeout(db, 10000);
  sqlite3_exec(db, "DROP INDEX metric_context; DROP INDEX cct_local_context; DROP INDEX context_parent;"
                   " DROP INDEX profile_end; DROP INDEX profile_uid_age;", NULL, NULL, NULL);
  old_run_t o = {0};
  t = gpd_clock_ns();
  old_retain(db, limit, t + (uint64_t)(old_limit_s * 1e9), &o);
  double old_s = (double)(gpd_clock_ns() - t) / 1e9;
  sqlite3_close(db);
  printf("| %6d | %5.1f MiB | %s%.2f s | %d | %.0f ms | %.2f s | %llu | %.1f ms | %llu | %s%.0fx |"
         " %.2f / %.2f s |\n",
         nctx, size / 1048576.0, o.timed_out ? ">" : "", old_s, o.removed, o.hold_max_ns / 1e6,
         new_s, (unsigned long long)rs.profiles, rs.txn_max_ns / 1e6, (unsigned long long)rs.txns,
         o.timed_out ? ">" : "", old_s / new_s, fill_idx, fill_plain);
  fflush(stdout);
  unlink(a);
  unlink(b);
}

int main(int argc, char **argv) {
  const char *list = "5000,20000", *dir = NULL;
  double old_limit_s = 120;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--contexts") && i + 1 < argc)
      list = argv[++i];
    else if (!strcmp(argv[i], "--old-limit-s") && i + 1 < argc)
      old_limit_s = atof(argv[++i]);
    else if (!strcmp(argv[i], "--dir") && i + 1 < argc)
      dir = argv[++i];
    else {
      fprintf(stderr, "usage: bench-retention [--contexts 5000,20000] [--old-limit-s 120] [--dir DIR]\n");
      return 2;
    }
  }
  char tmp[] = "/tmp/gpd-bench-retention-XXXXXX";
  if (dir == NULL && (dir = mkdtemp(tmp)) == NULL)
    die("mkdtemp");
  printf("| contexts | store | before: pass | removed | longest hold | after: pass | removed |"
         " longest transaction | transactions | speed-up | writing the store: with / without"
         " the indexes |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
  char *l = strdup(list);
  for (char *tok = strtok(l, ","); tok; tok = strtok(NULL, ","))
    one(dir, atoi(tok), old_limit_s);
  free(l);
  if (dir == tmp)
    rmdir(tmp);
  return 0;
}

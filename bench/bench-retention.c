/* bench-retention - one retention pass at 5 000 and 20 000 contexts: the
 * daemon's pass (daemon/retention.c) against the statements it replaced
 * (the baseline: no index on metric / cct_local by context or on context
 * by (uid, parent), each profile removed in one transaction, then the
 * orphan DELETE ... NOT EXISTS repeated until it removes nothing), on
 * copies of one synthetic store (store/store-fixture-retain.h: 40 finished
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

#include "gpuprof/clock.h"

#include "daemon.h"
#include "store-fixture-retain.h"
#include "store-fixture.h"
#include "dstore-internal.h"

static void die(const char *what) {
  fprintf(stderr, "bench-retention: %s\n", what);
  exit(1);
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
  gpd_dstore_t *st = NULL;
  gpd_store_fixture_fill_t f = {1000, 1, 40, nctx, nctx / 20, 2000, 1000000};
  /* what the indexes cost the writes: the same rows into a file without
   * them (one transaction, as a flush writes) */
  char c[1100];
  snprintf(c, sizeof c, "%s/ret-%d-noidx.gpdb", dir, nctx);
  unlink(c);
  if (gpd_dstore_open(&st, c) < 0 || gpd_store_fixture_drop_retain_indexes(c) < 0)
    die("open");
  uint64_t tf = gpd_clock_ns();
  if (gpd_store_fixture_retain_fill(c, &f) < 0)
    die("fill");
  double fill_plain = (double)(gpd_clock_ns() - tf) / 1e9;
  gpd_dstore_close(st);
  unlink(c);
  if (gpd_dstore_open(&st, a) < 0)
    die("open");
  tf = gpd_clock_ns();
  if (gpd_store_fixture_retain_fill(a, &f) < 0)
    die("fill");
  double fill_idx = (double)(gpd_clock_ns() - tf) / 1e9;
  int64_t size = (int64_t)gpd_store_fixture_bytes(a); /* after a WAL checkpoint */
  uint64_t limit = (uint64_t)size * 6 / 10;
  gpd_dstore_close(st);
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
  if (gpd_dstore_open(&d.store, a) < 0)
    die("open a");
  uint64_t t = gpd_clock_ns();
  if (gpd_retention_run(&d, gpd_checkpoint_flush) < 0)
    die("retain");
  double new_s = (double)(gpd_clock_ns() - t) / 1e9;
  gpd_retain_stats_t rs = d.store->rstats;
  gpd_dstore_close(d.store);

  /* before: the old statements on the old schema */
  if (gpd_store_fixture_drop_retain_indexes(b) < 0)
    die("open b");
  gpd_store_fixture_old_t o;
  t = gpd_clock_ns();
  if (gpd_store_fixture_old_retain(b, limit, t + (uint64_t)(old_limit_s * 1e9), &o) < 0)
    die("old retention");
  double old_s = (double)(gpd_clock_ns() - t) / 1e9;
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

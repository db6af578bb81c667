/* bench-snapshot.c - how long the store writer's snapshot holds the
 * daemon lock (docs/ARCHITECTURE.md, "Threads and locks"; issue 23: the
 * event loop and the monitors wait that long).
 *
 * One process's profile is built as the monitor builds it
 * (gpd_profile_ingest: N NODE records of one module, an INVOKE + ACTIVITY
 * pair at each, so 3 N CCT nodes all new), then written by gpd_checkpoint_flush
 * into a fresh store; then one more kernel pair at every context (every
 * context's metrics changed, none new) and a second flush; then FLOOD
 * invocations that are never matched (a correlation flood's pending rows)
 * and a third flush.  A prober
 * thread takes and drops the lock every 100 us the whole time and records
 * its longest wait; the flush's own longest hold comes from
 * gpd_checkpoint_lock_max_ns.  Each size runs twice in the same process: with
 * the snapshot copied in one hold ("before": chunk = unbounded) and in
 * chunks of the default size ("after").
 *
 *   bench-snapshot [N...]      (default: 6667 33334, i.e. ~20 000 and
 *                               ~100 000 CCT nodes)
 * BENCH_CHUNK=K: chunks of K items instead of the default.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon.h"
#include "bench-kernels.h"
#include "daemon-client-lib.h"
#include "gpuprof/clock.h"
#include "dstore-internal.h"
#include "dstore.h"

#define KERNELS 50u
#define FLOOD 500000u /* unmatched invocations before the third flush */

static uint64_t corr_n;
static gpd_daemon_t D;
static atomic_int stop;
static atomic_ullong wait_max;

static void *prober(void *arg) {
  (void)arg;
  while (!atomic_load(&stop)) {
    uint64_t t0 = gpd_clock_ns();
    pthread_mutex_lock(&D.lock);
    uint64_t w = gpd_clock_ns() - t0;
    pthread_mutex_unlock(&D.lock);
    if (w > atomic_load(&wait_max))
      atomic_store(&wait_max, w);
    struct timespec ts = {0, 100000};
    nanosleep(&ts, NULL);
  }
  return NULL;
}

static void kernels(gpd_profile_t *p, uint32_t nodes) {
  for (uint32_t i = 1; i <= nodes; i++)
    bench_kernel_pair(p, i, ++corr_n, KERNELS);
  gpd_profile_retry(p);
}

static void build(gpd_profile_t *p, uint32_t nodes) {
  bench_kernel_names(p, "/nonexistent/bench-snapshot-app", KERNELS);
  for (uint32_t i = 1; i <= nodes; i++) {
    _Alignas(64) gpd_rec_node_t r;
    gpd_dclient_node_init(&r, i, i <= 6 ? i - 1 : 6 + (i - 6) / 2, 1, 0x1000 + 0x10ull * i);
    gpd_profile_ingest(p, &r, sizeof r);
  }
  kernels(p, nodes);
}

/* one flush, timed: its longest lock hold, the prober's longest wait, the
 * flush's wall time (ms) */
static void flush(double *hold, double *wait, double *wall) {
  usleep(2000); /* a wait that began before (the bench's own hold) ends first */
  gpd_checkpoint_lock_max_reset(D.store);
  atomic_store(&wait_max, 0);
  uint64_t t0 = gpd_clock_ns();
  if (gpd_checkpoint_flush(&D) != 0) {
    fprintf(stderr, "bench-snapshot: flush failed\n");
    exit(1);
  }
  *wall = (double)(gpd_clock_ns() - t0) / 1e6;
  usleep(1000); /* the prober's last round */
  *hold = (double)gpd_checkpoint_lock_max_ns(D.store) / 1e6;
  if (getenv("BENCH_PARTS"))
    fprintf(stderr, "parts: first hold %.1f, chunks %.1f, after the commit %.1f ms\n",
            D.store->lock_max_ns[0] / 1e6, D.store->lock_max_ns[1] / 1e6, D.store->lock_max_ns[2] / 1e6);
  *wait = (double)atomic_load(&wait_max) / 1e6;
}

static void run(uint32_t nodes, uint32_t chunk, const char *what) {
  char dir[] = "/tmp/gpd-bsnap-XXXXXX", path[64];
  if (!mkdtemp(dir))
    exit(1);
  snprintf(path, sizeof path, "%s/b.gpdb", dir);
  memset(&D, 0, sizeof D);
  pthread_mutex_init(&D.lock, NULL);
  pthread_mutex_init(&D.reg_lock, NULL);
  pthread_cond_init(&D.writer_cv, NULL);
  if (gpd_dstore_open(&D.store, path) < 0)
    exit(1);
  gpd_checkpoint_snapshot_chunk(D.store, chunk);
  gpd_proc_t *p = calloc(1, sizeof *p);
  p->profile_id = 1;
  p->pid = getpid();
  p->uid = getuid();
  p->gid = getgid();
  p->state = GPD_PROC_RUNNING;
  gpd_profile_init(&p->prof, 1);
  build(&p->prof, nodes);
  D.procs = p;
  D.nprocs = 1;
  atomic_store(&stop, 0);
  pthread_t t;
  pthread_create(&t, NULL, prober, NULL);
  double h1, w1, f1, h2, w2, f2;
  flush(&h1, &w1, &f1);
  pthread_mutex_lock(&D.lock);
  kernels(&p->prof, nodes);
  pthread_mutex_unlock(&D.lock);
  flush(&h2, &w2, &f2);
  /* a correlation flood: invocations whose activities never come, all
   * exported as new pending rows by the next flush */
  pthread_mutex_lock(&D.lock);
  for (uint32_t i = 0; i < FLOOD; i++) {
    _Alignas(64) gpd_rec_invoke_t v;
    gpd_dclient_invoke_init(&v, GPD_OP_KERNEL, 1 + i % nodes, GPD_CORR(GPD_API_OPENCL, ++corr_n));
    gpd_profile_ingest(&p->prof, &v, sizeof v);
  }
  pthread_mutex_unlock(&D.lock);
  double h3, w3, f3;
  flush(&h3, &w3, &f3);
  atomic_store(&stop, 1);
  pthread_join(t, NULL);
  printf("| %7u | %-28s | %8.1f | %8.1f | %8.1f | %8.1f | %8.1f | %8.1f | %8.1f | %8.1f | %8.1f |\n", p->prof.nnodes,
         what, h1, w1, f1, h2, w2, f2, h3, w3, f3);
  gpd_dstore_close(D.store);
  D.procs = NULL;
  gpd_registry_free_proc(p);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0)
    fprintf(stderr, "bench-snapshot: %s left behind\n", dir);
}

int main(int argc, char **argv) {
  uint32_t def[] = {6667, 33334}, n = 2, *sizes = def;
  uint32_t chunk = getenv("BENCH_CHUNK") ? (uint32_t)strtoul(getenv("BENCH_CHUNK"), NULL, 10) : 0;
  if (argc > 1) {
    sizes = calloc((size_t)argc - 1, sizeof *sizes);
    n = (uint32_t)argc - 1;
    for (int i = 1; i < argc; i++)
      sizes[i - 1] = (uint32_t)strtoul(argv[i], NULL, 10);
  }
  printf("store writer: longest hold of the daemon lock per flush (ms); first flush: every CCT node new,\n"
         "second: every node's metrics changed, none new; third: %u new unmatched invocations (pending rows);\n"
         "\"wait\": a thread taking the lock every 100 us\n", FLOOD);
  printf("| CCT nodes | snapshot | 1st: hold | wait | flush | 2nd: hold | wait | flush | 3rd: hold | wait | flush |\n");
  printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (uint32_t i = 0; i < n; i++) {
    run(sizes[i], UINT32_MAX, "one hold (before)");
    run(sizes[i], chunk, getenv("BENCH_CHUNK") ? "chunks (after, BENCH_CHUNK)" : "chunks (after, default size)");
  }
  return 0;
}

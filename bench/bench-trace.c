/* bench-trace.c - trace write rate of one tracing thread (daemon/trace.c):
 * events/s from the hand-off (gpd_trace_push) until they are committed in
 * trace_event / trace_launch, and the store's bytes per event; against a
 * baseline measured in the same run: the same rows inserted by one thread
 * with the same prepared statement, 65 536 rows per transaction, no queue
 * and no sort.  Also the producer's (monitor's) cost per hand-off, in
 * the pushing thread's CPU time (wall time on a loaded machine counts the
 * time others ran).
 * Events: 4 GPU streams of kernels (20 % copies) and one CPU thread's
 * launches, one launch per GPU event, as a launch-bound loop makes them.
 * Usage: bench-trace [-n EVENTS] (default 2 000 000).  Prints a table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon.h"
#include "store-fixture.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void make_ev(gpd_trace_ev_t *e, uint64_t i, uint64_t profile) {
  memset(e, 0, sizeof *e);
  e->profile_id = profile;
  uint64_t k = i / 2;
  e->corr = GPD_CORR(GPD_API_CUDA, k + 1);
  if (i % 2 == 0) { /* the launch */
    e->kind = GPD_TEV_LAUNCH;
    e->start = 1000000000ull + k * 5000;
    e->stream = 4242;
    e->node = 0x9e3779b97f4a7c15ull * (k % 200 + 1);
    e->op = GPD_OP_KERNEL;
  } else { /* its GPU operation, 3 us later, 4 us long */
    e->kind = GPD_TEV_GPU;
    e->start = 1000000000ull + k * 5000 + 3000;
    e->end = e->start + 4000;
    e->stream = 7 + (uint32_t)(k % 4);
    e->op = k % 5 == 4 ? GPD_OP_COPY : GPD_OP_KERNEL;
    e->subkind = e->op == GPD_OP_COPY ? GPD_COPY_H2D : 0;
    e->bytes = e->op == GPD_OP_COPY ? 1u << 20 : 0;
    e->name = e->op == GPD_OP_KERNEL ? 1 + (uint32_t)(k % 50) : 0;
    e->node = 0xbf58476d1ce4e5b9ull * (k % 200 + 1);
  }
}

static double cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double db_bytes(const char *path) { return gpd_store_fixture_bytes(path); }

static int new_store(char *path, size_t n, const char *dir, const char *name) {
  snprintf(path, n, "%s/%s", dir, name);
  gpd_dstore_t *s;
  if (gpd_dstore_open(&s, path) < 0)
    return -1;
  gpd_dstore_close(s);
  return 0;
}

/* baseline: the same rows, one thread, prepared INSERTs, 64 K per transaction */
static double baseline(const char *path, uint64_t n) {
  gpd_store_fixture_t *fx;
  if (gpd_store_fixture_open(path, &fx) < 0)
    return -1;
  double t0 = now_s();
  gpd_store_fixture_begin(fx);
  for (uint64_t i = 0; i < n; i++) {
    gpd_trace_ev_t e;
    make_ev(&e, i, 1);
    if (e.kind == GPD_TEV_GPU)
      gpd_store_fixture_trace_gpu(fx, e.profile_id, e.start, e.stream, e.corr, e.end, e.device, e.op, e.subkind,
                                  e.node, e.name, e.bytes);
    else
      gpd_store_fixture_trace_launch(fx, e.profile_id, e.start, e.stream, e.corr, e.node, e.op);
    if (i % 65536 == 65535) {
      gpd_store_fixture_commit(fx);
      gpd_store_fixture_begin(fx);
    }
  }
  gpd_store_fixture_commit(fx);
  double t = now_s() - t0;
  gpd_store_fixture_free(fx);
  return (double)n / t;
}

int main(int argc, char **argv) {
  uint64_t n = 2000000;
  if (argc == 3 && !strcmp(argv[1], "-n"))
    n = strtoull(argv[2], NULL, 10);
  char dir[] = "/tmp/bench-trace.XXXXXX", p1[256], p2[256];
  if (!mkdtemp(dir) || new_store(p1, sizeof p1, dir, "base.gpdb") < 0 ||
      new_store(p2, sizeof p2, dir, "trace.gpdb") < 0) {
    fprintf(stderr, "bench-trace: cannot make the stores in %s\n", dir);
    return 1;
  }
  double empty1 = db_bytes(p1), empty2 = db_bytes(p2);
  double rb = baseline(p1, n);
  double bb = (db_bytes(p1) - empty1) / (double)n;

  gpd_trace_cfg_t cfg = {.threads = 1, .streams_per_thread = 1024, .queue_events = 1u << 16,
                         .flush_ms = 200, .max_events = 0};
  gpd_trace_t *t;
  if (gpd_trace_start(&t, p2, &cfg) < 0) {
    fprintf(stderr, "bench-trace: tracing thread did not start\n");
    return 1;
  }
  /* hand-off cost: 200 000 events into the 4 x 65 536 queue slots (room
   * for all: no waits), timed as a whole, in steady state: a first lap of
   * the same events (profile 3) touched the queues' pages and was written */
  uint64_t nh = 200000 < n ? 200000 : n, full = 0;
  gpd_trace_ev_t *pre = malloc(nh * sizeof *pre);
  if (pre == NULL)
    return 1;
  for (uint64_t i = 0; i < nh; i++)
    make_ev(&pre[i], i, 3);
  for (uint64_t i = 0; i < nh; i++)
    while (!gpd_trace_push(t, 0, &pre[i]))
      usleep(50);
  gpd_trace_counters_t c;
  for (gpd_trace_counters(t, &c); c.written < nh && !c.write_errors; gpd_trace_counters(t, &c))
    usleep(1000);
  for (uint64_t i = 0; i < nh; i++)
    pre[i].profile_id = 2;
  double c0 = cpu_s(), t0 = now_s();
  for (uint64_t i = 0; i < nh; i++)
    full += !gpd_trace_push(t, 0, &pre[i]);
  double push_s = cpu_s() - c0, push_wall = now_s() - t0;
  free(pre);
  for (uint64_t i = nh; i < n; i++) {
    gpd_trace_ev_t e;
    make_ev(&e, i, 2);
    while (!gpd_trace_push(t, 0, &e)) { /* the bench waits; the monitor would drop */
      full++;
      usleep(50);
    }
  }
  for (;;) {
    gpd_trace_counters(t, &c);
    if (c.written >= n + nh || c.write_errors)
      break;
    usleep(1000);
  }
  double tt = now_s() - t0; /* the warm-up lap's rows are not counted */
  gpd_trace_stop(t);
  double tb = (db_bytes(p2) - empty2) / (double)(n + nh); /* with the warm-up lap */
  printf("| %-62s | %12s | %10s |\n", "trace write (2 M rows: 1 M GPU events + 1 M launches)", "rows/s",
         "bytes/row");
  printf("| %-62s | %12.0f | %10.1f |\n", "baseline: one thread, prepared INSERT, 64 K rows/txn", rb, bb);
  printf("| %-62s | %12.0f | %10.1f |\n", "one tracing thread: hand-off -> sort -> write (200 ms txns)",
         (double)n / tt, tb);
  printf("| %-62s | %12.1f | %10s |\n", "  hand-off cost on the monitor, CPU ns per event (200 K)",
         push_s / (double)nh * 1e9, "");
  printf("| %-62s | %12.1f | %10s |\n", "  the same, wall-clock ns per event (a loaded machine preempts)",
         push_wall / (double)nh * 1e9, "");
  printf("ratio tracing thread / baseline: %.2f; queue-full waits of the bench: %llu; %llu flushes, %llu "
         "write errors\n",
         (double)n / tt / rb, (unsigned long long)full, (unsigned long long)c.flushes,
         (unsigned long long)c.write_errors);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0)
    return 1;
  return 0;
}

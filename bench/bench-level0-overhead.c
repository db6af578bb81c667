/* bench-level0-overhead - launch-bound Level Zero loop (tests/level0/
 * l0-loop on the tests' fake driver) bare, with the loader's tracing
 * layer alone, and under the shim.
 *
 * Usage: bench-level0-overhead --loop PATH --driver PATH --shim PATH
 *                              [--socket PATH] [--iters N] [--runs R]
 * Configurations: bare (no tracing layer); ZE_ENABLE_TRACING_LAYER=1
 * without the shim (the layer's own cost, what a child that inherits the
 * variable pays); the shim with no daemon (the tracer is enabled, the
 * callbacks return at once); with --socket pointing at a running gpuprofd,
 * full profiling.  Each runs R times (default 5); the table gives the
 * median run's ns per launch (the program's own wall time) and its ratio
 * to bare, and the process's CPU time per launch from wait4's rusage (all
 * threads: the fake driver's worker, the shim's collector; less disturbed
 * by other load than wall time).  The fake driver's launch is a queue push
 * (~2 us): a real driver's launch costs more, so the ratios are upper
 * bounds.  Exit 77 when zeInit fails.
 */
#include "bench-run.h"

static void row(const char *what, run_t r, run_t bare, long iters) {
  printf("%-30s %12.1f %8.3f %14.1f %8.3f\n", what, r.ns, r.ns / bare.ns, r.cpu_s * 1e9 / (double)iters,
         r.cpu_s / bare.cpu_s);
}

int main(int argc, char **argv) {
  const char *loop = NULL, *drv = NULL, *shim = NULL, *sock = NULL;
  long iters = 20000;
  int runs = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--loop"))
      loop = argv[i + 1];
    else if (!strcmp(argv[i], "--driver"))
      drv = argv[i + 1];
    else if (!strcmp(argv[i], "--shim"))
      shim = argv[i + 1];
    else if (!strcmp(argv[i], "--socket"))
      sock = argv[i + 1];
    else if (!strcmp(argv[i], "--iters"))
      iters = atol(argv[i + 1]);
    else if (!strcmp(argv[i], "--runs"))
      runs = atoi(argv[i + 1]);
  }
  if (!loop || !drv || !shim || runs < 1 || iters < 1) {
    fprintf(stderr, "usage: %s --loop PATH --driver PATH --shim PATH [--socket PATH] [--iters N] [--runs R]\n",
            argv[0]);
    return 2;
  }
  char drvv[2048], pre[2048], sockv[2048];
  snprintf(drvv, sizeof drvv, "ZE_ENABLE_ALT_DRIVERS=%s", drv);
  snprintf(pre, sizeof pre, "LD_PRELOAD=%s", shim);
  snprintf(sockv, sizeof sockv, "GPUPROF_SOCKET=%s", sock ? sock : "");
  char *env_bare[] = {drvv, "ZE_ENABLE_TRACING_LAYER=", "LD_PRELOAD=", NULL};
  char *env_layer[] = {drvv, "ZE_ENABLE_TRACING_LAYER=1", "LD_PRELOAD=", NULL};
  char *env_nod[] = {drvv, "ZE_ENABLE_TRACING_LAYER=", pre, "GPUPROF_SOCKET=/nonexistent/gpuprofd.sock", NULL};
  char *env_prof[] = {drvv, "ZE_ENABLE_TRACING_LAYER=", pre, sockv, NULL};
  run_t bare = median_of(env_bare, loop, iters, runs);
  if (bare.ns == -77) {
    printf("bench-level0-overhead: zeInit failed: SKIP\n");
    return 77;
  }
  if (bare.ns <= 0) {
    fprintf(stderr, "bench-level0-overhead: %s failed\n", loop);
    return 1;
  }
  run_t layer = median_of(env_layer, loop, iters, runs);
  run_t nod = median_of(env_nod, loop, iters, runs);
  run_t prof = {-1, 0, 0};
  if (sock)
    prof = median_of(env_prof, loop, iters, runs);
  printf("# bench-level0-overhead: l0-loop %ld launches on the fake driver, median of %d runs\n"
         "# (CPU: the whole process of that run, all threads, start-up included)\n",
         iters, runs);
  printf("%-30s %12s %8s %14s %8s\n", "configuration", "ns/launch", "ratio", "CPU ns/launch", "ratio");
  row("bare", bare, bare, iters);
  row("tracing layer, no tracer", layer, bare, iters);
  row("shim, no daemon", nod, bare, iters);
  if (sock)
    row("shim + daemon (profiling)", prof, bare, iters);
  else
    printf("%-30s %12s %8s\n", "shim + daemon (profiling)", "n/a", "(--socket)");
  return 0;
}

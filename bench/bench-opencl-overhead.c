/* bench-opencl-overhead - launch-bound OpenCL loop (tests/apps/ocl-loop)
 * bare vs. under the shim.
 *
 * Usage: bench-opencl-overhead --loop PATH --shim PATH [--socket PATH]
 *                              [--iters N] [--runs R] [--cpu C]
 *                              [--warmup W]
 * Without --socket the shim runs with no daemon (passthrough cost only:
 * capture is off until a region exists).  With --socket pointing at a
 * running gpuprofd it measures full profiling.  Each configuration runs R
 * times (default 5); the table gives the median ns per launch and the
 * ratio to bare, and, from wait4's rusage of the median run, the process's
 * CPU time and its minor page faults per launch above bare's.  The faults
 * are the first writes into the shared ring pages (128 B per launch:
 * INVOKE 32 + ACTIVITY 96, one fault per 32 launches until a ring has
 * wrapped once; 192 B and one per ~21 before the 32-byte slots); where a fault is expensive (a PVM guest: ~24 us) they are
 * much of the ratio of a short run (docs/PERFORMANCE.md).  --cpu C pins
 * the bench and so every run (the loop, PoCL's worker threads, the shim's
 * connection thread) to CPU C; start the daemon on another CPU.  On a
 * loaded 2-core machine the unpinned loop's time depends mostly on how the
 * scheduler spreads PoCL's threads over the cores, pinned it is stable to
 * a few % (docs/PERFORMANCE.md "Reading the OpenCL row").  --warmup W
 * runs W untimed launches first (default 100: PoCL's compile): with W
 * larger than a ring's first lap (~33 000 launches: 4-MiB rings, an
 * ACTIVITY is 128 B) the figure is the steady state, without the one-time
 * cost of the fresh ring pages.  Exit 77 without an OpenCL device.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_setaffinity, CPU_SET */
#endif
#include <sched.h>

#include "bench-run.h"

static void row(const char *what, run_t r, run_t bare, long iters) {
  printf("%-28s %14.1f %8.3f %12.3f %16.4f\n", what, r.ns, r.ns / bare.ns, r.cpu_s,
         (double)(r.minflt - bare.minflt) / (double)iters);
}

int main(int argc, char **argv) {
  const char *loop = NULL, *shim = NULL, *sock = NULL;
  long iters = 20000, warm = 0;
  int runs = 5, cpu = -1;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--loop"))
      loop = argv[i + 1];
    else if (!strcmp(argv[i], "--shim"))
      shim = argv[i + 1];
    else if (!strcmp(argv[i], "--socket"))
      sock = argv[i + 1];
    else if (!strcmp(argv[i], "--iters"))
      iters = atol(argv[i + 1]);
    else if (!strcmp(argv[i], "--runs"))
      runs = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--cpu"))
      cpu = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--warmup"))
      warm = atol(argv[i + 1]);
  }
  if (!loop || !shim || runs < 1 || cpu >= CPU_SETSIZE) {
    fprintf(stderr, "usage: %s --loop PATH --shim PATH [--socket PATH] [--iters N] [--runs R] [--cpu C] [--warmup W]\n",
            argv[0]);
    return 2;
  }
  if (cpu >= 0) { /* the children inherit it */
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) {
      perror("bench-opencl-overhead: sched_setaffinity");
      return 1;
    }
  }
  char pre[2048], sockv[2048];
  snprintf(pre, sizeof pre, "LD_PRELOAD=%s", shim);
  snprintf(sockv, sizeof sockv, "GPUPROF_SOCKET=%s", sock ? sock : "");
  char *env_bare[] = {NULL};
  char *env_nod[] = {pre, "GPUPROF_SOCKET=/nonexistent/gpuprofd.sock", NULL};
  char *env_shim[] = {pre, sockv, NULL};
  /* the floor: no shim, but the runtime does what timing every kernel
   * needs (profiling queue, an event per launch, its times read) */
  char *env_floor[] = {"OCL_LOOP_PROFILE=1", NULL};
  /* the configurations alternate (bare, no daemon, floor, profiling, bare,
   * ...), so that a change of the machine's load during the runs falls on
   * all of them alike */
  enum { NCFG = 4 };
  run_t *v[NCFG];
  for (int c = 0; c < NCFG; c++)
    if ((v[c] = calloc((size_t)runs, sizeof(run_t))) == NULL)
      return 1;
  double la0[1] = {0}, la1[1] = {0};
  getloadavg(la0, 1);
  for (int i = 0; i < runs; i++) {
    char *const *envs[NCFG] = {env_bare, env_nod, env_floor, env_shim};
    for (int c = 0; c < (sock ? NCFG : NCFG - 1); c++) {
      v[c][i] = run_once_warm(envs[c], loop, iters, warm);
      if (v[c][i].ns == -77) {
        printf("bench-opencl-overhead: no OpenCL device: SKIP\n");
        return 77;
      }
      if (v[c][i].ns <= 0) {
        fprintf(stderr, "bench-opencl-overhead: %s failed\n", loop);
        return 1;
      }
    }
  }
  getloadavg(la1, 1);
  run_t med[NCFG] = {{-1, 0, 0}, {-1, 0, 0}, {-1, 0, 0}, {-1, 0, 0}};
  for (int c = 0; c < (sock ? NCFG : NCFG - 1); c++) {
    qsort(v[c], (size_t)runs, sizeof(run_t), bench_cmp_run);
    med[c] = v[c][runs / 2];
  }
  run_t bare = med[0], nod = med[1], floor_ = med[2], prof = med[3];
  char pin[32] = "unpinned";
  if (cpu >= 0)
    snprintf(pin, sizeof pin, "pinned to CPU %d", cpu);
  printf("# bench-opencl-overhead: ocl-loop %ld launches after %ld untimed, median of %d runs, configurations\n"
         "# alternating, %s (load %.1f before, %.1f after; CPU and faults: the whole process of that run,\n"
         "# start-up, warm-up and PoCL's compile included; faults: minor page faults per launch above bare's)\n",
         iters, warm > 0 ? warm : 100, runs, pin, la0[0], la1[0]);
  printf("%-28s %14s %8s %12s %16s\n", "configuration", "ns/launch", "ratio", "CPU s (run)", "+faults/launch");
  row("bare", bare, bare, iters);
  row("shim, no daemon", nod, bare, iters);
  row("bare, profiling floor", floor_, bare, iters);
  if (sock) {
    row("shim + daemon (profiling)", prof, bare, iters);
    printf("# profiling floor: no shim; the queue made with CL_QUEUE_PROFILING_ENABLE, an event per launch,\n"
           "# its start and end read after each clFinish (what timing every kernel costs in the runtime);\n"
           "# shim + daemon against it: %.3fx (the shim's own part)\n", prof.ns / floor_.ns);
  } else {
    printf("%-28s %14s %8s\n", "shim + daemon (profiling)", "n/a", "(--socket)");
  }
  return 0;
}

/* bench-opencl-overhead - launch-bound OpenCL loop (tests/apps/ocl-loop)
 * bare vs. under the shim.
 *
 * Usage: bench-opencl-overhead --loop PATH --shim PATH [--socket PATH]
 *                              [--iters N] [--runs R]
 * Without --socket the shim runs with no daemon (passthrough cost only:
 * capture is off until a region exists).  With --socket pointing at a
 * running gpuprofd it measures full profiling.  Each configuration runs R
 * times (default 5); the table gives the median ns per launch and the
 * ratio to bare, and, from wait4's rusage of the median run, the process's
 * CPU time and its minor page faults per launch above bare's.  The faults
 * are the first writes into the shared ring pages (~3 slots of 64 B per
 * launch: INVOKE + ACTIVITY, one fault per ~21 launches until a ring has
 * wrapped once); where a fault is expensive (a PVM guest: ~24 us) they are
 * much of the ratio of a short run (docs/PERFORMANCE.md).  Exit 77 without
 * an OpenCL device.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct {
  double ns;     /* ns per launch (the program's own timing), or < 0 */
  double cpu_s;  /* user + system CPU of the whole run (rusage) */
  long minflt;   /* minor page faults of the whole run (rusage) */
} run_t;

static double tv_s(struct timeval tv) { return (double)tv.tv_sec + (double)tv.tv_usec / 1e6; }

/* One run of `loop` under `env` (NULL-terminated "K=V" list added to ours);
 * ns = -1 on failure, -77 when the program found no device. */
static run_t run_once(char *const *env, const char *loop, long iters) {
  run_t r = {-1, 0, 0};
  int fds[2];
  if (pipe(fds))
    return r;
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return r;
  }
  if (pid == 0) {
    char a1[32];
    snprintf(a1, sizeof a1, "%ld", iters);
    for (char *const *e = env; *e; e++)
      putenv(*e);
    dup2(fds[1], 1);
    close(fds[0]);
    close(fds[1]);
    if (!freopen("/dev/null", "w", stderr))
      _exit(126);
    execl(loop, loop, a1, "100", (char *)NULL);
    _exit(127);
  }
  close(fds[1]);
  FILE *f = fdopen(fds[0], "r");
  char line[256];
  long n;
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "launches %ld ns_per_launch %lf", &n, &r.ns) == 2)
      break;
  if (f)
    fclose(f);
  int st = 0;
  struct rusage ru;
  if (wait4(pid, &st, 0, &ru) != pid)
    return r;
  r.cpu_s = tv_s(ru.ru_utime) + tv_s(ru.ru_stime);
  r.minflt = ru.ru_minflt;
  if (WIFEXITED(st) && WEXITSTATUS(st) == 77)
    r.ns = -77;
  return r;
}

static int cmp_run(const void *a, const void *b) {
  double x = ((const run_t *)a)->ns, y = ((const run_t *)b)->ns;
  return (x > y) - (x < y);
}

/* The median run by ns per launch. */
static run_t median_of(char *const *env, const char *loop, long iters, int runs) {
  run_t *v = calloc((size_t)runs, sizeof *v);
  run_t m = {-1, 0, 0};
  if (!v)
    return m;
  for (int i = 0; i < runs; i++) {
    v[i] = run_once(env, loop, iters);
    if (v[i].ns < 0) {
      m = v[i];
      free(v);
      return m;
    }
  }
  qsort(v, (size_t)runs, sizeof *v, cmp_run);
  m = v[runs / 2];
  free(v);
  return m;
}

static void row(const char *what, run_t r, run_t bare, long iters) {
  printf("%-28s %14.1f %8.3f %12.3f %16.4f\n", what, r.ns, r.ns / bare.ns, r.cpu_s,
         (double)(r.minflt - bare.minflt) / (double)iters);
}

int main(int argc, char **argv) {
  const char *loop = NULL, *shim = NULL, *sock = NULL;
  long iters = 20000;
  int runs = 5;
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
  }
  if (!loop || !shim || runs < 1) {
    fprintf(stderr, "usage: %s --loop PATH --shim PATH [--socket PATH] [--iters N] [--runs R]\n", argv[0]);
    return 2;
  }
  char pre[2048], sockv[2048];
  snprintf(pre, sizeof pre, "LD_PRELOAD=%s", shim);
  snprintf(sockv, sizeof sockv, "GPUPROF_SOCKET=%s", sock ? sock : "");
  char *env_bare[] = {NULL};
  char *env_nod[] = {pre, "GPUPROF_SOCKET=/nonexistent/gpuprofd.sock", NULL};
  char *env_shim[] = {pre, sockv, NULL};
  run_t bare = median_of(env_bare, loop, iters, runs);
  if (bare.ns == -77) {
    printf("bench-opencl-overhead: no OpenCL device: SKIP\n");
    return 77;
  }
  if (bare.ns <= 0) {
    fprintf(stderr, "bench-opencl-overhead: %s failed\n", loop);
    return 1;
  }
  run_t nod = median_of(env_nod, loop, iters, runs);
  run_t prof = {-1, 0, 0};
  if (sock)
    prof = median_of(env_shim, loop, iters, runs);
  printf("# bench-opencl-overhead: ocl-loop %ld launches, median of %d runs (CPU and faults: the whole\n"
         "# process of that run, start-up and PoCL's compile included; faults: minor page faults per launch above bare's)\n",
         iters, runs);
  printf("%-28s %14s %8s %12s %16s\n", "configuration", "ns/launch", "ratio", "CPU s (run)", "+faults/launch");
  row("bare", bare, bare, iters);
  row("shim, no daemon", nod, bare, iters);
  if (sock)
    row("shim + daemon (profiling)", prof, bare, iters);
  else
    printf("%-28s %14s %8s\n", "shim + daemon (profiling)", "n/a", "(--socket)");
  return 0;
}

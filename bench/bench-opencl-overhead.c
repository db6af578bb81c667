/* bench-opencl-overhead - launch-bound OpenCL loop (tests/apps/ocl-loop)
 * bare vs. under the shim.
 *
 * Usage: bench-opencl-overhead --loop PATH --shim PATH [--socket PATH]
 *                              [--iters N] [--runs R]
 * Without --socket the shim runs with no daemon (passthrough cost only:
 * capture is off until a region exists).  With --socket pointing at a
 * running gpuprofd it measures full profiling.  Each configuration runs R
 * times (default 5); the table gives the median ns per launch and the
 * ratio to bare.  Exit 77 without an OpenCL device.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* ns per launch of one run, or -1 (77 -> -77). */
static double run_once(const char *env, const char *loop, long iters) {
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "%s '%s' %ld 100 2>/dev/null", env, loop, iters);
  FILE *f = popen(cmd, "r");
  if (!f)
    return -1;
  double ns = -1;
  long n;
  char line[256];
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "launches %ld ns_per_launch %lf", &n, &ns) == 2)
      break;
  int st = pclose(f);
  if (WIFEXITED(st) && WEXITSTATUS(st) == 77)
    return -77;
  return ns;
}

static double median_of(const char *env, const char *loop, long iters, int runs) {
  double *v = calloc((size_t)runs, sizeof *v);
  for (int i = 0; i < runs; i++) {
    v[i] = run_once(env, loop, iters);
    if (v[i] < 0) {
      double r = v[i];
      free(v);
      return r;
    }
  }
  qsort(v, (size_t)runs, sizeof *v, cmp);
  double m = v[runs / 2];
  free(v);
  return m;
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
  char env_shim[2048], env_nod[2048];
  snprintf(env_nod, sizeof env_nod, "env LD_PRELOAD='%s' GPUPROF_SOCKET=/nonexistent/gpuprofd.sock", shim);
  snprintf(env_shim, sizeof env_shim, "env LD_PRELOAD='%s' GPUPROF_SOCKET='%s'", shim, sock ? sock : "");
  double bare = median_of("env", loop, iters, runs);
  if (bare == -77) {
    printf("bench-opencl-overhead: no OpenCL device: SKIP\n");
    return 77;
  }
  double nod = median_of(env_nod, loop, iters, runs);
  double prof = sock ? median_of(env_shim, loop, iters, runs) : -1;
  printf("# bench-opencl-overhead: ocl-loop %ld launches, median of %d runs\n", iters, runs);
  printf("%-28s %14s %8s\n", "configuration", "ns/launch", "ratio");
  printf("%-28s %14.1f %8.3f\n", "bare", bare, 1.0);
  printf("%-28s %14.1f %8.3f\n", "shim, no daemon", nod, nod / bare);
  if (sock)
    printf("%-28s %14.1f %8.3f\n", "shim + daemon (profiling)", prof, prof / bare);
  else
    printf("%-28s %14s %8s\n", "shim + daemon (profiling)", "n/a", "(--socket)");
  return 0;
}

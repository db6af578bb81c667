/* bench-run.h - run a launch-loop program as a child and read its figure
 * (bench-opencl-overhead, bench-level0-overhead).
 *
 * The program prints "launches <n> ns_per_launch <x>" and is started as
 * `loop <iters> 100` (run_once_warm: `loop <iters> 100 <warmup>`) with
 * `env` applied: a NULL-terminated list of "K=V"
 * (set) or "K=" (unset) entries; its stderr goes to /dev/null.  wait4's
 * rusage gives the whole process's CPU time and minor page faults.
 */
#ifndef GPUPROF_BENCH_RUN_H
#define GPUPROF_BENCH_RUN_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct {
  double ns;    /* ns per launch (the program's own timing), or < 0 */
  double cpu_s; /* user + system CPU of the whole run (rusage) */
  long minflt;  /* minor page faults of the whole run (rusage) */
} run_t;

static inline double bench_tv_s(struct timeval tv) { return (double)tv.tv_sec + (double)tv.tv_usec / 1e6; }

/* One run; ns = -1 on failure, -77 when the program exited 77 (no device).
 * warm > 0: that many untimed launches first (a third argument). */
static inline run_t run_once_warm(char *const *env, const char *loop, long iters, long warm) {
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
    char a1[32], a3[32];
    snprintf(a1, sizeof a1, "%ld", iters);
    snprintf(a3, sizeof a3, "%ld", warm);
    for (char *const *e = env; *e; e++) {
      const char *eq = strchr(*e, '=');
      if (eq && eq[1] == '\0') {
        char k[128];
        snprintf(k, sizeof k, "%.*s", (int)(eq - *e), *e);
        unsetenv(k);
      } else {
        putenv(*e);
      }
    }
    dup2(fds[1], 1);
    close(fds[0]);
    close(fds[1]);
    if (!freopen("/dev/null", "w", stderr))
      _exit(126);
    if (warm > 0)
      execl(loop, loop, a1, "100", a3, (char *)NULL);
    else
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
  r.cpu_s = bench_tv_s(ru.ru_utime) + bench_tv_s(ru.ru_stime);
  r.minflt = ru.ru_minflt;
  if (WIFEXITED(st) && WEXITSTATUS(st) == 77)
    r.ns = -77;
  return r;
}

static inline run_t run_once(char *const *env, const char *loop, long iters) {
  return run_once_warm(env, loop, iters, 0);
}

static inline int bench_cmp_run(const void *a, const void *b) {
  double x = ((const run_t *)a)->ns, y = ((const run_t *)b)->ns;
  return (x > y) - (x < y);
}

/* The median run by ns per launch (or the first failed one). */
static inline run_t median_of(char *const *env, const char *loop, long iters, int runs) {
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
  qsort(v, (size_t)runs, sizeof *v, bench_cmp_run);
  m = v[runs / 2];
  free(v);
  return m;
}

#endif

/* bench-cpusample - cost of the shim's CPU-time sampling
 * (GPUPROF_CPU_SAMPLING, shim/cpusample.c; docs/PERFORMANCE.md).
 *
 * A CPU loop of fixed work (LCG steps) runs at call depth 32 in a child
 * process linked with the shim, whose region is created in the child (a
 * consumer thread drains it, as gpuprofd's monitor would).  Configurations
 * bare (no variable), 100 Hz, 1000 Hz and 10000 Hz run interleaved for
 * `rounds` rounds; each figure is the median over rounds:
 *   cpu ms     : the loop thread's CPU time for the work (its handler runs
 *                included), CLOCK_THREAD_CPUTIME_ID
 *   slowdown   : cpu ms / bare cpu ms of the same round - 1
 *   signals    : sampling signals the loop thread took (the kernel checks
 *                CPU timers at its tick: 1000 and 10000 Hz deliver about
 *                one signal per tick, each carrying the overrun)
 *   ns/sample  : (cpu - bare cpu) / signals: signal delivery + unwind of
 *                32+ frames + intern (memoized) + push, per sample
 * Usage: bench-cpusample [rounds] [steps]
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gpuprof/region.h"

int gpd_shim__attach_region(int fd);
int gpd_shim__cpusample_stats(uint64_t out[9]);

static gpd_region_t R;
static atomic_int stop;
static volatile uint64_t sink;

static void drop(void *arg, const void *rec, size_t n) {
  (void)arg;
  (void)rec;
  (void)n;
}

static void *consumer(void *arg) {
  (void)arg;
  while (!atomic_load(&stop)) {
    int n = 0;
    for (uint32_t i = 0; i < R.nrings; i++) {
      int r = gpd_ring_consume(&R, i, 4096, drop, NULL);
      n += r > 0 ? r : 0;
    }
    if (n < 256)
      usleep(200);
  }
  return NULL;
}

static uint64_t tcpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

__attribute__((noinline)) static uint64_t work(uint64_t steps) {
  uint64_t x = 1;
  for (uint64_t i = 0; i < steps; i++)
    x = x * 6364136223846793005ull + 1442695040888963407ull;
  return x;
}

__attribute__((noinline)) static uint64_t deep(int d, uint64_t steps) {
  if (d > 0) {
    uint64_t r = deep(d - 1, steps);
    sink = r;
    return r + 1;
  }
  return work(steps);
}

/* Child: attach a region, run the work at depth 32, print the figures. */
static int child(uint64_t steps) {
  if (gpd_region_create(&R, 8, 65536, getpid(), 1) < 0 || gpd_shim__attach_region(dup(R.fd)) < 0) {
    fprintf(stderr, "bench-cpusample: no region\n");
    return 1;
  }
  pthread_t t;
  pthread_create(&t, NULL, consumer, NULL);
  uint64_t before[9], after[9];
  gpd_shim__cpusample_stats(before);
  uint64_t c0 = tcpu_ns();
  sink = deep(30, steps); /* + main and __libc_start_call_main: 32 frames */
  uint64_t c1 = tcpu_ns();
  gpd_shim__cpusample_stats(after);
  atomic_store(&stop, 1);
  pthread_join(t, NULL);
  printf("%llu %llu %llu %llu\n", (unsigned long long)(c1 - c0), (unsigned long long)(after[0] - before[0]),
         (unsigned long long)(after[1] - before[1]), (unsigned long long)(after[3] - before[3]));
  return 0;
}

typedef struct {
  double cpu_ms, signals, pushed, declined;
} fig_t;

static fig_t run(const char *self, const char *hz, uint64_t steps) {
  fig_t f = {-1, 0, 0, 0};
  int fds[2];
  if (pipe(fds))
    return f;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 1);
    close(fds[0]);
    if (hz)
      setenv("GPUPROF_CPU_SAMPLING", hz, 1);
    else
      unsetenv("GPUPROF_CPU_SAMPLING");
    setenv("GPUPROF_SOCKET", "/nonexistent/gpuprofd.sock", 1);
    setenv("GPUPROF_LOG", "error", 1);
    char s[32];
    snprintf(s, sizeof s, "%llu", (unsigned long long)steps);
    execl(self, self, "--child", s, (char *)NULL);
    _exit(127);
  }
  close(fds[1]);
  char buf[256] = "";
  ssize_t n = read(fds[0], buf, sizeof buf - 1);
  close(fds[0]);
  int st;
  waitpid(pid, &st, 0);
  unsigned long long c, sg, pu, de;
  if (n > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0 && sscanf(buf, "%llu %llu %llu %llu", &c, &sg, &pu, &de) == 4)
    f = (fig_t){c / 1e6, (double)sg, (double)pu, (double)de};
  return f;
}

static int cmpd(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmpd);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv) {
  if (argc > 2 && strcmp(argv[1], "--child") == 0)
    return child(strtoull(argv[2], NULL, 10));
  int rounds = argc > 1 ? atoi(argv[1]) : 5;
  uint64_t steps = argc > 2 ? strtoull(argv[2], NULL, 10) : 400000000ull;
  if (rounds < 1 || rounds > 99)
    rounds = 5;
  const char *hz[] = {NULL, "100", "1000", "10000"};
  enum { NC = 4 };
  double cpu[NC][99], slow[NC][99], sig[NC][99], per[NC][99], pushed[NC][99];
  for (int r = 0; r < rounds; r++) {
    fig_t f[NC];
    for (int c = 0; c < NC; c++) {
      f[c] = run(argv[0], hz[c], steps);
      if (f[c].cpu_ms < 0) {
        fprintf(stderr, "bench-cpusample: run failed\n");
        return 1;
      }
    }
    for (int c = 0; c < NC; c++) {
      cpu[c][r] = f[c].cpu_ms;
      slow[c][r] = 100.0 * (f[c].cpu_ms / f[0].cpu_ms - 1);
      sig[c][r] = f[c].signals;
      pushed[c][r] = f[c].pushed;
      per[c][r] = f[c].signals > 0 ? (f[c].cpu_ms - f[0].cpu_ms) * 1e6 / f[c].signals : 0;
    }
  }
  printf("bench-cpusample: %llu LCG steps at depth 32, medians of %d interleaved rounds\n",
         (unsigned long long)steps, rounds);
  printf("%-8s %10s %10s %9s %9s %11s\n", "config", "cpu ms", "slowdown", "signals", "pushed", "ns/sample");
  for (int c = 0; c < NC; c++) {
    char name[16];
    snprintf(name, sizeof name, "%s", hz[c] ? hz[c] : "bare");
    if (hz[c])
      strcat(name, " Hz");
    printf("%-8s %10.1f %9.2f%% %9.0f %9.0f %11.0f\n", name, median(cpu[c], rounds), median(slow[c], rounds),
           median(sig[c], rounds), median(pushed[c], rounds), c ? median(per[c], rounds) : 0.0);
  }
  return 0;
}

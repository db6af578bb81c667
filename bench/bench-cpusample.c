/* bench-cpusample - cost of the shim's CPU-time sampling
 * (GPUPROF_CPU_SAMPLING, shim/cpu-sampler.c; docs/PERFORMANCE.md).
 *
 * A CPU loop of fixed work (LCG steps) runs at call depth 32 in a child
 * process linked with the shim, whose region is created in the child (a
 * consumer thread drains it, as gpuprofd's monitor would).  Each figure is
 * the median over `rounds` interleaved rounds; cpu ms is the loop thread's
 * CPU time for the work (CLOCK_THREAD_CPUTIME_ID: handler runs included).
 *
 * Cost per sample.  Linux checks CPU-time timers at its scheduler tick, so
 * the sampler's own timer gives at most about one signal per tick (250 per
 * CPU second here), too few to see against run-to-run noise.  The cost is
 * therefore measured at a high rate: a wall-clock timer (CLOCK_MONOTONIC,
 * SIGEV_THREAD_ID to the loop thread, 20 kHz) sends the sampling signal
 * itself, so every signal runs the real handler (unwind of 32+ frames,
 * intern, push).  Its baseline is the same timer sending another signal to
 * a handler that does nothing:
 *   ns/signal (sample)  = (cpu[sample @20 kHz] - cpu[bare]) / signals
 *   ns/signal (no-op)   = (cpu[no-op @20 kHz] - cpu[bare]) / signals
 *   handler ns          = the difference: what gpuprof adds to the kernel's
 *                         own signal delivery
 * Slowdown: the CPU loop with GPUPROF_CPU_SAMPLING=100 and =1000 (the real
 * CPU-time timers) against bare, and the signals each took.
 *
 * Thread start: the interposed pthread_create (shim/pthread-wrappers.c)
 * gives each new thread its memo and timer while sampling is on.  A child
 * creates and joins BENCH_THREADS empty threads one after the other; CPU
 * ns per thread (the process's CPU time, the threads' own included) with
 * sampling off (the wrapper passes the call through:
 * the baseline) and at 1000 Hz (start block, memo, timer_create, and at
 * exit timer_delete and the memo unmapped); "timers after" = the timers the
 * shim holds once all are joined (at 1000 Hz: 1, the main thread's).
 * Usage: bench-cpusample [rounds] [steps]
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/syscall.h>
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

static volatile sig_atomic_t noops;
static void noop(int sig, siginfo_t *si, void *uc) {
  (void)sig;
  (void)si;
  (void)uc;
  noops++;
}

/* A wall-clock timer sending signal `sig` to this thread `hz` times a
 * second (see the file comment). */
static int wall_timer(int sig, long hz) {
  struct sigevent sev;
  memset(&sev, 0, sizeof sev);
  sev.sigev_notify = SIGEV_THREAD_ID;
  sev.sigev_signo = sig;
  sev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
  timer_t id;
  if (timer_create(CLOCK_MONOTONIC, &sev, &id) != 0)
    return -1;
  struct itimerspec its = {{0, 1000000000L / hz}, {0, 1000000000L / hz}};
  return timer_settime(id, 0, &its, NULL);
}

static void *empty(void *arg) { return arg; }

/* The process's CPU time: the exited threads' included (wall time per
 * create + join is mostly waiting for a CPU on a loaded machine). */
static uint64_t pcpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Child of the thread-start rows: n empty threads created and joined one
 * after the other; prints CPU ns per thread (the process's, its threads'
 * included) and the timers the shim holds after. */
static int child_threads(long n) {
  int (*timers)(void) = NULL;
  *(void **)&timers = dlsym(RTLD_DEFAULT, "gpd_shim__cpusample_timers");
  uint64_t t0 = pcpu_ns();
  for (long i = 0; i < n; i++) {
    pthread_t t;
    if (pthread_create(&t, NULL, empty, NULL) != 0)
      return 1;
    pthread_join(t, NULL);
  }
  uint64_t t1 = pcpu_ns();
  printf("%llu %d 0 0\n", (unsigned long long)((t1 - t0) / (uint64_t)n), timers ? timers() : -1);
  return 0;
}

/* Child: attach a region, run the work at depth 32, print the figures.
 * BENCH_WALL=sample|noop: the 20 kHz wall-clock timer (file comment). */
static int child(uint64_t steps) {
  const char *nth = getenv("BENCH_THREADS");
  if (nth)
    return child_threads(atol(nth) > 0 ? atol(nth) : 1000);
  const char *wall = getenv("BENCH_WALL");
  if (wall && strcmp(wall, "noop") == 0) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = noop;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigaction(SIGRTMIN + 7, &sa, NULL);
  }
  if (gpd_region_create(&R, 8, 65536, getpid(), 1) < 0 || gpd_shim__attach_region(dup(R.fd)) < 0) {
    fprintf(stderr, "bench-cpusample: no region\n");
    return 1;
  }
  pthread_t t;
  pthread_create(&t, NULL, consumer, NULL);
  if (wall && wall_timer(strcmp(wall, "noop") == 0 ? SIGRTMIN + 7 : SIGRTMIN + 6, 20000) != 0) {
    fprintf(stderr, "bench-cpusample: timer_create failed\n");
    return 1;
  }
  uint64_t before[9], after[9];
  gpd_shim__cpusample_stats(before);
  uint64_t c0 = tcpu_ns();
  sink = deep(30, steps); /* + main and __libc_start_call_main: 32 frames */
  uint64_t c1 = tcpu_ns();
  gpd_shim__cpusample_stats(after);
  if (wall && strcmp(wall, "noop") == 0) /* the shim does not see these: the handler counted them */
    after[0] = before[0] + (uint64_t)noops;
  atomic_store(&stop, 1);
  pthread_join(t, NULL);
  printf("%llu %llu %llu %llu\n", (unsigned long long)(c1 - c0), (unsigned long long)(after[0] - before[0]),
         (unsigned long long)(after[1] - before[1]), (unsigned long long)(after[3] - before[3]));
  return 0;
}

typedef struct {
  double cpu_ms, signals, pushed, declined;
} fig_t;

static fig_t run(const char *self, const char *hz, const char *wall, uint64_t steps, const char *threads) {
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
    if (wall)
      setenv("BENCH_WALL", wall, 1);
    else
      unsetenv("BENCH_WALL");
    if (threads)
      setenv("BENCH_THREADS", threads, 1);
    else
      unsetenv("BENCH_THREADS");
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
  /* config: name, GPUPROF_CPU_SAMPLING, BENCH_WALL.  The wall-clock runs
   * keep the shim's own CPU timer at 1 Hz (the handler installed). */
  static const struct {
    const char *name, *hz, *wall;
  } cf[] = {{"bare", NULL, NULL},
            {"100 Hz", "100", NULL},
            {"1000 Hz", "1000", NULL},
            {"no-op @20k", "1", "noop"},
            {"sample @20k", "1", "sample"}};
  enum { NC = 5 };
  double cpu[NC][99], slow[NC][99], sig[NC][99], per[NC][99];
  for (int r = 0; r < rounds; r++) {
    fig_t f[NC];
    for (int c = 0; c < NC; c++) {
      f[c] = run(argv[0], cf[c].hz, cf[c].wall, steps, NULL);
      if (f[c].cpu_ms < 0) {
        fprintf(stderr, "bench-cpusample: run failed\n");
        return 1;
      }
    }
    for (int c = 0; c < NC; c++) {
      cpu[c][r] = f[c].cpu_ms;
      slow[c][r] = 100.0 * (f[c].cpu_ms / f[0].cpu_ms - 1);
      sig[c][r] = f[c].signals;
      per[c][r] = f[c].signals > 0 ? (f[c].cpu_ms - f[0].cpu_ms) * 1e6 / f[c].signals : 0;
    }
  }
  printf("bench-cpusample: %llu LCG steps at depth 32, medians of %d interleaved rounds\n",
         (unsigned long long)steps, rounds);
  printf("%-12s %9s %10s %9s %12s\n", "config", "cpu ms", "slowdown", "signals", "ns/signal");
  double pn = 0, ps = 0;
  for (int c = 0; c < NC; c++) {
    double p = c ? median(per[c], rounds) : 0;
    if (c == 3)
      pn = p;
    if (c == 4)
      ps = p;
    /* per signal only where there are enough of them to rise above the
     * run-to-run noise (the @20k rows) */
    char ps_[32] = "-";
    if (cf[c].wall)
      snprintf(ps_, sizeof ps_, "%.0f", p);
    printf("%-12s %9.1f %9.2f%% %9.0f %12s\n", cf[c].name, median(cpu[c], rounds), median(slow[c], rounds),
           median(sig[c], rounds), ps_);
  }
  printf("gpuprof's handler per sample (sample - no-op per signal): %.0f ns\n", ps - pn);
  /* thread start (file comment): off = the wrapper passing through */
  double tns[2][99], left[2][99];
  for (int r = 0; r < rounds; r++)
    for (int c = 0; c < 2; c++) {
      fig_t f = run(argv[0], c ? "1000" : NULL, NULL, steps, "2000");
      if (f.cpu_ms < 0) {
        fprintf(stderr, "bench-cpusample: thread run failed\n");
        return 1;
      }
      tns[c][r] = f.cpu_ms * 1e6; /* the child printed ns per thread */
      left[c][r] = f.signals;     /* timers left after the joins */
    }
  printf("%-26s %14s %12s\n", "thread create + join", "CPU ns/thread", "timers after");
  printf("%-26s %14.0f %12.0f\n", "sampling off (baseline)", median(tns[0], rounds), median(left[0], rounds));
  printf("%-26s %14.0f %12.0f\n", "sampling 1000 Hz", median(tns[1], rounds), median(left[1], rounds));
  printf("gpuprof's cost per thread start (1000 Hz - off): %.0f ns\n", median(tns[1], rounds) - median(tns[0], rounds));
  return 0;
}

/* cpusamp-app.c - a CPU-bound program of known structure for the CPU
 * sampling tests (tests/cpusamp/cpusamp.sh).
 *
 *   cpusamp-app ratio     4 rounds of burn_a 150 ms then burn_b 50 ms of
 *                          thread CPU time on the main thread (rounds, so
 *                          that the expirations still pending at exit, and
 *                          the long stretches one signal carries under
 *                          load, do not all fall on one function)
 *   cpusamp-app threads   burn_a 200 ms on the main thread while a second
 *                          thread burns burn_b 200 ms; the worker first
 *                          makes one capture (what a GPU API call does:
 *                          the shim starts sampling a thread when it first
 *                          sees it)
 *   cpusamp-app nested    the sampling signal arrives while the thread is
 *                          inside a capture (the shim's capture hook burns
 *                          30 ms of CPU in the middle of it): the capture
 *                          gives the same node every time, and the shim
 *                          counts the nested samples it declined
 *   cpusamp-app workers [GO]  three threads that never call the shim
 *                          burn burn_w1 150 ms, burn_w2 100 ms, burn_w3
 *                          50 ms of CPU time (the interposed pthread_create
 *                          samples them from their start); each prints its
 *                          tid and its own CPU time ("w1 tid=T cpu_ns=C");
 *                          "timers_live=N" (the shim's CPU-time timers while
 *                          the workers are alive, done burning: 4 = main +
 *                          3) and "timers_after=M" once they were joined (1:
 *                          each worker's timer deleted at its exit), with
 *                          /proc/self/timers' counts beside them when the
 *                          kernel has that file (-1 if not); with GO, the
 *                          program then stays until file GO exists (the
 *                          live daemon is asked meanwhile; at most 100 s)
 *   cpusamp-app forkworkers  the same in a fork child (the parent waits
 *                          for the shim, forks, and waits for the child;
 *                          exit = the child's): the child's timer table
 *                          starts afresh and its new threads are sampled
 *   cpusamp-app signals   ratio, while the program itself takes SIGALRM
 *                          (ITIMER_REAL) and SIGPROF (ITIMER_PROF) every
 *                          millisecond and sleeps in between bursts; it
 *                          checks its handlers ran and its sums are exact
 *
 * ratio and signals also print "burn_cpu_ns=A B", the CPU time all burn_a
 * and all burn_b calls took (each burn may run on past its nominal length
 * until the kernel's late signals came, spin()).
 * Prints "cpu_ns=N" (getrusage: user + system time of the whole process at
 * the end), "main_cpu_ns=M" (the main thread's CPU time since main began; for ratio and signals since the shim attached), "sum=S" (a deterministic checksum) and, for threads, the two
 * thread ids "tid_main=A tid_worker=B".  Exit 0 when the program's own
 * checks pass.  Without the shim it runs the same (the capture is skipped).
 */

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t thread_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* gpd_shim__cpusample_thread_ns: the CPU time the calling thread's timer
 * signals carried (out[0]) and its pushed samples carry (out[1]); NULL
 * without the shim */
static void (*thread_sampled)(uint64_t out[2]);
static int (*sampler_stats)(uint64_t out[9]); /* gpd_shim__cpusample_stats: 1 while sampling is on */
static volatile uint64_t sink;
/* What the kernel may still owe a burn when it stops: 3 periods at the
 * tests' 1000 Hz. */
#define SIGNALLED_SLACK_NS 3000000ull

static int sampling_on(void) {
  uint64_t st[9];
  return sampler_stats && sampler_stats(st) == 1;
}

static uint64_t signalled_ns(void) {
  uint64_t v[2] = {0, 0};
  thread_sampled(v);
  return v[0];
}

/* The busy loop, inlined into each burner so that their samples' leaf
 * frames are the burners themselves.
 *
 * Under the shim it then burns on, at most 1 s more, until the kernel has
 * signalled all of the thread's CPU time but what it owed when the burn
 * began plus SIGNALLED_SLACK_NS.  A CPU-time timer is only checked at a
 * scheduler tick that finds the thread running; on this project's VM a
 * thread's CPU clock sometimes advances tens of ms with no signal, and a
 * burn that then ends hands that stretch to what the thread does next (or
 * to nobody, if it blocks or exits): 14 of 120 workers under load ended
 * 10-112 ms short, the shim having pushed every signal it got; catching
 * up took up to 214 ms more CPU (docs/SHIM.md, "Late signals"). */
static inline __attribute__((always_inline)) uint64_t spin(uint64_t ms, uint64_t seed) {
  uint64_t t0 = thread_cpu_ns(), s0 = thread_sampled ? signalled_ns() : 0;
  uint64_t owed0 = t0 > s0 ? t0 - s0 : 0;
  uint64_t end = t0 + ms * 1000000ull, x = seed;
  while (thread_cpu_ns() < end)
    for (int i = 0; i < 1000; i++)
      x = x * 6364136223846793005ull + 1442695040888963407ull;
  while (thread_sampled && thread_cpu_ns() > signalled_ns() + owed0 + SIGNALLED_SLACK_NS &&
         thread_cpu_ns() < end + 1000000000ull && sampling_on())
    for (int i = 0; i < 1000; i++)
      x = x * 6364136223846793005ull + 1442695040888963407ull;
  sink = x; /* the iteration count varies with the machine: not returned */
  return seed * 1000003ull;
}

__attribute__((noinline)) uint64_t burn_a(uint64_t ms) { return spin(ms, 1); }
__attribute__((noinline)) uint64_t burn_b(uint64_t ms) { return spin(ms, 2); }

static volatile sig_atomic_t alrm_n, prof_n;
static void on_alrm(int s) { (void)s; alrm_n++; }
static void on_prof(int s) { (void)s; prof_n++; }

static void *worker(void *arg) {
  uint64_t *out = arg;
  /* the shim samples a thread once it has seen it (its first capture) */
  int (*active)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "gpd_shim_active");
  uint32_t (*capture)(void) = (uint32_t (*)(void))dlsym(RTLD_DEFAULT, "gpd_shim_capture");
  if (active && capture) {
    for (int i = 0; i < 500 && !active(); i++)
      usleep(10000);
    capture();
  }
  out[0] = (uint64_t)syscall(SYS_gettid);
  out[1] = burn_b(200);
  return NULL;
}

__attribute__((noinline)) uint64_t burn_w1(uint64_t ms) { return spin(ms, 11); }
__attribute__((noinline)) uint64_t burn_w2(uint64_t ms) { return spin(ms, 12); }
__attribute__((noinline)) uint64_t burn_w3(uint64_t ms) { return spin(ms, 13); }

/* workers: burn, meet at `burnt` (all alive, done burning), wait at
 * `leave` until main has counted the timers */
static pthread_barrier_t burnt, leave;
typedef struct wk_s {
  int k;
  uint64_t tid, cpu, sum;
  long long sampled; /* CPU time its pushed samples carry (-1: no shim) */
} wk_t;

static void *wk_main(void *arg) {
  wk_t *w = arg;
  uint64_t c0 = thread_cpu_ns();
  w->tid = (uint64_t)syscall(SYS_gettid);
  w->sum = w->k == 1 ? burn_w1(150) : w->k == 2 ? burn_w2(100) : burn_w3(50);
  w->cpu = thread_cpu_ns() - c0;
  uint64_t v[2] = {0, 0};
  if (thread_sampled)
    thread_sampled(v);
  w->sampled = thread_sampled ? (long long)v[1] : -1;
  pthread_barrier_wait(&burnt);
  pthread_barrier_wait(&leave);
  return NULL;
}

/* posix timers of this process in /proc/self/timers (-1: no such file) */
static int proc_timers(void) {
  FILE *f = fopen("/proc/self/timers", "r");
  if (!f)
    return -1;
  char line[256];
  int n = 0;
  while (fgets(line, sizeof line, f))
    n += strncmp(line, "ID:", 3) == 0;
  fclose(f);
  return n;
}

static int workers(const char *go) {
  int (*active)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "gpd_shim_active");
  int (*timers)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "gpd_shim__cpusample_timers");
  int (*stats)(uint64_t *) = (int (*)(uint64_t *))dlsym(RTLD_DEFAULT, "gpd_shim__cpusample_stats");
  /* samples count only once the shim is attached (registration may take
   * seconds under ASan on a loaded machine): wait for it, bounded */
  for (int i = 0; active && i < 6000 && !active(); i++)
    usleep(10000);
  if (active && !active()) {
    fprintf(stderr, "cpusamp-app: the shim never attached to the daemon\n");
    return 6;
  }
  pthread_barrier_init(&burnt, NULL, 4);
  pthread_barrier_init(&leave, NULL, 4);
  pthread_t th[3];
  wk_t w[3];
  for (int k = 0; k < 3; k++) {
    w[k] = (wk_t){.k = k + 1};
    if (pthread_create(&th[k], NULL, wk_main, &w[k]) != 0)
      return 2;
  }
  pthread_barrier_wait(&burnt);
  int live = timers ? timers() : -1, plive = proc_timers();
  pthread_barrier_wait(&leave);
  uint64_t sum = 0;
  for (int k = 0; k < 3; k++) {
    pthread_join(th[k], NULL);
    sum ^= w[k].sum;
  }
  int after = timers ? timers() : -1, pafter = proc_timers();
  for (int k = 0; k < 3; k++)
    printf("w%d tid=%llu cpu_ns=%llu sampled_ns=%lld\n", k + 1, (unsigned long long)w[k].tid,
           (unsigned long long)w[k].cpu, w[k].sampled);
  printf("timers_live=%d proc_timers_live=%d\ntimers_after=%d proc_timers_after=%d\n", live, plive, after,
         pafter);
  uint64_t st[9] = {0};
  if (stats && stats(st) >= 0) /* for a failure's diagnosis */
    printf("samples: signals %llu pushed %llu failed %llu declined %llu (busy %llu, not attached %llu, nested "
           "%llu, incomplete %llu)\n",
           (unsigned long long)st[0], (unsigned long long)st[1], (unsigned long long)st[2],
           (unsigned long long)st[3], (unsigned long long)st[4], (unsigned long long)st[5],
           (unsigned long long)st[7], (unsigned long long)st[8]);
  printf("sum=%llu\n", (unsigned long long)sum);
  fflush(stdout);
  for (int i = 0; go && i < 10000 && access(go, F_OK) != 0; i++)
    usleep(10000);
  return 0;
}

static int (*hook_stats)(uint64_t *); /* gpd_shim__cpusample_stats */

/* 30 ms of CPU inside the capture, then on in 10 ms steps (at most 1 s)
 * until the shim has declined a nested sample: on a loaded VM, under
 * ASan, one signal may carry tens of ms of expirations, and 5 x 30 ms
 * once saw 2 signals in all, both outside. */
static void hook_burn(void) {
  sink = burn_b(30);
  uint64_t st[9] = {0};
  for (int i = 0; i < 100 && hook_stats && hook_stats(st) >= 0 && st[7] == 0; i++)
    sink = burn_b(10);
}

/* Every capture from one call site (a loop the compiler cannot split:
 * the hook's bound is volatile). */
static volatile int n_hooked = 5;
__attribute__((noinline)) static void capture_many(uint32_t (*capture)(void), void (*volatile *hook)(void),
                                                   uint32_t *out, int n) {
  for (int k = 0; k < n; k++) {
    *hook = k < n_hooked ? hook_burn : NULL;
    out[k] = capture();
  }
  *hook = NULL;
}

static int nested(void) {
  int (*active)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "gpd_shim_active");
  uint32_t (*capture)(void) = (uint32_t (*)(void))dlsym(RTLD_DEFAULT, "gpd_shim_capture");
  void (*volatile *hook)(void) = (void (*volatile *)(void))dlsym(RTLD_DEFAULT, "gpd_shim__capture_hook");
  int (*stats)(uint64_t *) = (int (*)(uint64_t *))dlsym(RTLD_DEFAULT, "gpd_shim__cpusample_stats");
  if (!active || !capture || !hook || !stats) {
    printf("sum=0\nnested: no shim\n");
    return 0;
  }
  for (int i = 0; i < 500 && !active(); i++)
    usleep(10000);
  hook_stats = stats;
  /* the first captures (a replay miss each) run the hook, the last one
   * runs without it */
  uint32_t nodes[6];
  capture_many(capture, hook, nodes, 6);
  uint32_t first = nodes[0];
  int same = 1;
  for (int k = 0; k < 6; k++) {
    same &= nodes[k] == first && first != 0;
    if (getenv("CPUSAMP_DEBUG"))
      fprintf(stderr, "capture %d: node %u\n", k, nodes[k]);
  }
  uint64_t st[9];
  stats(st);
  printf("sum=0\nnested: node %u same %d, signals %llu, pushed %llu, declined nested %llu\n", first, same,
         (unsigned long long)st[0], (unsigned long long)st[1], (unsigned long long)st[7]);
  if (!same) {
    fprintf(stderr, "cpusamp-app: a capture interrupted by samples gave another node\n");
    return 4;
  }
  if (st[7] == 0) {
    fprintf(stderr, "cpusamp-app: no sample arrived inside a capture (none declined as nested)\n");
    return 5;
  }
  return 0;
}

static uint64_t cpu_ns(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) * 1000000000ull +
         ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000ull;
}

/* Wait (at most 5 s) until the preloaded shim is attached to its daemon:
 * it samples only from then on.  Without the shim (the bare run) at once. */
static void wait_shim(void) {
  int (*active)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "gpd_shim_active");
  for (int i = 0; active && i < 500 && !active(); i++)
    usleep(10000);
}

int main(int argc, char **argv) {
  uint64_t main0 = thread_cpu_ns();
  const char *mode = argc > 1 ? argv[1] : "ratio";
  sampler_stats = (int (*)(uint64_t *))dlsym(RTLD_DEFAULT, "gpd_shim__cpusample_stats");
  if (sampling_on()) /* the burners wait for the kernel's late signals */
    thread_sampled = (void (*)(uint64_t *))dlsym(RTLD_DEFAULT, "gpd_shim__cpusample_thread_ns");
  uint64_t sum = 0, cpu_a = 0, cpu_b = 0;
  if (strcmp(mode, "nested") == 0)
    return nested();
  if (strcmp(mode, "workers") == 0)
    return workers(argc > 2 ? argv[2] : NULL);
  if (strcmp(mode, "forkworkers") == 0) {
    wait_shim();
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
      return 2;
    if (pid == 0)
      exit(workers(NULL));
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
      ;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 3;
  }
  if (strcmp(mode, "threads") == 0) {
    /* the main thread waits for the region too, so both are sampled */
    wait_shim();
    pthread_t t;
    uint64_t w[2];
    if (pthread_create(&t, NULL, worker, w) != 0)
      return 2;
    sum = burn_a(200);
    pthread_join(t, NULL);
    sum ^= w[1];
    printf("tid_main=%ld tid_worker=%llu\n", (long)syscall(SYS_gettid), (unsigned long long)w[0]);
  } else if (strcmp(mode, "signals") == 0) {
    /* sampled from the shim's attach on: main_cpu_ns counts from there */
    wait_shim();
    main0 = thread_cpu_ns();
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alrm; /* no SA_RESTART: the program copes with EINTR itself */
    sigaction(SIGALRM, &sa, NULL);
    sa.sa_handler = on_prof;
    sigaction(SIGPROF, &sa, NULL);
    struct itimerval it = {{0, 1000}, {0, 1000}};
    setitimer(ITIMER_REAL, &it, NULL);
    setitimer(ITIMER_PROF, &it, NULL);
    for (int k = 0; k < 3; k++) {
      uint64_t t0 = thread_cpu_ns();
      sum ^= burn_a(100);
      cpu_a += thread_cpu_ns() - t0;
      struct timespec ts = {0, 2000000};
      while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
    }
    uint64_t t0 = thread_cpu_ns();
    sum ^= burn_b(100);
    cpu_b += thread_cpu_ns() - t0;
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    setitimer(ITIMER_PROF, &off, NULL);
    printf("alrm=%d prof=%d\n", (int)alrm_n, (int)prof_n);
    if (alrm_n == 0 || prof_n == 0) {
      fprintf(stderr, "cpusamp-app: the program's own timers did not fire\n");
      return 3;
    }
  } else {
    wait_shim();
    main0 = thread_cpu_ns();
    for (int k = 0; k < 4; k++) {
      uint64_t t0 = thread_cpu_ns();
      sum += burn_a(150);
      uint64_t t1 = thread_cpu_ns();
      sum += burn_b(50);
      cpu_a += t1 - t0;
      cpu_b += thread_cpu_ns() - t1;
    }
  }
  if (cpu_a && cpu_b) /* the burns' own CPU time: each may burn on (spin) */
    printf("burn_cpu_ns=%llu %llu\n", (unsigned long long)cpu_a, (unsigned long long)cpu_b);
  printf("sum=%llu\n", (unsigned long long)sum);
  printf("main_cpu_ns=%llu\n", (unsigned long long)(thread_cpu_ns() - main0));
  printf("cpu_ns=%llu\n", (unsigned long long)cpu_ns());
  return 0;
}

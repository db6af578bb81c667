/* test-forkgrand - three generations of fork under the shim: the process
 * forks a child, the child forks a grandchild; every generation must end.
 *
 * Usage: test-forkgrand MODE
 * Usage: test-forkgrand --nodaemon SHIM MODE
 *
 * The process captures a calling context (gpd_shim_capture, found with
 * dlsym: nothing when the shim is not loaded) before it forks, and so does
 * the grandchild before it exits.  MODE says what the child does:
 *   plain    nothing the shim sees: it forks before any shim call, so it
 *            still holds the fork child's lazy connection start
 *   touch    captures, then forks
 *   threads  forks while 2 threads of its own capture in a loop, after
 *            the process forked it while 4 did (fork from multi-threaded
 *            parents)
 *   vfork    captures, then starts the grandchild with vfork + exec of
 *            this program ("leaf" argument: the exec'd image captures and
 *            forks once more)
 *   spawn    the same with posix_spawn
 *
 * Each waiter waits for its child with a deadline (10 s; the process 20 s):
 * a child that has not ended by then is killed (SIGKILL) and the waiter
 * fails.  The child reports the grandchild's pid on a pipe, so that the
 * process can kill a grandchild whose parent hung too.  Every generation
 * must exit 0.  The process prints "test-forkgrand: MODE: 3 generations
 * ended" and exits 0, else 1.
 *
 * Under test-withdaemon (GPD_TEST_DAEMON_LOG set) every generation but the
 * plain child also waits (deadline 10 s) until gpd_shim_active answers 1
 * (it registered: a fork child's first call starts its connection), and
 * the process fails unless the daemon logged exactly that many
 * registrations: plain 2 (process, grandchild), touch and threads 3,
 * vfork and spawn 4 (process, child, the exec'd grandchild, its child).
 *
 * --nodaemon SHIM MODE: re-execs itself with LD_PRELOAD=[ASan runtime:]SHIM
 * and GPUPROF_SOCKET at a path where nothing listens (no daemon: the shim
 * is loaded but never active).  Without it, run under test-withdaemon (a
 * real daemon).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "preload.h"

extern char **environ;

#define WAIT_MS 10000.0

static uint32_t (*capture_fn)(void);
static int (*active_fn)(void);
static int with_daemon; /* under test-withdaemon */
static atomic_int stop_threads;

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* A shim-visible call (a capture), when the shim is loaded. */
static void touch(void) {
  if (capture_fn)
    (void)capture_fn();
}

/* Wait for pid at most WAIT_MS; kill it if it does not end.  0 when it
 * exited 0, else 1 (with a message naming who). */
static int wait_deadline(pid_t pid, const char *who, double wait_ms) {
  double t0 = now_ms();
  int st = 0;
  pid_t r;
  while ((r = waitpid(pid, &st, WNOHANG)) == 0 && now_ms() - t0 < wait_ms) {
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  if (r != pid) {
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    fprintf(stderr, "FAIL test-forkgrand: %s %d did not end within %.0f ms (hang)\n", who, (int)pid, wait_ms);
    return 1;
  }
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    fprintf(stderr, "FAIL test-forkgrand: %s %d ended with status 0x%x\n", who, (int)pid, st);
    return 1;
  }
  return 0;
}

/* Under a daemon: wait (deadline WAIT_MS) until this process registered
 * (gpd_shim_active answers 1; its first call starts a fork child's
 * connection).  0, or 1 with a message. */
static int registered(const char *who) {
  if (!with_daemon)
    return 0;
  double t0 = now_ms();
  while (!(active_fn && active_fn()) && now_ms() - t0 < WAIT_MS) {
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  if (active_fn && active_fn())
    return 0;
  fprintf(stderr, "FAIL test-forkgrand: the %s (%d) did not register within %.0f ms\n", who, (int)getpid(),
          WAIT_MS);
  return 1;
}

static void *capture_loop(void *arg) {
  (void)arg;
  do
    touch();
  while (!atomic_load(&stop_threads));
  return NULL;
}

static int threads_start(pthread_t *th, int n) {
  for (int i = 0; i < n; i++)
    if (pthread_create(&th[i], NULL, capture_loop, NULL) != 0)
      return -1;
  return 0;
}

static void threads_stop(pthread_t *th, int n) {
  atomic_store(&stop_threads, 1);
  for (int i = 0; i < n; i++)
    pthread_join(th[i], NULL);
  atomic_store(&stop_threads, 0);
}

/* The exec'd grandchild of vfork / spawn: fork once more, wait. */
static int leaf(void) {
  touch();
  if (registered("exec'd grandchild"))
    return 1;
  pid_t p = fork();
  if (p < 0)
    return 1;
  if (p == 0) {
    touch();
    _exit(registered("exec'd grandchild's child"));
  }
  return wait_deadline(p, "leaf's child", WAIT_MS);
}

/* The child: start the grandchild as mode says, report its pid on fd,
 * wait for it. */
static int child(const char *mode, int fd, const char *self) {
  int threads = strcmp(mode, "threads") == 0;
  pthread_t th[2];
  if (strcmp(mode, "plain") != 0 && strcmp(mode, "threads") != 0) {
    touch();
    if (registered("child"))
      return 1;
  }
  if (threads && threads_start(th, 2) != 0)
    return 1;
  pid_t g;
  if (strcmp(mode, "vfork") == 0) {
    g = vfork();
    if (g == 0) {
      execl(self, self, "leaf", (char *)NULL);
      _exit(127);
    }
  } else if (strcmp(mode, "spawn") == 0) {
    char *args[] = {(char *)self, "leaf", NULL};
    int err = posix_spawn(&g, self, NULL, NULL, args, environ);
    if (err)
      g = -1;
  } else {
    g = fork();
    if (g == 0) {
      touch();
      _exit(registered("grandchild"));
    }
  }
  if (g > 0) /* at once: the process kills it if this child hangs next */
    (void)!write(fd, &g, sizeof g);
  if (threads) {
    threads_stop(th, 2);
    if (registered("child")) {
      if (g > 0)
        (void)wait_deadline(g, "grandchild", WAIT_MS);
      return 1;
    }
  }
  if (g < 0) {
    perror("test-forkgrand: child: fork");
    return 1;
  }
  return wait_deadline(g, "grandchild", WAIT_MS);
}

/* --nodaemon SHIM MODE: re-exec under the shim with no daemon. */
static int nodaemon(char **argv) {
  char asan[512] = "", pre[1200], sock[64];
  preload_asan_runtime(asan);
  snprintf(pre, sizeof pre, "%s%s%s", asan, asan[0] ? ":" : "", argv[2]);
  if (asan[0])
    setenv("ASAN_OPTIONS", "detect_leaks=0", 0);
  snprintf(sock, sizeof sock, "/tmp/gpd-forkgrand-absent-%d.sock", (int)getpid());
  setenv("LD_PRELOAD", pre, 1);
  setenv("GPUPROF_SOCKET", sock, 1);
  execl("/proc/self/exe", argv[0], argv[3], (char *)NULL);
  perror("test-forkgrand: exec");
  return 1;
}

int main(int argc, char **argv) {
  if (argc == 4 && strcmp(argv[1], "--nodaemon") == 0)
    return nodaemon(argv);
  if (argc != 2) {
    fprintf(stderr, "usage: test-forkgrand plain|touch|threads|vfork|spawn\n"
                    "       test-forkgrand --nodaemon SHIM MODE\n");
    return 2;
  }
  *(void **)&capture_fn = dlsym(RTLD_DEFAULT, "gpd_shim_capture");
  *(void **)&active_fn = dlsym(RTLD_DEFAULT, "gpd_shim_active");
  const char *dlog = getenv("GPD_TEST_DAEMON_LOG");
  with_daemon = dlog != NULL;
  const char *mode = argv[1];
  if (strcmp(mode, "leaf") == 0)
    return leaf();
  if (strcmp(mode, "plain") && strcmp(mode, "touch") && strcmp(mode, "threads") && strcmp(mode, "vfork") &&
      strcmp(mode, "spawn")) {
    fprintf(stderr, "test-forkgrand: unknown mode %s\n", mode);
    return 2;
  }
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0)
    return 1;
  self[n] = 0;
  int threads = strcmp(mode, "threads") == 0;
  pthread_t th[4];
  touch();
  if (registered("process"))
    return 1;
  if (threads && threads_start(th, 4) != 0)
    return 1;
  int pfd[2];
  if (pipe(pfd) != 0)
    return 1;
  pid_t c = fork();
  if (c < 0) {
    perror("test-forkgrand: fork");
    return 1;
  }
  if (c == 0) {
    close(pfd[0]);
    _exit(child(mode, pfd[1], self));
  }
  close(pfd[1]);
  if (threads)
    threads_stop(th, 4);
  int fail = wait_deadline(c, "child", 2 * WAIT_MS);
  pid_t g = -1;
  if (read(pfd[0], &g, sizeof g) == (ssize_t)sizeof g && g > 0 && kill(g, 0) == 0) {
    /* the child is gone; its grandchild, if still there, hung too */
    if (kill(g, SIGKILL) == 0)
      fprintf(stderr, "FAIL test-forkgrand: grandchild %d outlived its parent\n", (int)g), fail = 1;
  }
  if (fail)
    return 1;
  if (with_daemon) {
    /* every generation registered once, the plain child never */
    int want = strcmp(mode, "plain") == 0 ? 2 : strcmp(mode, "vfork") == 0 || strcmp(mode, "spawn") == 0 ? 4 : 3;
    int regs = preload_registrations(dlog);
    printf("test-forkgrand: registrations in the daemon log: %d (expected %d)\n", regs, want);
    if (regs != want) {
      fprintf(stderr, "FAIL test-forkgrand: %d registrations, expected %d\n", regs, want);
      return 1;
    }
  }
  printf("test-forkgrand: %s: 3 generations ended\n", mode);
  return 0;
}

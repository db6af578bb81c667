/* test-forkexec - what fork + exec costs a program under the shim.
 *
 * Usage: test-forkexec N MAX_MEAN_MS [strip]
 * Forks N times; each child execs /bin/true at once; the parent waits for
 * it.  Prints the mean and the largest time per fork+exec+wait in ms.
 * Under test-withdaemon with "strip": fails unless the daemon logged
 * exactly one registration (this process's; fork children must not
 * register before they exec).
 * "strip": the child removes LD_PRELOAD before exec, so only the fork
 * child's own cost is measured (not the exec'd image's shim constructor).
 * Fails (exit 1) when the mean exceeds MAX_MEAN_MS, or a child does not
 * end within 10 s (it is killed) or does not exit 0.  Run it under
 * test-withdaemon (a real daemon) to measure registration costs.
 *
 * Usage: test-forkexec --stalled SHIM N MAX_MEAN_MS
 * The same with "strip" against a daemon that never answers: listens on a
 * Unix socket in /tmp that it never accepts on (connect succeeds, Hello
 * gets no reply), and re-execs itself with LD_PRELOAD=[ASan runtime:]SHIM
 * and GPUPROF_SOCKET set to it.  A fork child that waited for its own
 * registration paid the full wait (200 ms) here.  Also fails when any
 * process other than this one connected to that socket (accepted at the
 * end, peers told apart by SO_PEERCRED): a fork child that execs at once
 * must not connect at all.  Load-independent, unlike the mean.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "preload.h"

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* At exit of the re-exec'd run: remove the stalled socket's name. */
static void unlink_tmp_sock(void) {
  const char *p = getenv("GPD_FORKEXEC_UNLINK");
  if (p && strncmp(p, "/tmp/gpd-forkexec-", 18) == 0)
    unlink(p);
}

/* --stalled SHIM N MAX: listen, never accept, re-exec under the shim. */
static int stalled(char **argv) {
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  snprintf(sa.sun_path, sizeof sa.sun_path, "/tmp/gpd-forkexec-%d.sock", (int)getpid());
  unlink(sa.sun_path);
  int s = socket(AF_UNIX, SOCK_STREAM, 0); /* inherited by the exec */
  if (s < 0 || bind(s, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(s, 4096) < 0) {
    perror("test-forkexec: listen");
    return 1;
  }
  char asan[512] = "", pre[1200];
  preload_asan_runtime(asan);
  snprintf(pre, sizeof pre, "%s%s%s", asan, asan[0] ? ":" : "", argv[2]);
  if (asan[0])
    setenv("ASAN_OPTIONS", "detect_leaks=0", 0);
  setenv("LD_PRELOAD", pre, 1);
  setenv("GPUPROF_SOCKET", sa.sun_path, 1);
  setenv("GPD_FORKEXEC_UNLINK", sa.sun_path, 1);
  char fdv[16];
  snprintf(fdv, sizeof fdv, "%d", s);
  setenv("GPD_FORKEXEC_LISTEN_FD", fdv, 1);
  execl("/proc/self/exe", argv[0], argv[3], argv[4], "strip", (char *)NULL);
  perror("test-forkexec: exec");
  unlink(sa.sun_path);
  return 1;
}

int main(int argc, char **argv) {
  if (argc == 5 && strcmp(argv[1], "--stalled") == 0)
    return stalled(argv);
  atexit(unlink_tmp_sock);
  if (argc < 3) {
    fprintf(stderr, "usage: test-forkexec N MAX_MEAN_MS [strip]\n");
    return 2;
  }
  int n = atoi(argv[1]);
  double max_mean = atof(argv[2]);
  int strip = argc > 3 && strcmp(argv[3], "strip") == 0;
  double sum = 0, worst = 0;
  for (int i = 0; i < n; i++) {
    double t0 = now_ms();
    pid_t p = fork();
    if (p < 0) {
      perror("fork");
      return 1;
    }
    if (p == 0) {
      if (strip)
        unsetenv("LD_PRELOAD");
      execl("/bin/true", "true", (char *)NULL);
      _exit(127);
    }
    int st = 0;
    pid_t r;
    while ((r = waitpid(p, &st, WNOHANG)) == 0 && now_ms() - t0 < 10000) {
      struct timespec ts = {0, 100000};
      nanosleep(&ts, NULL);
    }
    if (r != p) {
      kill(p, SIGKILL);
      waitpid(p, NULL, 0);
      fprintf(stderr, "FAIL test-forkexec: child %d did not end within 10 s\n", (int)p);
      return 1;
    }
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      fprintf(stderr, "FAIL test-forkexec: child exited with status 0x%x\n", st);
      return 1;
    }
    double dt = now_ms() - t0;
    sum += dt;
    if (dt > worst)
      worst = dt;
  }
  double mean = sum / n;
  const char *dlog = getenv("GPD_TEST_DAEMON_LOG"); /* under test-withdaemon */
  if (dlog && strip) {
    /* Only this process registered: no fork child did before its exec. */
    int regs = preload_registrations(dlog);
    printf("test-forkexec: registrations in the daemon log: %d\n", regs);
    if (regs != 1) {
      fprintf(stderr, "FAIL test-forkexec: %d registrations, expected only this process's\n", regs);
      return 1;
    }
  }
  const char *lfd = getenv("GPD_FORKEXEC_LISTEN_FD");
  if (lfd) {
    /* Who connected to the stalled daemon?  Only this process may have. */
    int ls = atoi(lfd), others = 0, mine = 0, c;
    fcntl(ls, F_SETFL, O_NONBLOCK);
    while ((c = accept(ls, NULL, NULL)) >= 0) {
      struct ucred cr;
      socklen_t cl = sizeof cr;
      if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr, &cl) == 0 && cr.pid != getpid())
        others++;
      else
        mine++;
      close(c);
    }
    printf("test-forkexec: connections to the stalled daemon: %d from this process, %d from others\n", mine,
           others);
    if (others) {
      fprintf(stderr, "FAIL test-forkexec: %d fork children connected to the daemon before exec\n", others);
      return 1;
    }
  }
  printf("test-forkexec%s: %d x fork+exec /bin/true+wait: mean %.2f ms, max %.2f ms (LD_PRELOAD=%s)\n",
         strip ? " strip" : "", n, mean, worst, getenv("LD_PRELOAD") ? getenv("LD_PRELOAD") : "");
  if (mean > max_mean) {
    fprintf(stderr, "FAIL test-forkexec: mean %.2f ms > %.2f ms\n", mean, max_mean);
    return 1;
  }
  return 0;
}

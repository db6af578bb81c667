/* test-withdaemon - runs one command under the shim against a real,
 * private gpuprofd, then checks what the daemon logged.
 *
 * Usage: test-withdaemon GPUPROFD SHIM SECONDS CMD [ARGS...]
 *
 * Makes a private directory (mkdtemp), starts GPUPROFD --foreground with a
 * socket, database, state directory and config (log_level = info) in it,
 * waits (deadline 30 s) until the socket accepts connections, runs CMD with
 * LD_PRELOAD=[$LD_PRELOAD:][libasan:]SHIM, GPUPROF_SOCKET=<socket>,
 * GPD_TEST_DIR=<dir> and GPD_TEST_DAEMON_LOG=<daemon log>, waits for it at
 * most SECONDS (then SIGKILL: fail), stops the daemon (SIGTERM, deadline
 * 20 s, then SIGKILL: fail) and fails if the daemon log says it was sent
 * something that is not a region as a region ("hand-back region rejected",
 * "hand-back Hello without a region fd").  Exit status: CMD's (77 = skip
 * passes through), 1 on any failure.  Every process it started is killed
 * on every exit path (and by a watchdog alarm); the directory is removed.
 *
 * Under ASan (this program built with -fsanitize=address) the ASan
 * runtime is put first in the child's LD_PRELOAD, as an instrumented shim
 * requires.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "preload.h"

static char dir[64];
static pid_t daemon_pid = -1, app_pid = -1;

static void kill_all(void) {
  if (app_pid > 0)
    kill(app_pid, SIGKILL);
  if (daemon_pid > 0)
    kill(daemon_pid, SIGKILL);
}

static void remove_dir(void) {
  if (!dir[0] || getenv("KEEP"))
    return;
  pid_t p = fork();
  if (p == 0) {
    execlp("rm", "rm", "-rf", "--", dir, (char *)NULL);
    _exit(127);
  }
  if (p > 0)
    waitpid(p, NULL, 0);
}

static void show_file(const char *what, const char *path) {
  FILE *f = fopen(path, "r");
  char line[1024];
  if (!f)
    return;
  fprintf(stderr, "--- %s\n", what);
  while (fgets(line, sizeof line, f))
    fputs(line, stderr);
  fclose(f);
}

static char log_path[96];

static void fail(const char *fmt, const char *arg) {
  fprintf(stderr, "FAIL: ");
  fprintf(stderr, fmt, arg);
  fputc('\n', stderr);
  kill_all();
  show_file("daemon log", log_path);
  remove_dir();
  exit(1);
}

static void on_alarm(int sig) {
  (void)sig;
  static const char m[] = "FAIL: test-withdaemon watchdog fired\n";
  if (write(2, m, sizeof m - 1) < 0) {
  }
  kill_all();
  _exit(1);
}

static uint64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void nap_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static int can_connect(const char *path) {
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0)
    return 0;
  int ok = connect(s, (struct sockaddr *)&sa, sizeof sa) == 0;
  close(s);
  return ok;
}

/* Wait for pid with a deadline; returns its wait status or -1 (timed out). */
static int wait_deadline(pid_t pid, uint64_t ms) {
  uint64_t end = now_ms() + ms;
  int st;
  for (;;) {
    pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == pid)
      return st;
    if (r < 0 && errno != EINTR)
      return -1;
    if (now_ms() >= end)
      return -1;
    nap_ms(10);
  }
}

static int file_has(const char *path, const char *needle) {
  FILE *f = fopen(path, "r");
  char line[4096];
  int found = 0;
  if (!f)
    return 0;
  while (!found && fgets(line, sizeof line, f))
    found = strstr(line, needle) != NULL;
  fclose(f);
  return found;
}

int main(int argc, char **argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: test-withdaemon GPUPROFD SHIM SECONDS CMD [ARGS...]\n");
    return 2;
  }
  const char *gpuprofd = argv[1], *shim = argv[2];
  int secs = atoi(argv[3]);
  signal(SIGALRM, on_alarm);
  alarm((unsigned)secs + 60);

  snprintf(dir, sizeof dir, "/tmp/gpd-sc.XXXXXX");
  if (!mkdtemp(dir)) {
    dir[0] = '\0';
    fail("mkdtemp: %s", strerror(errno));
  }
  char sock[100], db[128], state[128], conf[128];
  snprintf(sock, sizeof sock, "%s/d.sock", dir);
  snprintf(db, sizeof db, "%s/d.gpdb", dir);
  snprintf(state, sizeof state, "%s/state", dir);
  snprintf(conf, sizeof conf, "%s/d.conf", dir);
  snprintf(log_path, sizeof log_path, "%s/daemon.log", dir);
  FILE *cf = fopen(conf, "w");
  if (!cf)
    fail("cannot write %s", conf);
  fprintf(cf, "[daemon]\nlog_level = info\n[store]\nflush_interval_ms = 100\n");
  fclose(cf);

  daemon_pid = fork();
  if (daemon_pid < 0)
    fail("fork: %s", strerror(errno));
  if (daemon_pid == 0) {
    int fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    execl(gpuprofd, gpuprofd, "--foreground", "--socket", sock, "--db", db, "--state-dir", state,
          "--config", conf, (char *)NULL);
    _exit(127);
  }
  uint64_t end = now_ms() + 30000;
  while (!can_connect(sock)) {
    if (waitpid(daemon_pid, NULL, WNOHANG) == daemon_pid) {
      daemon_pid = -1;
      fail("gpuprofd exited at start (%s)", gpuprofd);
    }
    if (now_ms() >= end)
      fail("gpuprofd does not accept on %s within 30 s", sock);
    nap_ms(20);
  }

  /* The child's LD_PRELOAD: what we were given, the ASan runtime if this
   * program (so the shim next to it) is instrumented, then the shim. */
  char asan[512] = "", preload[2048];
  preload_asan_runtime(asan);
  const char *old = getenv("LD_PRELOAD");
  int has_asan = old && strstr(old, "libasan");
  snprintf(preload, sizeof preload, "%s%s%s%s%s", old && *old ? old : "", old && *old ? ":" : "",
           asan[0] && !has_asan ? asan : "", asan[0] && !has_asan ? ":" : "", shim);
  if (asan[0])
    setenv("ASAN_OPTIONS", "detect_leaks=0", 0);

  app_pid = fork();
  if (app_pid < 0)
    fail("fork: %s", strerror(errno));
  if (app_pid == 0) {
    setenv("LD_PRELOAD", preload, 1);
    setenv("GPUPROF_SOCKET", sock, 1);
    setenv("GPD_TEST_DIR", dir, 1);
    setenv("GPD_TEST_DAEMON_LOG", log_path, 1);
    execvp(argv[4], argv + 4);
    _exit(127);
  }
  int st = wait_deadline(app_pid, (uint64_t)secs * 1000);
  if (st == -1)
    fail("%s did not end within its deadline", argv[4]);
  app_pid = -1;
  int rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);

  kill(daemon_pid, SIGTERM);
  int dst = wait_deadline(daemon_pid, 20000);
  if (dst == -1)
    fail("gpuprofd did not exit within 20 s of SIGTERM%s", "");
  daemon_pid = -1;
  if (!WIFEXITED(dst) || WEXITSTATUS(dst) != 0)
    fail("gpuprofd ended badly after SIGTERM%s", "");
  static const char *const bad[] = {"hand-back region rejected", "hand-back Hello without a region fd"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    if (file_has(log_path, bad[i]))
      fail("the daemon logged \"%s\": the shim sent something else as its region", bad[i]);
  if (rc != 0 && rc != 77) {
    fprintf(stderr, "FAIL: %s exited with %d\n", argv[4], rc);
    show_file("daemon log", log_path);
    rc = 1;
  }
  remove_dir();
  return rc;
}

/* test-closerange - a program that closes descriptors it did not open,
 * run with the shim preloaded against a real daemon (test-withdaemon).
 *
 * Usage: test-closerange MODE OUTFILE
 *   reuse    close_range(3, ~0U, 0), at once open OUTFILE (it takes the
 *            number the shim's socket had) and write 200 lines to it;
 *   noreuse  close_range(3, ~0U, 0), then 1 s with no new descriptor (the
 *            shim's numbers stay closed: POLLNVAL), then the same;
 *   sock     put OUTFILE over the shim's socket number (dup2; found in /proc/self/fd),
 *            write 200 lines; the shim must hand its region
 *            back to the daemon with the profile id it was given (the
 *            daemon logs "pid N handed back its region (profile P," or,
 *            when it knows the connection was the same process's,
 *            "pid N reconnected: profile P").
 * Checks: the shim registered first (gpd_shim_active() == 1 within 10 s);
 * all 200 writes succeed and the file holds exactly 200 lines; the
 * threads other than main used at most 20 clock ticks (utime + stime from
 * /proc/self/task/<tid>/stat) over the >= 1 s of writing (a thread spinning
 * on a dead descriptor uses ~100 per second); after close_range the shim
 * stops (gpd_shim_active() == 0 within 5 s: its region's descriptor is gone
 * and it must not start a second region); in sock mode it stays active
 * and the daemon log shows the hand-back within 10 s.
 * Exit 0 = pass, 1 = fail (message on stderr).
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define LINES 200

#define CHECK(cond, ...)                                                                   \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      fprintf(stderr, "FAIL test-closerange %s:%d: %s: ", mode, __LINE__, #cond);          \
      fprintf(stderr, __VA_ARGS__);                                                        \
      fputc('\n', stderr);                                                                 \
      exit(1);                                                                             \
    }                                                                                      \
  } while (0)

static const char *mode = "?";

static uint64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void nap_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* CPU clock ticks (utime + stime) of every thread but the main one. */
static long other_threads_ticks(void) {
  long sum = 0;
  DIR *d = opendir("/proc/self/task");
  if (!d)
    return -1;
  struct dirent *e;
  pid_t self = getpid();
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.' || atoi(e->d_name) == self)
      continue;
    char p[300], buf[1024];
    snprintf(p, sizeof p, "/proc/self/task/%s/stat", e->d_name);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
      continue; /* the thread ended */
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
      continue;
    buf[n] = '\0';
    char *q = strrchr(buf, ')'); /* comm may hold spaces */
    unsigned long ut = 0, st = 0;
    /* after ')': state(3) ... utime is field 14, stime 15 */
    if (q && sscanf(q + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) == 2)
      sum += (long)(ut + st);
  }
  closedir(d);
  return sum;
}

/* The shim's connection socket: the one socket this program has. */
static int find_socket(void) {
  DIR *d = opendir("/proc/self/fd");
  int found = -1;
  struct dirent *e;
  while (d && (e = readdir(d))) {
    char p[300], l[64];
    snprintf(p, sizeof p, "/proc/self/fd/%s", e->d_name);
    ssize_t n = readlink(p, l, sizeof l - 1);
    if (n > 0) {
      l[n] = '\0';
      if (strncmp(l, "socket:", 7) == 0)
        found = atoi(e->d_name);
    }
  }
  if (d)
    closedir(d);
  return found;
}

/* Does the daemon log have a line containing a (or b)?  The first such
 * line is copied to line (4096 bytes) when not NULL. */
static int daemon_log_has(const char *a, const char *b, char *line_out) {
  const char *path = getenv("GPD_TEST_DAEMON_LOG");
  FILE *f = path ? fopen(path, "r") : NULL;
  char line[4096];
  int found = 0;
  while (f && !found && fgets(line, sizeof line, f))
    found = strstr(line, a) != NULL || (b && strstr(line, b) != NULL);
  if (f)
    fclose(f);
  if (found && line_out)
    memcpy(line_out, line, sizeof line);
  return found;
}

int main(int argc, char **argv) {
  CHECK(argc == 3, "usage: test-closerange reuse|noreuse|sock OUTFILE");
  mode = argv[1];
  const char *out = argv[2];
  int (*active)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "gpd_shim_active");
  CHECK(active != NULL, "the shim is not preloaded");
  uint64_t end = now_ms() + 10000;
  while (!active() && now_ms() < end)
    nap_ms(10);
  CHECK(active() == 1, "the shim did not register with the daemon within 10 s");
  int sock = find_socket();
  CHECK(sock >= 3, "no shim socket among the descriptors");

  long t0 = other_threads_ticks();
  int fd;
  if (strcmp(mode, "sock") == 0) {
    /* The application's file takes the socket's number at once (dup2
     * replaces it atomically): with close + open, the shim's thread may
     * see the close and reconnect onto that number first. */
    int tmp = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    CHECK(tmp >= 0, "open %s: %s", out, strerror(errno));
    CHECK(dup2(tmp, sock) == sock, "dup2(%d, %d): %s", tmp, sock, strerror(errno));
    CHECK(close(tmp) == 0, "close(%d): %s", tmp, strerror(errno));
    fd = sock;
  } else {
    CHECK(syscall(SYS_close_range, 3u, ~0u, 0u) == 0, "close_range: %s", strerror(errno));
    if (strcmp(mode, "noreuse") == 0)
      nap_ms(1000); /* the shim's numbers stay closed meanwhile */
    fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    CHECK(fd == 3, "expected the file to take number 3, got %d", fd);
  }
  int failed = 0;
  for (int i = 0; i < LINES; i++) {
    char line[64];
    int n = snprintf(line, sizeof line, "line %d of %d\n", i + 1, LINES);
    if (write(fd, line, (size_t)n) != n)
      failed++;
    nap_ms(5);
  }
  CHECK(failed == 0, "%d of %d writes failed (last error: %s)", failed, LINES, strerror(errno));
  CHECK(close(fd) == 0, "close of our file failed: %s (someone closed it)", strerror(errno));
  long t1 = other_threads_ticks();
  fprintf(stderr, "test-closerange %s: other threads used %ld clock ticks while writing\n", mode, t1 - t0);
  CHECK(t0 >= 0 && t1 - t0 <= 20, "the shim's threads used %ld ticks in ~1 s (spinning?)", t1 - t0);

  FILE *f = fopen(out, "r");
  CHECK(f != NULL, "reopen %s: %s", out, strerror(errno));
  int lines = 0, c;
  while ((c = fgetc(f)) != EOF)
    lines += c == '\n';
  fclose(f);
  CHECK(lines == LINES, "%s holds %d lines, wrote %d", out, lines, LINES);

  if (strcmp(mode, "sock") == 0) {
    /* The daemon names the profile it registered us as, and the one the
     * hand-back continues: it must be the same (the shim sent its
     * original profile id with its region). */
    char reg[96], back[96], again[96];
    snprintf(reg, sizeof reg, "registered pid %d uid", (int)getpid());
    CHECK(daemon_log_has(reg, NULL, NULL), "the daemon log lacks \"%s\"", reg);
    char line[4096];
    daemon_log_has(reg, NULL, line);
    const char *p = strstr(line, " as profile ");
    CHECK(p != NULL, "no profile id in \"%s\"", line);
    unsigned long long prof = strtoull(p + 12, NULL, 10);
    snprintf(back, sizeof back, "pid %d handed back its region (profile %llu,", (int)getpid(), prof);
    snprintf(again, sizeof again, "pid %d reconnected: profile %llu ", (int)getpid(), prof);
    end = now_ms() + 10000;
    while (!daemon_log_has(back, again, NULL) && now_ms() < end)
      nap_ms(20);
    CHECK(daemon_log_has(back, again, NULL), "the daemon did not log \"%s\" or \"%s\" within 10 s", back,
          again);
    CHECK(active() == 1, "the shim stopped although its region is intact");
  } else {
    end = now_ms() + 5000;
    while (active() && now_ms() < end)
      nap_ms(10);
    CHECK(active() == 0, "the shim still reports active 5 s after losing its region descriptor");
  }
  printf("PASS test-closerange %s\n", mode);
  return 0;
}

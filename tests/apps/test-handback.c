/* test-handback - registration and daemon-restart hand-back, against a
 * minimal fake daemon (this program): it serves the socket, registers the
 * app (ocl-loop under LD_PRELOAD), drains its region, then "dies" (closes
 * the connection and the listener), comes back, and must receive a
 * hand-back Hello with the same memfd and profile id; records must flow
 * again and announcements must be repeated.
 * With a 4th argument `oldversion` the fake daemon is of another release
 * instead: it answers the first Hello with proto_version
 * GPD_PROTO_VERSION - 1 (64-byte slots) and a region; the shim must
 * refuse it: nothing pushed into the region (no ring claimed), no second
 * connection (a refusal is not retried), and the application runs to its
 * end unprofiled (exit 0).
 * Usage: test-handback SOCKET SHIM OCL-LOOP [oldversion].  Exit 77 without
 * a device. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>

#include "drain.h"
#include "gpuprof.pb-c.h"
#include "gpuprof/clock.h"
#include "gpuprof/frame.h"

static dr_t D;

static int listen_on(const char *path) {
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
  unlink(path);
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  DR_CHECK(s >= 0 && bind(s, (struct sockaddr *)&sa, sizeof sa) == 0 && listen(s, 8) == 0, "listen %s", path);
  return s;
}

static int accept_within(int ls, int ms) {
  struct pollfd p = {.fd = ls, .events = POLLIN};
  DR_CHECK(poll(&p, 1, ms) == 1, "no client connected within %d ms", ms);
  int c = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
  DR_CHECK(c >= 0, "accept");
  return c;
}

static Gpuprof__Hello *recv_hello(int c, int *fd, Gpuprof__Msg **keep) {
  uint8_t *buf;
  size_t n;
  int err = gpd_frame_recv(c, &buf, &n, fd, 5000);
  DR_CHECK(err == 0, "recv hello %d", err);
  Gpuprof__Msg *m = gpuprof__msg__unpack(NULL, n, buf);
  free(buf);
  DR_CHECK(m && m->body_case == GPUPROF__MSG__BODY_HELLO, "not a hello");
  *keep = m;
  return m->hello;
}

static uint32_t reply_version = GPD_PROTO_VERSION;

/* STRING records with this text drained so far. */
static int count_string(const dr_t *d, const char *text) {
  int n = 0;
  for (int i = 0; i < d->nstr; i++)
    n += strcmp(d->str_text[i], text) == 0;
  return n;
}

static void reply(int c, uint64_t profile, int fd) {
  Gpuprof__HelloReply r = GPUPROF__HELLO_REPLY__INIT;
  r.proto_version = reply_version;
  r.profile_id = profile;
  Gpuprof__Msg m = GPUPROF__MSG__INIT;
  m.body_case = GPUPROF__MSG__BODY_HELLO_REPLY;
  m.hello_reply = &r;
  uint8_t buf[256];
  size_t n = gpuprof__msg__pack(&m, buf);
  DR_CHECK(gpd_frame_send(c, buf, (uint32_t)n, fd, 5000) == 0, "send reply");
}

static void drain_for(int ms) {
  uint64_t end = gpd_clock_ns() + (uint64_t)ms * 1000000ull;
  while (gpd_clock_ns() < end) {
    dr_drain(&D);
    struct timespec ts = {0, 5000000};
    nanosleep(&ts, NULL);
  }
}

int main(int argc, char **argv) {
  DR_CHECK(argc == 4 || (argc == 5 && strcmp(argv[4], "oldversion") == 0),
           "usage: test-handback SOCKET SHIM OCL-LOOP [oldversion]");
  int oldversion = argc == 5;
  signal(SIGPIPE, SIG_IGN);
  int ls = listen_on(argv[1]);
  pid_t pid = fork();
  if (pid == 0) {
    {
      /* keep what is preloaded already (a sanitizer runtime must stay first) */
      const char *cur = getenv("LD_PRELOAD");
      char pl[4096];
      snprintf(pl, sizeof pl, "%s%s%s", cur && *cur ? cur : "", cur && *cur ? ":" : "", argv[2]);
      setenv("LD_PRELOAD", pl, 1);
    }
    setenv("GPUPROF_SOCKET", argv[1], 1);
    setenv("GPUPROF_JOB_ID", "hb-test", 1);
    execl(argv[3], argv[3], oldversion ? "20000" : "300000", "10", (char *)NULL);
    _exit(127);
  }
  int c = accept_within(ls, 30000);
  int fd = -1;
  Gpuprof__Msg *keep;
  Gpuprof__Hello *h = recv_hello(c, &fd, &keep);
  DR_CHECK(h->pid == pid && !h->handback && fd < 0, "first hello pid %d handback %d", h->pid, h->handback);
  DR_CHECK(strcmp(h->job_id, "hb-test") == 0 && h->n_argv == 3 && strstr(h->exe, "ocl-loop"), "hello fields");
  gpuprof__msg__free_unpacked(keep, NULL);
  DR_CHECK(gpd_region_create(&D.r, 16, 1u << 14, pid, 42) == 0, "region");
  if (oldversion) {
    reply_version = GPD_PROTO_VERSION - 1;
    reply(c, 42, D.r.fd);
    /* the application ends by itself (20 000 launches), unprofiled */
    int st = 0, children = 0;
    uint64_t end = gpd_clock_ns() + 120000000000ull;
    while (waitpid(pid, &st, WNOHANG) == 0) {
      DR_CHECK(gpd_clock_ns() < end, "ocl-loop did not end within 120 s");
      struct pollfd p = {.fd = ls, .events = POLLIN};
      if (poll(&p, 1, 50) == 0)
        continue;
      /* A connection: the application's shim again is a failure.  Its
       * children also preload the shim and register once each (PoCL runs
       * its compiler and linker as child processes when its kernel cache
       * is cold): refused like any other process, they are no retry. */
      int c2 = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
      if (c2 < 0)
        continue;
      uint8_t *buf = NULL;
      size_t n = 0;
      int cfd = -1;
      if (gpd_frame_recv(c2, &buf, &n, &cfd, 5000) == 0) {
        Gpuprof__Msg *m = gpuprof__msg__unpack(NULL, n, buf);
        DR_CHECK(m && m->body_case == GPUPROF__MSG__BODY_HELLO, "not a hello");
        DR_CHECK(m->hello->pid != pid, "the shim connected again after a version refusal");
        gpuprof__msg__free_unpacked(m, NULL);
        children++;
      }
      free(buf);
      if (cfd >= 0)
        close(cfd);
      close(c2);
    }
    if (WIFEXITED(st) && WEXITSTATUS(st) == 77)
      return 77;
    DR_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "ocl-loop status %d", st);
    DR_CHECK(atomic_load(&D.r.hdr->ring_hwm) == 0, "the shim pushed into another version's region (%u rings)",
             (unsigned)atomic_load(&D.r.hdr->ring_hwm));
    printf("test-handback oldversion: ok (refused, not retried, the application ran unprofiled; "
           "%d child processes registered once each)\n", children);
    unlink(argv[1]);
    return 0;
  }
  reply(c, 42, D.r.fd);
  /* Wait for the first records (PoCL compiles first: slow under ASan/load). */
  for (int i = 0; i < 100 && D.ninv_all == 0; i++)
    drain_for(100);
  long inv1 = D.ninv_all, nodes1 = D.nnodes_all;
  if (inv1 == 0) { /* maybe no device */
    int st;
    if (waitpid(pid, &st, WNOHANG) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 77)
      return 77;
  }
  DR_CHECK(inv1 > 0 && nodes1 > 0, "no records before restart (%ld invokes)", inv1);
  /* the name is announced at the first launch, after its INVOKE */
  for (int i = 0; i < 100 && count_string(&D, "tiny") == 0; i++)
    drain_for(100);
  int names1 = count_string(&D, "tiny");
  DR_CHECK(names1 >= 1, "the kernel name was not announced");

  /* The daemon dies: connection and listener gone for 700 ms. */
  close(c);
  close(ls);
  unlink(argv[1]);
  struct timespec ts = {0, 700000000};
  nanosleep(&ts, NULL);
  ls = listen_on(argv[1]);
  c = accept_within(ls, 30000);
  h = recv_hello(c, &fd, &keep);
  DR_CHECK(h->handback && h->profile_id == 42 && fd >= 0 && h->pid == pid, "hand-back hello: handback %d id %llu fd %d",
           h->handback, (unsigned long long)h->profile_id, fd);
  gpuprof__msg__free_unpacked(keep, NULL);
  struct stat a, b;
  DR_CHECK(fstat(fd, &a) == 0 && fstat(D.r.fd, &b) == 0 && a.st_ino == b.st_ino, "not the same memfd");
  close(fd);
  reply(c, 42, -1);
  long inv2 = D.ninv_all;
  long nodes2 = D.nnodes_all;
  for (int i = 0; i < 100 && (D.ninv_all == inv2 || D.nnodes_all == nodes2); i++)
    drain_for(100);
  dr_drain(&D);
  DR_CHECK(D.ninv_all > inv2, "no invokes after hand-back");
  DR_CHECK(D.nnodes_all > nodes1, "nodes were not re-announced after hand-back");
  /* the kernel's name comes from the shim's per-kernel cache after the
   * first launch: it must still be announced again in the new epoch */
  for (int i = 0; i < 100 && count_string(&D, "tiny") == names1; i++)
    drain_for(100);
  DR_CHECK(count_string(&D, "tiny") > names1, "the kernel name was not re-announced after hand-back");
  kill(pid, SIGTERM);
  int st;
  waitpid(pid, &st, 0);
  printf("test-handback: ok (%ld invokes before, %ld after; %ld + %ld node records)\n", inv1, D.ninv_all - inv2,
         nodes1, D.nnodes_all - nodes1);
  unlink(argv[1]);
  return 0;
}

/* test-daemon-client.c - a fake shim for the daemon's integration tests.
 * It speaks the protocol (Hello, hand-back) and produces records into the
 * region the daemon gives it.  Usage:
 *   test-daemon-client SOCKET honest N        register, push, exit
 *   test-daemon-client SOCKET kill K          push K pairs, then SIGKILL itself
 *   test-daemon-client SOCKET garbage         scribble on its ring, wait for stdin EOF
 *   test-daemon-client SOCKET handback K M [U] push K (and U INVOKEs whose ACTIVITYs
 *                                             wait), print "PHASE1 <id>", wait for a
 *                                             stdin line, hand the region back, push
 *                                             the U ACTIVITYs, then M pairs
 * Every kernel pair: INVOKE on ring 0, ACTIVITY (100 ns, kernel KNAME) on
 * ring 1, with node/module/string announcements as the shim makes them.
 * A full ring is waited on (a test helper may block; the shim never does).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "gpuprof/frame.h"
#include "gpuprof/record.h"
#include "gpuprof/region.h"
#include "gpuprof.pb-c.h"

#define KNAME "_Z9my_kernelPfi"
#define MODPATH "/nonexistent/test-app"

static gpd_region_t R;
static gpd_producer_t P0, P1;
static uint64_t corr_n;

static int connect_to(const char *path) {
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
  if (s < 0 || connect(s, (struct sockaddr *)&sa, sizeof sa) < 0) {
    perror("connect");
    exit(2);
  }
  return s;
}

/* Hello (or hand-back Hello with fd); returns the profile id. */
static uint64_t hello(int s, int handback, uint64_t id, int *fd_out) {
  Gpuprof__Msg m = GPUPROF__MSG__INIT;
  Gpuprof__Hello h = GPUPROF__HELLO__INIT;
  char *argv[] = {"test-daemon-client", "arg \"quoted\""};
  h.proto_version = 1;
  h.pid = 1; /* a lie: the daemon must use SO_PEERCRED */
  h.exe = "/nonexistent/test-app";
  h.n_argv = 2;
  h.argv = argv;
  h.job_id = "job42";
  h.rank = -1;
  h.local_rank = -1;
  h.handback = handback;
  h.profile_id = id;
  m.body_case = GPUPROF__MSG__BODY_HELLO;
  m.hello = &h;
  size_t n = gpuprof__msg__get_packed_size(&m);
  uint8_t *buf = malloc(n);
  gpuprof__msg__pack(&m, buf);
  if (gpd_frame_send(s, buf, (uint32_t)n, handback ? R.fd : -1, 10000) < 0) {
    fprintf(stderr, "client: send Hello failed\n");
    exit(2);
  }
  free(buf);
  uint8_t *in = NULL;
  size_t inn = 0;
  int fd = -1;
  if (gpd_frame_recv(s, &in, &inn, &fd, 10000) < 0) {
    fprintf(stderr, "client: no HelloReply\n");
    exit(2);
  }
  Gpuprof__Msg *r = gpuprof__msg__unpack(NULL, inn, in);
  if (r == NULL || r->body_case != GPUPROF__MSG__BODY_HELLO_REPLY || r->hello_reply->error[0]) {
    fprintf(stderr, "client: registration refused: %s\n",
            r && r->body_case == GPUPROF__MSG__BODY_HELLO_REPLY ? r->hello_reply->error : "?");
    exit(2);
  }
  uint64_t pid = r->hello_reply->profile_id;
  gpuprof__msg__free_unpacked(r, NULL);
  free(in);
  *fd_out = fd;
  return pid;
}

static void push(gpd_producer_t *p, const void *rec, size_t len) {
  for (;;) {
    int e = gpd_producer_push(p, rec, len);
    if (e == 0)
      return;
    if (e != -ENOSPC) {
      fprintf(stderr, "client: push: %d\n", e);
      exit(2);
    }
    usleep(200);
  }
}

static void announce(void) {
  _Alignas(64) uint8_t b[256];
  memset(b, 0, sizeof b);
  gpd_rec_module_t *m = (gpd_rec_module_t *)b;
  size_t len = strlen(MODPATH);
  m->h.type = GPD_REC_MODULE;
  m->h.version = GPD_REC_VERSION;
  m->h.nslots = (uint8_t)gpd_rec_slots_for(sizeof *m, len);
  m->h.len = (uint32_t)len;
  m->id = 1;
  memcpy(m->path, MODPATH, len);
  push(&P0, b, sizeof *m + len);
  memset(b, 0, sizeof b);
  gpd_rec_string_t *s = (gpd_rec_string_t *)b;
  len = strlen(KNAME);
  s->h.type = GPD_REC_STRING;
  s->h.version = GPD_REC_VERSION;
  s->h.nslots = (uint8_t)gpd_rec_slots_for(sizeof *s, len);
  s->h.len = (uint32_t)len;
  s->id = 1;
  s->kind = GPD_STR_KERNEL;
  memcpy(s->text, KNAME, len);
  push(&P1, b, sizeof *s + len); /* on the activity ring */
  for (uint32_t i = 1; i <= 3; i++) {
    gpd_rec_node_t n;
    memset(&n, 0, sizeof n);
    n.h.type = GPD_REC_NODE;
    n.h.version = GPD_REC_VERSION;
    n.h.nslots = 1;
    n.id = i;
    n.parent = i - 1;
    n.module = 1;
    n.offset = 0x100 * i;
    push(&P0, &n, sizeof n);
  }
}

/* One kernel launch at node 3 (INVOKE on ring 0) ... */
static void kinvoke(uint64_t corr) {
  gpd_rec_invoke_t v;
  memset(&v, 0, sizeof v);
  v.h.type = GPD_REC_INVOKE;
  v.h.version = GPD_REC_VERSION;
  v.h.nslots = 1;
  v.api = GPD_API_OPENCL;
  v.op = GPD_OP_KERNEL;
  v.node = 3;
  v.corr = corr;
  v.ts = 1;
  v.tid = (uint32_t)getpid();
  push(&P0, &v, sizeof v);
}

/* ... and its 100 ns activity (ACTIVITY on ring 1). */
static void kactivity(uint64_t corr) {
  gpd_rec_activity_t a;
  memset(&a, 0, sizeof a);
  a.h.type = GPD_REC_ACTIVITY;
  a.h.version = GPD_REC_VERSION;
  a.h.nslots = 2;
  a.api = GPD_API_OPENCL;
  a.op = GPD_OP_KERNEL;
  a.corr = corr;
  a.start = 1000 * corr_n;
  a.end = a.start + 100;
  a.name = 1;
  a.stream = 1;
  a.blocks = 2;
  push(&P1, &a, sizeof a);
}

static void pair(void) {
  uint64_t corr = GPD_CORR(GPD_API_OPENCL, ++corr_n);
  kinvoke(corr);
  kactivity(corr);
}

static void copy_pair(void) {
  uint64_t corr = GPD_CORR(GPD_API_OPENCL, ++corr_n);
  gpd_rec_invoke_t v;
  memset(&v, 0, sizeof v);
  v.h.type = GPD_REC_INVOKE;
  v.h.version = GPD_REC_VERSION;
  v.h.nslots = 1;
  v.api = GPD_API_OPENCL;
  v.op = GPD_OP_COPY;
  v.node = 2;
  v.corr = corr;
  push(&P0, &v, sizeof v);
  gpd_rec_activity_t a;
  memset(&a, 0, sizeof a);
  a.h.type = GPD_REC_ACTIVITY;
  a.h.version = GPD_REC_VERSION;
  a.h.nslots = 2;
  a.api = GPD_API_OPENCL;
  a.op = GPD_OP_COPY;
  a.subkind = GPD_COPY_H2D;
  a.corr = corr;
  a.start = 10;
  a.end = 60;
  a.bytes = 4096;
  push(&P1, &a, sizeof a);
}

static void status(void) {
  gpd_rec_status_t s;
  memset(&s, 0, sizeof s);
  s.h.type = GPD_REC_STATUS;
  s.h.version = GPD_REC_VERSION;
  s.h.nslots = 1;
  s.api = GPD_API_CUDA;
  s.state = 0;
  s.code = 999;
  push(&P0, &s, sizeof s);
}

static void setup(int fd) {
  if (gpd_region_map(&R, fd) < 0) {
    fprintf(stderr, "client: cannot map region\n");
    exit(2);
  }
  if (gpd_producer_claim(&R, &P0, 1) < 0 || gpd_producer_claim(&R, &P1, 2) < 0) {
    fprintf(stderr, "client: no ring\n");
    exit(2);
  }
}

int main(int argc, char **argv) {
  if (argc < 3)
    return 2;
  const char *sock = argv[1], *mode = argv[2];
  int fd = -1;
  int s = connect_to(sock);
  uint64_t id = hello(s, 0, 0, &fd);
  if (fd < 0) {
    fprintf(stderr, "client: no region fd\n");
    return 2;
  }
  setup(fd);
  if (strcmp(mode, "honest") == 0 && argc > 3) {
    long n = atol(argv[3]);
    announce();
    status();
    for (long i = 0; i < n; i++)
      pair();
    copy_pair();
    return 0; /* exit: EOF ends the process for the daemon */
  }
  if (strcmp(mode, "kill") == 0 && argc > 3) {
    long n = atol(argv[3]);
    announce();
    for (long i = 0; i < n; i++)
      pair();
    raise(SIGKILL);
    return 3;
  }
  if (strcmp(mode, "garbage") == 0) {
    announce();
    for (int i = 0; i < 5; i++)
      pair();
    /* let the daemon consume the honest part first (bounded wait) */
    for (int t = 0; t < 10000; t++) {
      if (atomic_load(&P0.ctl->tail) == atomic_load(&P0.ctl->head) &&
          atomic_load(&P1.ctl->tail) == atomic_load(&P1.ctl->head))
        break;
      usleep(1000);
    }
    /* scribble: slots full of 0xa5, then publish them */
    uint64_t seq;
    if (gpd_producer_reserve(&P0, 8, &seq) == 0) {
      for (int i = 0; i < 8; i++)
        memset(gpd_producer_slot(&P0, seq + (uint64_t)i), 0xa5, GPD_SLOT_SIZE);
      gpd_producer_commit(&P0, 8);
    }
    printf("READY %llu\n", (unsigned long long)id);
    fflush(stdout);
    char line[64];
    while (fgets(line, sizeof line, stdin))
      ;
    return 0;
  }
  if (strcmp(mode, "handback") == 0 && argc > 4) {
    long k = atol(argv[3]), m = atol(argv[4]), u = argc > 5 ? atol(argv[5]) : 0;
    uint64_t first_u = corr_n + (uint64_t)k + 1;
    announce();
    for (long i = 0; i < k; i++)
      pair();
    for (long i = 0; i < u; i++) /* unmatched across the restart */
      kinvoke(GPD_CORR(GPD_API_OPENCL, ++corr_n));
    printf("PHASE1 %llu\n", (unsigned long long)id);
    fflush(stdout);
    char line[64];
    if (!fgets(line, sizeof line, stdin))
      return 2;
    close(s);
    s = connect_to(sock);
    int nfd = -1;
    uint64_t id2 = hello(s, 1, id, &nfd);
    if (nfd >= 0)
      close(nfd);
    printf("PHASE2 %llu\n", (unsigned long long)id2);
    fflush(stdout);
    for (long i = 0; i < u; i++)
      kactivity(GPD_CORR(GPD_API_OPENCL, first_u + (uint64_t)i));
    for (long i = 0; i < m; i++)
      pair(); /* node 3 and string 1 are not announced again */
    return 0;
  }
  fprintf(stderr, "client: bad mode %s\n", mode);
  return 2;
}

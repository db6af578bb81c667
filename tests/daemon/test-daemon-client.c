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
 *   test-daemon-client SOCKET handback2 K J M   push K pairs, "PHASE1 <id>", wait for a
 *                                             line; push J pairs, wait (10 s at most)
 *                                             for the daemon to release both rings,
 *                                             "PHASE1B <id> released|unreleased", wait
 *                                             for a line; hand back, "PHASE2 <id>",
 *                                             push M pairs
 *   test-daemon-client SOCKET victim N RATE    push N pairs at RATE pairs/s as the shim
 *                                             does (a full ring drops and counts), then
 *                                             "DONE <id> drops <D>" and exit
 *   test-daemon-client SOCKET flood N RATE     push N kernel INVOKEs at RATE/s whose
 *                                             activities never come (a correlation
 *                                             flood), "DONE <id> drops <D>", wait for
 *                                             stdin EOF
 *   test-daemon-client SOCKET graph R          a CUDA graph: node 4 (main+0x400) replays
 *                                             R times a graph whose kernel nodes were
 *                                             created at nodes 2 and 3 and whose memset
 *                                             node at node 3 (GRAPHNODE records on ring 0,
 *                                             the instantiated copies' on ring 1 first),
 *                                             then exit
 *   test-daemon-client SOCKET frames PATH FILE  announce module PATH and one FRAME node
 *                                             below the root per hex offset in FILE (at
 *                                             most 65536), one kernel pair at each,
 *                                             "FRAMES <id> <n>", wait for stdin EOF
 * Every kernel pair: INVOKE on ring 0, ACTIVITY (100 ns, kernel KNAME) on
 * ring 1, with node/module/string announcements as the shim makes them.
 * A full ring is waited on (a test helper may block; the shim never does).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon-client-lib.h"

#define KNAME "_Z9my_kernelPfi"
#define MODPATH "/nonexistent/test-app"

static gpd_dclient_t C;

static void announce(void) {
  gpd_dclient_module(&C, 0, 1, MODPATH);
  gpd_dclient_string(&C, 1, 1, GPD_STR_KERNEL, KNAME); /* on the activity ring */
  for (uint32_t i = 1; i <= 3; i++)
    gpd_dclient_node(&C, i, i - 1, 1, 0x100 * i);
}

/* One kernel launch at node 3 (the INVOKE for ring 0) ... */
static gpd_rec_invoke_t kinvoke_rec(uint64_t corr) {
  gpd_rec_invoke_t v;
  gpd_dclient_invoke_init(&v, GPD_OP_KERNEL, 3, corr);
  v.ts = 1;
  return v;
}

/* ... and its 100 ns activity (the ACTIVITY for ring 1). */
static gpd_rec_activity_t kactivity_rec(uint64_t corr) {
  gpd_rec_activity_t a;
  gpd_dclient_activity_init(&a, GPD_OP_KERNEL, corr);
  a.start = 1000 * C.corr_n;
  a.end = a.start + 100;
  a.name = 1;
  a.stream = 1;
  a.blocks = 2;
  return a;
}

static void kinvoke(uint64_t corr) {
  gpd_rec_invoke_t v = kinvoke_rec(corr);
  gpd_dclient_push(&C.ring[0], &v, sizeof v);
}

static void kactivity(uint64_t corr) {
  gpd_rec_activity_t a = kactivity_rec(corr);
  gpd_dclient_push(&C.ring[1], &a, sizeof a);
}

static void pair(void) {
  uint64_t corr = gpd_dclient_corr(&C);
  kinvoke(corr);
  kactivity(corr);
}

static void copy_pair(void) {
  uint64_t corr = gpd_dclient_corr(&C);
  gpd_rec_invoke_t v;
  gpd_dclient_invoke_init(&v, GPD_OP_COPY, 2, corr);
  gpd_dclient_push(&C.ring[0], &v, sizeof v);
  gpd_rec_activity_t a;
  gpd_dclient_activity_init(&a, GPD_OP_COPY, corr);
  a.subkind = GPD_COPY_H2D;
  a.start = 10;
  a.end = 60;
  a.bytes = 4096;
  gpd_dclient_push(&C.ring[1], &a, sizeof a);
}

/* Hand the region back on a new connection (as a shim does after a daemon
 * restart): prints "PHASE2 <id>" with the profile id the daemon gave. */
static void handback(const char *sock, uint64_t id) {
  close(C.sock);
  C.sock = gpd_dclient_connect(sock);
  int nfd = -1;
  uint64_t id2 = gpd_dclient_hello(&C, 1, id, &nfd);
  if (nfd >= 0)
    close(nfd);
  printf("PHASE2 %llu\n", (unsigned long long)id2);
  fflush(stdout);
}

/* Both rings consumed and released by the daemon (waits 10 s at most). */
static int released(void) {
  for (int t = 0; t < 10000; t++) {
    if (atomic_load(&C.ring[0].ctl->tail) == atomic_load(&C.ring[0].ctl->head) &&
        atomic_load(&C.ring[1].ctl->tail) == atomic_load(&C.ring[1].ctl->head))
      return 1;
    usleep(1000);
  }
  return 0;
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* N kernel pairs (or, flood, N invocations alone) at `rate` per second,
 * pushed as the shim pushes: never waiting, a full ring drops the record
 * (counted in the ring). */
static int victim(long n, long rate, int flood) {
  announce();
  uint64_t t0 = now_ns();
  for (long i = 0; i < n;) {
    long due = (long)((double)(now_ns() - t0) * (double)rate / 1e9) + 1;
    for (; i < n && i < due; i++) {
      uint64_t corr = gpd_dclient_corr(&C);
      gpd_rec_invoke_t v = kinvoke_rec(corr);
      gpd_producer_push(&C.ring[0], &v, sizeof v);
      if (flood)
        continue;
      gpd_rec_activity_t a = kactivity_rec(corr);
      gpd_producer_push(&C.ring[1], &a, sizeof a);
    }
    if (i < n)
      usleep(500);
  }
  uint64_t drops = atomic_load(&C.ring[0].ctl->drops) + atomic_load(&C.ring[1].ctl->drops);
  printf("DONE %llu drops %llu\n", (unsigned long long)C.profile_id, (unsigned long long)drops);
  fflush(stdout);
  char line[64];
  while (flood && fgets(line, sizeof line, stdin))
    ;
  return 0;
}

/* A FRAME node per offset of module `path` (the symbolization load). */
static int frames(const char *path, const char *file) {
  FILE *f = fopen(file, "r");
  if (f == NULL)
    return 2;
  gpd_dclient_module(&C, 0, 2, path);
  gpd_dclient_string(&C, 1, 1, GPD_STR_KERNEL, KNAME);
  unsigned long long off;
  uint32_t n = 0;
  while (n < 65536 && fscanf(f, "%llx", &off) == 1) {
    gpd_dclient_node(&C, 10 + n, 0, 2, off);
    uint64_t corr = gpd_dclient_corr(&C);
    gpd_rec_invoke_t v;
    gpd_dclient_invoke_init(&v, GPD_OP_KERNEL, 10 + n, corr);
    gpd_dclient_push(&C.ring[0], &v, sizeof v);
    kactivity(corr);
    n++;
  }
  fclose(f);
  printf("FRAMES %llu %u\n", (unsigned long long)C.profile_id, n);
  fflush(stdout);
  char line[64];
  while (fgets(line, sizeof line, stdin))
    ;
  return 0;
}

static void graphnode(unsigned ring, uint64_t id, uint32_t node, uint64_t orig) {
  gpd_rec_graphnode_t r;
  memset(&r, 0, sizeof r);
  r.h.type = GPD_REC_GRAPHNODE;
  r.h.version = GPD_REC_VERSION;
  r.h.nslots = GPD_REC_NSLOTS(r);
  r.h.flags = orig ? GPD_GRAPHNODE_F_CLONE : 0;
  r.id = id;
  r.node = node;
  r.orig = orig;
  gpd_dclient_push(&C.ring[ring], &r, sizeof r);
}

/* R replays of a three-node graph (the header's `graph` mode). */
static int graph(long r) {
  announce();
  gpd_dclient_node(&C, 4, 1, 1, 0x400);
  for (uint64_t i = 1; i <= 3; i++)
    graphnode(1, 100 + i, 0, i); /* instantiation, seen first */
  graphnode(0, 1, 2, 0);
  graphnode(0, 2, 3, 0);
  graphnode(0, 3, 3, 0);
  for (long i = 0; i < r; i++) {
    uint64_t corr = gpd_dclient_corr(&C);
    gpd_rec_invoke_t v;
    gpd_dclient_invoke_init(&v, GPD_OP_KERNEL, 4, corr);
    v.h.flags = GPD_INVOKE_MULTI;
    gpd_dclient_push(&C.ring[0], &v, sizeof v);
    for (uint64_t g = 101; g <= 103; g++) {
      gpd_rec_activity_t a = kactivity_rec(corr);
      a.graph_node = g;
      if (g == 103) {
        a.op = GPD_OP_MEMSET;
        a.subkind = GPD_MEM_DEV;
        a.name = 0;
        a.blocks = 0;
        a.bytes = 4096;
      }
      gpd_dclient_push(&C.ring[1], &a, sizeof a);
    }
  }
  return 0;
}

static void status(void) {
  gpd_rec_status_t s;
  memset(&s, 0, sizeof s);
  s.h.type = GPD_REC_STATUS;
  s.h.version = GPD_REC_VERSION;
  s.h.nslots = GPD_REC_NSLOTS(s);
  s.api = GPD_API_CUDA;
  s.state = 0;
  s.code = 999;
  gpd_dclient_push(&C.ring[0], &s, sizeof s);
}

int main(int argc, char **argv) {
  if (argc < 3)
    return 2;
  const char *sock = argv[1], *mode = argv[2];
  gpd_dclient_register(&C, sock);
  uint64_t id = C.profile_id;
  if (strcmp(mode, "honest") == 0 && argc > 3) {
    long n = atol(argv[3]);
    if (argc > 4 && strcmp(argv[4], "hold") == 0) { /* registered: wait for a go line */
      char line[64];
      printf("READY %llu\n", (unsigned long long)id);
      fflush(stdout);
      if (!fgets(line, sizeof line, stdin))
        return 2;
    }
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
  if (strcmp(mode, "victim") == 0 && argc > 4)
    return victim(atol(argv[3]), atol(argv[4]), 0);
  if (strcmp(mode, "flood") == 0 && argc > 4)
    return victim(atol(argv[3]), atol(argv[4]), 1);
  if (strcmp(mode, "graph") == 0 && argc > 3)
    return graph(atol(argv[3]));
  if (strcmp(mode, "frames") == 0 && argc > 4)
    return frames(argv[3], argv[4]);
  if (strcmp(mode, "handback2") == 0 && argc > 5) {
    long k = atol(argv[3]), j = atol(argv[4]), m = atol(argv[5]);
    char line[64];
    announce();
    for (long i = 0; i < k; i++)
      pair();
    printf("PHASE1 %llu\n", (unsigned long long)id);
    fflush(stdout);
    if (!fgets(line, sizeof line, stdin))
      return 2;
    for (long i = 0; i < j; i++)
      pair();
    printf("PHASE1B %llu %s\n", (unsigned long long)id, released() ? "released" : "unreleased");
    fflush(stdout);
    if (!fgets(line, sizeof line, stdin))
      return 2;
    handback(sock, id);
    for (long i = 0; i < m; i++)
      pair();
    return 0;
  }
  if (strcmp(mode, "garbage") == 0) {
    announce();
    for (int i = 0; i < 5; i++)
      pair();
    /* let the daemon consume the honest part first (bounded wait) */
    released();
    /* scribble: slots full of 0xa5, then publish them */
    uint64_t seq;
    if (gpd_producer_reserve(&C.ring[0], 8, &seq) == 0) {
      for (int i = 0; i < 8; i++)
        memset(gpd_producer_slot(&C.ring[0], seq + (uint64_t)i), 0xa5, GPD_SLOT_SIZE);
      gpd_producer_commit(&C.ring[0], 8);
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
    uint64_t first_u = C.corr_n + (uint64_t)k + 1;
    announce();
    for (long i = 0; i < k; i++)
      pair();
    for (long i = 0; i < u; i++) /* unmatched across the restart */
      kinvoke(gpd_dclient_corr(&C));
    printf("PHASE1 %llu\n", (unsigned long long)id);
    fflush(stdout);
    char line[64];
    if (!fgets(line, sizeof line, stdin))
      return 2;
    handback(sock, id);
    for (long i = 0; i < u; i++)
      kactivity(GPD_CORR(GPD_API_OPENCL, first_u + (uint64_t)i));
    for (long i = 0; i < m; i++)
      pair(); /* node 3 and string 1 are not announced again */
    return 0;
  }
  fprintf(stderr, "client: bad mode %s\n", mode);
  return 2;
}

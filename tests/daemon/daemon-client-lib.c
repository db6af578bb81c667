/* daemon-client-lib.c - the protocol and record-producing half of a fake
 * shim, shared by test-daemon-client and bench-top (daemon-client-lib.h).
 * Every failure exits with status 2: a test helper may, the shim never. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "gpuprof/frame.h"
#include "gpuprof.pb-c.h"

#include "daemon-client-lib.h"

int gpd_dclient_hello_ms = 10000;

int gpd_dclient_connect(const char *path) {
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
  if (s < 0 || connect(s, (struct sockaddr *)&sa, sizeof sa) < 0) {
    perror("connect");
    exit(2);
  }
  return s;
}

uint64_t gpd_dclient_hello(gpd_dclient_t *c, int handback, uint64_t id, int *fd_out) {
  Gpuprof__Msg m = GPUPROF__MSG__INIT;
  Gpuprof__Hello h = GPUPROF__HELLO__INIT;
  char *argv[] = {"test-daemon-client", "arg \"quoted\""};
  h.proto_version = GPD_PROTO_VERSION;
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
  if (buf == NULL)
    exit(2);
  gpuprof__msg__pack(&m, buf);
  if (gpd_frame_send(c->sock, buf, (uint32_t)n, handback ? c->region.fd : -1, gpd_dclient_hello_ms) < 0) {
    fprintf(stderr, "client: send Hello failed\n");
    exit(2);
  }
  free(buf);
  uint8_t *in = NULL;
  size_t inn = 0;
  int fd = -1;
  if (gpd_frame_recv(c->sock, &in, &inn, &fd, gpd_dclient_hello_ms) < 0) {
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
  c->profile_id = pid;
  *fd_out = fd;
  return pid;
}

void gpd_dclient_setup(gpd_dclient_t *c, int fd) {
  if (gpd_region_map(&c->region, fd) < 0) {
    fprintf(stderr, "client: cannot map region\n");
    exit(2);
  }
  if (gpd_producer_claim(&c->region, &c->ring[0], 1) < 0 ||
      gpd_producer_claim(&c->region, &c->ring[1], 2) < 0) {
    fprintf(stderr, "client: no ring\n");
    exit(2);
  }
}

void gpd_dclient_register(gpd_dclient_t *c, const char *sock_path) {
  int fd = -1;
  c->sock = gpd_dclient_connect(sock_path);
  gpd_dclient_hello(c, 0, 0, &fd);
  if (fd < 0) {
    fprintf(stderr, "client: no region fd\n");
    exit(2);
  }
  gpd_dclient_setup(c, fd);
}

void gpd_dclient_push(gpd_producer_t *p, const void *rec, size_t len) {
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

void gpd_dclient_module(gpd_dclient_t *c, unsigned ring, uint32_t id, const char *path) {
  gpd_dclient_module_bid(c, ring, id, path, NULL, 0);
}

void gpd_dclient_module_bid(gpd_dclient_t *c, unsigned ring, uint32_t id, const char *path,
                            const uint8_t *bid, unsigned bid_len) {
  _Alignas(64) uint8_t b[512];
  size_t len = strlen(path);
  if (len > sizeof b - sizeof(gpd_rec_module_t))
    exit(2);
  memset(b, 0, sizeof b);
  gpd_rec_module_t *m = (gpd_rec_module_t *)b;
  m->h.type = GPD_REC_MODULE;
  m->h.version = GPD_REC_VERSION;
  m->h.nslots = (uint8_t)gpd_rec_slots_for(sizeof *m, len);
  m->h.len = (uint32_t)len;
  m->id = id;
  if (bid_len > sizeof m->build_id)
    exit(2);
  if (bid_len)
    memcpy(m->build_id, bid, bid_len);
  m->build_id_len = (uint8_t)bid_len;
  memcpy(m->path, path, len);
  gpd_dclient_push(&c->ring[ring], b, sizeof *m + len);
}

void gpd_dclient_string(gpd_dclient_t *c, unsigned ring, uint32_t id, uint32_t kind,
                        const char *text) {
  _Alignas(64) uint8_t b[512];
  size_t len = strlen(text);
  if (len > sizeof b - sizeof(gpd_rec_string_t))
    exit(2);
  memset(b, 0, sizeof b);
  gpd_rec_string_t *s = (gpd_rec_string_t *)b;
  s->h.type = GPD_REC_STRING;
  s->h.version = GPD_REC_VERSION;
  s->h.nslots = (uint8_t)gpd_rec_slots_for(sizeof *s, len);
  s->h.len = (uint32_t)len;
  s->id = id;
  s->kind = kind;
  memcpy(s->text, text, len);
  gpd_dclient_push(&c->ring[ring], b, sizeof *s + len);
}

void gpd_dclient_node_init(gpd_rec_node_t *n, uint32_t id, uint32_t parent, uint32_t module,
                           uint64_t offset) {
  memset(n, 0, sizeof *n);
  n->h.type = GPD_REC_NODE;
  n->h.version = GPD_REC_VERSION;
  n->h.nslots = GPD_REC_NSLOTS(*n);
  n->id = id;
  n->parent = parent;
  n->module = module;
  n->offset = offset;
}

void gpd_dclient_node(gpd_dclient_t *c, uint32_t id, uint32_t parent, uint32_t module,
                      uint64_t offset) {
  gpd_rec_node_t n;
  gpd_dclient_node_init(&n, id, parent, module, offset);
  gpd_dclient_push(&c->ring[0], &n, sizeof n);
}

void gpd_dclient_invoke_init(gpd_rec_invoke_t *v, unsigned op, uint32_t node, uint64_t corr) {
  memset(v, 0, sizeof *v);
  v->h.type = GPD_REC_INVOKE;
  v->h.version = GPD_REC_VERSION;
  v->h.nslots = GPD_REC_NSLOTS(*v);
  v->api = GPD_API_OPENCL;
  v->op = (uint8_t)op;
  v->node = node;
  v->corr = corr;
}

void gpd_dclient_activity_init(gpd_rec_activity_t *a, unsigned op, uint64_t corr) {
  memset(a, 0, sizeof *a);
  a->h.type = GPD_REC_ACTIVITY;
  a->h.version = GPD_REC_VERSION;
  a->h.nslots = GPD_REC_NSLOTS(*a);
  a->api = GPD_API_OPENCL;
  a->op = (uint8_t)op;
  a->corr = corr;
}

uint64_t gpd_dclient_corr(gpd_dclient_t *c) { return GPD_CORR(GPD_API_OPENCL, ++c->corr_n); }

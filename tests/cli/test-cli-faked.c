/* test-cli-faked.c - a fake gpuprofd for the CLI tests of ps/top/tree.
 *
 * usage: test-cli-faked SOCKET
 * Listens on SOCKET and answers every request with canned replies
 * (numbers asserted by tests/cli/test_cli.py, case "live"):
 *   PsRequest   job "denied" -> Error "permission denied: ..."; else 2 processes
 *   TreeRequest max_depth 1  -> root + main with incl filled (GPUOP 4e6);
 *               else the full tree without incl (the CLI sums it)
 *   TopRequest  pid 999 -> Error; else one kernel with a 5-frame path
 * Exits on SIGTERM, or after 60 s.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "gpuprof.pb-c.h"
#include "gpuprof/error.h"
#include "gpuprof/frame.h"
#include "gpuprof/metric.h"

static void send_msg(int c, Gpuprof__Msg *m) {
  size_t n = gpuprof__msg__get_packed_size(m);
  uint8_t *b = malloc(n ? n : 1);
  gpuprof__msg__pack(m, b);
  gpd_frame_send(c, b, (uint32_t)n, -1, 5000);
  free(b);
}

static void send_error(int c, int code, const char *text) {
  Gpuprof__Msg m = GPUPROF__MSG__INIT;
  Gpuprof__Error e = GPUPROF__ERROR__INIT;
  e.code = code;
  e.message = (char *)text;
  m.body_case = GPUPROF__MSG__BODY_ERROR;
  m.error = &e;
  send_msg(c, &m);
}

static Gpuprof__Metric *metric(unsigned id, double v) {
  Gpuprof__Metric *m = malloc(sizeof(*m));
  gpuprof__metric__init(m);
  m->id = id;
  m->value = v;
  return m;
}

static Gpuprof__Node *node(uint64_t id, uint64_t parent, Gpuprof__NodeKind kind, const char *label) {
  Gpuprof__Node *n = calloc(1, sizeof(*n));
  gpuprof__node__init(n);
  n->id = id;
  n->parent = parent;
  n->kind = kind;
  n->label = (char *)label;
  return n;
}

static void add_metric(Gpuprof__Metric ***v, size_t *n, unsigned id, double x) {
  *v = realloc(*v, (*n + 1) * sizeof(**v));
  (*v)[(*n)++] = metric(id, x);
}

static Gpuprof__Process *proc(int pid, uint32_t uid, const char *job, int rank, int running, const char *err) {
  Gpuprof__Process *p = calloc(1, sizeof(*p));
  gpuprof__process__init(p);
  p->pid = pid;
  p->uid = uid;
  p->job_id = (char *)job;
  p->rank = rank;
  p->running = running;
  p->rings = 2;
  p->records = 100;
  p->drops = 3;
  p->exe = "/opt/app/bin/app";
  p->error = (char *)err;
  p->backends = calloc(2, sizeof(*p->backends));
  for (int i = 0; i < 2; i++) {
    Gpuprof__Backend *b = calloc(1, sizeof(*b));
    gpuprof__backend__init(b);
    b->api = i ? "cuda" : "opencl";
    b->enabled = !i;
    b->code = i ? -4191 : 0;
    b->reason = i ? "no CUDA driver" : "";
    p->backends[p->n_backends++] = b;
  }
  return p;
}

static void answer(int c, const Gpuprof__Msg *req) {
  Gpuprof__Msg m = GPUPROF__MSG__INIT;
  switch (req->body_case) {
  case GPUPROF__MSG__BODY_PS_REQ: {
    if (!strcmp(req->ps_req->job_id, "denied")) {
      send_error(c, GPD_EDENIED, "permission denied: job denied belongs to another user");
      return;
    }
    Gpuprof__PsReply r = GPUPROF__PS_REPLY__INIT;
    Gpuprof__Process *ps[2] = {proc(1001, 0, "77", 0, 1, ""), proc(1002, 4242424, "", -1, 0, "bad ring")};
    r.procs = ps;
    r.n_procs = strcmp(req->ps_req->job_id, "77") ? 2 : 1;
    m.body_case = GPUPROF__MSG__BODY_PS;
    m.ps = &r;
    send_msg(c, &m);
    return;
  }
  case GPUPROF__MSG__BODY_TREE_REQ: {
    Gpuprof__TreeReply r = GPUPROF__TREE_REPLY__INIT;
    Gpuprof__Node *ns[4];
    ns[0] = node(1, 0, GPUPROF__NODE_KIND__NODE_ROOT, "<program root>");
    ns[1] = node(2, 1, GPUPROF__NODE_KIND__NODE_FRAME, "main");
    ns[2] = node(4, 2, GPUPROF__NODE_KIND__NODE_PLACEHOLDER, "<gpu kernel>");
    ns[3] = node(5, 4, GPUPROF__NODE_KIND__NODE_KERNEL, "vec_add");
    Gpuprof__Frame f = GPUPROF__FRAME__INIT, *fp = &f;
    f.function = "main";
    f.file = "main.c";
    f.line = 12;
    ns[1]->frames = &fp;
    ns[1]->n_frames = 1;
    if (req->tree_req->max_depth == 1) {
      for (int i = 0; i < 2; i++) {
        add_metric(&ns[i]->incl, &ns[i]->n_incl, GPD_M_GPUOP, 4e6);
        add_metric(&ns[i]->incl, &ns[i]->n_incl, GPD_M_GKER, 4e6);
      }
      r.n_nodes = 2;
    } else {
      add_metric(&ns[3]->excl, &ns[3]->n_excl, GPD_M_GPUOP, 4e6);
      add_metric(&ns[3]->excl, &ns[3]->n_excl, GPD_M_GKER, 4e6);
      add_metric(&ns[3]->excl, &ns[3]->n_excl, GPD_M_GKER_COUNT, 8);
      r.n_nodes = 4;
    }
    r.nodes = ns;
    Gpuprof__Process *ps[1] = {proc(1001, 0, "77", 0, 1, "")};
    r.procs = ps;
    r.n_procs = 1;
    m.body_case = GPUPROF__MSG__BODY_TREE;
    m.tree = &r;
    send_msg(c, &m);
    return;
  }
  case GPUPROF__MSG__BODY_TOP_REQ: {
    if (req->top_req->pid == 999) {
      send_error(c, -ESRCH, "no process 999 is profiled");
      return;
    }
    Gpuprof__TopReply r = GPUPROF__TOP_REPLY__INIT;
    Gpuprof__TopEntry e = GPUPROF__TOP_ENTRY__INIT, *ep = &e;
    static const char *path[] = {"<program root>", "main", "run", "solve", "step", "launch"};
    Gpuprof__Node *pn[6];
    for (int i = 0; i < 6; i++) pn[i] = node((uint64_t)i + 1, (uint64_t)i, i ? GPUPROF__NODE_KIND__NODE_FRAME : GPUPROF__NODE_KIND__NODE_ROOT, path[i]);
    e.kind = GPUPROF__NODE_KIND__NODE_KERNEL;
    e.label = "vec_add";
    add_metric(&e.metrics, &e.n_metrics, GPD_M_GPUOP, 2e6);
    add_metric(&e.metrics, &e.n_metrics, GPD_M_GKER_COUNT, 4);
    e.path = pn;
    e.n_path = 6;
    r.entries = &ep;
    r.n_entries = 1;
    m.body_case = GPUPROF__MSG__BODY_TOP;
    m.top = &r;
    send_msg(c, &m);
    return;
  }
  default: send_error(c, GPD_EPROTO, "unexpected message");
  }
}

int main(int argc, char **argv) {
  struct sockaddr_un sa;
  int s;
  if (argc != 2) return 64;
  alarm(60);
  signal(SIGPIPE, SIG_IGN);
  memset(&sa, 0, sizeof(sa));
  sa.sun_family = AF_UNIX;
  snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", argv[1]);
  unlink(argv[1]);
  if ((s = socket(AF_UNIX, SOCK_STREAM, 0)) < 0 || bind(s, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
      listen(s, 16) < 0) {
    perror("faked");
    return 1;
  }
  printf("ready\n");
  fflush(stdout);
  for (;;) {
    int c = accept(s, NULL, NULL);
    if (c < 0) continue;
    for (;;) {
      uint8_t *in;
      size_t n;
      if (gpd_frame_recv(c, &in, &n, NULL, 5000) < 0) break;
      Gpuprof__Msg *req = gpuprof__msg__unpack(NULL, n, in);
      free(in);
      if (!req) {
        send_error(c, GPD_EBADFRAME, "bad frame");
        break;
      }
      answer(c, req);
      gpuprof__msg__free_unpacked(req, NULL);
    }
    close(c);
  }
}

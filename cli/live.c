/* live.c - live queries against gpuprofd over its Unix socket:
 * `gpuprof ps`, `gpuprof top`, `gpuprof tree`, and the Control requests
 * `gpuprof sample` and `gpuprof trace` send.  One request frame, one
 * reply frame (Msg with the reply body, or Error), proto/gpuprof.proto,
 * sent by live-call.c.  (The daemon's side of a connection is
 * daemon/client.c.)
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "cli.h"
#include "gpu-analysis.h"
#include "gpuprof/error.h"
#include "gpuprof/hash.h"
#include "gpuprof/metric.h"

int gpd_live_tree_from_reply(gpd_tree_t *t, const Gpuprof__TreeReply *r) {
  int have_incl = 0;
  for (size_t i = 0; i < r->n_nodes; i++) {
    const Gpuprof__Node *nd = r->nodes[i];
    long k = gpd_tree_node_add(t, nd->id, nd->parent, (int)nd->kind, nd->label, nd->module, nd->offset, nd->raw_name);
    if (k < 0) return (int)k;
    if (t->nodes[k].nframes == 0)
      for (size_t j = 0; j < nd->n_frames; j++) {
        const Gpuprof__Frame *f = nd->frames[j];
        if (gpd_tree_frame_add(t, (size_t)k, f->function, f->file, f->line, f->inlined) < 0) return -ENOMEM;
      }
    for (size_t j = 0; j < nd->n_excl; j++)
      if (gpd_tree_mvec_add(&t->nodes[k].excl, nd->excl[j]->id, nd->excl[j]->value) < 0) return -ENOMEM;
    for (size_t j = 0; j < nd->n_incl; j++)
      if (gpd_tree_mvec_add(&t->nodes[k].incl, nd->incl[j]->id, nd->incl[j]->value) < 0) return -ENOMEM;
    /* the packed form (TreeRequest.packed_metrics): parallel arrays */
    size_t ne = nd->n_excl_ids < nd->n_excl_values ? nd->n_excl_ids : nd->n_excl_values;
    size_t ni = nd->n_incl_ids < nd->n_incl_values ? nd->n_incl_ids : nd->n_incl_values;
    for (size_t j = 0; j < ne; j++)
      if (gpd_tree_mvec_add(&t->nodes[k].excl, nd->excl_ids[j], nd->excl_values[j]) < 0) return -ENOMEM;
    for (size_t j = 0; j < ni; j++)
      if (gpd_tree_mvec_add(&t->nodes[k].incl, nd->incl_ids[j], nd->incl_values[j]) < 0) return -ENOMEM;
    have_incl |= nd->n_incl > 0 || ni > 0;
  }
  /* The daemon fills incl (it may cut the tree at max_depth, where only
   * incl is right); compute it ourselves when it did not. */
  t->have_incl = have_incl;
  if (!have_incl)
    for (size_t i = 0; i < t->n; i++) t->nodes[i].incl.n = 0;
  for (size_t i = 0; i < r->n_procs; i++) {
    const Gpuprof__Process *p = r->procs[i];
    gpd_tproc_t *q = gpd_tree_proc_new(t);
    if (!q) return -ENOMEM;
    q->profile_id = p->profile_id;
    q->pid = p->pid;
    q->uid = p->uid;
    q->gid = p->gid;
    q->exe = gpd_cli_strdup(p->exe);
    q->job_id = gpd_cli_strdup(p->job_id);
    q->job_claimed = p->job_claimed;
    q->pcs_state = p->pcs_state[0] ? gpd_cli_strdup(p->pcs_state) : NULL;
    q->step_id = gpd_cli_strdup(p->step_id);
    q->hostname = gpd_cli_strdup("");
    q->rank = p->rank;
    q->local_rank = p->local_rank;
    q->running = p->running;
    q->state = gpd_cli_strdup(p->running ? "running" : "exited");
    q->rings = p->rings;
    q->records = p->records;
    q->drops = p->drops;
    q->start_ns = p->start_ns;
    q->end_ns = p->end_ns;
    q->error = gpd_cli_strdup(p->error);
    for (size_t j = 0; j < p->n_backends; j++) {
      gpd_tbackend_t *b = gpd_tree_backend_new(q);
      if (!b) return -ENOMEM;
      b->api = gpd_cli_strdup(p->backends[j]->api);
      b->enabled = p->backends[j]->enabled;
      b->code = p->backends[j]->code;
      b->reason = gpd_cli_strdup(p->backends[j]->reason);
    }
  }
  return 0;
}

/* ---- GPU PC samples of the live tree / top (docs/ANALYZER-GPU.md) ---- */

/* The GINST metrics of v samples in vendor stall reason `reason` into m:
 * GINST, GINST:STL_<s> and, when s is a stall, GINST:STL_ANY (as the
 * report: ANY = GINST - STL_NONE).  SASS execution counts and CUPTI's
 * "_not_issued" subsets are not samples of their own: nothing.  0 or -ENOMEM. */
static int stall_add(gpd_mvec_t *m, const char *reason, double v) {
  gpd_stall_t s = gpd_stall_from_vendor(reason);
  if ((unsigned)s >= GPD_STALL__COUNT || v == 0) return 0;
  int err = gpd_tree_mvec_add(m, GPD_M_GINST, v);
  if (!err) err = gpd_tree_mvec_add(m, GPD_M_GINST_STL_NONE + (unsigned)s, v);
  if (!err && s != GPD_STALL_NONE) err = gpd_tree_mvec_add(m, GPD_M_GINST_STL_ANY, v);
  return err;
}

/* v added to node k's inclusive values and its ancestors' (when the reply
 * gave inclusive values; else gpd_tree_finish sums the exclusive ones). */
static int incl_up(gpd_tree_t *t, long k, const gpd_mvec_t *v) {
  if (!t->have_incl) return 0;
  for (size_t steps = 0; k >= 0 && steps <= t->n; steps++) {
    for (uint32_t j = 0; j < v->n; j++)
      if (gpd_tree_mvec_add(&t->nodes[k].incl, v->v[j].id, v->v[j].v) < 0) return -ENOMEM;
    uint64_t par = t->nodes[k].parent_id;
    k = par ? gpd_tree_find(t, par) : -1;
  }
  return 0;
}

double gpd_live_ginst(Gpuprof__StallSamples *const *s, size_t n) {
  gpd_mvec_t m = {0};
  for (size_t i = 0; i < n; i++)
    if (stall_add(&m, s[i]->reason, s[i]->samples) < 0) break;
  double v = gpd_tree_mvec_get(&m, GPD_M_GINST);
  gpd_tree_mvec_free(&m);
  return v;
}

int gpd_live_tree_gpu(gpd_tree_t *t, const Gpuprof__TreeReply *r, int detail) {
  for (size_t i = 0; i < r->n_gpu_samples; i++) {
    const Gpuprof__KernelSamples *ks = r->gpu_samples[i];
    long k = gpd_tree_find(t, ks->node);
    if (k < 0 || t->nodes[k].kind != GPD_NODE_KERNEL) continue;
    gpd_mvec_t all = {0};
    int err = 0;
    for (size_t j = 0; j < ks->n_stalls && !err; j++) {
      const Gpuprof__StallSamples *ss = ks->stalls[j];
      gpd_mvec_t one = {0};
      if ((err = stall_add(&one, ss->reason, ss->samples)) < 0 || one.n == 0) {
        gpd_tree_mvec_free(&one);
        continue;
      }
      for (uint32_t q = 0; q < one.n && !err; q++) err = gpd_tree_mvec_add(&all, one.v[q].id, one.v[q].v);
      if (detail && !err) {
        /* one child per GINST:STL_* of the kernel, holding its samples */
        gpd_stall_t s = gpd_stall_from_vendor(ss->reason);
        char label[160];
        snprintf(label, sizeof label, "%s (%s)", gpd_stall_name(s), gpd_stall_desc(s));
        uint64_t key[2] = {ks->node, (uint64_t)s + 1};
        uint64_t id = gpd_hash64(key, sizeof key, 0x7374616c6cull);
        long c = gpd_tree_node_add(t, id ? id : 1, ks->node, GPD_NODE_GPU_STALL, label, "", 0, "");
        if (c < 0) err = (int)c;
        for (uint32_t q = 0; q < one.n && !err; q++) err = gpd_tree_mvec_add(&t->nodes[c].excl, one.v[q].id, one.v[q].v);
        if (!err && t->have_incl)
          for (uint32_t q = 0; q < one.n && !err; q++) err = gpd_tree_mvec_add(&t->nodes[c].incl, one.v[q].id, one.v[q].v);
      }
      gpd_tree_mvec_free(&one);
    }
    k = gpd_tree_find(t, ks->node); /* nodes may have moved */
    if (!err && !detail)
      for (uint32_t q = 0; q < all.n && !err; q++) err = gpd_tree_mvec_add(&t->nodes[k].excl, all.v[q].id, all.v[q].v);
    if (!err) err = incl_up(t, k, &all);
    gpd_tree_mvec_free(&all);
    if (err) return err;
  }
  return 0;
}

/* ---- option parsing shared by ps / top / tree ---- */

typedef struct live_opts_s {
  const char *socket, *job;
  int pid, json, all, gpu_detail, metric_set;
  unsigned limit, metric, depth, view; /* view: GPD_VIEW_* (fold.c) */
} live_opts_t;

enum {
  OPT_SOCKET = 's',
  OPT_JOB = 'j',
  OPT_PID = 'p',
  OPT_N = 'n',
  OPT_METRIC = 'm',
  OPT_JSON = 'J',
  OPT_DEPTH = 'd',
  OPT_ALL = 'a',
  OPT_GPU_DETAIL = 'g',
  OPT_PYTHON = 'P',
  OPT_NATIVE = 'N'
};

/* The options of ps, top and tree, each table in its help's order
 * (GPD_CLI_DEFAULT_SOCKET: cli.h). */
static gpd_cli_cmd_t ps_cmd = {
    .head = "usage: gpuprof ps [--job J] [--all] [--socket PATH]\n"
            "  List the processes gpuprofd profiles (yours, or all for admins).\n",
    .opts = (const gpd_cli_opt_t[]){{"job", required_argument, OPT_JOB, NULL, NULL},
                                    {"all", no_argument, OPT_ALL, "--all", "also those that never used a GPU API"},
                                    {"socket", required_argument, OPT_SOCKET, NULL, NULL},
                                    {0}},
    .shorts = "sja",
    .col = 9};

static gpd_cli_cmd_t top_cmd = {
    .head = "usage: gpuprof top [--pid N] [--job J] [-n N] [--metric NAME] [--socket PATH]\n"
            "  The heaviest GPU kernels/operations now, with their heaviest CPU call path.\n",
    .opts = (const gpd_cli_opt_t[]){
        {"pid", required_argument, OPT_PID, "--pid N", "only process N"},
        {"job", required_argument, OPT_JOB, "--job J", "only the processes of job J (Slurm job id)"},
        {NULL, required_argument, OPT_N, "-n N", "show N entries (default 10)"},
        {"metric", required_argument, OPT_METRIC, "--metric NAME",
         "rank by metric NAME (default GPUOP; `gpuprof metrics` lists them)"},
        {"socket", required_argument, OPT_SOCKET, "--socket PATH",
         "gpuprofd's socket (default $GPUPROF_SOCKET, else " GPD_CLI_DEFAULT_SOCKET ")"},
        {0}},
    .shorts = "sjpnm",
    .col = 18};

static gpd_cli_cmd_t tree_cmd = {
    .head = "usage: gpuprof tree [--pid N] [--job J] [--depth N] [--metric NAME] [--gpu-detail] [--python] [--native] "
            "[--json]\n"
            "                    [--socket PATH]\n"
            "  The live calling-context tree (node merge of the visible processes).\n",
    .opts = (const gpd_cli_opt_t[]){
        {"pid", required_argument, OPT_PID, NULL, NULL},
        {"job", required_argument, OPT_JOB, NULL, NULL},
        {"depth", required_argument, OPT_DEPTH, NULL, NULL},
        {"metric", required_argument, OPT_METRIC, NULL, NULL},
        {"gpu-detail", no_argument, OPT_GPU_DETAIL, "--gpu-detail",
         "PC samples below each kernel, one node per GINST:STL_* stall reason"},
        {"python", no_argument, OPT_PYTHON, "--python",
         "Python view: Python frames, operators, placeholders and the GPU part only"},
        {"native", no_argument, OPT_NATIVE, "--native",
         "every native frame (default: PyTorch's dispatcher folded into aten::NAME)"},
        {"json", no_argument, OPT_JSON, NULL, NULL},
        {"socket", required_argument, OPT_SOCKET, NULL, NULL},
        {0}},
    .shorts = "sjpmd",
    .col = 16};

/* cmd: ps_cmd, top_cmd or tree_cmd.  0, or an exit code (-1: --help
 * printed, exit 0). */
static int live_parse(int argc, char **argv, gpd_cli_cmd_t *cmd, live_opts_t *o) {
  const char *usage = gpd_cli_help(cmd);
  int c, rc;
  long v;
  memset(o, 0, sizeof(*o));
  o->metric = GPD_M_GPUOP;
  o->limit = 10;
  optind = 1;
  while ((c = gpd_cli_opt_next(argc, argv, cmd, &rc)) > 0) {
    switch (c) {
    case OPT_SOCKET: o->socket = optarg; break;
    case OPT_JOB: o->job = optarg; break;
    case OPT_PID:
      if ((v = gpd_cli_parse_uint(optarg)) <= 0 || v > 0x7fffffff)
        return gpd_cli_usage(usage, "bad --pid '%s'", optarg);
      o->pid = (int)v;
      break;
    case OPT_N:
      if ((v = gpd_cli_parse_uint(optarg)) <= 0 || v > 100000) return gpd_cli_usage(usage, "bad -n '%s'", optarg);
      o->limit = (unsigned)v;
      break;
    case OPT_METRIC:
      if ((v = gpd_cli_metric(optarg)) < 0) return gpd_cli_usage(usage, "unknown metric '%s'", optarg);
      o->metric = (unsigned)v;
      o->metric_set = 1;
      break;
    case OPT_JSON: o->json = 1; break;
    case OPT_ALL: o->all = 1; break;
    case OPT_GPU_DETAIL: o->gpu_detail = 1; break;
    case OPT_PYTHON: o->view |= GPD_VIEW_PYTHON; break;
    case OPT_NATIVE: o->view |= GPD_VIEW_NATIVE; break;
    case OPT_DEPTH:
      if ((v = gpd_cli_parse_uint(optarg)) < 0 || v > 100000) return gpd_cli_usage(usage, "bad --depth '%s'", optarg);
      o->depth = (unsigned)v;
      break;
    }
  }
  if (c < 0) return rc == GPD_EXIT_OK ? -1 : rc;
  if (optind < argc) return gpd_cli_usage(usage, "unexpected argument '%s'", argv[optind]);
  if (o->gpu_detail && !o->metric_set) o->metric = GPD_M_GINST; /* as report --gpu-detail */
  o->socket = gpd_live_socket(o->socket);
  return 0;
}

static int expect(const Gpuprof__Msg *m, Gpuprof__Msg__BodyCase want) {
  if (m->body_case == want) return 0;
  fprintf(stderr, "gpuprof: gpuprofd answered with an unexpected message (case %d)\n", (int)m->body_case);
  return GPD_EXIT_FAIL;
}

int gpd_cmd_ps(int argc, char **argv) {
  live_opts_t o;
  Gpuprof__Msg req = GPUPROF__MSG__INIT, *rep;
  Gpuprof__PsRequest ps = GPUPROF__PS_REQUEST__INIT;
  int r = live_parse(argc, argv, &ps_cmd, &o);
  if (r) return r < 0 ? GPD_EXIT_OK : r;
  if (o.job) ps.job_id = (char *)o.job;
  req.body_case = GPUPROF__MSG__BODY_PS_REQ;
  req.ps_req = &ps;
  if ((r = gpd_live_call(o.socket, &req, &rep))) return r;
  if (!(r = expect(rep, GPUPROF__MSG__BODY_PS))) gpd_render_ps(stdout, rep->ps, o.all);
  gpuprof__msg__free_unpacked(rep, NULL);
  return r;
}

/* Ask for a tree; on success *t is finished.  Returns an exit code.  The
 * reply (megabytes for a node of many processes) is unpacked into an
 * arena (arena.h). */
static int live_tree(const live_opts_t *o, gpd_tree_t *t) {
  Gpuprof__Msg req = GPUPROF__MSG__INIT, *rep;
  Gpuprof__TreeRequest tr = GPUPROF__TREE_REQUEST__INIT;
  gpd_arena_t *arena = NULL;
  int r;
  tr.pid = o->pid;
  if (o->job) tr.job_id = (char *)o->job;
  tr.max_depth = o->view & GPD_VIEW_PYTHON ? 0 : o->depth; /* folding needs the whole tree */
  /* metrics as two packed arrays per node, and for the whole tree no
   * inclusive values (gpd_tree_finish sums them): about half the bytes of
   * a message per metric with inclusive values (docs/DAEMON.md) */
  tr.packed_metrics = 1;
  tr.no_incl = tr.max_depth == 0;
  req.body_case = GPUPROF__MSG__BODY_TREE_REQ;
  req.tree_req = &tr;
  if ((r = gpd_live_call_arena(o->socket, &req, &rep, &arena))) return r;
  if (!(r = expect(rep, GPUPROF__MSG__BODY_TREE))) {
    int e = gpd_live_tree_from_reply(t, rep->tree);
    if (!e) e = gpd_live_tree_gpu(t, rep->tree, o->gpu_detail);
    if (!e) e = gpd_tree_finish(t, o->metric);
    if (!e) e = gpd_fold_view(t, o->view, o->metric);
    if (e < 0) {
      fprintf(stderr, "gpuprof: %s\n", gpd_strerror(e));
      r = GPD_EXIT_FAIL;
    }
  }
  gpd_arena_free(arena);
  return r;
}

int gpd_cmd_tree(int argc, char **argv) {
  live_opts_t o;
  gpd_tree_t t;
  int r = live_parse(argc, argv, &tree_cmd, &o);
  if (r) return r < 0 ? GPD_EXIT_OK : r;
  gpd_tree_init(&t);
  if (!(r = live_tree(&o, &t))) {
    gpd_render_opts_t ro = {o.metric, o.depth, 0, 0, 0};
    if (o.json) {
      gpd_json_tree(stdout, &t, &ro);
    } else {
      gpd_render_tree(stdout, &t, &ro);
      gpd_render_procs(stdout, &t);
    }
  }
  gpd_tree_free(&t);
  return r;
}

/* `top`'s last line: the visible processes' estimated collection overhead
 * (mean, max, how many have no estimate; deep dives). */
static void overhead_line(FILE *f, const char *sock, const char *job) {
  Gpuprof__Msg req = GPUPROF__MSG__INIT, *rep = NULL;
  Gpuprof__PsRequest ps = GPUPROF__PS_REQUEST__INIT;
  if (job) ps.job_id = (char *)job;
  req.body_case = GPUPROF__MSG__BODY_PS_REQ;
  req.ps_req = &ps;
  if (gpd_live_call(sock, &req, &rep) || rep->body_case != GPUPROF__MSG__BODY_PS) {
    if (rep) gpuprof__msg__free_unpacked(rep, NULL);
    return;
  }
  unsigned n = 0, known = 0, deep = 0;
  double sum = 0, max = 0;
  for (size_t i = 0; i < rep->ps->n_procs; i++) {
    const Gpuprof__Process *p = rep->ps->procs[i];
    if (!p->running || !p->overhead_how[0]) continue;
    n++;
    deep += p->deep_dive[0] != 0;
    if (p->overhead < 0) continue;
    known++;
    sum += p->overhead;
    if (p->overhead > max) max = p->overhead;
  }
  if (n) {
    fprintf(f, "collection overhead (estimated): ");
    if (known)
      fprintf(f, "mean %.2f %%, max %.2f %% over %u process%s", sum / known * 100, max * 100, known,
              known == 1 ? "" : "es");
    else
      fprintf(f, "no estimate yet");
    if (n > known) fprintf(f, "; %u without an estimate", n - known);
    if (deep) fprintf(f, "; %u in a deep dive (over budget on request)", deep);
    fprintf(f, "\n");
  }
  gpuprof__msg__free_unpacked(rep, NULL);
}

int gpd_cmd_top(int argc, char **argv) {
  live_opts_t o;
  Gpuprof__Msg req = GPUPROF__MSG__INIT, *rep;
  Gpuprof__TopRequest tr = GPUPROF__TOP_REQUEST__INIT;
  int r = live_parse(argc, argv, &top_cmd, &o);
  if (r) return r < 0 ? GPD_EXIT_OK : r;
  tr.pid = o.pid;
  if (o.job) tr.job_id = (char *)o.job;
  tr.limit = o.limit;
  tr.metric = o.metric;
  req.body_case = GPUPROF__MSG__BODY_TOP_REQ;
  req.top_req = &tr;
  if ((r = gpd_live_call(o.socket, &req, &rep))) return r;
  if (!(r = expect(rep, GPUPROF__MSG__BODY_TOP))) {
    /* % needs the total: the root's inclusive value from a depth-1 tree;
     * without it, the sum of the entries shown. */
    double total = 0;
    gpd_tree_t t;
    live_opts_t to = o;
    to.depth = 1;
    gpd_tree_init(&t);
    if (live_tree(&to, &t) == 0 && t.root != SIZE_MAX) total = gpd_tree_mvec_get(&t.nodes[t.root].incl, o.metric);
    gpd_tree_free(&t);
    if (total <= 0)
      for (size_t i = 0; i < rep->top->n_entries; i++)
        for (size_t j = 0; j < rep->top->entries[i]->n_metrics; j++)
          if (rep->top->entries[i]->metrics[j]->id == o.metric) total += rep->top->entries[i]->metrics[j]->value;
    gpd_live_devices_header(stdout, o.socket);
    /* GINST column when any kernel has PC samples */
    double *ginst = NULL;
    for (size_t i = 0; i < rep->top->n_entries && !ginst; i++)
      if (rep->top->entries[i]->n_stalls) ginst = calloc(rep->top->n_entries, sizeof *ginst);
    for (size_t i = 0; ginst && i < rep->top->n_entries; i++)
      ginst[i] = gpd_live_ginst(rep->top->entries[i]->stalls, rep->top->entries[i]->n_stalls);
    gpd_render_top(stdout, rep->top, o.metric, total, ginst);
    free(ginst);
    overhead_line(stdout, o.socket, o.job);
  }
  gpuprof__msg__free_unpacked(rep, NULL);
  return r;
}

/* ---- Control of running processes (sample.c, trace.c) ---- */

int gpd_live_control(const char *sock, int pid, const char *job, const Gpuprof__Control *ctl,
                     const char *what, FILE *to, Gpuprof__Msg **out) {
  Gpuprof__ControlRequest r = GPUPROF__CONTROL_REQUEST__INIT;
  Gpuprof__Msg m = GPUPROF__MSG__INIT, *reply = NULL;
  r.pid = pid;
  r.job_id = (char *)(job ? job : "");
  r.control = (Gpuprof__Control *)ctl;
  m.body_case = GPUPROF__MSG__BODY_CONTROL_REQ;
  m.control_req = &r;
  *out = NULL;
  int code = gpd_live_call(sock, &m, &reply);
  if (code)
    return code;
  if (reply->body_case != GPUPROF__MSG__BODY_CONTROL_REPLY || !reply->control_reply) {
    fprintf(stderr, "gpuprof: unexpected reply to a control request\n");
    gpuprof__msg__free_unpacked(reply, NULL);
    return GPD_EXIT_FAIL;
  }
  const Gpuprof__ControlReply *cr = reply->control_reply;
  for (size_t i = 0; i < cr->n_results; i++) {
    const Gpuprof__ControlResult *x = cr->results[i];
    if (x->code == 0) {
      fprintf(to, "pid %d: %s", (int)x->pid, what);
      if (x->targets)
        fprintf(to, " (%u target%s)", x->targets, x->targets == 1 ? "" : "s");
      if (x->message && x->message[0])
        fprintf(to, ": %s", x->message);
      fprintf(to, "\n");
    } else {
      code = GPD_EXIT_FAIL;
      fprintf(to, "pid %d: not done: %s\n", (int)x->pid,
             x->message && x->message[0] ? x->message : gpd_strerror(x->code));
    }
  }
  *out = reply;
  return code;
}

int gpd_live_control_on(const char *sock, const Gpuprof__Msg *creply, unsigned kind) {
  Gpuprof__PsRequest pr = GPUPROF__PS_REQUEST__INIT;
  Gpuprof__Msg m = GPUPROF__MSG__INIT, *reply = NULL;
  m.body_case = GPUPROF__MSG__BODY_PS_REQ;
  m.ps_req = &pr;
  if (gpd_live_call(sock, &m, &reply))
    return -1;
  int on = 0;
  const Gpuprof__ControlReply *cr = creply->control_reply;
  for (size_t i = 0; reply->ps && i < reply->ps->n_procs; i++) {
    const Gpuprof__Process *p = reply->ps->procs[i];
    for (size_t j = 0; j < cr->n_results; j++)
      if (cr->results[j]->code == 0 && cr->results[j]->profile_id == p->profile_id && p->running &&
          (p->control_on >> kind & 1))
        on = 1;
  }
  gpuprof__msg__free_unpacked(reply, NULL);
  return on;
}

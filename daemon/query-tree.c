/* query-tree.c - the Ps and Tree answers, and what Top (query-top.c) and
 * Trace (query-trace.c) build theirs from: which processes a peer selects
 * and may see, the explicit-pid check, Process and Node messages, and the
 * node view (merge.h) kept between queries.  Main thread, under d->lock,
 * in the arena of the query being built (query-arena.h). */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpuprof/error.h"
#include "gpuprof/frame.h"
#include "gpuprof/hash.h"
#include "gpuprof/log.h"
#include "gpuprof/metric.h"
#include "gpuprof.pb-c.h"

#include "daemon.h"
#include "job.h"
#include "query-internal.h"

static Gpuprof__Process *proc_msg(const gpd_proc_t *p) {
  Gpuprof__Process *m = gpd__query_alloc(sizeof *m);
  if (m == NULL)
    return NULL;
  gpuprof__process__init(m);
  m->profile_id = p->profile_id;
  m->pid = p->pid;
  m->uid = p->uid;
  m->gid = p->gid;
  m->exe = gpd__query_strdup(p->exe);
  m->job_id = gpd__query_strdup(p->job_id);
  m->job_claimed = !p->job_verified && p->job_id && p->job_id[0];
  m->step_id = gpd__query_strdup(p->step_id);
  m->rank = p->rank;
  m->local_rank = p->local_rank;
  m->running = p->state == GPD_PROC_RUNNING;
  gpd_registry_counters(p, &m->rings, &m->records, &m->drops);
  m->error = gpd__query_strdup(p->error);
  m->start_ns = p->start_ns;
  m->end_ns = p->end_ns;
  m->control_on = p->state == GPD_PROC_RUNNING ? p->control_on : 0;
  gpd_policy_proc_msg(p, m);
  if (p->argc) {
    m->argv = gpd__query_calloc(p->argc, sizeof *m->argv);
    for (size_t i = 0; m->argv && i < p->argc; i++)
      m->argv[m->n_argv++] = gpd__query_strdup(p->argv[i]);
  }
  m->backends = gpd__query_calloc(GPD_API_MAX, sizeof *m->backends);
  for (unsigned a = 1; m->backends && a < GPD_API_MAX; a++) {
    const gpd_api_status_t *b = &p->prof.backends[a];
    if (!b->seen)
      continue;
    Gpuprof__Backend *be = gpd__query_alloc(sizeof *be);
    if (be == NULL)
      break;
    gpuprof__backend__init(be);
    be->api = gpd__query_strdup(gpd_api_name(a));
    be->enabled = b->enabled;
    be->code = b->code;
    be->reason = gpd__query_strdup(gpd_profile_string(&p->prof, b->reason));
    m->backends[m->n_backends++] = be;
  }
  return m;
}

/* Is p selected by (pid, job) and visible to peer?  pid 0 = any. */
int gpd__query_selected(const gpd_proc_t *p, const gpd_peer_t *peer, int32_t pid, const char *job) {
  if (pid != 0 && p->pid != pid)
    return 0;
  if (!gpd_job_selects(job, peer->uid, p->job_id, p->job_verified, p->uid))
    return 0;
  return gpd_access_may_see(peer, p->uid);
}

/* Explicit pid that the peer may not see -> Error reply, the same as for a
 * pid nobody profiles (gpd_registry_find_visible). */
Gpuprof__Msg *gpd__query_check_pid(gpd_daemon_t *d, const gpd_peer_t *peer, int32_t pid) {
  char buf[160];
  if (pid == 0)
    return NULL;
  if (gpd_registry_find_visible(d, peer, pid) == NULL) {
    snprintf(buf, sizeof buf, GPD_NO_PID_FMT, (int)pid);
    return gpd__query_error_msg(-ESRCH, buf);
  }
  return NULL;
}

/* Node message of node pidx of profile p: id, parent, kind, offset, label,
 * module, raw name; no metrics.  A FRAME node with a module is labelled
 * "0x<offset>" here and symbolized after the unlock (q_pending_add).
 * Under d->lock. */
Gpuprof__Node *gpd__query_node_msg(const gpd_profile_t *p, uint32_t pidx) {
  const gpd_node_t *n = &p->nodes[pidx];
  Gpuprof__Node *o = gpd__query_alloc(sizeof *o);
  if (o == NULL)
    return NULL;
  gpuprof__node__init(o);
  o->id = n->id;
  o->parent = gpd_profile_parent_id(p, pidx);
  o->kind = (Gpuprof__NodeKind)n->kind;
  o->offset = n->offset;
  const char *module = NULL, *label = NULL;
  char buf[64];
  if (n->kind == GPD_NODE_ROOT) {
    label = "<root>";
  } else if (n->kind == GPD_NODE_FRAME) {
    const gpd_pmodule_t *m = gpd_profile_module(p, n->module);
    module = m ? m->path : NULL;
    snprintf(buf, sizeof buf, "0x%" PRIx64, n->offset);
    label = buf;
  } else {
    label = n->label ? gpd_profile_label(p, n->label) : "?";
  }
  o->label = gpd__query_strdup(label);
  o->module = gpd__query_strdup(module);
  o->raw_name = gpd__query_strdup(gpd_profile_label(p, n->raw));
  if (n->kind == GPD_NODE_FRAME && module && module[0])
    gpd__query_pending_add(o, p->uid, p->gid);
  return o;
}

static Gpuprof__Metric **metric_msgs(const gpd_mval_t *v, unsigned n, size_t *out_n) {
  *out_n = 0;
  if (n == 0)
    return NULL;
  Gpuprof__Metric **a = gpd__query_calloc(n, sizeof *a);
  Gpuprof__Metric *ms = gpd__query_alloc(n * sizeof *ms);
  if (a == NULL || ms == NULL)
    return NULL;
  for (unsigned i = 0; i < n; i++) {
    gpuprof__metric__init(&ms[i]);
    ms[i].id = v[i].id;
    ms[i].value = v[i].v;
    a[i] = &ms[i];
  }
  *out_n = n;
  return a;
}

/* Metrics of view node j as parallel arrays (TreeRequest.packed_metrics):
 * *ids and *vals in the arena, *n of them (0: both NULL). */
static void metric_arrays(const gpd_merge_t *m, uint32_t j, int incl, uint32_t **ids, double **vals,
                          size_t *n) {
  gpd_mval_t mv[GPD_M__COUNT];
  unsigned k = gpd_merge_metrics(m, j, incl, mv);
  *n = 0;
  *ids = NULL;
  *vals = NULL;
  if (k == 0)
    return;
  uint32_t *a = gpd__query_alloc(k * sizeof *a);
  double *b = gpd__query_alloc(k * sizeof *b);
  if (a == NULL || b == NULL)
    return;
  for (unsigned i = 0; i < k; i++) {
    a[i] = mv[i].id;
    b[i] = mv[i].v;
  }
  *ids = a;
  *vals = b;
  *n = k;
}

static Gpuprof__Node *node_msg(const gpd_merge_t *m, uint32_t j, unsigned metrics) {
  const gpd_mnode_t *mn = &m->nodes[j];
  const gpd_mview_t *v = &m->view[j];
  Gpuprof__Node *o = gpd__query_node_msg(v->prof, v->pidx);
  if (o == NULL)
    return NULL;
  /* the merged node's identity (equal to the profile node's by Merkle id) */
  o->id = v->out;
  o->parent = mn->parent == GPD_NONE ? 0 : m->view[mn->parent].out;
  o->kind = (Gpuprof__NodeKind)mn->kind;
  if (!(metrics & GPD__QTREE_METRICS))
    return o;
  int incl = !(metrics & GPD__QTREE_NO_INCL);
  if (metrics & GPD__QTREE_PACKED) {
    size_t ni = 0;
    metric_arrays(m, j, 0, &o->excl_ids, &o->excl_values, &o->n_excl_ids);
    o->n_excl_values = o->n_excl_ids;
    if (incl)
      metric_arrays(m, j, 1, &o->incl_ids, &o->incl_values, &ni);
    o->n_incl_ids = o->n_incl_values = ni;
  } else {
    gpd_mval_t mv[GPD_M__COUNT];
    o->excl = metric_msgs(mv, gpd_merge_metrics(m, j, 0, mv), &o->n_excl);
    if (incl)
      o->incl = metric_msgs(mv, gpd_merge_metrics(m, j, 1, mv), &o->n_incl);
  }
  return o;
}

/* The node view of the last tree or top query, kept between queries (main
 * thread, under d->lock): merged nodes and per-profile maps are only
 * extended. */
static gpd_merge_t q_merge;
static gpd_daemon_t *q_merge_d;

int gpd__query_merge(gpd_daemon_t *d, const gpd_peer_t *peer, int32_t pid, const char *job,
                     gpd_merge_t **out, Gpuprof__Process ***procs, size_t *nprocs) {
  if (q_merge_d != d) {
    gpd_merge_free(&q_merge);
    q_merge_d = d;
  }
  gpd_merge_t *m = &q_merge;
  *out = m;
  gpd_merge_begin(m);
  if (procs) {
    *procs = gpd__query_calloc(d->nprocs + 1, sizeof **procs);
    *nprocs = 0;
  }
  /* oldest first so that labels come from the first registrant */
  size_t n = 0;
  for (gpd_proc_t *p = d->procs; p; p = p->next)
    n++;
  gpd_proc_t **order = calloc(n + 1, sizeof *order);
  if (order == NULL)
    return -ENOMEM;
  size_t k = n;
  for (gpd_proc_t *p = d->procs; p; p = p->next)
    order[--k] = p;
  int err = 0;
  for (size_t i = 0; i < n; i++) {
    gpd_proc_t *p = order[i];
    if (!gpd__query_selected(p, peer, pid, job)) {
      gpd_merge_live(m, &p->prof);
      continue;
    }
    if ((err = gpd_merge_add(m, &p->prof)) < 0)
      break;
    if (procs && *procs)
      (*procs)[(*nprocs)++] = proc_msg(p);
  }
  free(order);
  if (err < 0) {
    gpd_merge_free(m); /* rebuilt by the next query */
    return err;
  }
  return gpd_merge_finish(m);
}

Gpuprof__Msg *gpd__query_ps_answer(gpd_daemon_t *d, const gpd_peer_t *peer, const Gpuprof__PsRequest *r) {
  Gpuprof__Msg *m = gpd__query_msg_new();
  Gpuprof__PsReply *ps = gpd__query_alloc(sizeof *ps);
  if (m == NULL || ps == NULL)
    return NULL;
  gpuprof__ps_reply__init(ps);
  ps->procs = gpd__query_calloc(d->nprocs + 1, sizeof *ps->procs);
  for (gpd_proc_t *p = d->procs; ps->procs && p; p = p->next) {
    if (!gpd__query_selected(p, peer, 0, r ? r->job_id : NULL))
      continue;
    Gpuprof__Process *pm = proc_msg(p);
    if (pm)
      ps->procs[ps->n_procs++] = pm;
  }
  m->body_case = GPUPROF__MSG__BODY_PS;
  m->ps = ps;
  return m;
}

Gpuprof__TreeReply *gpd__query_tree_reply(gpd_daemon_t *d, const gpd_peer_t *peer, int32_t pid,
                                          const char *job, uint32_t max_depth, unsigned metrics) {
  gpd_merge_t *mg;
  Gpuprof__TreeReply *t = gpd__query_alloc(sizeof *t);
  if (t == NULL)
    return NULL;
  gpuprof__tree_reply__init(t);
  if (gpd__query_merge(d, peer, pid, job, &mg, &t->procs, &t->n_procs) < 0)
    return NULL;
  t->nodes = gpd__query_calloc(mg->nview + 1, sizeof *t->nodes);
  for (uint32_t i = 0; t->nodes && i < mg->n; i++) {
    if (!gpd_merge_in_view(mg, i) || (max_depth && mg->nodes[i].depth > max_depth))
      continue;
    Gpuprof__Node *nm = node_msg(mg, i, metrics);
    if (nm)
      t->nodes[t->n_nodes++] = nm;
  }
  if ((metrics & GPD__QTREE_METRICS) && gpd__query_tree_gpu(mg, max_depth, t) < 0)
    return NULL;
  return t;
}

Gpuprof__Msg *gpd__query_tree_answer(gpd_daemon_t *d, const gpd_peer_t *peer,
                                 const Gpuprof__TreeRequest *r) {
  Gpuprof__Msg *e = gpd__query_check_pid(d, peer, r->pid);
  if (e)
    return e;
  Gpuprof__Msg *m = gpd__query_msg_new();
  /* inclusive values are left out only where the client can sum them:
   * the whole tree (a cut one needs them at the cut) */
  unsigned metrics = GPD__QTREE_METRICS | (r->packed_metrics ? GPD__QTREE_PACKED : 0) |
                     (r->no_incl && r->max_depth == 0 ? GPD__QTREE_NO_INCL : 0);
  Gpuprof__TreeReply *t = gpd__query_tree_reply(d, peer, r->pid, r->job_id, r->max_depth, metrics);
  if (m == NULL || t == NULL)
    return NULL;
  m->body_case = GPUPROF__MSG__BODY_TREE;
  m->tree = t;
  return m;
}

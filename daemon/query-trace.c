/* query-trace.c - the Trace query (docs/TRACE.md, proto TraceRequest).
 *
 * Two steps like every query (query.h): on the main thread, with the
 * daemon lock, the access check (an explicit pid of another user is
 * "permission denied", pid 0 selects only the peer's own processes unless
 * it is an admin), the selected processes and their contexts (labels come
 * from the live CCT, symbolized off the loop); then, in the thread pool,
 * the events of the window are read from the store with a read-only
 * connection of their own (never on the loop: the window is the client's
 * choice).  The reply says up to when the tracing threads had committed
 * (flushed_ns) so that a live `gpuprof trace --duration` can ask again
 * until its window is complete.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gpuprof/clock.h"
#include "gpuprof/log.h"

#include "daemon.h"
#include "query-internal.h"
#include "store-trace.h"

/* events + launches per reply unless the request asks for fewer */
#define QTRACE_MAX_EVENTS 1000000u

struct gpd__qtrace_s {
  char *db_path;
  uint64_t *ids; /* profile ids */
  size_t nids;
  uint64_t from, to;
  uint32_t max;
};

void gpd__query_trace_free(gpd__qtrace_t *tr) {
  if (tr == NULL)
    return;
  free(tr->db_path);
  free(tr->ids);
  free(tr);
}

Gpuprof__Msg *gpd__query_trace_answer(gpd_daemon_t *d, const gpd_peer_t *peer,
                                      const Gpuprof__TraceRequest *r, gpd__qtrace_t **out) {
  *out = NULL;
  Gpuprof__Msg *e = gpd__query_check_pid(d, peer, r->pid);
  if (e)
    return e;
  Gpuprof__Msg *m = gpd__query_msg_new();
  Gpuprof__TraceReply *t = gpd__query_alloc(sizeof *t);
  Gpuprof__TreeReply *tree = gpd__query_tree_reply(d, peer, r->pid, r->job_id, 0, 0);
  gpd__qtrace_t *tr = calloc(1, sizeof *tr);
  if (m == NULL || t == NULL || tree == NULL || tr == NULL)
    goto nomem;
  gpuprof__trace_reply__init(t);
  t->procs = tree->procs;
  t->n_procs = tree->n_procs;
  t->nodes = tree->nodes;
  t->n_nodes = tree->n_nodes;
  t->now_ns = gpd_clock_ns();
  t->flushed_ns = d->trace ? gpd_trace_flushed_ns(d->trace) : t->now_ns;
  for (gpd_proc_t *p = d->procs; p; p = p->next)
    if (gpd__query_selected(p, peer, r->pid, r->job_id)) {
      t->dropped += p->prof.trace_dropped;
      t->refused += p->prof.trace_refused;
    }
  tr->db_path = strdup(d->db_path);
  tr->ids = calloc(t->n_procs + 1, sizeof *tr->ids);
  if (tr->db_path == NULL || tr->ids == NULL)
    goto nomem;
  for (size_t i = 0; i < t->n_procs; i++)
    tr->ids[tr->nids++] = t->procs[i]->profile_id;
  tr->from = r->from_ns;
  tr->to = r->to_ns ? r->to_ns : INT64_MAX;
  tr->max = r->max_events && r->max_events < QTRACE_MAX_EVENTS ? r->max_events : QTRACE_MAX_EVENTS;
  m->body_case = GPUPROF__MSG__BODY_TRACE;
  m->trace = t;
  *out = tr;
  return m;
nomem:
  gpd__query_trace_free(tr);
  return NULL;
}

/* The fields that say which GPU operation a TraceEvent (the activity)
 * or a TraceLaunch (its API call) belongs to, which both messages carry
 * under the same names (proto/gpuprof.proto): the profile, the
 * correlation id, the context node and the op, from a store row r of
 * gpd_trace_row_t or gpd_trace_lrow_t (gpuprof/trace-row.h). */
#define QTRACE_OP_FIELDS(m, r) \
  ((m)->profile_id = (r)->profile, (m)->corr = (r)->corr, (m)->node = (r)->node, (m)->op = (r)->op)

static void event_row(void *arg, const gpd_trace_row_t *r) {
  Gpuprof__TraceReply *t = arg;
  Gpuprof__TraceEvent *e = gpd__query_alloc(sizeof *e);
  if (e == NULL)
    return;
  gpuprof__trace_event__init(e);
  QTRACE_OP_FIELDS(e, r);
  e->start_ns = r->start;
  e->end_ns = r->end;
  e->stream = r->stream;
  e->device = r->device;
  e->subkind = r->subkind;
  e->bytes = r->bytes;
  t->events[t->n_events++] = e;
}

static void launch_row(void *arg, const gpd_trace_lrow_t *r) {
  Gpuprof__TraceReply *t = arg;
  Gpuprof__TraceLaunch *l = gpd__query_alloc(sizeof *l);
  if (l == NULL)
    return;
  gpuprof__trace_launch__init(l);
  QTRACE_OP_FIELDS(l, r);
  l->ts_ns = r->ts;
  l->tid = r->tid;
  t->launches[t->n_launches++] = l;
}

void gpd__query_trace_run(gpd__qtrace_t *tr, Gpuprof__Msg *reply) {
  Gpuprof__TraceReply *t = reply->trace;
  size_t ne = 0, nl = 0;
  if (reply->body_case != GPUPROF__MSG__BODY_TRACE || tr->nids == 0)
    goto out;
  /* arrays sized for the bound (pointers only: 8 bytes per event) */
  t->events = gpd__query_calloc(tr->max + 1, sizeof *t->events);
  t->launches = gpd__query_calloc(tr->max + 1, sizeof *t->launches);
  if (t->events == NULL || t->launches == NULL)
    goto out;
  if (gpd_store_trace_query(tr->db_path, tr->ids, tr->nids, tr->from, tr->to, tr->max, event_row, launch_row, t,
                            &ne, &nl) == 0)
    t->truncated = ne + nl >= tr->max;
out:
  gpd__query_trace_free(tr);
}

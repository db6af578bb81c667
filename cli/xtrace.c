/* xtrace.c - the in-memory trace (trace.h) of a saved profile (read
 * through store/, store-read.h) or of a live window gpuprofd sent: what
 * `gpuprof trace`, the idleness blame and the duty-cycle estimates use.
 */
#include "trace.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gpuprof/error.h"
#include "gpuprof/record.h"
#include "store-read.h"

void gpd_xtrace_init(gpd_xtrace_t *x) {
  memset(x, 0, sizeof *x);
  gpd_tree_init(&x->tree);
}

void gpd_xtrace_free(gpd_xtrace_t *x) {
  gpd_tree_free(&x->tree);
  free(x->ev);
  free(x->la);
  free(x->cs);
  memset(x, 0, sizeof *x);
}

int gpd_xtrace_grow(void **a, size_t n, size_t *cap, size_t sz) {
  if (n < *cap)
    return 0;
  size_t nc = *cap ? *cap * 2 : 256;
  void *na = realloc(*a, nc * sz);
  if (na == NULL)
    return -ENOMEM;
  *a = na;
  *cap = nc;
  return 0;
}
#define ROOM(x, arr, n, cap) gpd_xtrace_grow((void **)&(x)->arr, (x)->n, &(x)->cap, sizeof *(x)->arr)

/* Room for n more elements in *a (count *len, capacity *cap, sz bytes
 * each) at once: a large trace is read without realloc's copies.  0 or
 * -ENOMEM. */
static int reserve(void **a, size_t len, size_t *cap, size_t sz, int64_t n) {
  if (n <= 0 || len + (size_t)n <= *cap)
    return 0;
  void *na = realloc(*a, (len + (size_t)n) * sz);
  if (na == NULL)
    return -ENOMEM;
  *a = na;
  *cap = len + (size_t)n;
  return 0;
}

static int on_event(void *c, const gpd_trace_row_t *e) {
  gpd_xtrace_t *x = c;
  int err = ROOM(x, ev, nev, capev);
  if (err == 0)
    x->ev[x->nev++] = *e;
  return err;
}

static int on_launch(void *c, const gpd_trace_lrow_t *l) {
  gpd_xtrace_t *x = c;
  int err = ROOM(x, la, nla, capla);
  if (err == 0)
    x->la[x->nla++] = *l;
  return err;
}

typedef struct cs_ctx_s {
  gpd_xtrace_t *x;
  uint64_t profile;
} cs_ctx_t;

static int on_cpu_sample(void *c, uint32_t tid, uint64_t ts, uint64_t node) {
  cs_ctx_t *cc = c;
  gpd_xtrace_t *x = cc->x;
  int err = ROOM(x, cs, ncs, capcs);
  if (err == 0)
    x->cs[x->ncs++] = (gpd_xsample_t){.profile = cc->profile, .tid = tid, .ts = ts, .node = node};
  return err;
}

static int load_profile(gpd_xtrace_t *x, const gpd_store_trace_reader_t *tr, uint64_t id) {
  cs_ctx_t cc = {x, id};
  int err = reserve((void **)&x->ev, x->nev, &x->capev, sizeof *x->ev, gpd_store_trace_read_count_events(tr, id));
  if (err == 0)
    err = reserve((void **)&x->la, x->nla, &x->capla, sizeof *x->la, gpd_store_trace_read_count_launches(tr, id));
  if (err == 0)
    err = gpd_store_trace_read_events(tr, id, on_event, x);
  if (err == 0)
    err = gpd_store_trace_read_launches(tr, id, on_launch, x);
  if (err == 0)
    err = gpd_store_trace_read_cpu_samples(tr, id, on_cpu_sample, &cc);
  if (err == 0)
    gpd_store_trace_read_stat(tr, id, &x->dropped, &x->refused);
  return err;
}

static int ev_cmp(const void *a, const void *b) {
  const gpd_xev_t *x = a, *y = b;
  return x->start < y->start ? -1 : x->start > y->start;
}
static int la_cmp(const void *a, const void *b) {
  const gpd_xlaunch_t *x = a, *y = b;
  return x->ts < y->ts ? -1 : x->ts > y->ts;
}
static int cs_cmp(const void *a, const void *b) {
  const gpd_xsample_t *x = a, *y = b;
  return x->ts < y->ts ? -1 : x->ts > y->ts;
}

/* qsort unless already sorted (one profile's rows come in order) */
static void sort_if(void *a, size_t n, size_t sz, int (*cmp)(const void *, const void *)) {
  for (size_t i = 1; i < n; i++)
    if (cmp((char *)a + (i - 1) * sz, (char *)a + i * sz) > 0) {
      qsort(a, n, sz, cmp);
      return;
    }
}

static void sort_all(gpd_xtrace_t *x) {
  sort_if(x->ev, x->nev, sizeof *x->ev, ev_cmp);
  sort_if(x->la, x->nla, sizeof *x->la, la_cmp);
  sort_if(x->cs, x->ncs, sizeof *x->cs, cs_cmp);
}

int gpd_xtrace_load(gpd_xtrace_t *x, const char *path, int pid, char *err, size_t errn) {
  int r = gpd_load_file(&x->tree, path, pid, 1, err, errn);
  if (r < 0)
    return r;
  if ((r = gpd_tree_finish(&x->tree, 0)) < 0) {
    snprintf(err, errn, "%s: %s", path, gpd_strerror(r));
    return r;
  }
  struct sqlite3 *db = NULL;
  gpd_store_trace_reader_t tr;
  unsigned wal = gpd_store_file_wal_before(path);
  if (gpd_store_file_open(path, &db, err, errn) < 0) {
    gpd_store_file_wal_after(path, wal);
    return -EIO;
  }
  gpd_store_trace_read_init(&tr, db);
  if (tr.has_trace) { /* else a profile from before traces: an empty trace */
    gpd_store_file_begin(db, path, NULL, 0);
    for (size_t i = 0; i < x->tree.nprocs && r == 0; i++)
      r = load_profile(x, &tr, x->tree.procs[i].profile_id);
    gpd_store_file_end(db);
  }
  gpd_store_file_close(db);
  gpd_store_file_wal_after(path, wal);
  if (r < 0) {
    snprintf(err, errn, "%s: reading the trace: %s", path, gpd_strerror(r));
    return r;
  }
  sort_all(x);
  return 0;
}

void gpd__xtrace_sort(gpd_xtrace_t *x) {
  sort_all(x);
}

int gpd__xtrace_add_reply(gpd_xtrace_t *x, const Gpuprof__TraceReply *r, int sort) {
  Gpuprof__TreeReply tr = GPUPROF__TREE_REPLY__INIT;
  tr.nodes = r->nodes;
  tr.n_nodes = r->n_nodes;
  tr.procs = r->procs;
  tr.n_procs = r->n_procs;
  gpd_tree_free(&x->tree);
  gpd_tree_init(&x->tree);
  int err = gpd_live_tree_from_reply(&x->tree, &tr);
  if (err == 0)
    err = gpd_tree_finish(&x->tree, 0);
  for (size_t i = 0; err == 0 && i < r->n_events; i++) {
    const Gpuprof__TraceEvent *m = r->events[i];
    if ((err = ROOM(x, ev, nev, capev)) < 0)
      break;
    x->ev[x->nev++] = (gpd_xev_t){.profile = m->profile_id, .start = m->start_ns, .end = m->end_ns,
                                  .corr = m->corr, .node = m->node, .bytes = m->bytes,
                                  .stream = m->stream, .device = m->device, .op = (uint8_t)m->op,
                                  .subkind = (uint8_t)m->subkind};
  }
  for (size_t i = 0; err == 0 && i < r->n_launches; i++) {
    const Gpuprof__TraceLaunch *m = r->launches[i];
    if ((err = ROOM(x, la, nla, capla)) < 0)
      break;
    x->la[x->nla++] = (gpd_xlaunch_t){.profile = m->profile_id, .ts = m->ts_ns, .corr = m->corr,
                                      .node = m->node, .tid = m->tid, .op = (uint8_t)m->op};
  }
  x->dropped = r->dropped;
  x->refused = r->refused;
  x->truncated |= r->truncated;
  if (sort)
    sort_all(x);
  return err;
}

int gpd_xtrace_from_reply(gpd_xtrace_t *x, const Gpuprof__TraceReply *r) {
  return gpd__xtrace_add_reply(x, r, 1);
}

uint64_t gpd_xtrace_t0(const gpd_xtrace_t *x) {
  uint64_t t = UINT64_MAX;
  if (x->nev && x->ev[0].start < t)
    t = x->ev[0].start;
  if (x->nla && x->la[0].ts < t)
    t = x->la[0].ts;
  if (x->ncs && x->cs[0].ts < t)
    t = x->cs[0].ts;
  return t == UINT64_MAX ? 0 : t;
}

void gpd_xtrace_window(gpd_xtrace_t *x, uint64_t from, uint64_t to) {
  size_t w = 0;
  if (to == 0)
    to = UINT64_MAX;
  for (size_t i = 0; i < x->nev; i++)
    if (x->ev[i].start >= from && x->ev[i].start <= to)
      x->ev[w++] = x->ev[i];
  x->nev = w;
  w = 0;
  for (size_t i = 0; i < x->nla; i++)
    if (x->la[i].ts >= from && x->la[i].ts <= to)
      x->la[w++] = x->la[i];
  x->nla = w;
  w = 0;
  for (size_t i = 0; i < x->ncs; i++)
    if (x->cs[i].ts >= from && x->cs[i].ts <= to)
      x->cs[w++] = x->cs[i];
  x->ncs = w;
}

void gpd_xtrace_path(const gpd_xtrace_t *x, uint64_t node, int cpu_only, char *buf, size_t n) {
  size_t chain[256], k = 0;
  buf[0] = 0;
  long i = node ? gpd_tree_find(&x->tree, node) : -1;
  for (size_t j = i < 0 ? SIZE_MAX : (size_t)i; j != SIZE_MAX && k < 256; j = x->tree.nodes[j].parent) {
    const gpd_tnode_t *nd = &x->tree.nodes[j];
    if (nd->kind == GPD_NODE_ROOT)
      break;
    if (cpu_only && (nd->kind == GPD_NODE_PLACEHOLDER || nd->kind == GPD_NODE_KERNEL))
      continue;
    chain[k++] = j;
  }
  size_t len = 0;
  while (k-- > 0 && len + 1 < n) {
    char name[512];
    gpd_render_node_name(name, sizeof name, &x->tree.nodes[chain[k]]);
    int w = snprintf(buf + len, n - len, "%s%s", len ? " > " : "", name);
    if (w < 0)
      break;
    len += (size_t)w < n - len ? (size_t)w : n - len - 1;
  }
}

void gpd_xtrace_ev_name(const gpd_xtrace_t *x, const gpd_xev_t *e, char *buf, size_t n) {
  long i = e->node ? gpd_tree_find(&x->tree, e->node) : -1;
  if (i >= 0 && x->tree.nodes[i].kind == GPD_NODE_KERNEL) {
    gpd_render_node_name(buf, n, &x->tree.nodes[i]);
    return;
  }
  const char *kind = e->op == GPD_OP_COPY ? gpd_copy_name(e->subkind)
                     : e->op == GPD_OP_SYNC ? gpd_sync_name(e->subkind)
                     : e->op == GPD_OP_KERNEL ? ""
                                              : gpd_mem_name(e->subkind);
  snprintf(buf, n, "%s%s%s", gpd_op_placeholder(e->op), kind[0] ? " " : "", kind);
}

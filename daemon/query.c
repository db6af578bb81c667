/* query.c - Ps / Tree / Top answered from the live in-memory profiles
 * (never from the database), filtered by peer credentials (access.h).
 *
 * Replies are built in a per-query arena (below) with every string
 * duplicated, so they never borrow profile memory after the lock.  The daemon
 * lock is held while the merge borrows profile data (gpd_query_start, main
 * thread).  FRAME nodes are symbolized after the lock is dropped, by
 * gpd_query_run, which client.c runs in libuv's thread pool (symbolizing a
 * large library the first time takes seconds; neither the monitor, which
 * needs the lock, nor the loop, which serves every other client, may wait on
 * it): under the lock a FRAME node gets its module path, offset and a
 * "0x<offset>" label, and goes on the query's pending list with its process
 * owner's uid/gid; q_symbolize_pending then fills its label (the physical
 * function: the outermost frame of its inline chain) and its frames (that
 * function, then the inlined ones with their call-site lines), and q_encode
 * packs the reply into its frame.
 *
 * Top and its node-merged index live in query-top.c; what both files use
 * (the arena, node messages, selection) is in query-internal.h.
 */
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

/* ------------------------------------------------------- reply arena
 *
 * A reply (every protobuf-c struct, array and string of it) is carved from
 * 64 KiB chunks owned by its query: a 30 K-node TreeReply is ~500 K small
 * objects, and malloc + protobuf_c_message_free_unpacked of them cost about
 * as much as building the tree.  gpd_query_run frees the chunks once the
 * reply is encoded (gpd_query_free if it never was).
 *
 * q_arena is the arena of the query the calling thread is working on:
 * gpd_query_start (main thread) and gpd_query_run (a pool thread) point it
 * at the query's chunks for their duration, so the gpd__query_* helpers
 * need no query argument. */

typedef struct q_chunk_s {
  struct q_chunk_s *next;
  size_t used, cap;
  _Alignas(16) unsigned char data[];
} q_chunk_t;

/* FRAME nodes of a reply, symbolized after the unlock. */
typedef struct q_pending_s {
  Gpuprof__Node *node; /* module and offset already set (arena copies) */
  uid_t uid;
  gid_t gid;
} q_pending_t;

struct gpd_query_s {
  Gpuprof__Msg *reply; /* in arena; NULL once encoded */
  q_chunk_t *arena;
  q_pending_t *pend;   /* malloc'd */
  uint32_t npend, cappend;
  uint8_t *frame;      /* encoded by gpd_query_run (header + payload) */
  size_t frame_len;
  int frame_err;       /* 0, GPD_EFRAMETOOBIG, -ENOMEM, -ECANCELED */
  atomic_int cancel;   /* gpd_query_cancel: any thread */
  uint64_t serial;     /* 1, 2, ... per gpd_query_start (test log lines) */
  gpd__qtrace_t *trace; /* a trace query's store read, done by gpd_query_run */
};

static _Thread_local q_chunk_t *q_arena; /* chunks of the query this thread works on */
static _Thread_local gpd_query_t *q_cur; /* the query being built (main thread) */

/* GPUPROF_TEST_SYMBOLIZE_DELAY_MS (tests only): gpd_query_run sleeps this
 * long before the first FRAME node of a query is symbolized, as a cold
 * libtorch would take.  Read once, by the first gpd_query_start (main
 * thread, before any query is queued to the pool). */
static unsigned q_delay_ms;
static int q_delay_read;
static uint64_t q_serial; /* main thread */

/* Freed 64 KiB chunks are kept for the next query (up to Q_POOL_MAX
 * bytes): a 30 K-node tree fills ~20 MiB of chunks, and fresh memory from
 * malloc costs a page fault per 4 KiB (glibc trims the heap top after each
 * query) -- measured as the largest part of a `tree` reply's build time.
 * Any thread (the pool threads free, main allocates): q_pool_lock. */
#define Q_CHUNK (64u << 10)
#define Q_POOL_MAX (32u << 20)
static pthread_mutex_t q_pool_lock = PTHREAD_MUTEX_INITIALIZER;
static q_chunk_t *q_pool;
static size_t q_pool_bytes;

static void q_arena_free(q_chunk_t *c) {
  while (c) {
    q_chunk_t *n = c->next;
    int kept = 0;
    if (c->cap == Q_CHUNK) {
      pthread_mutex_lock(&q_pool_lock);
      if (q_pool_bytes + Q_CHUNK <= Q_POOL_MAX) {
        c->next = q_pool;
        q_pool = c;
        q_pool_bytes += Q_CHUNK;
        kept = 1;
      }
      pthread_mutex_unlock(&q_pool_lock);
    }
    if (!kept)
      free(c);
    c = n;
  }
}

static q_chunk_t *q_chunk_new(size_t cap) {
  q_chunk_t *c = NULL;
  if (cap == Q_CHUNK) {
    pthread_mutex_lock(&q_pool_lock);
    if ((c = q_pool) != NULL) {
      q_pool = c->next;
      q_pool_bytes -= Q_CHUNK;
    }
    pthread_mutex_unlock(&q_pool_lock);
  }
  if (c == NULL && (c = malloc(sizeof *c + cap)) == NULL)
    return NULL;
  c->cap = cap;
  c->used = 0;
  return c;
}

/* One large reply frame kept between replies (q_pool_lock): q_frame, its
 * capacity, lent while a client's send holds it.  Frames of at least
 * Q_FRAME_MIN bytes and at most Q_FRAME_KEEP are kept. */
#define Q_FRAME_MIN (256u << 10)
#define Q_FRAME_KEEP (32u << 20)
static uint8_t *q_frame;
static size_t q_frame_cap;
static int q_frame_lent;

static uint8_t *q_frame_take(size_t n) {
  uint8_t *old = NULL, *b = NULL;
  if (n >= Q_FRAME_MIN && n <= Q_FRAME_KEEP) {
    pthread_mutex_lock(&q_pool_lock);
    if (q_frame && !q_frame_lent && q_frame_cap >= n) {
      q_frame_lent = 1;
      b = q_frame;
    } else if (!q_frame_lent) { /* idle and too small (or none): replace */
      old = q_frame;
      q_frame = NULL;
      q_frame_cap = 0;
    }
    pthread_mutex_unlock(&q_pool_lock);
    free(old);
    if (b)
      return b;
  }
  if ((b = malloc(n)) == NULL || n < Q_FRAME_MIN || n > Q_FRAME_KEEP)
    return b;
  pthread_mutex_lock(&q_pool_lock);
  if (q_frame == NULL) {
    q_frame = b;
    q_frame_cap = n;
    q_frame_lent = 1;
  }
  pthread_mutex_unlock(&q_pool_lock);
  return b;
}

void gpd_query_frame_free(uint8_t *buf) {
  if (buf == NULL)
    return;
  pthread_mutex_lock(&q_pool_lock);
  int kept = buf == q_frame;
  if (kept)
    q_frame_lent = 0;
  pthread_mutex_unlock(&q_pool_lock);
  if (!kept)
    free(buf);
}

void *gpd__query_alloc(size_t n) {
  n = (n + 15) & ~(size_t)15;
  if (q_arena == NULL || q_arena->cap - q_arena->used < n) {
    q_chunk_t *c = q_chunk_new(n > Q_CHUNK ? n : Q_CHUNK);
    if (c == NULL)
      return NULL;
    if (q_arena && n > Q_CHUNK) { /* big: keep filling the current chunk */
      c->next = q_arena->next;
      q_arena->next = c;
    } else {
      c->next = q_arena;
      q_arena = c;
    }
    c->used = n;
    return c->data;
  }
  void *p = q_arena->data + q_arena->used;
  q_arena->used += n;
  return p;
}

void *gpd__query_calloc(size_t n, size_t size) {
  if (size && n > SIZE_MAX / size)
    return NULL;
  void *p = gpd__query_alloc(n * size);
  if (p)
    memset(p, 0, n * size);
  return p;
}

char *gpd__query_strdup(const char *s) {
  if (s == NULL)
    s = "";
  size_t n = strlen(s) + 1;
  char *d = gpd__query_alloc(n);
  if (d)
    memcpy(d, s, n);
  return d;
}

const char *gpd_query_label(const gpd_profile_t *p, uint32_t i, const char **module) {
  const gpd_node_t *n = &p->nodes[i];
  *module = NULL;
  if (n->kind == GPD_NODE_ROOT)
    return "<root>";
  if (n->kind != GPD_NODE_FRAME)
    return n->label ? gpd_profile_label(p, n->label) : "?";
  const gpd_pmodule_t *m = gpd_profile_module(p, n->module);
  if (m) {
    *module = m->path;
    const gpd_sframe_t *fr;
    unsigned nf;
    if (gpd_symbols_resolve(m->path, p->uid, p->gid, n->offset, &fr, &nf) == 0 && nf > 0)
      return fr[0].function; /* the physical function, not the inlined one */
  }
  return NULL; /* caller prints the offset */
}

/* Room for one more element of a growing array whose `n` reached `*cap`:
 * the capacity doubles (from `first`).  0, or -ENOMEM with the array as it
 * was.  The one growth rule of the Top index and its scratch lists. */
int gpd__query_grow(void **arr, uint32_t *cap, size_t elem, uint32_t first) {
  uint32_t nc = *cap ? *cap * 2 : first;
  void *na = realloc(*arr, (size_t)nc * elem);
  if (na == NULL)
    return -ENOMEM;
  *arr = na;
  *cap = nc;
  return 0;
}

static void q_pending_add(Gpuprof__Node *o, uid_t uid, gid_t gid) {
  gpd_query_t *q = q_cur;
  if (q->npend == q->cappend &&
      gpd__query_grow((void **)&q->pend, &q->cappend, sizeof *q->pend, 256) < 0)
    return; /* left as module+offset */
  q->pend[q->npend++] = (q_pending_t){o, uid, gid};
}

static int q_cancelled(gpd_query_t *q) {
  return atomic_load_explicit(&q->cancel, memory_order_relaxed);
}

/* The test delay, in 10 ms steps so that a cancel (the client closed, the
 * daemon stops) is seen at once. */
static void q_test_delay(gpd_query_t *q) {
  if (q_cancelled(q))
    return;
  GPD_WARN("test delay: query %" PRIu64 " waits %u ms", q->serial, q_delay_ms);
  unsigned left = q_delay_ms;
  while (left > 0 && !q_cancelled(q)) {
    unsigned ms = left < 10 ? left : 10;
    struct timespec ts = {0, (long)ms * 1000000L};
    nanosleep(&ts, NULL);
    left -= ms;
  }
  if (left > 0)
    GPD_WARN("test delay: query %" PRIu64 " cancelled after %u ms", q->serial, q_delay_ms - left);
}

/* Without d->lock, any thread (q_arena = q's chunks): label and frames of
 * the pending nodes; stops early when cancelled. */
static void q_symbolize_pending(gpd_query_t *q) {
  if (q->npend && q_delay_ms)
    q_test_delay(q);
  for (uint32_t i = 0; i < q->npend && !q_cancelled(q); i++) {
    Gpuprof__Node *o = q->pend[i].node;
    const gpd_sframe_t *fr;
    unsigned nf;
    if (gpd_symbols_resolve(o->module, q->pend[i].uid, q->pend[i].gid, o->offset, &fr, &nf) < 0 ||
        nf == 0)
      continue;
    o->label = gpd__query_strdup(fr[0].function);
    o->frames = gpd__query_calloc(nf, sizeof *o->frames);
    for (unsigned k = 0; o->frames && k < nf; k++) {
      Gpuprof__Frame *f = gpd__query_alloc(sizeof *f);
      if (f == NULL)
        break;
      gpuprof__frame__init(f);
      f->function = gpd__query_strdup(fr[k].function);
      f->file = gpd__query_strdup(fr[k].file);
      f->line = fr[k].line;
      f->inlined = fr[k].inlined;
      o->frames[o->n_frames++] = f;
    }
  }
  free(q->pend);
  q->pend = NULL;
  q->npend = q->cappend = 0;
}

/* The reply as one frame: query replies may be up to GPD_REPLY_MAX (a
 * large tree), an Error up to GPD_FRAME_MAX (as client.c sends frames). */
static void q_encode(gpd_query_t *q) {
  const Gpuprof__Msg *m = q->reply;
  /* a tree's nodes are written by query-encode.c (each size taken once) */
  int tree = m->body_case == GPUPROF__MSG__BODY_TREE && m->tree && m->tree->n_nodes;
  uint32_t *sizes = NULL;
  size_t body = 0, n;
  if (tree) {
    if ((sizes = malloc(m->tree->n_nodes * sizeof *sizes)) == NULL) {
      q->frame_err = -ENOMEM;
      return;
    }
    n = gpd__query_tree_msg_size(m, sizes, &body);
  } else {
    n = gpuprof__msg__get_packed_size(m);
  }
  /* a Trace reply holds up to 1 000 000 rows (query-trace.c): ~50 MB */
  int reply = m->body_case == GPUPROF__MSG__BODY_PS || m->body_case == GPUPROF__MSG__BODY_TREE ||
              m->body_case == GPUPROF__MSG__BODY_TOP || m->body_case == GPUPROF__MSG__BODY_TRACE;
  if (n > (reply ? GPD_REPLY_MAX : GPD_FRAME_MAX)) {
    free(sizes);
    q->frame_err = GPD_EFRAMETOOBIG;
    return;
  }
  uint8_t *buf = q_frame_take(GPD_FRAME_HDR + n);
  if (buf == NULL) {
    free(sizes);
    q->frame_err = -ENOMEM;
    return;
  }
  gpd_frame_put_header(buf, (uint32_t)n);
  if (tree)
    gpd__query_tree_msg_pack(m, sizes, body, buf + GPD_FRAME_HDR);
  else
    gpuprof__msg__pack(m, buf + GPD_FRAME_HDR);
  free(sizes);
  q->frame = buf;
  q->frame_len = GPD_FRAME_HDR + n;
  q->frame_err = 0;
}

Gpuprof__Msg *gpd__query_msg_new(void) {
  Gpuprof__Msg *m = gpd__query_alloc(sizeof *m);
  if (m)
    gpuprof__msg__init(m);
  return m;
}

static Gpuprof__Msg *error_reply(int code, const char *text) {
  Gpuprof__Msg *m = gpd__query_msg_new();
  Gpuprof__Error *e = gpd__query_alloc(sizeof *e);
  if (m == NULL || e == NULL)
    return NULL;
  gpuprof__error__init(e);
  e->code = code;
  e->message = gpd__query_strdup(text);
  m->body_case = GPUPROF__MSG__BODY_ERROR;
  m->error = e;
  return m;
}

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
    return error_reply(-ESRCH, buf);
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
    q_pending_add(o, p->uid, p->gid);
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

static Gpuprof__Msg *answer_ps(gpd_daemon_t *d, const gpd_peer_t *peer, const Gpuprof__PsRequest *r) {
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

static Gpuprof__Msg *answer_tree(gpd_daemon_t *d, const gpd_peer_t *peer,
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

int gpd_query_start(gpd_daemon_t *d, const gpd_peer_t *peer, const Gpuprof__Msg *req,
                    gpd_query_t **out) {
  *out = NULL;
  if (!q_delay_read) {
    const char *e = getenv("GPUPROF_TEST_SYMBOLIZE_DELAY_MS");
    q_delay_read = 1;
    if (e && *e) {
      q_delay_ms = (unsigned)strtoul(e, NULL, 10);
      GPD_WARN("GPUPROF_TEST_SYMBOLIZE_DELAY_MS=%u: queries with frames wait that long (tests "
               "only)", q_delay_ms);
    }
  }
  gpd_query_t *q = calloc(1, sizeof *q);
  if (q == NULL)
    return -ENOMEM;
  q->frame_err = -ECANCELED; /* until gpd_query_run encodes */
  q->serial = ++q_serial;
  atomic_init(&q->cancel, 0);
  Gpuprof__Msg *m = NULL;
  q_arena = NULL;
  q_cur = q;
  gpd_daemon_lock(d);
  switch (req->body_case) {
  case GPUPROF__MSG__BODY_PS_REQ:
    m = answer_ps(d, peer, req->ps_req);
    break;
  case GPUPROF__MSG__BODY_TREE_REQ:
    m = answer_tree(d, peer, req->tree_req);
    break;
  case GPUPROF__MSG__BODY_TOP_REQ:
    m = gpd__query_top_answer(d, peer, req->top_req);
    break;
  case GPUPROF__MSG__BODY_TRACE_REQ:
    m = gpd__query_trace_answer(d, peer, req->trace_req, &q->trace);
    break;
  default:
    m = error_reply(GPD_EPROTO, "unexpected message");
    break;
  }
  pthread_mutex_unlock(&d->lock);
  q->arena = q_arena;
  q_arena = NULL;
  q_cur = NULL;
  if (m == NULL) {
    gpd_query_free(q);
    return -ENOMEM;
  }
  q->reply = m;
  if (q_delay_ms && q->npend)
    GPD_WARN("test delay: query %" PRIu64 " with %u frame nodes built", q->serial,
             (unsigned)q->npend);
  *out = q;
  return 0;
}

int gpd_query_slow(const gpd_query_t *q) { return q->npend > 0 || q->trace != NULL; }

void gpd_query_run(gpd_query_t *q) {
  q_arena = q->arena;
  q_symbolize_pending(q); /* outside the lock: may read large files */
  if (q->trace && !q_cancelled(q) && q->reply)
    gpd__query_trace_run(q->trace, q->reply); /* reads the store; frees q->trace */
  else
    gpd__query_trace_free(q->trace);
  q->trace = NULL;
  q->arena = q_arena;
  q_arena = NULL;
  if (!q_cancelled(q) && q->reply)
    q_encode(q);
  q->reply = NULL; /* encoded: the arena can go now */
  q_arena_free(q->arena);
  q->arena = NULL;
}

void gpd_query_cancel(gpd_query_t *q) {
  atomic_store_explicit(&q->cancel, 1, memory_order_relaxed);
}

int gpd_query_take_frame(gpd_query_t *q, uint8_t **buf, size_t *len) {
  *buf = NULL;
  *len = 0;
  if (q->frame == NULL)
    return q->frame_err ? q->frame_err : -ENOMEM;
  *buf = q->frame;
  *len = q->frame_len;
  q->frame = NULL;
  return 0;
}

void gpd_query_free(gpd_query_t *q) {
  if (q == NULL)
    return;
  q_arena_free(q->arena);
  gpd__query_trace_free(q->trace);
  free(q->pend);
  gpd_query_frame_free(q->frame);
  free(q);
}

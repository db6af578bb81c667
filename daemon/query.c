/* query.c - Ps / Tree / Top answered from the live in-memory profiles
 * (never from the database), filtered by peer credentials (access.h).
 *
 * Replies are built in a per-query arena (query-arena.c) with every string
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
 * This file dispatches a request to its answer (Ps and Tree: query-tree.c,
 * Top: query-top.c, Trace: query-trace.c) and runs what follows the
 * unlock; query-internal.h says what the files share.
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

struct gpd_query_s {
  Gpuprof__Msg *reply; /* in arena; NULL once encoded */
  gpd__qarena_t ar;    /* its reply's arena and pending FRAME nodes */
  uint8_t *frame;      /* encoded by gpd_query_run (header + payload) */
  size_t frame_len;
  int frame_err;       /* 0, GPD_EFRAMETOOBIG, -ENOMEM, -ECANCELED */
  atomic_int cancel;   /* gpd_query_cancel: any thread */
  uint64_t serial;     /* 1, 2, ... per gpd_query_start (test log lines) */
  gpd__qtrace_t *trace; /* a trace query's store read, done by gpd_query_run */
};

/* GPUPROF_TEST_SYMBOLIZE_DELAY_MS (tests only): gpd_query_run sleeps this
 * long before the first FRAME node of a query is symbolized, as a cold
 * libtorch would take.  Read once, by the first gpd_query_start (main
 * thread, before any query is queued to the pool). */
static unsigned q_delay_ms;
static int q_delay_read;
static uint64_t q_serial; /* main thread */

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

/* Without d->lock, any thread (q's arena in use): label and frames of
 * the pending nodes; stops early when cancelled. */
static void q_symbolize_pending(gpd_query_t *q) {
  if (q->ar.npend && q_delay_ms)
    q_test_delay(q);
  for (uint32_t i = 0; i < q->ar.npend && !q_cancelled(q); i++) {
    Gpuprof__Node *o = q->ar.pend[i].node;
    const gpd_sframe_t *fr;
    unsigned nf;
    if (gpd_symbols_resolve(o->module, q->ar.pend[i].uid, q->ar.pend[i].gid, o->offset, &fr, &nf) < 0 ||
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
  free(q->ar.pend);
  q->ar.pend = NULL;
  q->ar.npend = q->ar.cappend = 0;
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
  uint8_t *buf = gpd__query_frame_take(GPD_FRAME_HDR + n);
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
  gpd__query_arena_use(&q->ar);
  gpd_registry_lock(d);
  switch (req->body_case) {
  case GPUPROF__MSG__BODY_PS_REQ:
    m = gpd__query_ps_answer(d, peer, req->ps_req);
    break;
  case GPUPROF__MSG__BODY_TREE_REQ:
    m = gpd__query_tree_answer(d, peer, req->tree_req);
    break;
  case GPUPROF__MSG__BODY_TOP_REQ:
    m = gpd__query_top_answer(d, peer, req->top_req);
    break;
  case GPUPROF__MSG__BODY_TRACE_REQ:
    m = gpd__query_trace_answer(d, peer, req->trace_req, &q->trace);
    break;
  default:
    m = gpd__query_error_msg(GPD_EPROTO, "unexpected message");
    break;
  }
  pthread_mutex_unlock(&d->lock);
  gpd__query_arena_use(NULL);
  if (m == NULL) {
    gpd_query_free(q);
    return -ENOMEM;
  }
  q->reply = m;
  if (q_delay_ms && q->ar.npend)
    GPD_WARN("test delay: query %" PRIu64 " with %u frame nodes built", q->serial,
             (unsigned)q->ar.npend);
  *out = q;
  return 0;
}

int gpd_query_slow(const gpd_query_t *q) { return q->ar.npend > 0 || q->trace != NULL; }

void gpd_query_run(gpd_query_t *q) {
  gpd__query_arena_use(&q->ar);
  q_symbolize_pending(q); /* outside the lock: may read large files */
  if (q->trace && !q_cancelled(q) && q->reply)
    gpd__query_trace_run(q->trace, q->reply); /* reads the store; frees q->trace */
  else
    gpd__query_trace_free(q->trace);
  q->trace = NULL;
  gpd__query_arena_use(NULL);
  if (!q_cancelled(q) && q->reply)
    q_encode(q);
  q->reply = NULL; /* encoded: the arena can go now */
  gpd__query_arena_free(&q->ar);
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
  gpd__query_arena_free(&q->ar);
  gpd__query_trace_free(q->trace);
  gpd_query_frame_free(q->frame);
  free(q);
}

/* query.c - Ps / Tree / Top answered from the live in-memory profiles
 * (never from the database), filtered by peer credentials (access.h).
 *
 * Replies are built in a per-reply arena (below) with every string
 * duplicated, so they never borrow profile memory after the lock.  The daemon
 * lock is held while the merge borrows profile data.  FRAME nodes are
 * symbolized after the lock is dropped (symbolizing a large library the
 * first time takes seconds, and the monitor needs the lock): under the
 * lock a FRAME node gets its module path, offset and a "0x<offset>" label,
 * and goes on the pending list with its process owner's uid/gid; after the
 * unlock q_symbolize_pending fills its label (the physical function: the
 * outermost frame of its inline chain) and its frames (that function, then
 * the inlined ones with their call-site lines).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuprof/error.h"
#include "gpuprof/hash.h"
#include "gpuprof/log.h"
#include "gpuprof/metric.h"
#include "gpuprof.pb-c.h"

#include "daemon.h"

/* ------------------------------------------------------- reply arena
 *
 * A reply (every protobuf-c struct, array and string of it) is carved from
 * 64 KiB chunks owned by the reply: a 30 K-node TreeReply is ~500 K small
 * objects, and malloc + protobuf_c_message_free_unpacked of them cost about
 * as much as building the tree.  gpd_query_free_reply frees the chunks.
 * Main thread only (gpd_query_answer and gpd_query_free_reply). */

typedef struct q_chunk_s {
  struct q_chunk_s *next;
  size_t used, cap;
  _Alignas(16) unsigned char data[];
} q_chunk_t;

static q_chunk_t *q_arena;  /* chunks of the reply being built */
static gpd_map_t q_replies; /* reply pointer -> its chunk list */

static void q_arena_free(q_chunk_t *c) {
  while (c) {
    q_chunk_t *n = c->next;
    free(c);
    c = n;
  }
}

static void *q_alloc(size_t n) {
  n = (n + 15) & ~(size_t)15;
  if (q_arena == NULL || q_arena->cap - q_arena->used < n) {
    size_t cap = n > (64u << 10) ? n : (64u << 10);
    q_chunk_t *c = malloc(sizeof *c + cap);
    if (c == NULL)
      return NULL;
    c->cap = cap;
    c->used = 0;
    if (q_arena && n > (64u << 10)) { /* big: keep filling the current chunk */
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

static void *q_calloc(size_t n, size_t size) {
  if (size && n > SIZE_MAX / size)
    return NULL;
  void *p = q_alloc(n * size);
  if (p)
    memset(p, 0, n * size);
  return p;
}

static char *sd(const char *s) {
  if (s == NULL)
    s = "";
  size_t n = strlen(s) + 1;
  char *d = q_alloc(n);
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
    return n->label ? n->label : "?";
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

/* FRAME nodes of the reply being built, symbolized after the unlock. */
typedef struct q_pending_s {
  Gpuprof__Node *node; /* module and offset already set (arena copies) */
  uid_t uid;
  gid_t gid;
} q_pending_t;

static q_pending_t *q_pend;
static uint32_t q_npend, q_cappend;

static int query_grow(void **arr, uint32_t *cap, size_t elem, uint32_t first);

static void q_pending_add(Gpuprof__Node *o, uid_t uid, gid_t gid) {
  if (q_npend == q_cappend && query_grow((void **)&q_pend, &q_cappend, sizeof *q_pend, 256) < 0)
    return; /* left as module+offset */
  q_pend[q_npend++] = (q_pending_t){o, uid, gid};
}

/* Main thread, without d->lock: label and frames of the pending nodes. */
static void q_symbolize_pending(void) {
  for (uint32_t i = 0; i < q_npend; i++) {
    Gpuprof__Node *o = q_pend[i].node;
    const gpd_sframe_t *fr;
    unsigned nf;
    if (gpd_symbols_resolve(o->module, q_pend[i].uid, q_pend[i].gid, o->offset, &fr, &nf) < 0 || nf == 0)
      continue;
    o->label = sd(fr[0].function);
    o->frames = q_calloc(nf, sizeof *o->frames);
    for (unsigned k = 0; o->frames && k < nf; k++) {
      Gpuprof__Frame *f = q_alloc(sizeof *f);
      if (f == NULL)
        break;
      gpuprof__frame__init(f);
      f->function = sd(fr[k].function);
      f->file = sd(fr[k].file);
      f->line = fr[k].line;
      f->inlined = fr[k].inlined;
      o->frames[o->n_frames++] = f;
    }
  }
  q_npend = 0;
  if (q_cappend > 4096) { /* a huge tree's list is not kept */
    free(q_pend);
    q_pend = NULL;
    q_cappend = 0;
  }
}

static Gpuprof__Msg *msg_new(void) {
  Gpuprof__Msg *m = q_alloc(sizeof *m);
  if (m)
    gpuprof__msg__init(m);
  return m;
}

static Gpuprof__Msg *error_reply(int code, const char *text) {
  Gpuprof__Msg *m = msg_new();
  Gpuprof__Error *e = q_alloc(sizeof *e);
  if (m == NULL || e == NULL)
    return NULL;
  gpuprof__error__init(e);
  e->code = code;
  e->message = sd(text);
  m->body_case = GPUPROF__MSG__BODY_ERROR;
  m->error = e;
  return m;
}

static Gpuprof__Metric **metrics(const gpd_mval_t *v, uint32_t n, size_t *out_n) {
  *out_n = 0;
  if (n == 0)
    return NULL;
  Gpuprof__Metric **a = q_calloc(n, sizeof *a);
  if (a == NULL)
    return NULL;
  for (uint32_t i = 0; i < n; i++) {
    if (v[i].v == 0)
      continue;
    Gpuprof__Metric *m = q_alloc(sizeof *m);
    if (m == NULL)
      break;
    gpuprof__metric__init(m);
    m->id = v[i].id;
    m->value = v[i].v;
    a[(*out_n)++] = m;
  }
  return a;
}

static Gpuprof__Process *proc_msg(const gpd_proc_t *p) {
  Gpuprof__Process *m = q_alloc(sizeof *m);
  if (m == NULL)
    return NULL;
  gpuprof__process__init(m);
  m->profile_id = p->profile_id;
  m->pid = p->pid;
  m->uid = p->uid;
  m->gid = p->gid;
  m->exe = sd(p->exe);
  m->job_id = sd(p->job_id);
  m->step_id = sd(p->step_id);
  m->rank = p->rank;
  m->local_rank = p->local_rank;
  m->running = p->state == GPD_PROC_RUNNING;
  gpd_registry_counters(p, &m->rings, &m->records, &m->drops);
  m->error = sd(p->error);
  m->start_ns = p->start_ns;
  m->end_ns = p->end_ns;
  if (p->argc) {
    m->argv = q_calloc(p->argc, sizeof *m->argv);
    for (size_t i = 0; m->argv && i < p->argc; i++)
      m->argv[m->n_argv++] = sd(p->argv[i]);
  }
  m->backends = q_calloc(GPD_API_MAX, sizeof *m->backends);
  for (unsigned a = 1; m->backends && a < GPD_API_MAX; a++) {
    const gpd_backend_t *b = &p->prof.backends[a];
    if (!b->seen)
      continue;
    Gpuprof__Backend *be = q_alloc(sizeof *be);
    if (be == NULL)
      break;
    gpuprof__backend__init(be);
    be->api = sd(gpd_api_name(a));
    be->enabled = b->enabled;
    be->code = b->code;
    be->reason = sd(gpd_profile_string(&p->prof, b->reason));
    m->backends[m->n_backends++] = be;
  }
  return m;
}

/* Is p selected by (pid, job) and visible to peer?  pid 0 = any. */
static int selected(const gpd_proc_t *p, const gpd_peer_t *peer, int32_t pid, const char *job) {
  if (pid != 0 && p->pid != pid)
    return 0;
  if (job && job[0] && (p->job_id == NULL || strcmp(job, p->job_id) != 0))
    return 0;
  return gpd_access_may_see(peer, p->uid);
}

/* Explicit pid that the peer may not see -> Error reply (logged). */
static Gpuprof__Msg *check_pid(gpd_daemon_t *d, const gpd_peer_t *peer, int32_t pid) {
  char buf[160];
  if (pid == 0)
    return NULL;
  gpd_proc_t *p = gpd_registry_find_pid(d, pid);
  if (p == NULL) {
    snprintf(buf, sizeof buf, "no profiled process %d", (int)pid);
    return error_reply(-ESRCH, buf);
  }
  if (!gpd_access_may_see(peer, p->uid)) {
    snprintf(buf, sizeof buf, "permission denied: process %d belongs to uid %u", (int)pid,
             (unsigned)p->uid);
    GPD_WARN("peer pid %d uid %u: %s", (int)peer->pid, (unsigned)peer->uid, buf);
    return error_reply(GPD_EDENIED, buf);
  }
  return NULL;
}

/* Node message of node pidx of profile p: id, parent, kind, offset, label,
 * module, raw name; no metrics.  A FRAME node with a module is labelled
 * "0x<offset>" here and symbolized after the unlock (q_pending_add).
 * Under d->lock. */
static Gpuprof__Node *node_msg_p(const gpd_profile_t *p, uint32_t pidx) {
  const gpd_node_t *n = &p->nodes[pidx];
  Gpuprof__Node *o = q_alloc(sizeof *o);
  if (o == NULL)
    return NULL;
  gpuprof__node__init(o);
  o->id = n->id;
  o->parent = n->parent_id;
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
    label = n->label ? n->label : "?";
  }
  o->label = sd(label);
  o->module = sd(module);
  o->raw_name = sd(n->raw_name);
  if (n->kind == GPD_NODE_FRAME && module && module[0])
    q_pending_add(o, p->uid, p->gid);
  return o;
}

static Gpuprof__Node *node_msg(const gpd_merge_t *m, uint32_t i, int with_metrics) {
  const gpd_mnode_t *mn = &m->nodes[i];
  Gpuprof__Node *o = node_msg_p(mn->prof, mn->pidx);
  if (o == NULL)
    return NULL;
  /* the merged node's identity (equal to the profile node's by Merkle id) */
  o->id = mn->id;
  o->parent = mn->parent_id;
  o->kind = (Gpuprof__NodeKind)mn->kind;
  if (with_metrics) {
    o->excl = metrics(mn->excl, mn->nex, &o->n_excl);
    o->incl = metrics(mn->incl, mn->nin, &o->n_incl);
  }
  return o;
}

static int merge_visible(gpd_daemon_t *d, const gpd_peer_t *peer, int32_t pid, const char *job,
                         gpd_merge_t *m, Gpuprof__Process ***procs, size_t *nprocs) {
  memset(m, 0, sizeof *m);
  if (procs) {
    *procs = q_calloc(d->nprocs + 1, sizeof **procs);
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
  for (size_t i = 0; i < n; i++) {
    gpd_proc_t *p = order[i];
    if (!selected(p, peer, pid, job))
      continue;
    if (gpd_merge_add(m, &p->prof) < 0)
      break;
    if (procs && *procs)
      (*procs)[(*nprocs)++] = proc_msg(p);
  }
  free(order);
  return gpd_merge_finish(m);
}

static Gpuprof__Msg *answer_ps(gpd_daemon_t *d, const gpd_peer_t *peer, const Gpuprof__PsRequest *r) {
  Gpuprof__Msg *m = msg_new();
  Gpuprof__PsReply *ps = q_alloc(sizeof *ps);
  if (m == NULL || ps == NULL)
    return NULL;
  gpuprof__ps_reply__init(ps);
  ps->procs = q_calloc(d->nprocs + 1, sizeof *ps->procs);
  for (gpd_proc_t *p = d->procs; ps->procs && p; p = p->next) {
    if (!selected(p, peer, 0, r ? r->job_id : NULL))
      continue;
    Gpuprof__Process *pm = proc_msg(p);
    if (pm)
      ps->procs[ps->n_procs++] = pm;
  }
  m->body_case = GPUPROF__MSG__BODY_PS;
  m->ps = ps;
  return m;
}

static Gpuprof__Msg *answer_tree(gpd_daemon_t *d, const gpd_peer_t *peer,
                                 const Gpuprof__TreeRequest *r) {
  Gpuprof__Msg *e = check_pid(d, peer, r->pid);
  if (e)
    return e;
  gpd_merge_t mg;
  Gpuprof__Msg *m = msg_new();
  Gpuprof__TreeReply *t = q_alloc(sizeof *t);
  if (m == NULL || t == NULL)
    return NULL;
  gpuprof__tree_reply__init(t);
  merge_visible(d, peer, r->pid, r->job_id, &mg, &t->procs, &t->n_procs);
  t->nodes = q_calloc(mg.n + 1, sizeof *t->nodes);
  for (uint32_t i = 0; t->nodes && i < mg.n; i++) {
    if (r->max_depth && mg.nodes[i].depth > r->max_depth)
      continue;
    Gpuprof__Node *nm = node_msg(&mg, i, 1);
    if (nm)
      t->nodes[t->n_nodes++] = nm;
  }
  gpd_merge_free(&mg);
  m->body_case = GPUPROF__MSG__BODY_TREE;
  m->tree = t;
  return m;
}

/* ---------------------------------------------------------------- Top
 *
 * Top used to merge every visible tree (gpd_merge_add over all nodes of all
 * processes, then inclusive sums) on each request: 64 processes x 30 K
 * nodes took ~115 ms on a 2-core VM.  Top needs neither the tree nor
 * inclusive values: only the exclusive metrics of KERNEL and PLACEHOLDER
 * nodes, grouped by (kind, key), and per Merkle id ("merged instance") the
 * sort metric's sum, to pick the heaviest instance.  So the daemon keeps a
 * node-merged index (below, main thread only, under d->lock):
 *
 *   per profile: its KERNEL/PLACEHOLDER nodes as {node index, group,
 *     instance, Merkle id}, extended incrementally (nodes are append-only
 *     and a node's kind, key and id never change);
 *   groups (kind, key) and instances (Merkle id), shared by all profiles.
 *
 * A request walks the index of each selected profile and adds the nodes'
 * current values into the groups/instances it touches (stamped with the
 * request's generation, so nothing is cleared between requests): no hashing,
 * no tree, no allocation per node, live values.  Each indexed node's id is
 * checked against the profile on every use, so a profile whose memory was
 * reused is re-indexed rather than misread.
 */

typedef struct top_pnode_s {
  uint64_t id;    /* Merkle id of p->nodes[pidx], checked on use */
  uint32_t pidx;  /* node index in its profile */
  uint32_t inst;  /* index into top_ix.insts */
} top_pnode_t;

typedef struct top_prof_s {
  const gpd_profile_t *prof;
  uint64_t profile_id;
  uint32_t scanned; /* nodes [0, scanned) are indexed */
  top_pnode_t *v;
  uint32_t n, cap;
  uint64_t seen; /* last request that found it in the registry */
} top_prof_t;

typedef struct top_group_s {
  uint8_t kind;
  char *key;                 /* raw name or placeholder label (owned) */
  uint64_t gen;              /* request that last touched it */
  double m[GPD_M__COUNT];    /* summed exclusive metrics (valid if gen) */
  uint32_t best;             /* heaviest instance */
  double best_v;
} top_group_t;

typedef struct top_inst_s {
  uint64_t id;
  uint32_t group;
  uint64_t gen;
  double v;                  /* sort metric, summed (valid if gen) */
  const gpd_profile_t *rep;  /* oldest selected profile holding it */
  uint32_t rep_pidx;
} top_inst_t;

static struct {
  gpd_daemon_t *d;
  uint64_t gen;
  top_prof_t *profs;
  uint32_t nprofs, capprofs;
  gpd_map_t prof_by_ptr; /* (uintptr_t)profile -> index + 1 */
  top_group_t *groups;
  uint32_t ngroups, capgroups;
  gpd_map_t group_by_hash; /* hash(kind, key) (+2 per collision) -> group */
  top_inst_t *insts;
  uint32_t ninsts, capinsts;
  gpd_map_t inst_by_id; /* Merkle id -> instance */
} top_ix;

static void top_ix_reset(void) {
  for (uint32_t i = 0; i < top_ix.nprofs; i++)
    free(top_ix.profs[i].v);
  free(top_ix.profs);
  for (uint32_t i = 0; i < top_ix.ngroups; i++)
    free(top_ix.groups[i].key);
  free(top_ix.groups);
  free(top_ix.insts);
  gpd_map_free(&top_ix.prof_by_ptr);
  gpd_map_free(&top_ix.group_by_hash);
  gpd_map_free(&top_ix.inst_by_id);
  uint64_t gen = top_ix.gen;
  memset(&top_ix, 0, sizeof top_ix);
  top_ix.gen = gen;
}

/* Room for one more element of a growing array whose `n` reached `*cap`:
 * the capacity doubles (from `first`).  0, or -ENOMEM with the array as it
 * was.  The one growth rule of the Top index and its scratch lists. */
static int query_grow(void **arr, uint32_t *cap, size_t elem, uint32_t first) {
  uint32_t nc = *cap ? *cap * 2 : first;
  void *na = realloc(*arr, (size_t)nc * elem);
  if (na == NULL)
    return -ENOMEM;
  *arr = na;
  *cap = nc;
  return 0;
}

/* Group of (kind, key); GPD_NONE when out of memory. */
static uint32_t top_group_get(uint8_t kind, const char *key) {
  uint64_t h = (((uint64_t)kind << 60) ^ gpd_hash64(key, strlen(key), 0)) | 1;
  uint64_t v;
  while (gpd_map_get(&top_ix.group_by_hash, h, &v)) {
    top_group_t *g = &top_ix.groups[v];
    if (g->kind == kind && strcmp(g->key, key) == 0)
      return (uint32_t)v;
    h += 2;
  }
  if (top_ix.ngroups == top_ix.capgroups &&
      query_grow((void **)&top_ix.groups, &top_ix.capgroups, sizeof *top_ix.groups, 64) < 0)
    return GPD_NONE;
  top_group_t *g = &top_ix.groups[top_ix.ngroups];
  memset(g, 0, sizeof *g);
  g->kind = kind;
  g->key = strdup(key);
  if (g->key == NULL || gpd_map_put(&top_ix.group_by_hash, h, top_ix.ngroups) < 0) {
    free(g->key);
    return GPD_NONE;
  }
  return top_ix.ngroups++;
}

/* Instance of Merkle id (in group); GPD_NONE when out of memory. */
static uint32_t top_inst_get(uint64_t id, uint32_t group) {
  uint64_t v;
  if (gpd_map_get(&top_ix.inst_by_id, id, &v))
    return (uint32_t)v;
  if (top_ix.ninsts == top_ix.capinsts &&
      query_grow((void **)&top_ix.insts, &top_ix.capinsts, sizeof *top_ix.insts, 256) < 0)
    return GPD_NONE;
  top_inst_t *in = &top_ix.insts[top_ix.ninsts];
  memset(in, 0, sizeof *in);
  in->id = id;
  in->group = group;
  if (gpd_map_put(&top_ix.inst_by_id, id, top_ix.ninsts) < 0)
    return GPD_NONE;
  return top_ix.ninsts++;
}

/* Group key of a node as Top groups it (NULL: not a Top node). */
static const char *top_key(const gpd_node_t *n) {
  if (n->kind == GPD_NODE_KERNEL)
    return n->raw_name ? n->raw_name : n->label;
  if (n->kind == GPD_NODE_PLACEHOLDER)
    return n->label;
  return NULL;
}

/* The index of profile p, extended to its current nodes.  NULL: ENOMEM. */
static top_prof_t *top_prof_get(const gpd_profile_t *p) {
  uint64_t v;
  top_prof_t *tp;
  uint64_t key = (uint64_t)(uintptr_t)p;
  if (gpd_map_get(&top_ix.prof_by_ptr, key, &v)) {
    tp = &top_ix.profs[v - 1];
  } else {
    if (top_ix.nprofs == top_ix.capprofs &&
        query_grow((void **)&top_ix.profs, &top_ix.capprofs, sizeof *top_ix.profs, 16) < 0)
      return NULL;
    if (gpd_map_put(&top_ix.prof_by_ptr, key, top_ix.nprofs + 1) < 0)
      return NULL;
    tp = &top_ix.profs[top_ix.nprofs++];
    memset(tp, 0, sizeof *tp);
    tp->prof = p;
    tp->profile_id = p->profile_id;
  }
  if (tp->profile_id != p->profile_id || tp->scanned > p->nnodes ||
      (tp->n && p->nodes[tp->v[tp->n - 1].pidx].id != tp->v[tp->n - 1].id)) {
    tp->profile_id = p->profile_id; /* another profile at this address */
    tp->scanned = tp->n = 0;
  }
  for (uint32_t i = tp->scanned; i < p->nnodes; i++) {
    const gpd_node_t *n = &p->nodes[i];
    const char *k = top_key(n);
    if (k == NULL)
      continue;
    uint32_t g = top_group_get(n->kind, k);
    uint32_t in = g == GPD_NONE ? GPD_NONE : top_inst_get(n->id, g);
    if (in == GPD_NONE)
      return NULL;
    if (tp->n == tp->cap && query_grow((void **)&tp->v, &tp->cap, sizeof *tp->v, 64) < 0)
      return NULL;
    tp->v[tp->n++] = (top_pnode_t){.id = n->id, .pidx = i, .inst = in};
    tp->scanned = i + 1;
  }
  tp->scanned = p->nnodes;
  return tp;
}

/* Drop the indexes of profiles no longer in the registry; when that leaves
 * many orphaned instances, start over (bounded memory). */
static void top_ix_trim(gpd_daemon_t *d) {
  uint64_t stamp = top_ix.gen;
  uint64_t v;
  for (gpd_proc_t *p = d->procs; p; p = p->next)
    if (gpd_map_get(&top_ix.prof_by_ptr, (uint64_t)(uintptr_t)&p->prof, &v))
      top_ix.profs[v - 1].seen = stamp;
  uint64_t live = 0;
  int dropped = 0;
  for (uint32_t i = 0; i < top_ix.nprofs; i++) {
    if (top_ix.profs[i].seen == stamp) {
      live += top_ix.profs[i].n;
      continue;
    }
    dropped = 1;
    gpd_map_del(&top_ix.prof_by_ptr, (uint64_t)(uintptr_t)top_ix.profs[i].prof);
    free(top_ix.profs[i].v);
    top_ix.profs[i] = top_ix.profs[--top_ix.nprofs];
    if (i < top_ix.nprofs)
      gpd_map_put(&top_ix.prof_by_ptr, (uint64_t)(uintptr_t)top_ix.profs[i].prof, i + 1);
    i--;
  }
  if (dropped && top_ix.ninsts > 2 * live + 1024)
    top_ix_reset();
}

typedef struct top_sel_s {
  const gpd_profile_t **profs; /* selected, oldest first */
  size_t n;
} top_sel_t;

/* The oldest selected profile holding Merkle id (and its node index). */
static const gpd_profile_t *top_oldest(const top_sel_t *sel, uint64_t id, uint32_t *pidx) {
  for (size_t i = 0; i < sel->n; i++) {
    uint32_t j = gpd_profile_find(sel->profs[i], id);
    if (j != GPD_NONE) {
      *pidx = j;
      return sel->profs[i];
    }
  }
  return NULL;
}

static Gpuprof__Node *node_msg_p(const gpd_profile_t *p, uint32_t pidx);

static unsigned top_metric; /* sort key of the request being answered */

static int top_group_cmp(const void *a, const void *b) {
  double x = top_ix.groups[*(const uint32_t *)a].m[top_metric];
  double y = top_ix.groups[*(const uint32_t *)b].m[top_metric];
  return x < y ? 1 : x > y ? -1 : 0;
}

static Gpuprof__Msg *answer_top(gpd_daemon_t *d, const gpd_peer_t *peer,
                                const Gpuprof__TopRequest *r) {
  Gpuprof__Msg *e = check_pid(d, peer, r->pid);
  if (e)
    return e;
  unsigned metric = r->metric < GPD_M__COUNT ? r->metric : GPD_M_GPUOP;
  unsigned limit = r->limit ? r->limit : 10;
  if (top_ix.d != d) {
    top_ix_reset();
    top_ix.d = d;
  }
  int retried = 0;
  uint64_t gen = ++top_ix.gen;
  top_ix_trim(d);
  top_ix.d = d; /* trim may have reset the index */
  Gpuprof__Msg *m = NULL;
  top_sel_t sel = {0};
  uint32_t *groups = NULL, *insts = NULL;
  uint32_t ngroups = 0, ninsts = 0, capgroups = 0, capinsts = 0;
  /* oldest first: labels and paths come from the first registrant */
  size_t nall = 0;
  for (gpd_proc_t *p = d->procs; p; p = p->next)
    nall++;
  sel.profs = calloc(nall + 1, sizeof *sel.profs);
  if (sel.profs == NULL)
    goto out;
  size_t k = nall;
  for (gpd_proc_t *p = d->procs; p; p = p->next) {
    k--;
    if (selected(p, peer, r->pid, r->job_id))
      sel.profs[k] = &p->prof;
  }
  for (size_t i = 0; i < nall; i++)
    if (sel.profs[i])
      sel.profs[sel.n++] = sel.profs[i];
again:
  for (size_t i = 0; i < sel.n; i++) {
    const gpd_profile_t *p = sel.profs[i];
    top_prof_t *tp = top_prof_get(p);
    if (tp == NULL)
      goto out;
    for (uint32_t j = 0; j < tp->n; j++) {
      const top_pnode_t *pn = &tp->v[j];
      const gpd_node_t *n = &p->nodes[pn->pidx];
      if (n->id != pn->id) { /* cannot happen: nodes are append-only */
        GPD_WARN("top index of profile %" PRIu64 " out of date; rebuilt", p->profile_id);
        top_ix_reset();
        top_ix.d = d;
        if (retried++)
          goto out;
        gen = ++top_ix.gen;
        ngroups = ninsts = 0;
        goto again;
      }
      if (n->nm == 0)
        continue;
      top_inst_t *in = &top_ix.insts[pn->inst];
      top_group_t *g = &top_ix.groups[in->group];
      if (g->gen != gen) {
        if (ngroups == capgroups && query_grow((void **)&groups, &capgroups, sizeof *groups, 64) < 0)
          goto out;
        groups[ngroups++] = in->group;
        g->gen = gen;
        memset(g->m, 0, sizeof g->m);
        g->best = GPD_NONE;
        g->best_v = -1;
      }
      if (in->gen != gen) {
        if (ninsts == capinsts && query_grow((void **)&insts, &capinsts, sizeof *insts, 256) < 0)
          goto out;
        insts[ninsts++] = pn->inst;
        in->gen = gen;
        in->v = 0;
        in->rep = p;
        in->rep_pidx = pn->pidx;
      }
      for (uint32_t q = 0; q < n->nm; q++) {
        if (n->m[q].id >= GPD_M__COUNT)
          continue;
        g->m[n->m[q].id] += n->m[q].v;
        if (n->m[q].id == metric)
          in->v += n->m[q].v;
      }
    }
  }
  /* heaviest instance per group; ties: the first merged (oldest profile) */
  for (size_t i = 0; i < ninsts; i++) {
    top_inst_t *in = &top_ix.insts[insts[i]];
    top_group_t *g = &top_ix.groups[in->group];
    if (in->v > g->best_v) {
      g->best_v = in->v;
      g->best = insts[i];
    }
  }
  top_metric = metric;
  if (ngroups)
    qsort(groups, ngroups, sizeof *groups, top_group_cmp);
  m = msg_new();
  Gpuprof__TopReply *t = q_alloc(sizeof *t);
  if (m == NULL || t == NULL) {
    m = NULL;
    goto out;
  }
  gpuprof__top_reply__init(t);
  size_t n = ngroups < limit ? ngroups : limit;
  t->entries = q_calloc(n + 1, sizeof *t->entries);
  for (size_t i = 0; t->entries && i < n; i++) {
    top_group_t *g = &top_ix.groups[groups[i]];
    const top_inst_t *bi = &top_ix.insts[g->best];
    const gpd_profile_t *bp = bi->rep;
    const gpd_node_t *bn = &bp->nodes[bi->rep_pidx];
    Gpuprof__TopEntry *o = q_alloc(sizeof *o);
    if (o == NULL)
      break;
    gpuprof__top_entry__init(o);
    o->kind = (Gpuprof__NodeKind)g->kind;
    o->label = sd(bn->label ? bn->label : g->key);
    o->metrics = q_calloc(GPD_M__COUNT, sizeof *o->metrics);
    for (unsigned q = 0; o->metrics && q < GPD_M__COUNT; q++) {
      if (g->m[q] == 0)
        continue;
      Gpuprof__Metric *mm = q_alloc(sizeof *mm);
      if (mm == NULL)
        break;
      gpuprof__metric__init(mm);
      mm->id = q;
      mm->value = g->m[q];
      o->metrics[o->n_metrics++] = mm;
    }
    /* heaviest CPU path: the CPU frames above the heaviest instance, each
     * taken from the oldest selected profile that has it (as the merge) */
    uint32_t depth = 0;
    for (uint32_t j = bn->parent; j != GPD_NONE; j = bp->nodes[j].parent)
      depth++;
    o->path = q_calloc(depth + 1, sizeof *o->path);
    uint32_t *chain = calloc(depth + 1, sizeof *chain);
    uint32_t c = 0;
    for (uint32_t j = bn->parent; chain && j != GPD_NONE; j = bp->nodes[j].parent)
      chain[c++] = j;
    while (o->path && chain && c-- > 0) {
      const gpd_node_t *cn = &bp->nodes[chain[c]];
      if (cn->kind != GPD_NODE_FRAME && cn->kind != GPD_NODE_UNKNOWN)
        continue;
      uint32_t pidx = chain[c];
      const gpd_profile_t *op = top_oldest(&sel, cn->id, &pidx);
      Gpuprof__Node *nm = node_msg_p(op ? op : bp, op ? pidx : chain[c]);
      if (nm)
        o->path[o->n_path++] = nm;
    }
    free(chain);
    t->entries[t->n_entries++] = o;
  }
  m->body_case = GPUPROF__MSG__BODY_TOP;
  m->top = t;
out:
  free(groups);
  free(insts);
  free(sel.profs);
  return m;
}

int gpd_query_answer(gpd_daemon_t *d, const gpd_peer_t *peer, const Gpuprof__Msg *req,
                     Gpuprof__Msg **reply) {
  Gpuprof__Msg *m = NULL;
  q_arena = NULL;
  q_npend = 0;
  pthread_mutex_lock(&d->lock);
  switch (req->body_case) {
  case GPUPROF__MSG__BODY_PS_REQ:
    m = answer_ps(d, peer, req->ps_req);
    break;
  case GPUPROF__MSG__BODY_TREE_REQ:
    m = answer_tree(d, peer, req->tree_req);
    break;
  case GPUPROF__MSG__BODY_TOP_REQ:
    m = answer_top(d, peer, req->top_req);
    break;
  default:
    m = error_reply(GPD_EPROTO, "unexpected message");
    break;
  }
  pthread_mutex_unlock(&d->lock);
  q_symbolize_pending(); /* outside the lock: may read large files */
  q_chunk_t *arena = q_arena;
  q_arena = NULL;
  if (m == NULL || gpd_map_put(&q_replies, (uint64_t)(uintptr_t)m, (uint64_t)(uintptr_t)arena) < 0) {
    q_arena_free(arena);
    return -ENOMEM;
  }
  *reply = m;
  return 0;
}

void gpd_query_free_reply(Gpuprof__Msg *reply) {
  uint64_t v;
  if (reply == NULL)
    return;
  if (gpd_map_get(&q_replies, (uint64_t)(uintptr_t)reply, &v)) {
    gpd_map_del(&q_replies, (uint64_t)(uintptr_t)reply);
    q_arena_free((q_chunk_t *)(uintptr_t)v);
    if (q_replies.n == 0)
      gpd_map_free(&q_replies);
  }
}

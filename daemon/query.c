/* query.c - Ps / Tree / Top answered from the live in-memory profiles
 * (never from the database), filtered by peer credentials (access.h).
 *
 * Replies are built from malloc'd protobuf-c structs with every string
 * duplicated, so gpd_query_free_reply can use free_unpacked.  The daemon
 * lock is held while the merge borrows profile data; symbolization of FRAME
 * labels happens here (main thread), cached by symbols.c.
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

static char *sd(const char *s) { return strdup(s ? s : ""); }

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
    if (gpd_symbols_resolve(m->path, n->offset, &fr, &nf) == 0 && nf > 0)
      return fr[nf - 1].function;
  }
  return NULL; /* caller prints the offset */
}

static Gpuprof__Msg *msg_new(void) {
  Gpuprof__Msg *m = malloc(sizeof *m);
  if (m)
    gpuprof__msg__init(m);
  return m;
}

static Gpuprof__Msg *error_reply(int code, const char *text) {
  Gpuprof__Msg *m = msg_new();
  Gpuprof__Error *e = malloc(sizeof *e);
  if (m == NULL || e == NULL) {
    free(m);
    free(e);
    return NULL;
  }
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
  Gpuprof__Metric **a = calloc(n, sizeof *a);
  if (a == NULL)
    return NULL;
  for (uint32_t i = 0; i < n; i++) {
    if (v[i].v == 0)
      continue;
    Gpuprof__Metric *m = malloc(sizeof *m);
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
  Gpuprof__Process *m = malloc(sizeof *m);
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
    m->argv = calloc(p->argc, sizeof *m->argv);
    for (size_t i = 0; m->argv && i < p->argc; i++)
      m->argv[m->n_argv++] = sd(p->argv[i]);
  }
  m->backends = calloc(GPD_API_MAX, sizeof *m->backends);
  for (unsigned a = 1; m->backends && a < GPD_API_MAX; a++) {
    const gpd_backend_t *b = &p->prof.backends[a];
    if (!b->seen)
      continue;
    Gpuprof__Backend *be = malloc(sizeof *be);
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

static Gpuprof__Node *node_msg(const gpd_merge_t *m, uint32_t i, int with_metrics) {
  const gpd_mnode_t *mn = &m->nodes[i];
  const gpd_profile_t *p = mn->prof;
  const gpd_node_t *n = &p->nodes[mn->pidx];
  Gpuprof__Node *o = malloc(sizeof *o);
  if (o == NULL)
    return NULL;
  gpuprof__node__init(o);
  o->id = mn->id;
  o->parent = mn->parent_id;
  o->kind = (Gpuprof__NodeKind)mn->kind;
  o->offset = n->offset;
  const char *module = NULL;
  const char *label = gpd_query_label(p, mn->pidx, &module);
  char buf[64];
  if (label == NULL) {
    snprintf(buf, sizeof buf, "0x%" PRIx64, n->offset);
    label = buf;
  }
  o->label = sd(label);
  o->module = sd(module);
  o->raw_name = sd(n->raw_name);
  if (n->kind == GPD_NODE_FRAME && module) {
    const gpd_sframe_t *fr;
    unsigned nf;
    if (gpd_symbols_resolve(module, n->offset, &fr, &nf) == 0 && nf > 0) {
      o->frames = calloc(nf, sizeof *o->frames);
      for (unsigned k = 0; o->frames && k < nf; k++) {
        Gpuprof__Frame *f = malloc(sizeof *f);
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
  }
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
    *procs = calloc(d->nprocs + 1, sizeof **procs);
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
  Gpuprof__PsReply *ps = malloc(sizeof *ps);
  if (m == NULL || ps == NULL) {
    free(m);
    free(ps);
    return NULL;
  }
  gpuprof__ps_reply__init(ps);
  ps->procs = calloc(d->nprocs + 1, sizeof *ps->procs);
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
  Gpuprof__TreeReply *t = malloc(sizeof *t);
  if (m == NULL || t == NULL) {
    free(m);
    free(t);
    return NULL;
  }
  gpuprof__tree_reply__init(t);
  merge_visible(d, peer, r->pid, r->job_id, &mg, &t->procs, &t->n_procs);
  t->nodes = calloc(mg.n + 1, sizeof *t->nodes);
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

typedef struct top_ent_s {
  uint8_t kind;
  const char *key;   /* raw name or placeholder label (borrowed) */
  gpd_mval_t *m;
  uint32_t nm, capm;
  uint32_t best;     /* merged node with the largest share */
  double best_v;
  double sort_v;
} top_ent_t;

static int top_cmp(const void *a, const void *b) {
  const top_ent_t *x = a, *y = b;
  return x->sort_v < y->sort_v ? 1 : x->sort_v > y->sort_v ? -1 : 0;
}

static Gpuprof__Msg *answer_top(gpd_daemon_t *d, const gpd_peer_t *peer,
                                const Gpuprof__TopRequest *r) {
  Gpuprof__Msg *e = check_pid(d, peer, r->pid);
  if (e)
    return e;
  unsigned metric = r->metric < GPD_M__COUNT ? r->metric : GPD_M_GPUOP;
  unsigned limit = r->limit ? r->limit : 10;
  gpd_merge_t mg;
  merge_visible(d, peer, r->pid, r->job_id, &mg, NULL, NULL);
  top_ent_t *ents = NULL;
  size_t nents = 0, capents = 0;
  gpd_map_t idx = {0};
  for (uint32_t i = 0; i < mg.n; i++) {
    gpd_mnode_t *mn = &mg.nodes[i];
    const gpd_node_t *n = &mn->prof->nodes[mn->pidx];
    if (mn->nex == 0)
      continue;
    const char *key;
    if (mn->kind == GPD_NODE_KERNEL)
      key = n->raw_name ? n->raw_name : n->label;
    else if (mn->kind == GPD_NODE_PLACEHOLDER)
      key = n->label;
    else
      continue;
    if (key == NULL)
      continue;
    uint64_t h = ((uint64_t)mn->kind << 60) ^ gpd_hash64(key, strlen(key), 0);
    if (h == 0)
      h = 1;
    uint64_t v;
    top_ent_t *t;
    if (gpd_map_get(&idx, h, &v) && strcmp(ents[v].key, key) == 0) {
      t = &ents[v];
    } else {
      if (nents == capents) {
        size_t nc = capents ? capents * 2 : 32;
        top_ent_t *ne = realloc(ents, nc * sizeof *ne);
        if (ne == NULL)
          break;
        ents = ne;
        capents = nc;
      }
      t = &ents[nents];
      memset(t, 0, sizeof *t);
      t->kind = mn->kind;
      t->key = key;
      t->best = i;
      t->best_v = -1;
      gpd_map_put(&idx, h, nents);
      nents++;
    }
    for (uint32_t k = 0; k < mn->nex; k++)
      gpd_mval_add(&t->m, &t->nm, &t->capm, mn->excl[k].id, mn->excl[k].v);
    double val = gpd_mval_get(mn->excl, mn->nex, metric);
    if (val > t->best_v) {
      t->best_v = val;
      t->best = i;
    }
  }
  for (size_t i = 0; i < nents; i++)
    ents[i].sort_v = gpd_mval_get(ents[i].m, ents[i].nm, metric);
  if (nents)
    qsort(ents, nents, sizeof *ents, top_cmp);
  Gpuprof__Msg *m = msg_new();
  Gpuprof__TopReply *t = malloc(sizeof *t);
  if (m && t) {
    gpuprof__top_reply__init(t);
    size_t n = nents < limit ? nents : limit;
    t->entries = calloc(n + 1, sizeof *t->entries);
    for (size_t i = 0; t->entries && i < n; i++) {
      top_ent_t *te = &ents[i];
      Gpuprof__TopEntry *o = malloc(sizeof *o);
      if (o == NULL)
        break;
      gpuprof__top_entry__init(o);
      o->kind = (Gpuprof__NodeKind)te->kind;
      const gpd_mnode_t *bn = &mg.nodes[te->best];
      const gpd_node_t *pn = &bn->prof->nodes[bn->pidx];
      o->label = sd(pn->label ? pn->label : te->key);
      o->metrics = metrics(te->m, te->nm, &o->n_metrics);
      /* heaviest CPU path: the CPU frames above the heaviest instance */
      uint32_t depth = 0;
      for (uint32_t j = bn->parent; j != GPD_NONE; j = mg.nodes[j].parent)
        depth++;
      o->path = calloc(depth + 1, sizeof *o->path);
      uint32_t *chain = calloc(depth + 1, sizeof *chain);
      uint32_t c = 0;
      for (uint32_t j = bn->parent; chain && j != GPD_NONE; j = mg.nodes[j].parent)
        chain[c++] = j;
      while (o->path && chain && c-- > 0) {
        uint8_t k = mg.nodes[chain[c]].kind;
        if (k != GPD_NODE_FRAME && k != GPD_NODE_UNKNOWN)
          continue;
        Gpuprof__Node *nm = node_msg(&mg, chain[c], 0);
        if (nm)
          o->path[o->n_path++] = nm;
      }
      free(chain);
      t->entries[t->n_entries++] = o;
    }
    m->body_case = GPUPROF__MSG__BODY_TOP;
    m->top = t;
  } else {
    free(m);
    free(t);
    m = NULL;
  }
  for (size_t i = 0; i < nents; i++)
    free(ents[i].m);
  free(ents);
  gpd_map_free(&idx);
  gpd_merge_free(&mg);
  return m;
}

int gpd_query_answer(gpd_daemon_t *d, const gpd_peer_t *peer, const Gpuprof__Msg *req,
                     Gpuprof__Msg **reply) {
  Gpuprof__Msg *m = NULL;
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
  if (m == NULL)
    return -ENOMEM;
  *reply = m;
  return 0;
}

void gpd_query_free_reply(Gpuprof__Msg *reply) {
  if (reply)
    gpuprof__msg__free_unpacked(reply, NULL);
}

/* profile-attrib.c - attribution of GPU activity to the calling context
 * tree.
 *
 * HPCToolkit manual, "GPU-accelerated applications" (GPU CCT apportioning):
 * an ACTIVITY is matched to the INVOKE with the same correlation id
 * (either may arrive first, possibly on different rings).  Its metrics go
 * below the INVOKE's CPU context: call site -> <gpu op> placeholder ->
 * kernel (kernels only).  Exclusive values sit on the kernel node for
 * named kernels, else on the placeholder; GMEM/GSYNC (host-measured) are
 * attributed the same way with gpd_metric_accumulate.  What cannot be
 * placed at the final flush goes to root -> <unknown context>.  Caller
 * holds the daemon lock. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <stdio.h>

#include "gpuprof/metric.h"

#include "graph.h"
#include "profile-internal.h"
#include "trace.h"

/* Attribution cache key (call site, kernel name id, op) of target node v:
 * a KERNEL below its placeholder below the call site (module = the name's
 * string id), or a placeholder below the call site. */
static uint64_t target_key(uint32_t at, uint32_t name_id, unsigned op) {
  return name_id < (1u << 28) ? ((uint64_t)at << 32 | (uint64_t)name_id << 4 | op) : 0;
}
static uint64_t key_target(const gpd_profile_t *p, uint32_t v) {
  const gpd_node_t *t = &p->nodes[v];
  if (t->kind == GPD_NODE_KERNEL && t->parent != GPD_NONE) {
    const gpd_node_t *ph = &p->nodes[t->parent];
    return ph->parent == GPD_NONE ? 0 : target_key(ph->parent, t->module, ph->op);
  }
  if (t->kind == GPD_NODE_PLACEHOLDER && t->parent != GPD_NONE)
    return target_key(t->parent, 0, t->op);
  return 0;
}

/* Metric ids gpd_metric_accumulate can make non-zero, per op: derived
 * once from the rule itself (every subkind, every input field non-zero),
 * so attribute_at scans ~11 ids instead of all GPD_M__COUNT and the two
 * cannot disagree. */
static uint64_t op_ids[GPD_OP_MAX];
static pthread_once_t op_ids_once = PTHREAD_ONCE_INIT;

static void op_ids_init(void) {
  for (unsigned op = 0; op < GPD_OP_MAX; op++) {
    for (unsigned sk = 0; sk < 256; sk++) {
      double v[GPD_M__COUNT];
      gpd_rec_activity_t a;
      memset(v, 0, sizeof v);
      memset(&a, 0x01, sizeof a);
      a.op = (uint8_t)op;
      a.subkind = (uint8_t)sk;
      a.start = 1;
      a.end = 2;
      gpd_metric_accumulate(v, &a);
      for (unsigned m = 0; m < GPD_M__COUNT && m < 64; m++) /* daemon metric ids < 64 */
        if (v[m] != 0)
          op_ids[op] |= 1ull << m;
    }
  }
}

void gpd__profile_attrib_init(void) { pthread_once(&op_ids_once, op_ids_init); }

static uint32_t target_of(gpd_profile_t *p, uint32_t at, unsigned op, uint32_t name_id, int force) {
  const char *ph = gpd_op_placeholder(op);
  uint32_t target = gpd_profile_child(p, at, GPD_NODE_PLACEHOLDER, ph, ph, NULL);
  if (target == GPD_NONE)
    return at;
  p->nodes[target].op = (uint8_t)op;
  if (op == GPD_OP_KERNEL && name_id != 0) {
    const char *name = gpd_profile_string(p, name_id);
    char buf[64];
    if (name == NULL && force) {
      snprintf(buf, sizeof buf, "<unknown kernel #%u>", name_id);
      name = buf;
    }
    if (name != NULL) {
      size_t nl = strlen(name);
      char kb[256];
      char *key = nl + 8 <= sizeof kb ? kb : malloc(nl + 8);
      if (key) {
        memcpy(key, "kernel:", 7);
        memcpy(key + 7, name, nl + 1);
        uint32_t k = gpd_profile_child(p, target, GPD_NODE_KERNEL, key, name, name);
        if (k != GPD_NONE) {
          target = k;
          if (p->nodes[k].module == 0)
            p->nodes[k].module = name_id; /* the attribution cache's key */
        }
        if (key != kb)
          free(key);
      }
    }
  }
  return target;
}

/* attribute_at's metric values, indexed by metric id: all zero between
 * calls (it zeroes the ~3 ids an activity writes instead of the ~11 its
 * op may write before each call); one per monitor thread. */
static _Thread_local double attr_v[GPD_M__COUNT];

/* 1 attributed; 0 not yet (!force, the kernel's name string unknown). */
static int attribute_at(gpd_profile_t *p, uint32_t at, const gpd_rec_activity_t *a, uint8_t inv_op,
                        int force) {
  unsigned op = a->op != GPD_OP_NONE ? a->op : inv_op;
  if (op == GPD_OP_NONE || op >= GPD_OP_MAX)
    op = GPD_OP_KERNEL;
  /* hot path: (call site, kernel name, op) -> node, cached; the cache
   * holds node indexes only, its keys are derived from the nodes.  An
   * entry exists only once the name is known (complete, below). */
  uint32_t name_id = op == GPD_OP_KERNEL ? a->name : 0;
  uint64_t key = target_key(at, name_id, op);
  uint32_t target = key ? gpd__profile_index_get(&p->targets, p, key, key_target) : GPD_NONE;
  if (target == GPD_NONE) {
    if (!force && a->op == GPD_OP_KERNEL && a->name != 0 && gpd_profile_string(p, a->name) == NULL)
      return 0;
    target = target_of(p, at, op, name_id, force);
    int complete = name_id == 0 || (p->nodes[target].kind == GPD_NODE_KERNEL &&
                                     gpd_profile_string(p, name_id) != NULL);
    if (key && complete && key_target(p, target) == key)
      gpd__profile_index_put(&p->targets, p, key, target, key_target);
  }
  /* only the ids the op's rule writes are zeroed and read: op_ids[op] is
   * that rule's whole write set (op_ids_init runs it on an activity with
   * every field non-zero), not all GPD_M__COUNT doubles per activity. */
  const uint64_t ids = op_ids[op]; /* filled by gpd_profile_init */
  double *v = attr_v; /* all zero between calls */
  if (a->op == op) {
    gpd_metric_accumulate(v, a);
  } else {
    gpd_rec_activity_t eff = *a;
    eff.op = (uint8_t)op; /* an activity without op takes its invocation's */
    gpd_metric_accumulate(v, &eff);
  }
  int err = 0; /* out of memory: these values are lost, as before */
  uint64_t nz = gpd__profile_metrics_add_mask(p, target, v, ids, &err);
  for (uint64_t b = nz; b; b &= b - 1) /* back to all zero: the ~3 ids written */
    v[__builtin_ctzll(b)] = 0;
  p->activities++;
  if (p->trace)
    gpd_trace_activity(p, target, a, op);
  return 1;
}

static uint32_t unknown_node(gpd_profile_t *p) {
  return gpd_profile_child(p, 0, GPD_NODE_UNKNOWN, GPD_UNKNOWN_LABEL, GPD_UNKNOWN_LABEL, NULL);
}

int gpd__profile_attrib_at(gpd_profile_t *p, const gpd_rec_activity_t *a, uint64_t v, int force) {
  uint32_t at = gpd__profile_nodes_local(p, (uint32_t)v);
  if (at == GPD_NONE) {
    if (!force)
      return GPD__ACT_BLOCKED;
    at = unknown_node(p);
    if (at == GPD_NONE)
      at = 0;
    p->unknown++;
  }
  if (a->graph_node && (at = gpd_graph_place(p, at, a->graph_node, force)) == GPD_NONE)
    return GPD__ACT_BLOCKED; /* run by a CUDA graph: below its node's creation path (graph.c) */
  return attribute_at(p, at, a, (uint8_t)(v >> 32), force) ? GPD__ACT_DONE : GPD__ACT_BLOCKED;
}

int gpd__profile_attrib_try(gpd_profile_t *p, const gpd_rec_activity_t *a, int force) {
  uint64_t *ref = gpd_map_ref(&p->corr, a->corr);
  if (ref == NULL) {
    if (!force)
      return GPD__ACT_WAIT;
    uint32_t u = unknown_node(p);
    attribute_at(p, u == GPD_NONE ? 0 : u, a, GPD_OP_NONE, 1);
    p->unknown++;
    return GPD__ACT_DONE;
  }
  uint64_t v = *ref;
  int r = gpd__profile_attrib_at(p, a, v, force); /* leaves the correlation map alone */
  if (r == GPD__ACT_DONE && !((v >> 40) & 1)) {
    if (v & GPD_CORR_STORED)
      gpd__profile_delta_gone(p, GPD_PEND_SEQ(1, a->corr) | GPD_PEND_STORED);
    gpd_map_del_ref(&p->corr, ref);
    gpd__profile_corr_unlast(p, a->corr);
  }
  return r;
}

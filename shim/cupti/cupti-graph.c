/* cupti-graph.c - CUDA graph nodes: the calling context that created each.
 *
 * A graph launch (cudaGraphLaunch) is one API call that runs many kernels,
 * copies and memsets; their activity records carry the graph node that ran
 * them (graphNodeId, cupti-translate.c).  This file tells the daemon which
 * calling context created each node, so that it can place the work of a
 * replay below the replay's call site and, there, below the path that
 * created the node (daemon/graph.c, docs/CUDA.md "CUDA graphs"):
 *
 *   - CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED fires on the thread that makes
 *     the node: inside cudaGraphAdd*Node (explicit graph API), or inside
 *     the launch / copy / memset call that a stream capture turns into a
 *     node (cudaStreamBeginCapture ... cudaStreamEndCapture, as
 *     torch.cuda.graph does).  The context is captured there
 *     (gpd_shim_capture: the vendor frames dropped, the same path as the
 *     call's INVOKE) and pushed as a GRAPHNODE record {node id, context}.
 *   - CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED fires when a node is copied:
 *     cudaGraphInstantiate copies every node into the executable graph, and
 *     the copies' ids are the ones the activity records carry;
 *     cudaGraphClone and child graphs copy too.  Pushed as a clone record
 *     {copy id, original id} (no unwinding); the daemon gives the copy its
 *     original's context.  Nodes that CUPTI reports CREATED while it
 *     instantiates are the same copies: the daemon keeps the clone's
 *     context for an id once it has one (docs/FORMATS.md, GRAPHNODE); a
 *     node reported created with an original node is taken as its copy.
 *   - cudaGraphExecUpdate changes the parameters of an executable graph's
 *     nodes, not their ids: their work stays attributed to the contexts of
 *     the graph that was instantiated.
 *
 * Under the detached and duty modes CUPTI is finalized between windows
 * (cupti-control.c), and a finalized CUPTI calls no resource callback: a
 * graph built between windows would keep no context.  So libgpuprof.so
 * also interposes the runtime calls that start building a graph
 * (cudaStreamBeginCapture[ToGraph][_ptsz], cudaGraphCreate: every stream
 * capture and every explicitly built graph starts with one): the first
 * such call of the process calls gpd_cupti_control_graphs, which keeps
 * CUPTI loaded from then on (subscribing it again when it was finalized,
 * before the call goes on), so the callbacks above see every node made
 * after it, inside windows or not; the tracing windows themselves are
 * unchanged.  Graphs built through the driver API alone (cuGraphCreate,
 * cuStreamBeginCapture) are not interposed.  The wrappers resolve their
 * next definition like the launch counters (cupti-count.c, "Call sites").
 *
 * Only kernel, memcpy and memset nodes are reported (the node types whose
 * work has activity records).  No table in the process: one record per
 * node made, on the making thread's ring (a full ring drops it, counted);
 * the daemon's table is bounded (daemon/graph.c).  Cost: nothing at a
 * launch outside graph construction (the callbacks fire only when nodes
 * are made or copied); per captured node one capture and one push, per
 * copied node two id queries and one push.
 */
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "cupti-internal.h"

/* Counters (GPUPROF_CUPTI_SELFTEST line, tests). */
static atomic_ulong c_stat[GPD_CUPTI_GRAPH_NSTAT];

static void stat_add(unsigned i) { atomic_fetch_add_explicit(&c_stat[i], 1, memory_order_relaxed); }

void gpd_cupti_graph_stats(uint64_t out[GPD_CUPTI_GRAPH_NSTAT]) {
  for (unsigned i = 0; i < GPD_CUPTI_GRAPH_NSTAT; i++)
    out[i] = atomic_load_explicit(&c_stat[i], memory_order_relaxed);
}

void gpd_cupti_graph_print(FILE *f) {
  uint64_t s[GPD_CUPTI_GRAPH_NSTAT];
  gpd_cupti_graph_stats(s);
  fprintf(f, "gpuprof-cupti: graph nodes created=%llu cloned=%llu other-type=%llu no-id=%llu no-context=%llu "
          "pushed=%llu pushfail=%llu\n", (unsigned long long)s[0], (unsigned long long)s[1],
          (unsigned long long)s[2], (unsigned long long)s[3], (unsigned long long)s[4], (unsigned long long)s[5],
          (unsigned long long)s[6]);
}

/* Node types whose work CUPTI reports as KERNEL / MEMCPY / MEMSET. */
static int type_traced(CUgraphNodeType t) {
  return t == CU_GRAPH_NODE_TYPE_KERNEL || t == CU_GRAPH_NODE_TYPE_MEMCPY || t == CU_GRAPH_NODE_TYPE_MEMSET;
}

static uint64_t node_id(const gpd_cupti_graph_ops_t *ops, CUgraphNode n) {
  uint64_t id = 0;
  if (!n || ops->node_id(n, &id) != 0 || id == 0 || id >= GPD_GRAPHNODE_ID_LIMIT)
    return 0;
  return id;
}

int gpd_cupti_graph_handle(const gpd_cupti_graph_ops_t *ops, unsigned cbid, const CUpti_GraphData *g) {
  if (cbid != CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED && cbid != CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED)
    return 0;
  if (!ops || !g)
    return 0;
  if (!type_traced(g->nodeType)) {
    stat_add(GPD_CUPTI_GRAPH_OTHER);
    return 0;
  }
  gpd_rec_graphnode_t r;
  memset(&r, 0, sizeof r);
  r.h.type = GPD_REC_GRAPHNODE;
  r.h.version = GPD_REC_VERSION;
  r.h.nslots = GPD_REC_NSLOTS(r);
  if ((r.id = node_id(ops, g->node)) == 0) {
    stat_add(GPD_CUPTI_GRAPH_NOID);
    return 0;
  }
  /* a node reported created with an original is a copy too */
  int clone = cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED || (g->originalNode && g->originalNode != g->node);
  if (clone) {
    stat_add(GPD_CUPTI_GRAPH_CLONED);
    r.h.flags = GPD_GRAPHNODE_F_CLONE;
    if ((r.orig = node_id(ops, g->originalNode)) == 0 || r.orig == r.id) {
      stat_add(GPD_CUPTI_GRAPH_NOID);
      return 0;
    }
  } else {
    stat_add(GPD_CUPTI_GRAPH_CREATED);
    if ((r.node = ops->capture()) == 0) {
      stat_add(GPD_CUPTI_GRAPH_NOCTX);
      return 0;
    }
  }
  if (ops->push(&r) < 0) {
    stat_add(GPD_CUPTI_GRAPH_PUSHFAIL);
    return 0;
  }
  stat_add(GPD_CUPTI_GRAPH_PUSHED);
  return 1;
}

/* --- the back end's glue (libcupti, the shim core) ------------------- */
#ifndef GPD_CUPTI_GRAPH_PURE
#include "shim.h"

static CUptiResult(CUPTIAPI *g_get_id)(CUgraphNode, uint64_t *);

static int real_node_id(CUgraphNode n, uint64_t *id) {
  return g_get_id && g_get_id(n, id) == CUPTI_SUCCESS ? 0 : -1;
}

static int real_push(const gpd_rec_graphnode_t *r) { return gpd_shim_push_graphnode(r->id, r->node, r->orig); }

static const gpd_cupti_graph_ops_t g_ops = {real_node_id, gpd_shim_capture, real_push};

int gpd_cupti_graph_setup(void *libcupti) {
  *(void **)&g_get_id = libcupti ? dlsym(libcupti, "cuptiGetGraphNodeId") : NULL;
  return g_get_id != NULL;
}

const unsigned gpd_cupti_graph_cbids[GPD_CUPTI_GRAPH_NCBID] = {CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED,
                                                             CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED};

int gpd_cupti_graph_resource(unsigned cbid, const CUpti_ResourceData *rd) {
  if (cbid != CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED && cbid != CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED)
    return 0;
  if (g_get_id && rd)
    gpd_cupti_graph_handle(&g_ops, cbid, rd->resourceDescriptor);
  return 1;
}

/* --- graph construction through libcudart (see the top) -------------- */
#include <cuda_runtime_api.h>

/* GWRAP(name, params, args): keep CUPTI loaded for graphs, then call the
 * call site's next definition (cudaErrorInitializationError when there
 * is none). */
#define GWRAP(name, params, args)                                                                   \
  typedef cudaError_t (*name##_fn) params;                                                          \
  static _Atomic(void *) name##_next;                                                               \
  __attribute__((visibility("default"))) cudaError_t name params;                                   \
  cudaError_t name params {                                                                         \
    (void)gpd_cupti_control_graphs();                                                               \
    name##_fn f = (name##_fn)gpd_cupti_count_next(&name##_next, #name, __builtin_return_address(0), \
                                                  (void *)name);                                    \
    return f ? f args : cudaErrorInitializationError;                                               \
  }
#define CAPTURE_P (cudaStream_t stream, enum cudaStreamCaptureMode mode)
GWRAP(cudaStreamBeginCapture, CAPTURE_P, (stream, mode))
GWRAP(cudaStreamBeginCapture_ptsz, CAPTURE_P, (stream, mode))
#define TOGRAPH_P                                                                                   \
  (cudaStream_t stream, cudaGraph_t graph, const cudaGraphNode_t *deps, const cudaGraphEdgeData *edges, \
   size_t ndeps, enum cudaStreamCaptureMode mode)
GWRAP(cudaStreamBeginCaptureToGraph, TOGRAPH_P, (stream, graph, deps, edges, ndeps, mode))
GWRAP(cudaStreamBeginCaptureToGraph_ptsz, TOGRAPH_P, (stream, graph, deps, edges, ndeps, mode))
GWRAP(cudaGraphCreate, (cudaGraph_t * graph, unsigned int flags), (graph, flags))
#endif

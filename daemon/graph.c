/* graph.c - CUDA graph nodes: creation contexts and the placement of a
 * graph launch's work (graph.h).
 *
 * ids maps a CUDA graph node id to
 *   - GRAPH_CTX | the shim's node id of its creation context (| GRAPH_CLONE
 *     when it came from a clone record), or
 *   - the id of the node it was cloned from (bit 63 clear: ids are below
 *     GPD_GRAPHNODE_ID_LIMIT), while that one's context is not known: the
 *     clone record came first, on another thread's ring.  Lookups follow
 *     at most GRAPH_HOPS links and then store the context they found.
 * Nothing is removed: ids are unique in a process, and the bound caps the
 * table.
 *
 * A copied path node has context id H(parent, "graph:" + the original's
 * id as 8 little-endian bytes, 0) and the original's kind, module, offset
 * and labels: equal creation paths below equal launch sites get equal ids
 * in every process, with no coordination (docs/FORMATS.md).
 */
#include "graph.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gpuprof/hash.h"
#include "gpuprof/log.h"

#include "profile.h"

#define GRAPH_CTX (1ull << 63)
#define GRAPH_CLONE (1ull << 62)
#define GRAPH_HOPS 8

gpd_graph_t *gpd_graph_get(gpd_profile_t *p) {
  if (!p->graph && (p->graph = calloc(1, sizeof *p->graph)) != NULL)
    p->graph->max = GPD_GRAPH_MAX_NODES;
  return p->graph;
}

void gpd_graph_free(gpd_profile_t *p) {
  if (!p->graph)
    return;
  gpd_map_free(&p->graph->ids);
  gpd_map_free(&p->graph->places);
  free(p->graph->fast);
  free(p->graph);
  p->graph = NULL;
}

size_t gpd_graph_bytes(const gpd_profile_t *p) {
  if (!p->graph)
    return 0;
  return sizeof *p->graph + (p->graph->ids.cap + p->graph->places.cap) * sizeof(gpd_mapent_t) +
         (p->graph->fast ? GPD_GRAPH_FAST * sizeof *p->graph->fast : 0);
}

/* Set id's value: 0, or -ENOSPC when the bound (or memory) keeps a new
 * id out (counted in `dropped`, logged once). */
static int graph_put(gpd_graph_t *g, uint64_t id, uint64_t val) {
  uint64_t *ref = gpd_map_ref(&g->ids, id);
  if (ref) {
    if (*ref != val && g->fast) /* a placement may have used the old context */
      memset(g->fast, 0, GPD_GRAPH_FAST * sizeof *g->fast);
    *ref = val;
    return 0;
  }
  if (g->ids.n >= g->max || gpd_map_put(&g->ids, id, val) < 0) {
    if (g->dropped++ == 0)
      GPD_WARN("CUDA graph nodes: more than %u in one process (or out of memory); the work of the "
               "others stays below " GPD_GRAPH_LABEL, g->max);
    return -ENOSPC;
  }
  return 0;
}

/* The creation context (GRAPH_CTX | node, possibly | GRAPH_CLONE) of graph
 * node `id`, following clone links; 0 when unknown.  A context found
 * through links is stored for `id` (the links stay for other clones). */
static uint64_t graph_resolve(gpd_graph_t *g, uint64_t id) {
  uint64_t v, cur = id;
  for (int hop = 0; hop <= GRAPH_HOPS; hop++) {
    if (!gpd_map_get(&g->ids, cur, &v))
      return 0;
    if (v & GRAPH_CTX) {
      if (cur != id)
        (void)gpd_map_put(&g->ids, id, v | GRAPH_CLONE); /* present: no growth */
      return v;
    }
    cur = v;
  }
  return 0; /* a longer chain (or a cycle from a scribbling process) */
}

void gpd_graph_ingest(gpd_profile_t *p, const gpd_rec_graphnode_t *r) {
  gpd_graph_t *g = gpd_graph_get(p);
  if (!g)
    return;
  if (r->h.flags & GPD_GRAPHNODE_F_CLONE) {
    uint64_t ctx = graph_resolve(g, r->orig);
    if (graph_put(g, r->id, ctx ? (ctx | GRAPH_CLONE) : r->orig) == 0)
      g->cloned++;
    return;
  }
  uint64_t v;
  if (gpd_map_get(&g->ids, r->id, &v) && (!(v & GRAPH_CTX) || (v & GRAPH_CLONE)))
    return; /* a copy made by instantiation, reported created too: its original's context stays */
  if (graph_put(g, r->id, GRAPH_CTX | r->node) == 0)
    g->created++;
}

/* Copy of path node `src` (by value: adding nodes moves the array) below
 * node index `parent`.  GPD_NONE when the node bound is hit. */
static uint32_t graph_copy(gpd_profile_t *p, uint32_t parent, gpd_node_t src) {
  uint8_t key[14] = {'g', 'r', 'a', 'p', 'h', ':'};
  for (int i = 0; i < 8; i++)
    key[6 + i] = (uint8_t)(src.id >> (8 * i));
  uint64_t pid = p->nodes[parent].id;
  uint64_t id = gpd_ctx_id(pid, key, sizeof key, 0);
  uint32_t i = gpd_profile_find(p, id);
  if (i != GPD_NONE)
    return i;
  i = gpd_profile_restore_node(p, id, pid, src.kind, src.module, src.offset, NULL, NULL);
  if (i == GPD_NONE)
    return i;
  gpd_node_t *n = &p->nodes[i];
  n->saved = 0; /* a new context: the writer stores it */
  n->label = src.label;
  n->raw = src.raw;
  n->op = src.op;
  return i;
}

/* The copy of the root-to-`cap` path below `ph`; GPD_NONE on the node bound. */
static uint32_t graph_graft(gpd_profile_t *p, uint32_t ph, uint32_t cap) {
  uint32_t depth = 0;
  for (uint32_t i = cap; i != 0 && i != GPD_NONE; i = p->nodes[i].parent)
    depth++;
  uint32_t small[256], *chain = depth <= 256 ? small : malloc(depth * sizeof *chain);
  if (!chain)
    return GPD_NONE;
  uint32_t k = depth;
  for (uint32_t i = cap; k > 0; i = p->nodes[i].parent)
    chain[--k] = i;
  uint32_t cur = ph;
  for (uint32_t j = 0; j < depth && cur != GPD_NONE; j++)
    cur = graph_copy(p, cur, p->nodes[chain[j]]);
  if (chain != small)
    free(chain);
  return cur;
}

static gpd_graph_fast_t *fast_slot(gpd_graph_t *g, uint64_t node, uint32_t at) {
  uint64_t h = node * 0x9e3779b97f4a7c15ull ^ (uint64_t)at * 0xc2b2ae3d27d4eb4full;
  return &g->fast[(h >> 40) & (GPD_GRAPH_FAST - 1)];
}

uint32_t gpd_graph_place(gpd_profile_t *p, uint32_t at, uint64_t graph_node, int force) {
  gpd_graph_t *g = gpd_graph_get(p);
  gpd_graph_fast_t *f = g && g->fast ? fast_slot(g, graph_node, at) : NULL;
  if (f && f->node == graph_node && f->at == at) {
    g->placed++;
    return f->leaf;
  }
  uint32_t ph = gpd_profile_child(p, at, GPD_NODE_PLACEHOLDER, GPD_GRAPH_LABEL, GPD_GRAPH_LABEL, NULL);
  if (ph == GPD_NONE)
    return at;
  uint64_t ctx = g ? graph_resolve(g, graph_node) : 0;
  uint32_t cap = ctx ? gpd_profile_local(p, (uint32_t)ctx) : GPD_NONE;
  if (cap == GPD_NONE) {
    if (ctx && !force)
      return GPD_NONE; /* its NODE record is still pending */
    if (g)
      g->unknown++;
    return ph;
  }
  uint64_t key = (uint64_t)ph << 32 | cap, leaf;
  if (!gpd_map_get(&g->places, key, &leaf)) {
    if ((leaf = graph_graft(p, ph, cap)) == GPD_NONE)
      return ph; /* the node bound */
    if (g->places.n >= GPD_GRAPH_MAX_PLACES)
      gpd_map_clear(&g->places);
    (void)gpd_map_put(&g->places, key, leaf);
  }
  if (!g->fast)
    g->fast = calloc(GPD_GRAPH_FAST, sizeof *g->fast);
  if (g->fast)
    *fast_slot(g, graph_node, at) = (gpd_graph_fast_t){graph_node, at, (uint32_t)leaf};
  g->placed++;
  return (uint32_t)leaf;
}

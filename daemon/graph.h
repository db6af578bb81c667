/* graph.h - CUDA graph nodes of one process: the context that created
 * each, and where the work of a graph launch goes in the CCT.
 *
 * The shim names the context of every kernel / memcpy / memset node it
 * sees created (and which node each copy was made from) with GRAPHNODE
 * records (shim/cupti/cupti-graph.c); an ACTIVITY run by a graph carries
 * its node id (gpd_rec_activity_t.graph_node).  Its metrics then go to
 *
 *   launch call site > <graph replay> > the node's creation path > <gpu op> > kernel
 *
 * where the creation path is a copy, below the placeholder, of the path
 * from the root to the context that created the node (docs/CUDA.md, "CUDA
 * graphs"; context ids in docs/FORMATS.md).  A node no record named (a
 * graph made while the shim could not see it, a record dropped by the
 * bound) leaves its work right below <graph replay>.
 *
 * Lock: the daemon lock (like profile.c; tests own profiles outright). */
#ifndef GPD_DAEMON_GRAPH_H
#define GPD_DAEMON_GRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "gpuprof/record.h"

#include "map.h"

typedef struct gpd_profile_s gpd_profile_t;

/* Graph nodes one process may name (each clone counts): beyond, GRAPHNODE
 * records are dropped (counted) and their nodes' work stays below
 * <graph replay>.  32 bytes of table per node at most (map load 1/2). */
#define GPD_GRAPH_MAX_NODES (1u << 20)
/* Cached placements (launch site, creation context) before the cache is
 * emptied. */
#define GPD_GRAPH_MAX_PLACES (1u << 16)
#define GPD_GRAPH_LABEL "<graph replay>"
/* Entries of the direct-mapped (graph node, launch site) -> leaf cache,
 * a power of two (16 bytes each, made at the first placement). */
#define GPD_GRAPH_FAST 4096u

/** One entry of the placement cache (emptied whenever a node's context
 *  changes). */
typedef struct gpd_graph_fast_s {
  uint64_t node;  /* graph node id (0 = empty) */
  uint32_t at;    /* launch site's node index */
  uint32_t leaf;  /* where its work goes */
} gpd_graph_fast_t;

/** One process's graph nodes (gpd_profile_t.graph, made at its first
 *  GRAPHNODE record or graph activity). */
typedef struct gpd_graph_s {
  gpd_map_t ids;      /* graph node id -> creation context (see graph.c) */
  gpd_map_t places;   /* (<graph replay> index << 32 | context index) -> leaf index */
  gpd_graph_fast_t *fast; /* GPD_GRAPH_FAST entries, NULL until the first placement */
  uint32_t max;       /* bound on ids.n: GPD_GRAPH_MAX_NODES (tests lower it) */
  uint64_t created;   /* GRAPHNODE records kept: created nodes */
  uint64_t cloned;    /* ... and clones */
  uint64_t dropped;   /* GRAPHNODE records not kept: bound hit or out of memory */
  uint64_t placed;    /* activities placed below their node's creation path */
  uint64_t unknown;   /* activities of a node no record named (below <graph replay>) */
} gpd_graph_t;

/** The profile's graph state, made on first use (NULL: out of memory). */
gpd_graph_t *gpd_graph_get(gpd_profile_t *p);
/** Ingest a validated GRAPHNODE record.  A clone takes its original's
 *  context when that is known, else a link to it resolved later; a node
 *  whose context came from a clone keeps it (instantiation may report
 *  its copies as created too).  Never fails (a record not kept is
 *  counted in `dropped`). */
void gpd_graph_ingest(gpd_profile_t *p, const gpd_rec_graphnode_t *r);
/** The node an activity of graph node `graph_node` (!= 0), launched at
 *  context index `at`, is attributed below: at's <graph replay> child,
 *  then the copy of the creation path.  GPD_NONE when the creation
 *  context is announced but its NODE record is not resolved yet and
 *  !force (the caller retries later); with force, or for an unknown
 *  graph node, the <graph replay> child (or at, when the node bound is
 *  hit). */
uint32_t gpd_graph_place(gpd_profile_t *p, uint32_t at, uint64_t graph_node, int force);
/** Free the profile's graph state (gpd_profile_free). */
void gpd_graph_free(gpd_profile_t *p);
/** Heap bytes of the profile's graph state. */
size_t gpd_graph_bytes(const gpd_profile_t *p);

#endif

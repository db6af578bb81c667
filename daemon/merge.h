/* merge.h - node-wide merge of process profiles by Merkle context id.
 *
 * Lock: gpd_merge_add reads a profile: hold gpd_daemon_t.lock. */
#ifndef GPD_DAEMON_MERGE_H
#define GPD_DAEMON_MERGE_H

#include <stdint.h>

#include "gpuprof/cct.h"

#include "map.h"
#include "profile.h"

/** A node of the merged (node-wide) view. */
typedef struct gpd_mnode_s {
  uint64_t id, parent_id;
  uint32_t parent; /* index, GPD_NONE for root */
  uint8_t kind;
  const gpd_profile_t *prof; /* first profile that had it (labels) */
  uint32_t pidx;             /* its index in that profile */
  gpd_mval_t *excl, *incl;
  uint32_t nex, capex, nin, capin;
  uint32_t depth;
} gpd_mnode_t;

typedef struct gpd_merge_s {
  gpd_mnode_t *nodes; /* parents precede children */
  uint32_t n, cap;
  gpd_map_t by_id;
} gpd_merge_t;

/** Merge profile p into m (sum exclusive metrics by Merkle id). */
int gpd_merge_add(gpd_merge_t *m, const gpd_profile_t *p);
/** Compute inclusive metrics (after all adds). */
int gpd_merge_finish(gpd_merge_t *m);
void gpd_merge_free(gpd_merge_t *m);
uint32_t gpd_merge_find(const gpd_merge_t *m, uint64_t id);

#endif

/* merge.h - node-wide merge of process profiles by Merkle context id.
 *
 * Lock: gpd_merge_add reads a profile: hold gpd_daemon_t.lock. */
#ifndef GPD_DAEMON_MERGE_H
#define GPD_DAEMON_MERGE_H

#include <stdint.h>
#include <sys/types.h>

#include "gpuprof/cct.h"

#include "map.h"
#include "profile.h"

/** A node of the merged (node-wide) view. */
typedef struct gpd_mnode_s {
  uint64_t id, parent_id;
  uint32_t parent; /* index, GPD_NONE for root */
  uint8_t kind;
  const gpd_profile_t *prof; /* first profile that had it (labels); of owner uid */
  uid_t uid;                 /* owner: only profiles of this uid merge here */
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

/** Merged-view key of Merkle id `id` for a node of user `uid` when another
 *  user owns the node with that id (never 0). */
uint64_t gpd_merge_key(uint64_t id, uid_t uid);
/** Merge profile p into m (sum exclusive metrics by Merkle id; a node of
 *  another uid than its owner's goes to its own node, gpd_merge_key).
 *  0 or -ENOMEM. */
int gpd_merge_add(gpd_merge_t *m, const gpd_profile_t *p);
/** Compute inclusive metrics (after all adds). */
int gpd_merge_finish(gpd_merge_t *m);
void gpd_merge_free(gpd_merge_t *m);
uint32_t gpd_merge_find(const gpd_merge_t *m, uint64_t id);

#endif

/* profile-index.c - the open-addressing index of uint32 values the live
 * profile keeps its nodes, shim ids, labels and attribution targets in
 * (gpd_ix_t; the lookup is inline in profile-internal.h, where the layout
 * is explained).  Caller holds the daemon lock. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "profile-internal.h"

/* Insert v (key not present).  0 or -ENOMEM. */
int gpd__profile_index_put(gpd_ix_t *ix, const gpd_profile_t *p, uint64_t key, uint32_t v,
                           gpd__profile_index_key_fn kf) {
  if ((uint64_t)(ix->n + 1) * 4 > (uint64_t)ix->cap * 3) {
    uint32_t ncap = ix->cap ? ix->cap * 2 : 64;
    uint32_t *ns = calloc(ncap, sizeof *ns);
    if (ns == NULL)
      return -ENOMEM;
    for (uint32_t j = 0; j < ix->cap; j++) {
      uint32_t s = ix->slot[j];
      if (s == 0)
        continue;
      uint32_t i = gpd__profile_index_home(kf(p, s - 1), ncap - 1);
      while (ns[i] != 0)
        i = (i + 1) & (ncap - 1);
      ns[i] = s;
    }
    free(ix->slot);
    ix->slot = ns;
    ix->cap = ncap;
  }
  uint32_t mask = ix->cap - 1, i = gpd__profile_index_home(key, mask);
  while (ix->slot[i] != 0)
    i = (i + 1) & mask;
  ix->slot[i] = v + 1;
  ix->n++;
  return 0;
}

void gpd__profile_index_free(gpd_ix_t *ix) {
  free(ix->slot);
  memset(ix, 0, sizeof *ix);
}

/* map.h - uint64 -> uint64 hash map (any thread; the caller synchronizes). */
#ifndef GPD_DAEMON_MAP_H
#define GPD_DAEMON_MAP_H

#include <stddef.h>
#include <stdint.h>

/** Open-addressing hash map uint64 -> uint64 (linear probing, backward-shift
 *  delete).  Key 0 is reserved (empty); callers never store key 0. */
typedef struct gpd_map_s {
  uint64_t *keys;
  uint64_t *vals;
  size_t cap; /* power of two, 0 when empty */
  size_t n;
} gpd_map_t;

void gpd_map_free(gpd_map_t *m);
/** 1 and *val if key present, else 0. */
int gpd_map_get(const gpd_map_t *m, uint64_t key, uint64_t *val);
/** Insert or overwrite.  0, -EINVAL (key 0) or -ENOMEM. */
int gpd_map_put(gpd_map_t *m, uint64_t key, uint64_t val);
/** Remove; 1 if it was present. */
int gpd_map_del(gpd_map_t *m, uint64_t key);

#endif

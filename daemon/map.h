/* map.h - uint64 -> uint64 hash map (any thread; the caller synchronizes). */
#ifndef GPD_DAEMON_MAP_H
#define GPD_DAEMON_MAP_H

#include <stddef.h>
#include <stdint.h>

/** One slot: key 0 = empty. */
typedef struct gpd_mapent_s {
  uint64_t key;
  uint64_t val;
} gpd_mapent_t;

/** Open-addressing hash map uint64 -> uint64 (linear probing, backward-shift
 *  delete, load <= 1/2).  Key and value share a slot, so a lookup touches
 *  one cache line (the ingest path's correlation maps hold up to 1 M
 *  entries: separate key and value arrays cost a second miss per lookup).
 *  Key 0 is reserved (empty); callers never store key 0. */
typedef struct gpd_map_s {
  gpd_mapent_t *e;
  size_t cap; /* power of two, 0 when empty */
  size_t n;
  /* 0: every key hashed.  r > 0 (set before the first put, kept by
   * gpd_map_free): runs of 2^r consecutive keys hash to one run of 2^r
   * slots, so keys handed out in sequence (correlation ids) share cache
   * lines: ~4x fewer misses at 1 M entries (bench-ingest).  Only for keys
   * that are mostly sequential: keys that agree in their low r bits
   * (aligned pointers) would crowd 1 slot in 2^r. */
  unsigned run_shift;
} gpd_map_t;

/** Slot of key in a table of mask + 1 slots.  splitmix64 finalizer:
 *  Merkle ids are already hashes, local ids and pointers are not.  With
 *  run_shift r, 2^r consecutive keys share one hashed run of 2^r slots
 *  (see gpd_map_t.run_shift). */
static inline size_t gpd__map_slot(uint64_t key, size_t mask, unsigned run_shift) {
  uint64_t low = key & ((1ull << run_shift) - 1);
  key >>= run_shift;
  key ^= key >> 30;
  key *= 0xbf58476d1ce4e5b9ull;
  key ^= key >> 27;
  key *= 0x94d049bb133111ebull;
  key ^= key >> 31;
  return (size_t)((key << run_shift) | low) & mask;
}

/** Start loading key's home slot into the cache (no effect otherwise). */
static inline void gpd_map_prefetch(const gpd_map_t *m, uint64_t key) {
  if (m->cap)
    __builtin_prefetch(&m->e[gpd__map_slot(key, m->cap - 1, m->run_shift)], 1);
}

void gpd_map_free(gpd_map_t *m);
/** Empty the map for about n entries: keeps the table if it suits n (no
 *  regrowth, no fresh pages), else frees it (a table 8x too large would
 *  cost its whole size to clear).  Never fails. */
void gpd_map_reset(gpd_map_t *m, size_t n);
/** Remove every entry, keeping the table (no allocation on refill). */
void gpd_map_clear(gpd_map_t *m);
/** 1 and *val if key present, else 0. */
int gpd_map_get(const gpd_map_t *m, uint64_t key, uint64_t *val);
/** Pointer to key's value, NULL if absent.  Valid until the next put/del. */
uint64_t *gpd_map_ref(const gpd_map_t *m, uint64_t key);
/** Insert or overwrite.  0, -EINVAL (key 0) or -ENOMEM. */
int gpd_map_put(gpd_map_t *m, uint64_t key, uint64_t val);
/** Pointer to key's value, inserting it with value 0 if absent (*created
 *  says which).  NULL for key 0 or out of memory.  Valid until the next
 *  put/del. */
uint64_t *gpd_map_upsert(gpd_map_t *m, uint64_t key, int *created);
/** Remove; 1 if it was present. */
int gpd_map_del(gpd_map_t *m, uint64_t key);
/** Remove key, 1 and its value in *val (may be NULL) if it was present:
 *  one probe sequence for a lookup followed by a delete. */
int gpd_map_take(gpd_map_t *m, uint64_t key, uint64_t *val);
/** Remove the entry whose value ref points at (from gpd_map_ref or
 *  gpd_map_upsert, with no put/del in between). */
void gpd_map_del_ref(gpd_map_t *m, uint64_t *ref);

#endif

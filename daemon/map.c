/* map.c - open-addressing uint64 -> uint64 hash map (daemon private).
 * Linear probing with backward-shift deletion, load factor <= 1/2. */
#include <errno.h>
#include <stdlib.h>

#include "daemon.h"

static inline size_t map_slot(uint64_t key, size_t mask) {
  /* splitmix64 finalizer: Merkle ids are already hashes, local ids are not */
  key ^= key >> 30;
  key *= 0xbf58476d1ce4e5b9ull;
  key ^= key >> 27;
  key *= 0x94d049bb133111ebull;
  key ^= key >> 31;
  return (size_t)key & mask;
}

void gpd_map_free(gpd_map_t *m) {
  free(m->keys);
  free(m->vals);
  m->keys = NULL;
  m->vals = NULL;
  m->cap = m->n = 0;
}

int gpd_map_get(const gpd_map_t *m, uint64_t key, uint64_t *val) {
  if (m->cap == 0 || key == 0)
    return 0;
  size_t mask = m->cap - 1;
  for (size_t i = map_slot(key, mask);; i = (i + 1) & mask) {
    if (m->keys[i] == key) {
      if (val)
        *val = m->vals[i];
      return 1;
    }
    if (m->keys[i] == 0)
      return 0;
  }
}

static int map_grow(gpd_map_t *m) {
  size_t ncap = m->cap ? m->cap * 2 : 16;
  uint64_t *nk = calloc(ncap, sizeof *nk);
  uint64_t *nv = calloc(ncap, sizeof *nv);
  if (nk == NULL || nv == NULL) {
    free(nk);
    free(nv);
    return -ENOMEM;
  }
  for (size_t j = 0; j < m->cap; j++) {
    if (m->keys[j] == 0)
      continue;
    size_t i = map_slot(m->keys[j], ncap - 1);
    while (nk[i] != 0)
      i = (i + 1) & (ncap - 1);
    nk[i] = m->keys[j];
    nv[i] = m->vals[j];
  }
  free(m->keys);
  free(m->vals);
  m->keys = nk;
  m->vals = nv;
  m->cap = ncap;
  return 0;
}

int gpd_map_put(gpd_map_t *m, uint64_t key, uint64_t val) {
  if (key == 0)
    return -EINVAL;
  if ((m->n + 1) * 2 > m->cap) {
    int err = map_grow(m);
    if (err < 0)
      return err;
  }
  size_t mask = m->cap - 1;
  size_t i = map_slot(key, mask);
  while (m->keys[i] != 0 && m->keys[i] != key)
    i = (i + 1) & mask;
  if (m->keys[i] == 0)
    m->n++;
  m->keys[i] = key;
  m->vals[i] = val;
  return 0;
}

int gpd_map_del(gpd_map_t *m, uint64_t key) {
  if (m->cap == 0 || key == 0)
    return 0;
  size_t mask = m->cap - 1;
  size_t i = map_slot(key, mask);
  while (m->keys[i] != key) {
    if (m->keys[i] == 0)
      return 0;
    i = (i + 1) & mask;
  }
  /* backward-shift: move later entries of the cluster into the hole */
  size_t j = i;
  for (;;) {
    j = (j + 1) & mask;
    if (m->keys[j] == 0)
      break;
    size_t home = map_slot(m->keys[j], mask);
    /* entry j may move to i if home is not in (i, j] cyclically */
    if ((j > i && (home <= i || home > j)) || (j < i && (home <= i && home > j))) {
      m->keys[i] = m->keys[j];
      m->vals[i] = m->vals[j];
      i = j;
    }
  }
  m->keys[i] = 0;
  m->vals[i] = 0;
  m->n--;
  return 1;
}

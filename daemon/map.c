/* map.c - open-addressing uint64 -> uint64 hash map (daemon private).
 * Linear probing with backward-shift deletion, load factor <= 1/2; key and
 * value in one 16-byte slot. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"

#define map_slot(key, mask) gpd__map_slot((key), (mask), m->run_shift)

void gpd_map_free(gpd_map_t *m) {
  free(m->e);
  m->e = NULL;
  m->cap = m->n = 0;
}

void gpd_map_clear(gpd_map_t *m) {
  if (m->n)
    memset(m->e, 0, m->cap * sizeof *m->e);
  m->n = 0;
}

void gpd_map_reset(gpd_map_t *m, size_t n) {
  if (m->cap > 64 && m->cap > 8 * (2 * n + 16))
    gpd_map_free(m);
  else
    gpd_map_clear(m);
}

uint64_t *gpd_map_ref(const gpd_map_t *m, uint64_t key) {
  if (m->cap == 0 || key == 0)
    return NULL;
  size_t mask = m->cap - 1;
  for (size_t i = map_slot(key, mask);; i = (i + 1) & mask) {
    if (m->e[i].key == key)
      return &m->e[i].val;
    if (m->e[i].key == 0)
      return NULL;
  }
}

int gpd_map_get(const gpd_map_t *m, uint64_t key, uint64_t *val) {
  uint64_t *v = gpd_map_ref(m, key);
  if (v == NULL)
    return 0;
  if (val)
    *val = *v;
  return 1;
}

static int map_grow(gpd_map_t *m) {
  size_t ncap = m->cap ? m->cap * 2 : 16;
  gpd_mapent_t *ne = calloc(ncap, sizeof *ne);
  if (ne == NULL)
    return -ENOMEM;
  for (size_t j = 0; j < m->cap; j++) {
    if (m->e[j].key == 0)
      continue;
    size_t i = map_slot(m->e[j].key, ncap - 1);
    while (ne[i].key != 0)
      i = (i + 1) & (ncap - 1);
    ne[i] = m->e[j];
  }
  free(m->e);
  m->e = ne;
  m->cap = ncap;
  return 0;
}

uint64_t *gpd_map_upsert(gpd_map_t *m, uint64_t key, int *created) {
  *created = 0;
  if (key == 0)
    return NULL;
  if ((m->n + 1) * 2 > m->cap && map_grow(m) < 0) {
    uint64_t *v = gpd_map_ref(m, key); /* an existing key needs no room */
    return v;
  }
  size_t mask = m->cap - 1;
  size_t i = map_slot(key, mask);
  while (m->e[i].key != 0 && m->e[i].key != key)
    i = (i + 1) & mask;
  if (m->e[i].key == 0) {
    m->e[i].key = key;
    m->e[i].val = 0;
    m->n++;
    *created = 1;
  }
  return &m->e[i].val;
}

int gpd_map_put(gpd_map_t *m, uint64_t key, uint64_t val) {
  int created;
  if (key == 0)
    return -EINVAL;
  uint64_t *v = gpd_map_upsert(m, key, &created);
  if (v == NULL)
    return -ENOMEM;
  *v = val;
  return 0;
}

/* Empty slot i and backward-shift the rest of its cluster into it. */
static void map_del_slot(gpd_map_t *m, size_t i) {
  size_t mask = m->cap - 1, j = i;
  for (;;) {
    j = (j + 1) & mask;
    if (m->e[j].key == 0)
      break;
    size_t home = map_slot(m->e[j].key, mask);
    /* entry j may move to i if home is not in (i, j] cyclically */
    if ((j > i && (home <= i || home > j)) || (j < i && (home <= i && home > j))) {
      m->e[i] = m->e[j];
      i = j;
    }
  }
  m->e[i].key = 0;
  m->e[i].val = 0;
  m->n--;
}

int gpd_map_take(gpd_map_t *m, uint64_t key, uint64_t *val) {
  if (m->cap == 0 || key == 0)
    return 0;
  size_t mask = m->cap - 1;
  size_t i = map_slot(key, mask);
  while (m->e[i].key != key) {
    if (m->e[i].key == 0)
      return 0;
    i = (i + 1) & mask;
  }
  if (val)
    *val = m->e[i].val;
  map_del_slot(m, i);
  return 1;
}

void gpd_map_del_ref(gpd_map_t *m, uint64_t *ref) {
  map_del_slot(m, (size_t)((gpd_mapent_t *)((char *)ref - offsetof(gpd_mapent_t, val)) - m->e));
}

int gpd_map_del(gpd_map_t *m, uint64_t key) { return gpd_map_take(m, key, NULL); }

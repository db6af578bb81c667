/* xcorrix.c - launch index by (profile, correlation id) (xcorrix.h). */
#include <errno.h>
#include <stdlib.h>

#include "xcorrix.h"

static uint64_t mix(uint64_t a, uint64_t b) {
  uint64_t h = 0x9e3779b97f4a7c15ull ^ a;
  h ^= b + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  h ^= h >> 31;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 29;
  return h;
}

int gpd__xcorrix_build(gpd_xcorrix_t *ix, const gpd_xtrace_t *x) {
  ix->cap = 64;
  while (ix->cap < x->nla * 2)
    ix->cap <<= 1;
  ix->slot = calloc(ix->cap, sizeof *ix->slot);
  if (ix->slot == NULL)
    return -ENOMEM;
  for (size_t i = 0; i < x->nla; i++) {
    size_t h = mix(x->la[i].profile, x->la[i].corr) & (ix->cap - 1);
    while (ix->slot[h])
      h = (h + 1) & (ix->cap - 1);
    ix->slot[h] = i + 1;
  }
  return 0;
}

long gpd__xcorrix_get(const gpd_xcorrix_t *ix, const gpd_xtrace_t *x, uint64_t profile, uint64_t corr) {
  size_t h = mix(profile, corr) & (ix->cap - 1);
  for (; ix->slot[h]; h = (h + 1) & (ix->cap - 1)) {
    const gpd_xlaunch_t *l = &x->la[ix->slot[h] - 1];
    if (l->profile == profile && l->corr == corr)
      return (long)(ix->slot[h] - 1);
  }
  return -1;
}

/* grow.h - room for one more element of a malloc'd array that doubles.
 * Any thread; the array is the caller's. */
#ifndef GPUPROF_GROW_H
#define GPUPROF_GROW_H

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

/** Make *arr (of *cap elements of elem bytes, n of them used) hold at
 *  least n + 1: doubled, or `first` elements when empty.  0, or -ENOMEM
 *  with *arr and *cap unchanged. */
static inline int gpd_grow(void *arr, size_t *cap, size_t n, size_t elem, size_t first) {
  void **a = (void **)arr;
  if (n < *cap)
    return 0;
  size_t nc = *cap ? *cap * 2 : first;
  void *na = realloc(*a, nc * elem);
  if (na == NULL)
    return -ENOMEM;
  *a = na;
  *cap = nc;
  return 0;
}

#endif

/* buf.c - the analyzer's growable byte buffer (gpd_buf_t) and the
 * prefaulting of large arrays it and the parts grow (analyzer.h).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "analyzer.h"

void gpd_buf_prefault(void *p, size_t from, size_t to) {
#ifdef MADV_POPULATE_WRITE
  uintptr_t a = ((uintptr_t)p + from + 4095) & ~(uintptr_t)4095, e = ((uintptr_t)p + to) & ~(uintptr_t)4095;
  if (p && to > from && to - from >= ((size_t)1 << 20) && e > a) madvise((void *)a, e - a, MADV_POPULATE_WRITE);
#else
  (void)p, (void)from, (void)to;
#endif
}

int gpd_buf_reserve(gpd_buf_t *b, size_t n) {
  if (b->n + n > b->cap) {
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->n + n) cap *= 2;
    uint8_t *p = realloc(b->p, cap);
    if (!p) return -ENOMEM;
    gpd_buf_prefault(p, b->cap, cap);
    b->p = p;
    b->cap = cap;
  }
  return 0;
}

int gpd_buf_put(gpd_buf_t *b, const void *d, size_t n) {
  int err = gpd_buf_reserve(b, n);
  if (err < 0) return err;
  if (n) memcpy(b->p + b->n, d, n);
  b->n += n;
  return 0;
}

void gpd_buf_free(gpd_buf_t *b) {
  free(b->p);
  memset(b, 0, sizeof(*b));
}

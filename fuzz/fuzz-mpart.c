/* fuzz-mpart.c - libFuzzer target: the decoders of gpuprof merge
 * (analyzer/): a packed part as rank 0 receives it from another rank
 * (gpd_mpart_unpack), and a pmetric blob as a merged file holds it
 * (gpd_pmetric_decode).
 *
 * Input: byte 0 picks the decoder (even: part, odd: pmetric blob), the
 * rest is its bytes.  A part that unpacks must pack back to the same
 * bytes; a blob decodes to exactly size / 20 records or fails with
 * -EINVAL. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "analyzer.h"

static int count(void *c, int64_t ctx, uint32_t metric, double v) {
  (void)ctx, (void)metric, (void)v;
  (*(size_t *)c)++;
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  int which = data[0] & 1;
  data++;
  size--;
  if (which) {
    size_t n = 0;
    int rc = gpd_pmetric_decode(data, size, count, &n);
    if (size % GPD_PMETRIC_REC ? rc != -EINVAL : rc != 0 || n != size / GPD_PMETRIC_REC) __builtin_trap();
    return 0;
  }
  gpd_mpart_t p;
  int rc = gpd_mpart_unpack(&p, data, size);
  if (rc == 0) {
    gpd_buf_t b = {0};
    if (gpd_mpart_pack(&p, &b) == 0 && (b.n != size || memcmp(b.p, data, size))) __builtin_trap();
    gpd_buf_free(&b);
    gpd_mpart_free(&p);
  } else if (rc != -EINVAL && rc != -ENOMEM) {
    __builtin_trap();
  }
  return 0;
}

/* fuzz-mpart.c - libFuzzer target: the decoders of gpuprof merge
 * (analyzer/): a packed part (gpd_mpart_unpack), a pmetric blob as a
 * merged file holds it (gpd_store_metric_decode), and what an owner rank of
 * the MPI merge receives from another rank (gpd_mshard_reduce), reduced
 * and written into an in-memory shard (gpd_mshard_write).
 *
 * Input: byte 0 picks the decoder (odd: pmetric blob; & 3 == 0: part;
 * & 3 == 2: shard split buffer), the rest is its bytes.  A part that
 * unpacks must pack back to the same bytes; a blob decodes to exactly
 * size / 20 records or fails with -EINVAL; a split buffer reduces or
 * fails with -EINVAL, and its stream writes exactly the contexts and
 * keys the reduction counted, or fails. */
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
  int which = data[0] & 3;
  data++;
  size--;
  if (which == 2) {
    static const int64_t uids[4] = {1000, 1000, 1001, 1000}; /* the uids of global profiles 1..4 */
    gpd_buf_t in = {(uint8_t *)data, size, size}, ws = {0};
    uint64_t nc, nk;
    int rc = gpd_mshard_reduce(&in, 1, uids, 4, &ws, &nc, &nk);
    if (rc == 0) {
      gpd_mout_t o;
      gpd_mout_info_t info;
      char err[256];
      if (gpd_mout_open_shard(&o, &info, err, sizeof(err)) == 0) {
        if (gpd_mshard_write(&o, ws.p, ws.n) == 0 && (info.contexts != nc || info.keys != nk)) __builtin_trap();
        gpd_mout_close(&o);
      }
    } else if (rc != -EINVAL && rc != -ENOMEM) {
      __builtin_trap();
    }
    gpd_buf_free(&ws);
    return 0;
  }
  if (which & 1) {
    size_t n = 0;
    int rc = gpd_store_metric_decode(data, size, count, &n);
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

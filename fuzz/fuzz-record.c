/* fuzz-record.c - libFuzzer target: record validation and the ring
 * consumer over a region filled with arbitrary bytes (the daemon's view
 * of a scribbling process).
 *
 * Input: byte 0 & 1 selects the mode.
 *   0: gpd_rec_validate on the rest (copied to an aligned buffer); valid
 *      ACTIVITY records also go through gpd_metric_accumulate.
 *   1: bytes 1..8 tail, 9..16 head (little-endian, taken as is), 17 the
 *      ring state, the rest fills the ring's slots (64 slots, zero padded);
 *      gpd_ring_consume must return a count or a GPD_E* code, deliver only
 *      records that validate, and leave tail <= head. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpuprof/error.h"
#include "gpuprof/metric.h"
#include "gpuprof/record.h"
#include "gpuprof/region.h"

#define RING_SLOTS 64u

static uint64_t le64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--)
    v = v << 8 | p[i];
  return v;
}

static void check_rec(void *arg, const void *rec, size_t nbytes) {
  unsigned *n = arg;
  const gpd_rec_hdr_t *h = rec;
  if (((uintptr_t)rec & 63) || nbytes != (size_t)h->nslots * GPD_SLOT_SIZE || gpd_rec_validate(rec, nbytes))
    __builtin_trap();
  if (h->type == GPD_REC_ACTIVITY) {
    double v[GPD_M__COUNT] = {0};
    gpd_metric_accumulate(v, rec);
  }
  if (h->type == GPD_REC_CPUSAMPLE) {
    const gpd_rec_cpusample_t *c = rec; /* the daemon adds weight to CPUTIME as is */
    if (c->node == 0 || c->weight == 0 || c->weight > GPD_CPUSAMPLE_MAX_WEIGHT)
      __builtin_trap();
  }
  if (h->type == GPD_REC_TRACEWIN) {
    const gpd_rec_tracewin_t *w = rec; /* the report divides by end - t0 */
    if (w->t0 > w->start || w->start > w->end || w->window_ns > w->end - w->t0 || w->api >= GPD_API_MAX ||
        w->launches_in > w->launches) /* the launch fraction is at most 1 */
      __builtin_trap();
  }
  (*n)++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static _Alignas(64) uint8_t buf[GPD_REC_MAX_BYTES + 64];
  static gpd_region_t r;
  static int have_region;
  if (size < 1)
    return 0;
  unsigned mode = data[0] & 1;
  data++;
  size--;

  if (mode == 0) {
    size_t n = size < sizeof buf ? size : sizeof buf;
    memcpy(buf, data, n);
    int rc = gpd_rec_validate(buf, n);
    if (rc == 0) {
      const gpd_rec_hdr_t *h = (const gpd_rec_hdr_t *)buf;
      if ((size_t)h->nslots * GPD_SLOT_SIZE > n)
        __builtin_trap();
      if (h->type == GPD_REC_ACTIVITY) {
        double v[GPD_M__COUNT] = {0};
        gpd_metric_accumulate(v, (const gpd_rec_activity_t *)buf);
      }
    } else if (rc != GPD_EBADRECORD && rc != GPD_EBADVERSION) {
      __builtin_trap();
    }
    return 0;
  }

  if (!have_region) {
    if (gpd_region_create(&r, 1, RING_SLOTS, 1, 1) != 0)
      abort();
    have_region = 1;
  }
  if (size < 17)
    return 0;
  gpd_ring_ctl_t *c = &r.ctl[0];
  atomic_store(&c->tail, le64(data));
  atomic_store(&c->head, le64(data + 8));
  atomic_store(&c->state, data[16] % 4);
  data += 17;
  size -= 17;
  uint8_t *slots = gpd_region_ring_data(&r, 0);
  size_t n = size < RING_SLOTS * GPD_SLOT_SIZE ? size : RING_SLOTS * GPD_SLOT_SIZE;
  memset(slots, 0, RING_SLOTS * GPD_SLOT_SIZE);
  memcpy(slots, data, n);
  unsigned got = 0;
  for (int pass = 0; pass < 2; pass++) {
    uint64_t t0 = atomic_load(&c->tail);
    int rc = gpd_ring_consume(&r, 0, pass ? 1000 : 3, check_rec, &got);
    if (rc < 0 && rc != GPD_EBADRING && rc != GPD_EBADRECORD && rc != GPD_EBADVERSION)
      __builtin_trap();
    uint64_t t1 = atomic_load(&c->tail), h = atomic_load(&c->head);
    if (rc == GPD_EBADRING && t1 != t0)
      __builtin_trap();
    if (rc >= 0 && (t1 > h || t1 < t0))
      __builtin_trap();
    (void)gpd_ring_pending(&r, 0);
    if (rc < 0)
      break;
  }
  return 0;
}

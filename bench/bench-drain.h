/* bench-drain.h - a consumer thread that drains a bench's own region the
 * way gpuprofd's monitor does (bench-capture, bench-torchloop): a pass
 * over every ring, then a 200 us sleep after a pass that found fewer than
 * 256 records; BENCH_SPIN=1 spins instead (the worst case for the
 * producer's cache lines).  Stops when *stop becomes non-zero. */
#ifndef GPUPROF_BENCH_DRAIN_H
#define GPUPROF_BENCH_DRAIN_H

#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "gpuprof/region.h"

typedef struct {
  gpd_region_t *r;
  atomic_int *stop;
} bench_drain_t;

static void bench_drain_sink(void *arg, const void *rec, size_t n) {
  (void)arg;
  (void)rec;
  (void)n;
}

static void *bench_drain(void *arg) {
  bench_drain_t *d = arg;
  int spin = getenv("BENCH_SPIN") != NULL;
  while (!atomic_load(d->stop)) {
    int n = 0;
    for (uint32_t i = 0; i < d->r->nrings; i++) {
      int r = gpd_ring_consume(d->r, i, 4096, bench_drain_sink, NULL);
      n += r > 0 ? r : 0;
    }
    if (!spin && n < 256)
      usleep(200);
  }
  return NULL;
}

#endif

/* bench-kernels.h - one kernel INVOKE + ACTIVITY at a context, fed to a
 * profile as the monitor feeds it (bench-memory, bench-snapshot). */
#ifndef GPD_BENCH_KERNELS_H
#define GPD_BENCH_KERNELS_H

#include <stdio.h>
#include <string.h>

#include "daemon.h"
#include "daemon-client-lib.h"

/** Kernel pair number i at context (NODE local id) i, correlation id
 *  corr, one of `kernels` kernel names (string ids 1..kernels), 64 x 256
 *  threads; returns the record bytes fed. */
static inline uint64_t bench_kernel_pair(gpd_profile_t *p, uint32_t i, uint64_t corr, uint32_t kernels) {
  _Alignas(64) gpd_rec_invoke_t v;
  gpd_dclient_invoke_init(&v, GPD_OP_KERNEL, i, GPD_CORR(GPD_API_OPENCL, corr));
  gpd_profile_ingest(p, &v, sizeof v);
  _Alignas(64) gpd_rec_activity_t a;
  gpd_dclient_activity_init(&a, GPD_OP_KERNEL, v.corr);
  a.start = 1000ull * i;
  a.end = a.start + 1000 + 100 * (i % 13);
  a.name = 1 + (i * 7u) % kernels;
  a.stream = 1;
  a.blocks = 64;
  a.block_threads = 256;
  gpd_profile_ingest(p, &a, sizeof a);
  return sizeof v + sizeof a;
}

/** Module 1 (the application, path `exe`) and the kernel names
 *  `_Z9kernel_NNPfi` as string ids 1..kernels, announced to p. */
static inline void bench_kernel_names(gpd_profile_t *p, const char *exe, uint32_t kernels) {
  gpd_profile_add_module(p, 1, NULL, 0, 0, 0, exe, strlen(exe));
  for (uint32_t k = 1; k <= kernels; k++) {
    char name[64];
    int n = snprintf(name, sizeof name, "_Z9kernel_%02uPfi", k);
    gpd_profile_add_string(p, k, GPD_STR_KERNEL, name, (size_t)n);
  }
}

#endif

/* min-tracer.c - the baseline for gpuprof's CUDA overhead: a minimal CUPTI
 * tracer that subscribes to the same callbacks (runtime + driver ids that
 * gpd_cupti_classify picks, plus the resource ones) and enables the same
 * activity kinds as shim/cupti/cupti-api.c, with the same buffer size, and
 * does nothing else (callbacks return at once; completed buffers are walked
 * record by record and dropped).  Load it with CUDA_INJECTION64_PATH (the
 * driver calls InitializeInjection at cuInit).  Links libcupti directly.
 *
 * To attribute CUPTI's own cost, parts can be switched off:
 *   MIN_TRACER_KINDS=kernel,memcpy,memset,memory,sync   activity kinds (default all;
 *                    "none" for no activity at all)
 *   MIN_TRACER_NOCB=1   no API callbacks
 *   MIN_TRACER_DOMAINS=runtime|driver   API callbacks of one domain only
 *   MIN_TRACER_NOTS=1   no timestamp callback (CUPTI's own clock)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cupti.h>

#include "cupti-internal.h"

static CUpti_SubscriberHandle sub;
static unsigned long nrec, ncb;

static void CUPTIAPI cb(void *ud, CUpti_CallbackDomain d, CUpti_CallbackId id, const void *data) {
  (void)ud; (void)d; (void)id; (void)data;
  ncb++;
}
static void CUPTIAPI req(uint8_t **b, size_t *sz, size_t *mx) {
  *b = aligned_alloc(8, 1u << 20);
  *sz = *b ? 1u << 20 : 0;
  *mx = 0;
}
static void CUPTIAPI done(CUcontext c, uint32_t s, uint8_t *b, size_t sz, size_t valid) {
  CUpti_Activity *r = NULL;
  (void)c; (void)s; (void)sz;
  while (valid && cuptiActivityGetNextRecord(b, valid, &r) == CUPTI_SUCCESS) nrec++;
  free(b);
}
static uint64_t CUPTIAPI ts(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC_RAW, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + t.tv_nsec;
}
static void fin(void) {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  if (getenv("MIN_TRACER_VERBOSE")) fprintf(stderr, "min-tracer: callbacks=%lu records=%lu\n", ncb, nrec);
}
static void enable_domain(CUpti_CallbackDomain d, unsigned n) {
  for (unsigned id = 1; id < n; id++) {
    const char *name = NULL;
    if (cuptiGetCallbackName(d, id, &name) == CUPTI_SUCCESS && name &&
        gpd_cupti_classify(name, NULL))
      cuptiEnableCallback(1, sub, d, id);
  }
}

static int want(const char *kinds, const char *k) {
  if (!kinds) return 1;
  const char *p = strstr(kinds, k);
  return p && (p == kinds || p[-1] == ',');
}

__attribute__((visibility("default"))) int InitializeInjection(void) {
  const char *kinds = getenv("MIN_TRACER_KINDS");
  if (cuptiSubscribe(&sub, cb, NULL) != CUPTI_SUCCESS) return 1;
  const char *doms = getenv("MIN_TRACER_DOMAINS");
  if (!getenv("MIN_TRACER_NOCB")) {
    if (!doms || strcmp(doms, "driver") != 0)
      enable_domain(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE);
    if (!doms || strcmp(doms, "runtime") != 0)
      enable_domain(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE);
  }
  cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_CREATED);
  cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING);
  cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_MODULE_LOADED);
  if (!getenv("MIN_TRACER_NOTS")) cuptiActivityRegisterTimestampCallback(ts);
  cuptiActivityRegisterCallbacks(req, done);
  static const struct { const char *name; CUpti_ActivityKind kind; } k[] = {
      {"kernel", CUPTI_ACTIVITY_KIND_DEVICE},   {"kernel", CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL},
      {"memcpy", CUPTI_ACTIVITY_KIND_MEMCPY},   {"memcpy", CUPTI_ACTIVITY_KIND_MEMCPY2},
      {"memset", CUPTI_ACTIVITY_KIND_MEMSET},   {"memory", CUPTI_ACTIVITY_KIND_MEMORY2},
      {"sync", CUPTI_ACTIVITY_KIND_SYNCHRONIZATION}};
  for (unsigned i = 0; i < sizeof k / sizeof *k; i++)
    if (want(kinds, k[i].name)) cuptiActivityEnable(k[i].kind);
  atexit(fin);
  return 1;
}

// sass-probe.cu - CUPTI's SASS Metrics API used directly, without gpuprof,
// on pcsamp-known's kernels (GPU machine only; docs/ANALYZER-GPU.md): the
// sequence of NVIDIA's sass_metrics sample (configure, enable with lazy
// patching, run, synchronize, GetDataProperties, FlushData, Disable).  It
// tells whether the API gives counts on this GPU and driver at all, apart
// from the shim, and (variants below) which of the shim's differences
// loses them.  Prints the counts at known_calls' call sites; expected
// (reps 3, 80 blocks of 8 warps, L launches): 3 x 640 x L and 640 x L.
// Usage: sass-probe [L] [act,ctxcb,synccb]
// Build: nvcc -O3 -lineinfo -gencode arch=compute_90,code=sm_90
//        -o sass-probe sass-probe.cu -lcupti -lcuda
#define PCSAMP_STRUCTURE_ONLY
#include "pcsamp-known.cu"

#include <cstdio>
#include <cstring>
#include <vector>

#include <cuda.h>
#include <cupti.h>
#include <cupti_profiler_target.h>
#include <cupti_sass_metrics.h>
#include <cupti_target.h>

#define CK(call)                                                        \
  do {                                                                  \
    CUptiResult r_ = (call);                                            \
    const char *s_ = "?";                                               \
    cuptiGetResultString(r_, &s_);                                      \
    printf("sass-probe: %s -> %d (%s)\n", #call, (int)r_, s_);          \
    if (r_ != CUPTI_SUCCESS) return 1;                                  \
  } while (0)

// Variants (argv[2], comma-separated), each a difference between this
// probe and the shim: "act" kernel activity records on (as gpuprof
// traces; "actk": serialized kernel records instead); "ctxcb" the API enabled inside CUPTI's context-created
// callback; "synccb" the counts read inside the API-exit callback of
// cudaDeviceSynchronize.
static int g_act, g_ctxcb, g_synccb, g_launches, g_result = 1;
static CUcontext g_ctx;

static int enable(CUcontext ctx) {
  CUpti_Profiler_Initialize_Params ip = {CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
  CK(cuptiProfilerInitialize(&ip));
  CUpti_Device_GetChipName_Params cp = {CUpti_Device_GetChipName_Params_STRUCT_SIZE};
  cp.deviceIndex = 0;
  CK(cuptiDeviceGetChipName(&cp));
  CUpti_SassMetrics_GetProperties_Params pp = {CUpti_SassMetrics_GetProperties_Params_STRUCT_SIZE};
  pp.pChipName = cp.pChipName;
  pp.pMetricName = "smsp__sass_inst_executed";
  CK(cuptiSassMetricsGetProperties(&pp));
  CUpti_SassMetrics_Config cfg = {pp.metric.metricId, CUPTI_SASS_METRICS_OUTPUT_GRANULARITY_GPU};
  CUpti_SassMetricsSetConfig_Params sp = {CUpti_SassMetricsSetConfig_Params_STRUCT_SIZE};
  sp.numOfMetricConfig = 1;
  sp.pConfigs = &cfg;
  sp.deviceIndex = 0;
  CK(cuptiSassMetricsSetConfig(&sp));
  CUpti_SassMetricsEnable_Params ep = {CUpti_SassMetricsEnable_Params_STRUCT_SIZE};
  ep.ctx = ctx;
  ep.enableLazyPatching = 1;
  CK(cuptiSassMetricsEnable(&ep));
  return 0;
}

static int collect(CUcontext ctx, const char *where) {
  CUpti_SassMetricsGetDataProperties_Params dp = {CUpti_SassMetricsGetDataProperties_Params_STRUCT_SIZE};
  dp.ctx = ctx;
  CK(cuptiSassMetricsGetDataProperties(&dp));
  size_t n = dp.numOfPatchedInstructionRecords, inst = dp.numOfInstances;
  if (n == 0 || inst == 0) {
    printf("sass-probe[%s]: records %zu instances %zu\n", where, n, inst);
    return 1;
  }
  std::vector<CUpti_SassMetrics_Data> d(n);
  std::vector<CUpti_SassMetrics_InstanceValue> v(n * inst);
  for (size_t k = 0; k < n; k++) {
    memset(&d[k], 0, sizeof d[k]);
    d[k].structSize = sizeof d[k];
    d[k].pInstanceValues = &v[k * inst];
  }
  CUpti_SassMetricsFlushData_Params fp = {CUpti_SassMetricsFlushData_Params_STRUCT_SIZE};
  fp.ctx = ctx;
  fp.numOfPatchedInstructionRecords = n;
  fp.numOfInstances = inst;
  fp.pMetricsData = d.data();
  CK(cuptiSassMetricsFlushData(&fp));
  size_t nonzero = 0;
  unsigned long long at100 = 0, at160 = 0;
  for (size_t k = 0; k < n; k++) {
    nonzero += d[k].pInstanceValues[0].value != 0;
    if (d[k].functionName && strstr(d[k].functionName, "known_calls")) {
      if (d[k].pcOffset == 0x100) at100 = d[k].pInstanceValues[0].value;
      if (d[k].pcOffset == 0x160) at160 = d[k].pInstanceValues[0].value;
    }
  }
  printf("sass-probe[%s]: records %zu, nonzero %zu; known_calls +0x100 %llu +0x160 %llu "
         "(expected %d and %d)\n", where, n, nonzero, at100, at160, 3 * 640 * g_launches,
         640 * g_launches);
  return nonzero ? 0 : 1;
}

static void CUPTIAPI on_buf(uint8_t **b, size_t *sz, size_t *mx) {
  *sz = 1 << 20;
  *b = (uint8_t *)aligned_alloc(8, *sz);
  *mx = 0;
}
static size_t g_kernels;
static void CUPTIAPI on_done(CUcontext, uint32_t, uint8_t *b, size_t, size_t valid) {
  CUpti_Activity *r = NULL;
  while (cuptiActivityGetNextRecord(b, valid, &r) == CUPTI_SUCCESS)
    g_kernels += r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || r->kind == CUPTI_ACTIVITY_KIND_KERNEL;
  free(b);
}

static void CUPTIAPI on_cb(void *, CUpti_CallbackDomain dom, CUpti_CallbackId id, const void *data) {
  if (dom == CUPTI_CB_DOMAIN_RESOURCE && id == CUPTI_CBID_RESOURCE_CONTEXT_CREATED) {
    g_ctx = ((const CUpti_ResourceData *)data)->context;
    printf("sass-probe: enabling inside the context-created callback\n");
    enable(g_ctx);
  } else if (dom == CUPTI_CB_DOMAIN_RUNTIME_API &&
             ((const CUpti_CallbackData *)data)->callbackSite == CUPTI_API_EXIT) {
    g_result = collect(((const CUpti_CallbackData *)data)->context, "synchronize exit callback");
  }
}

int main(int argc, char **argv) {
  g_launches = argc > 1 ? atoi(argv[1]) : 10;
  const char *v = argc > 2 ? argv[2] : "";
  g_act = strstr(v, "actk") ? 2 : strstr(v, "act") != NULL;
  g_ctxcb = strstr(v, "ctxcb") != NULL;
  g_synccb = strstr(v, "synccb") != NULL;
  printf("sass-probe: variant '%s'\n", v);
  CUpti_SubscriberHandle sub;
  if (g_ctxcb || g_synccb) {
    CK(cuptiSubscribe(&sub, on_cb, NULL));
    if (g_ctxcb)
      CK(cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_CREATED));
    if (g_synccb)
      CK(cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API,
                             CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020));
  }
  if (g_act) {
    CK(cuptiActivityRegisterCallbacks(on_buf, on_done));
    CK(cuptiActivityEnable(g_act == 2 ? CUPTI_ACTIVITY_KIND_KERNEL : CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  }
  float *a, *o;
  if (cudaMalloc(&a, 1024 * sizeof(float)) != cudaSuccess ||
      cudaMalloc(&o, 80 * 256 * sizeof(float)) != cudaSuccess) {
    fprintf(stderr, "sass-probe: no GPU\n");
    return 77;
  }
  cudaMemset(a, 0, 1024 * sizeof(float));
  if (!g_ctxcb) {
    cuCtxGetCurrent(&g_ctx);
    if (enable(g_ctx))
      return 1;
  }
  for (int i = 0; i < g_launches; i++)
    known_calls<<<80, 256>>>(a, 64, 3, o);
  known<<<80, 256>>>(a, 64, o);
  printf("sass-probe: %d known_calls + 1 known: %s\n", g_launches,
         cudaGetErrorString(cudaDeviceSynchronize()));
  if (!g_synccb)
    g_result = collect(g_ctx, "main, after the synchronize");
  if (g_act) {
    cuptiActivityFlushAll(1);
    printf("sass-probe: %zu kernel activity records\n", g_kernels);
  }
  CUpti_SassMetricsDisable_Params xp = {CUpti_SassMetricsDisable_Params_STRUCT_SIZE};
  xp.ctx = g_ctx;
  CK(cuptiSassMetricsDisable(&xp));
  return g_result;
}

/* cupti-funcs.h - the libcupti entry points the CUDA back end calls, one
 * list per CUPTI API, and the one table they are resolved into
 * (gpd_cupti_fn, cupti-api.c): there is no link-time dependency on CUDA,
 * so libcupti is dlopen'd and each function comes from dlsym (CUDA's
 * headers give the types only).
 *
 *   GPD_CUPTI_CORE  callbacks and activity records: the back end itself
 *                   (cupti-api.c); without one of them it is disabled
 *   GPD_CUPTI_PCS   the PC Sampling API (cupti-pcsampling.c)
 *   GPD_CUPTI_SASS  the SASS Metrics API and the profiler's
 *                   initialization it needs (cupti-sass.c)
 *
 * Each entry is X(name, parameter list); every one returns CUptiResult.
 * cuptiGetGraphNodeId, optional and alone, is cupti-graph.c's own.
 */
#ifndef GPUPROF_CUPTI_FUNCS_H
#define GPUPROF_CUPTI_FUNCS_H

#include <cuda.h>
#include <cupti.h>
#include <cupti_pcsampling.h>
#include <cupti_profiler_target.h>
#include <cupti_sass_metrics.h>
#include <cupti_target.h>

#define GPD_CUPTI_CORE(X)                                                                    \
  X(cuptiSubscribe, (CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *))                  \
  X(cuptiUnsubscribe, (CUpti_SubscriberHandle))                                              \
  X(cuptiEnableCallback, (uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain, CUpti_CallbackId)) \
  X(cuptiEnableDomain, (uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain))             \
  X(cuptiGetCallbackName, (CUpti_CallbackDomain, uint32_t, const char **))                   \
  X(cuptiGetResultString, (CUptiResult, const char **))                                      \
  X(cuptiActivityEnable, (CUpti_ActivityKind))                                               \
  X(cuptiActivityDisable, (CUpti_ActivityKind))                                              \
  X(cuptiActivityRegisterCallbacks, (CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc)) \
  X(cuptiActivityRegisterTimestampCallback, (CUpti_TimestampCallbackFunc))                   \
  X(cuptiActivityGetNextRecord, (uint8_t *, size_t, CUpti_Activity **))                      \
  X(cuptiActivityGetNumDroppedRecords, (CUcontext, uint32_t, size_t *))                      \
  X(cuptiActivityFlushAll, (uint32_t))                                                       \
  X(cuptiGetDeviceId, (CUcontext, uint32_t *))                                               \
  X(cuptiFinalize, (void))

#define GPD_CUPTI_PCS(X)                                                                     \
  X(cuptiPCSamplingEnable, (CUpti_PCSamplingEnableParams *))                                 \
  X(cuptiPCSamplingDisable, (CUpti_PCSamplingDisableParams *))                               \
  X(cuptiPCSamplingSetConfigurationAttribute, (CUpti_PCSamplingConfigurationInfoParams *))   \
  X(cuptiPCSamplingGetConfigurationAttribute, (CUpti_PCSamplingConfigurationInfoParams *))   \
  X(cuptiPCSamplingGetData, (CUpti_PCSamplingGetDataParams *))                               \
  X(cuptiPCSamplingGetNumStallReasons, (CUpti_PCSamplingGetNumStallReasonsParams *))         \
  X(cuptiPCSamplingGetStallReasons, (CUpti_PCSamplingGetStallReasonsParams *))               \
  X(cuptiGetCubinCrc, (CUpti_GetCubinCrcParams *))

#define GPD_CUPTI_SASS(X)                                                                    \
  X(cuptiProfilerInitialize, (CUpti_Profiler_Initialize_Params *))                           \
  X(cuptiDeviceGetChipName, (CUpti_Device_GetChipName_Params *))                             \
  X(cuptiSassMetricsGetProperties, (CUpti_SassMetrics_GetProperties_Params *))               \
  X(cuptiSassMetricsSetConfig, (CUpti_SassMetricsSetConfig_Params *))                        \
  X(cuptiSassMetricsEnable, (CUpti_SassMetricsEnable_Params *))                              \
  X(cuptiSassMetricsDisable, (CUpti_SassMetricsDisable_Params *))                            \
  X(cuptiSassMetricsGetDataProperties, (CUpti_SassMetricsGetDataProperties_Params *))        \
  X(cuptiSassMetricsFlushData, (CUpti_SassMetricsFlushData_Params *))

/** Which list gpd_cupti_resolve resolves. */
typedef enum { GPD_CUPTI_API_CORE, GPD_CUPTI_API_PCS, GPD_CUPTI_API_SASS } gpd_cupti_api_t;

/** Every entry point of the three lists, and libcuda's
 *  cuDeviceGetAttribute (NULL when libcuda.so.1 was not loaded when the
 *  core list was resolved).  A list's pointers are set together, when
 *  gpd_cupti_resolve found all of them. */
typedef struct gpd_cupti_fn_s {
#define X(n, a) CUptiResult(CUPTIAPI *n) a;
  GPD_CUPTI_CORE(X)
  GPD_CUPTI_PCS(X)
  GPD_CUPTI_SASS(X)
#undef X
  CUresult (*cuDeviceGetAttribute)(int *, CUdevice_attribute, CUdevice);
} gpd_cupti_fn_t;

/** The table, written by gpd_cupti_resolve in gpd_cupti_start (before
 *  any callback is subscribed) and only read after that, by any thread. */
extern gpd_cupti_fn_t gpd_cupti_fn;

/** dlsym api's entry points from lib (libcupti's handle) into
 *  gpd_cupti_fn; the core list also looks up cuDeviceGetAttribute in an
 *  already loaded libcuda.so.1.  Returns NULL, or the name of the first
 *  entry point lib lacks (then none of api's pointers is changed).
 *  Called from gpd_cupti_start only (one thread). */
const char *gpd_cupti_resolve(void *lib, gpd_cupti_api_t api);

#endif

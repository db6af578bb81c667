/* cupti-sass.c - exact execution counts of SASS instructions through
 * CUPTI's SASS Metrics API (cupti_sass_metrics.h, CUDA 12.4+): the metric
 * smsp__sass_inst_executed (warp-level instructions executed) per
 * instruction, collected by the driver patching the kernels' SASS.
 *
 * Why: a call instruction's PC samples measure how long warps waited at
 * it, not how often it ran (docs/VALIDATION.md, H100); its execution count
 * is the call frequency the GPU calling-context reconstruction needs as
 * its call-edge weight (analyzer/gpu-attr.c).
 *
 * On for the process lifetime with GPUPROF_SASS_COUNTS=1, or with a PC
 * sampling window asked for with counts (`gpuprof sample --counts`).  Per
 * device once: cuptiProfilerInitialize, the chip name, the metric's id,
 * cuptiSassMetricsSetConfig (GPU granularity: one value per instruction);
 * per context: cuptiSassMetricsEnable with lazy patching (a function is
 * patched at its first launch in the range), on a thread where the
 * context is current.  At the end (context destroy, the window's end,
 * exit): GetDataProperties + FlushData, then Disable.  Each counted
 * instruction becomes PCSAMPLE records with the pseudo stall reason
 * "sass:inst_executed" (GPD_SASS_EXEC_NAME of analyzer/gpu-analysis.h)
 * whose `samples` are the count (split in records of at most 2^32-1).
 *
 * Threads: every call holds s_mu (the CUPTI calls of this file are
 * serialized); pushing waits for ring space at most 200 ms in all.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>
#include <cupti.h>
#include <cupti_profiler_target.h>
#include <cupti_sass_metrics.h>
#include <cupti_target.h>

#include "cupti-internal.h"
#include "gpuprof/clock.h"
#include "gpuprof/log.h"
#include "internal.h"
#include "shim.h"

#define SASS_MAXCTX 16u
#define SASS_MAXDEV 64u
#define SASS_METRIC "smsp__sass_inst_executed"
#define SASS_EXEC_NAME "sass:inst_executed" /* = GPD_SASS_EXEC_NAME */
#define SASS_MAX_RECORDS (1u << 22)         /* instructions per flush at most */
#define SASS_WAIT_NS 200000000ull

#define SASS_FUNCS(X)                                                                          \
  X(cuptiProfilerInitialize, (CUpti_Profiler_Initialize_Params *))                             \
  X(cuptiDeviceGetChipName, (CUpti_Device_GetChipName_Params *))                               \
  X(cuptiSassMetricsGetProperties, (CUpti_SassMetrics_GetProperties_Params *))                 \
  X(cuptiSassMetricsSetConfig, (CUpti_SassMetricsSetConfig_Params *))                          \
  X(cuptiSassMetricsEnable, (CUpti_SassMetricsEnable_Params *))                                \
  X(cuptiSassMetricsDisable, (CUpti_SassMetricsDisable_Params *))                              \
  X(cuptiSassMetricsGetDataProperties, (CUpti_SassMetricsGetDataProperties_Params *))          \
  X(cuptiSassMetricsFlushData, (CUpti_SassMetricsFlushData_Params *))

static struct {
#define X(n, a) CUptiResult(CUPTIAPI *n) a;
  SASS_FUNCS(X)
#undef X
  CUptiResult(CUPTIAPI *cuptiGetDeviceId)(CUcontext, uint32_t *);
} sf;

static pthread_mutex_t s_mu = PTHREAD_MUTEX_INITIALIZER;
static int s_avail;  /* the API is there */
static int s_always; /* GPUPROF_SASS_COUNTS=1 */
static int s_profiler_init;
static uint64_t s_metric[SASS_MAXDEV]; /* metric id per configured device; 0 = not */
static struct {
  CUcontext ctx;
  uint32_t dev;
} s_ctx[SASS_MAXCTX];
static int s_log_fail;

int gpd_cupti_sass_setup(void *lib) {
  const char *e = getenv("GPUPROF_SASS_COUNTS");
  if (lib == NULL)
    return 0;
#define X(n, a)                                                          \
  if (!(*(void **)&sf.n = dlsym(lib, #n))) {                             \
    if (e && *e == '1')                                                  \
      GPD_WARN("SASS counts off: libcupti lacks %s", #n);                \
    return -ENOSYS;                                                      \
  }
  SASS_FUNCS(X)
#undef X
  *(void **)&sf.cuptiGetDeviceId = dlsym(lib, "cuptiGetDeviceId");
  s_avail = sf.cuptiGetDeviceId != NULL;
  s_always = s_avail && e && *e == '1';
  return s_always;
}

/* Configure device dev for the metric (lock held).  0 or -1 (logged). */
static int sass_config_dev(uint32_t dev) {
  CUptiResult r;
  const char *what;
  if (!s_profiler_init) {
    CUpti_Profiler_Initialize_Params ip = {CUpti_Profiler_Initialize_Params_STRUCT_SIZE, NULL};
    what = "cuptiProfilerInitialize";
    if ((r = sf.cuptiProfilerInitialize(&ip)) != CUPTI_SUCCESS)
      goto fail;
    s_profiler_init = 1;
  }
  CUpti_Device_GetChipName_Params cp;
  memset(&cp, 0, sizeof cp);
  cp.structSize = CUpti_Device_GetChipName_Params_STRUCT_SIZE;
  cp.deviceIndex = dev;
  what = "cuptiDeviceGetChipName";
  if ((r = sf.cuptiDeviceGetChipName(&cp)) != CUPTI_SUCCESS)
    goto fail;
  CUpti_SassMetrics_GetProperties_Params pp;
  memset(&pp, 0, sizeof pp);
  pp.structSize = CUpti_SassMetrics_GetProperties_Params_STRUCT_SIZE;
  pp.pChipName = cp.pChipName;
  pp.pMetricName = SASS_METRIC;
  what = "cuptiSassMetricsGetProperties(" SASS_METRIC ")";
  if ((r = sf.cuptiSassMetricsGetProperties(&pp)) != CUPTI_SUCCESS)
    goto fail;
  CUpti_SassMetrics_Config cfg = {pp.metric.metricId, CUPTI_SASS_METRICS_OUTPUT_GRANULARITY_GPU};
  CUpti_SassMetricsSetConfig_Params sp;
  memset(&sp, 0, sizeof sp);
  sp.structSize = CUpti_SassMetricsSetConfig_Params_STRUCT_SIZE;
  sp.numOfMetricConfig = 1;
  sp.pConfigs = &cfg;
  sp.deviceIndex = dev;
  what = "cuptiSassMetricsSetConfig";
  if ((r = sf.cuptiSassMetricsSetConfig(&sp)) != CUPTI_SUCCESS)
    goto fail;
  s_metric[dev] = pp.metric.metricId ? pp.metric.metricId : 1;
  GPD_INFO("SASS counts: %s on device %u (%s)", SASS_METRIC, dev, cp.pChipName ? cp.pChipName : "?");
  return 0;
fail:
  GPD_LOG_ONCE(s_log_fail, GPD_LOG_WARN, "SASS counts off: %s failed (%d)", what, (int)r);
  return -1;
}

void gpd_cupti_sass_start(CUcontext ctx) {
  if (!s_avail || ctx == NULL)
    return;
  uint32_t dev = 0;
  pthread_mutex_lock(&s_mu);
  unsigned slot = SASS_MAXCTX;
  for (unsigned i = 0; i < SASS_MAXCTX; i++) {
    if (s_ctx[i].ctx == ctx)
      goto out; /* on already */
    if (s_ctx[i].ctx == NULL && slot == SASS_MAXCTX)
      slot = i;
  }
  if (slot == SASS_MAXCTX || sf.cuptiGetDeviceId(ctx, &dev) != CUPTI_SUCCESS || dev >= SASS_MAXDEV)
    goto out;
  if (s_metric[dev] == 0 && sass_config_dev(dev) < 0)
    goto out;
  CUpti_SassMetricsEnable_Params ep;
  memset(&ep, 0, sizeof ep);
  ep.structSize = CUpti_SassMetricsEnable_Params_STRUCT_SIZE;
  ep.ctx = ctx;
  ep.enableLazyPatching = 1;
  CUptiResult r = sf.cuptiSassMetricsEnable(&ep);
  if (r != CUPTI_SUCCESS) {
    GPD_LOG_ONCE(s_log_fail, GPD_LOG_WARN, "SASS counts off: cuptiSassMetricsEnable failed (%d)",
                 (int)r);
    goto out;
  }
  s_ctx[slot].ctx = ctx;
  s_ctx[slot].dev = dev;
  GPD_INFO("SASS counts on for a CUDA context (device %u)", dev);
out:
  pthread_mutex_unlock(&s_mu);
}

/* Push one count as PCSAMPLE records of at most 2^32-1 each. */
static void sass_push(uint32_t func, uint32_t stall, uint64_t cubin, uint64_t pc, uint32_t dev,
                      uint64_t count, uint64_t *budget) {
  while (count) {
    gpd_rec_pcsample_t r;
    memset(&r, 0, sizeof r);
    r.h.type = GPD_REC_PCSAMPLE;
    r.h.version = GPD_REC_VERSION;
    r.h.nslots = 1;
    r.func = func;
    r.stall = stall;
    r.cubin_id = cubin;
    r.pc = pc;
    r.device = dev;
    r.samples = count > UINT32_MAX ? UINT32_MAX : (uint32_t)count;
    count -= r.samples;
    uint64_t t0 = gpd_clock_ns();
    (void)gpd_thread_push_wait(&r, sizeof r, *budget);
    uint64_t waited = gpd_clock_ns() - t0;
    *budget = waited < *budget ? *budget - waited : 0;
  }
}

/* Flush, push and disable slot i (lock held). */
static void sass_finish(unsigned i) {
  CUcontext ctx = s_ctx[i].ctx;
  uint32_t dev = s_ctx[i].dev;
  CUpti_SassMetricsGetDataProperties_Params dp;
  memset(&dp, 0, sizeof dp);
  dp.structSize = CUpti_SassMetricsGetDataProperties_Params_STRUCT_SIZE;
  dp.ctx = ctx;
  CUptiResult r = sf.cuptiSassMetricsGetDataProperties(&dp);
  size_t n = dp.numOfPatchedInstructionRecords, inst = dp.numOfInstances;
  CUpti_SassMetrics_Data *data = NULL;
  CUpti_SassMetrics_InstanceValue *vals = NULL;
  size_t pushed = 0, noname = 0, zero = 0, nofunc = 0;
  if (r == CUPTI_SUCCESS && n && inst && n <= SASS_MAX_RECORDS && inst <= 4096 &&
      (data = calloc(n, sizeof *data)) != NULL && (vals = calloc(n * inst, sizeof *vals)) != NULL) {
    for (size_t k = 0; k < n; k++) {
      data[k].structSize = sizeof data[k];
      data[k].pInstanceValues = vals + k * inst;
    }
    CUpti_SassMetricsFlushData_Params fp;
    memset(&fp, 0, sizeof fp);
    fp.structSize = CUpti_SassMetricsFlushData_Params_STRUCT_SIZE;
    fp.ctx = ctx;
    fp.numOfPatchedInstructionRecords = n;
    fp.numOfInstances = inst;
    fp.pMetricsData = data;
    r = sf.cuptiSassMetricsFlushData(&fp);
    if (r == CUPTI_SUCCESS) {
      uint32_t stall = gpd_shim_string(SASS_EXEC_NAME, GPD_STR_STALL);
      uint64_t budget = SASS_WAIT_NS;
      if (stall == 0)
        GPD_WARN("SASS counts: no string id (not connected?): %zu counts not pushed", n);
      for (size_t k = 0; k < n && stall; k++) {
        if (data[k].functionName == NULL) {
          noname++;
          continue;
        }
        uint64_t v = 0;
        for (size_t q = 0; q < inst; q++)
          v += data[k].pInstanceValues[q].value;
        uint32_t func = v ? gpd_shim_string(data[k].functionName, GPD_STR_KERNEL) : 0;
        zero += v == 0;
        nofunc += v && func == 0;
        if (v == 0 || func == 0)
          continue;
        sass_push(func, stall, data[k].cubinCrc, data[k].pcOffset, dev, v, &budget);
        pushed++;
      }
    } else {
      GPD_WARN("SASS counts: cuptiSassMetricsFlushData failed (%d)", (int)r);
    }
  } else if (r != CUPTI_SUCCESS) {
    GPD_WARN("SASS counts: cuptiSassMetricsGetDataProperties failed (%d)", (int)r);
  } else if (n > SASS_MAX_RECORDS) {
    GPD_WARN("SASS counts: %zu instructions counted, more than %u: not read", n, SASS_MAX_RECORDS);
  }
  CUpti_SassMetricsDisable_Params xp;
  memset(&xp, 0, sizeof xp);
  xp.structSize = CUpti_SassMetricsDisable_Params_STRUCT_SIZE;
  xp.ctx = ctx;
  sf.cuptiSassMetricsDisable(&xp);
  GPD_INFO("SASS counts: %zu instructions counted in a CUDA context (device %u)", pushed, dev);
  if (getenv("GPUPROF_CUPTI_SELFTEST"))
    fprintf(stderr,
            "gpuprof-sass: instructions=%zu instances=%zu pushed=%zu noname=%zu zero=%zu "
            "nofunc=%zu first=%s+0x%x %llu (metric %llu, config %llu)\n",
            n, inst, pushed, noname, zero, nofunc,
            data && n && data[0].functionName ? data[0].functionName : "-",
            data && n ? data[0].pcOffset : 0,
            (unsigned long long)(vals && n ? vals[0].value : 0),
            (unsigned long long)(vals && n ? vals[0].metricId : 0), (unsigned long long)s_metric[dev]);
  free(data);
  free(vals);
  s_ctx[i].ctx = NULL;
}

void gpd_cupti_sass_stop(CUcontext ctx) {
  if (!s_avail)
    return;
  pthread_mutex_lock(&s_mu);
  for (unsigned i = 0; i < SASS_MAXCTX; i++)
    if (s_ctx[i].ctx && (ctx == NULL || s_ctx[i].ctx == ctx))
      sass_finish(i);
  pthread_mutex_unlock(&s_mu);
}

void gpd_cupti_sass_context_created(CUcontext ctx) {
  if (s_always)
    gpd_cupti_sass_start(ctx);
}

void gpd_cupti_sass_fork_prepare(void) { pthread_mutex_lock(&s_mu); }
void gpd_cupti_sass_fork_parent(void) { pthread_mutex_unlock(&s_mu); }
void gpd_cupti_sass_fork_child(void) {
  pthread_mutex_unlock(&s_mu);
  s_avail = s_always = 0; /* no CUDA in a fork child */
  memset(s_ctx, 0, sizeof s_ctx);
}

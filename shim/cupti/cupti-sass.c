/* cupti-sass.c - exact execution counts of SASS instructions through
 * CUPTI's SASS Metrics API (cupti_sass_metrics.h, CUDA 12.4+): the metric
 * smsp__sass_inst_executed (warp-level instructions executed) per
 * instruction, collected by the driver patching the kernels' SASS.
 *
 * Why: a call instruction's PC samples measure how long warps waited at
 * it, not how often it ran (docs/VALIDATION.md); its execution count
 * is the call frequency the GPU calling-context reconstruction needs as
 * its call-edge weight (analyzer/gtree.c).
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
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>
#include <cupti.h>
#include <cupti_profiler_target.h>
#include <cupti_sass_metrics.h>
#include <cupti_target.h>

#include "cupti-funcs.h"
#include "cupti-internal.h"
#include "gpuprof/clock.h"
#include "gpuprof/log.h"
#include "internal.h"
#include "shim.h"

#define SASS_MAXCTX 16u
#define SASS_MAXDEV 64u
#define SASS_MAXCRC 256u
#define SASS_METRIC "smsp__sass_inst_executed"
#define SASS_EXEC_NAME "sass:inst_executed" /* = GPD_SASS_EXEC_NAME */
#define SASS_MAX_RECORDS (1u << 22)         /* instructions per flush at most */
#define SASS_WAIT_NS 200000000ull
#define SASS_SYNC_NS 1000000000ull /* flush at a synchronize at most once a second */

static pthread_mutex_t s_mu = PTHREAD_MUTEX_INITIALIZER;
static int s_avail;  /* the API is there */
static int s_always; /* GPUPROF_SASS_COUNTS=1 */
static int s_profiler_init;
static uint64_t s_metric[SASS_MAXDEV]; /* metric id per configured device; 0 = not */
static struct {
  CUcontext ctx;
  uint32_t dev;
  uint64_t last_ns; /* last flush (gpd_clock_ns); 0 = none yet */
} s_ctx[SASS_MAXCTX];
static atomic_uint s_nctx; /* contexts counting (a lock-free early out) */
static CUcontext s_defer[SASS_MAXCTX]; /* created, enabled at their first API call */
static atomic_int s_ndefer;            /* s_defer is not empty */
static int s_enable_created;           /* GPUPROF_SASS_ENABLE=created */
static int s_kernel_serial;            /* serialized kernel records (default; =off: none) */
static int s_log_fail;
static int s_debug; /* GPUPROF_SASS_DEBUG=1: every stage on stderr */
static uint64_t s_crc[SASS_MAXCRC]; /* cuptiGetCubinCrc of loaded modules */
static unsigned s_ncrc;

#define SASS_DBG(...)                                           \
  do {                                                          \
    if (s_debug) {                                              \
      fprintf(stderr, "gpuprof-sass-debug: " __VA_ARGS__);      \
      fputc('\n', stderr);                                      \
    }                                                           \
  } while (0)

int gpd_cupti_sass_setup(void *lib) {
  const char *e = getenv("GPUPROF_SASS_COUNTS");
  if (lib == NULL)
    return 0;
  const char *missing = gpd_cupti_resolve(lib, GPD_CUPTI_API_SASS);
  if (missing) {
    if (e && *e == '1')
      GPD_WARN("SASS counts off: libcupti lacks %s", missing);
    return -ENOSYS;
  }
  s_avail = gpd_cupti_fn.cuptiGetDeviceId != NULL;
  s_always = s_avail && e && *e == '1';
  const char *pcs = getenv("GPUPROF_PC_SAMPLING");
  if (s_always && pcs && *pcs == '1') {
    GPD_WARN("GPUPROF_SASS_COUNTS=1 ignored: SASS counts and PC sampling do not combine in one "
             "process (the patched kernels lost their PC samples: docs/VALIDATION.md); count in a "
             "separate process of the same session (docs/ANALYZER-GPU.md)");
    s_always = 0;
  }
  const char *ka = getenv("GPUPROF_SASS_KERNEL_ACTIVITY");
  s_kernel_serial = !(ka && strcmp(ka, "off") == 0);
  if (s_always)
    GPD_WARN("SASS counts on: kernel activity records %s (CUPTI returns only zero counts while "
             "concurrent-kernel records are on: docs/VALIDATION.md)",
             s_kernel_serial ? "serialized (CUPTI_ACTIVITY_KIND_KERNEL)" : "off: no GKER in this process");
  const char *at = getenv("GPUPROF_SASS_ENABLE");
  s_enable_created = at && strcmp(at, "created") == 0;
  const char *dbg = getenv("GPUPROF_SASS_DEBUG");
  s_debug = dbg && *dbg == '1';
  SASS_DBG("API found; counts %s", s_always ? "on for the process lifetime" : "on request");
  return s_always;
}

/* Configure device dev for the metric (lock held).  0 or -1 (logged). */
static int sass_config_dev(uint32_t dev) {
  CUptiResult r;
  const char *what;
  if (!s_profiler_init) {
    CUpti_Profiler_Initialize_Params ip = {CUpti_Profiler_Initialize_Params_STRUCT_SIZE, NULL};
    what = "cuptiProfilerInitialize";
    if ((r = gpd_cupti_fn.cuptiProfilerInitialize(&ip)) != CUPTI_SUCCESS)
      goto fail;
    s_profiler_init = 1;
  }
  CUpti_Device_GetChipName_Params cp;
  memset(&cp, 0, sizeof cp);
  cp.structSize = CUpti_Device_GetChipName_Params_STRUCT_SIZE;
  cp.deviceIndex = dev;
  what = "cuptiDeviceGetChipName";
  if ((r = gpd_cupti_fn.cuptiDeviceGetChipName(&cp)) != CUPTI_SUCCESS)
    goto fail;
  CUpti_SassMetrics_GetProperties_Params pp;
  memset(&pp, 0, sizeof pp);
  pp.structSize = CUpti_SassMetrics_GetProperties_Params_STRUCT_SIZE;
  pp.pChipName = cp.pChipName;
  pp.pMetricName = SASS_METRIC;
  what = "cuptiSassMetricsGetProperties(" SASS_METRIC ")";
  if ((r = gpd_cupti_fn.cuptiSassMetricsGetProperties(&pp)) != CUPTI_SUCCESS)
    goto fail;
  CUpti_SassMetrics_Config cfg = {pp.metric.metricId, CUPTI_SASS_METRICS_OUTPUT_GRANULARITY_GPU};
  CUpti_SassMetricsSetConfig_Params sp;
  memset(&sp, 0, sizeof sp);
  sp.structSize = CUpti_SassMetricsSetConfig_Params_STRUCT_SIZE;
  sp.numOfMetricConfig = 1;
  sp.pConfigs = &cfg;
  sp.deviceIndex = dev;
  what = "cuptiSassMetricsSetConfig";
  if ((r = gpd_cupti_fn.cuptiSassMetricsSetConfig(&sp)) != CUPTI_SUCCESS)
    goto fail;
  s_metric[dev] = pp.metric.metricId ? pp.metric.metricId : 1;
  GPD_INFO("SASS counts: %s on device %u (%s)", SASS_METRIC, dev, cp.pChipName ? cp.pChipName : "?");
  SASS_DBG("configured device %u (%s): metric %s id %llu, GPU granularity", dev,
           cp.pChipName ? cp.pChipName : "?", SASS_METRIC, (unsigned long long)pp.metric.metricId);
  return 0;
fail:
  SASS_DBG("configuring device %u: %s failed (%d)", dev, what, (int)r);
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
  if (slot == SASS_MAXCTX || gpd_cupti_fn.cuptiGetDeviceId(ctx, &dev) != CUPTI_SUCCESS || dev >= SASS_MAXDEV)
    goto out;
  if (s_metric[dev] == 0 && sass_config_dev(dev) < 0)
    goto out;
  CUpti_SassMetricsEnable_Params ep;
  memset(&ep, 0, sizeof ep);
  ep.structSize = CUpti_SassMetricsEnable_Params_STRUCT_SIZE;
  ep.ctx = ctx;
  ep.enableLazyPatching = 1;
  CUptiResult r = gpd_cupti_fn.cuptiSassMetricsEnable(&ep);
  SASS_DBG("Enable (lazy patching) on a context of device %u: rc=%d, metric id %llu", dev, (int)r,
           (unsigned long long)s_metric[dev]);
  if (r != CUPTI_SUCCESS) {
    GPD_LOG_ONCE(s_log_fail, GPD_LOG_WARN, "SASS counts off: cuptiSassMetricsEnable failed (%d)",
                 (int)r);
    goto out;
  }
  s_ctx[slot].ctx = ctx;
  s_ctx[slot].dev = dev;
  s_ctx[slot].last_ns = 0;
  atomic_fetch_add(&s_nctx, 1);
  GPD_INFO("SASS counts on for a CUDA context (device %u)", dev);
out:
  pthread_mutex_unlock(&s_mu);
}

/* The decoder's hooks: the shim's string table and the thread's ring,
 * waiting for space out of one budget for the whole flush. */
static uint32_t sass_intern(void *ud, const char *text, unsigned kind) {
  (void)ud;
  return gpd_shim_string(text, kind);
}
static int sass_push(void *ud, const gpd_rec_pcsample_t *r) {
  uint64_t *budget = ud, t0 = gpd_clock_ns();
  int rc = gpd_thread_push_wait(r, sizeof *r, *budget);
  uint64_t waited = gpd_clock_ns() - t0;
  *budget = waited < *budget ? *budget - waited : 0;
  return rc;
}

/* GPUPROF_SASS_DEBUG=1: the first records as CUPTI gave them. */
static void sass_dump(const CUpti_SassMetrics_Data *d, size_t n, size_t inst) {
  for (size_t k = 0; k < n && k < 8; k++)
    fprintf(stderr,
            "gpuprof-sass-debug: record %zu: cubinCrc=0x%x functionIndex=%u functionName=%s "
            "pcOffset=0x%x value[0]={metric %llu, %llu}%s\n",
            k, d[k].cubinCrc, d[k].functionIndex, d[k].functionName ? d[k].functionName : "(null)",
            d[k].pcOffset,
            (unsigned long long)(inst && d[k].pInstanceValues ? d[k].pInstanceValues[0].metricId : 0),
            (unsigned long long)(inst && d[k].pInstanceValues ? d[k].pInstanceValues[0].value : 0),
            inst > 1 ? " ..." : "");
}

/* Flush slot i's counts so far and push them; counting goes on (CUPTI
 * resets its records at each flush: the pushes are deltas, which the
 * daemon adds up).  Lock held. */
static void sass_flush(unsigned i, const char *why) {
  CUcontext ctx = s_ctx[i].ctx;
  uint32_t dev = s_ctx[i].dev;
  s_ctx[i].last_ns = gpd_clock_ns();
  CUpti_SassMetricsGetDataProperties_Params dp;
  memset(&dp, 0, sizeof dp);
  dp.structSize = CUpti_SassMetricsGetDataProperties_Params_STRUCT_SIZE;
  dp.ctx = ctx;
  CUptiResult r = gpd_cupti_fn.cuptiSassMetricsGetDataProperties(&dp), fr = CUPTI_SUCCESS;
  size_t n = dp.numOfPatchedInstructionRecords, inst = dp.numOfInstances;
  CUpti_SassMetrics_Data *data = NULL;
  CUpti_SassMetrics_InstanceValue *vals = NULL;
  gpd_sass_stats_t st;
  memset(&st, 0, sizeof st);
  uint32_t stall = 0;
  SASS_DBG("flush (%s) of a context of device %u: GetDataProperties rc=%d records=%zu instances=%zu",
           why, dev, (int)r, n, inst);
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
    fr = gpd_cupti_fn.cuptiSassMetricsFlushData(&fp);
    SASS_DBG("FlushData rc=%d", (int)fr);
    if (fr == CUPTI_SUCCESS) {
      uint64_t budget = SASS_WAIT_NS;
      stall = gpd_shim_string(SASS_EXEC_NAME, GPD_STR_STALL);
      if (stall == 0)
        GPD_WARN("SASS counts: no string id (not connected?): %zu counts not pushed", n);
      if (s_debug)
        sass_dump(data, n, inst);
      gpd_sass_sink_t sink = {sass_intern, sass_push, &budget, stall, dev, s_metric[dev], s_crc,
                              s_ncrc};
      /* CUPTI's functionName strings stay with CUPTI (its sample frees
       * them, other users do not: a bounded leak beats a double free) */
      gpd_cupti_sass_decode(&sink, data, n, inst, &st);
    } else {
      GPD_WARN("SASS counts: cuptiSassMetricsFlushData failed (%d)", (int)fr);
    }
  } else if (r != CUPTI_SUCCESS) {
    GPD_WARN("SASS counts: cuptiSassMetricsGetDataProperties failed (%d)", (int)r);
  } else if (n > SASS_MAX_RECORDS) {
    GPD_WARN("SASS counts: %zu instructions counted, more than %u: not read", n, SASS_MAX_RECORDS);
  } else if (n && inst == 0) {
    GPD_WARN("SASS counts: %zu instructions patched but 0 instances per metric: not read", n);
  }
  GPD_INFO("SASS counts: %zu instructions counted in a CUDA context (device %u, %s)", st.pushed, dev,
           why);
  /* one line per stage: where the counts went (GPUPROF_SASS_DEBUG=1; the
   * self-test line for GPUPROF_CUPTI_SELFTEST) */
  SASS_DBG("decoded: records=%zu noname=%zu zero=%zu nonzero=%zu (executions %llu) "
           "metric_other=%zu",
           st.records, st.noname, st.zero, st.nonzero, (unsigned long long)st.sum, st.metric_other);
  SASS_DBG("binaries: %u module CRCs known; exact=%zu low32=%zu unmatched=%zu (first module 0x%llx)",
           s_ncrc, st.crc_exact, st.crc_low32, st.crc_none,
           (unsigned long long)(s_ncrc ? s_crc[0] : 0));
  SASS_DBG("strings: stall id %u, no function id %zu; pushed %zu instructions in %zu records, "
           "%zu lost to a full ring",
           stall, st.nofunc, st.pushed, st.recs_pushed, st.pushfail);
  if (getenv("GPUPROF_CUPTI_SELFTEST"))
    fprintf(stderr,
            "gpuprof-sass: %s: instructions=%zu instances=%zu pushed=%zu noname=%zu zero=%zu "
            "nofunc=%zu crc_none=%zu sum=%llu\n",
            why, n, inst, st.pushed, st.noname, st.zero, st.nofunc, st.crc_none,
            (unsigned long long)st.sum);
  free(data);
  free(vals);
}

/* Last flush, then disable slot i (lock held). */
static void sass_finish(unsigned i, const char *why) {
  sass_flush(i, why);
  CUpti_SassMetricsDisable_Params xp;
  memset(&xp, 0, sizeof xp);
  xp.structSize = CUpti_SassMetricsDisable_Params_STRUCT_SIZE;
  xp.ctx = s_ctx[i].ctx;
  CUptiResult xr = gpd_cupti_fn.cuptiSassMetricsDisable(&xp);
  SASS_DBG("Disable rc=%d dropped=%zu", (int)xr, xp.numOfDroppedRecords);
  s_ctx[i].ctx = NULL;
  atomic_fetch_sub(&s_nctx, 1);
}

/* The counts must be read while the context and its modules are whole:
 * read at exit (after the runtime's teardown began) every count was 0,
 * where the same API read right after a synchronize in the program gave
 * exact counts (docs/PERFORMANCE-CUDA.md, "Measurements behind the CUDA
 * back end's code").  So they
 * are flushed at the end of each synchronizing API call (at most once a
 * second per context, on the application thread, never waiting for the
 * lock) and when a module is about to be unloaded. */
void gpd_cupti_sass_on_sync(CUcontext ctx) {
  if (atomic_load_explicit(&s_nctx, memory_order_relaxed) == 0 || ctx == NULL)
    return;
  if (pthread_mutex_trylock(&s_mu) != 0)
    return;
  uint64_t now = gpd_clock_ns();
  for (unsigned i = 0; i < SASS_MAXCTX; i++)
    if (s_ctx[i].ctx == ctx && (s_ctx[i].last_ns == 0 || now - s_ctx[i].last_ns >= SASS_SYNC_NS))
      sass_flush(i, "synchronize");
  pthread_mutex_unlock(&s_mu);
}

void gpd_cupti_sass_module_unloading(void) {
  if (atomic_load_explicit(&s_nctx, memory_order_relaxed) == 0)
    return;
  pthread_mutex_lock(&s_mu);
  for (unsigned i = 0; i < SASS_MAXCTX; i++)
    if (s_ctx[i].ctx)
      sass_flush(i, "module unload");
  pthread_mutex_unlock(&s_mu);
}

void gpd_cupti_sass_stop(CUcontext ctx) {
  if (!s_avail)
    return;
  pthread_mutex_lock(&s_mu);
  for (unsigned i = 0; i < SASS_MAXCTX; i++)
    if (s_defer[i] && (ctx == NULL || s_defer[i] == ctx))
      s_defer[i] = NULL;
  for (unsigned i = 0; i < SASS_MAXCTX; i++)
    if (s_ctx[i].ctx && (ctx == NULL || s_ctx[i].ctx == ctx))
      sass_finish(i, ctx ? "context destroy" : "exit");
  pthread_mutex_unlock(&s_mu);
}

/* Lifetime mode enables a new context at its first API callback, not in
 * the context-created callback: enabled there, the kernels were patched
 * but every count read back was 0, where the same calls made after the
 * context's first use gave exact counts (docs/PERFORMANCE-CUDA.md,
 * "Measurements behind the CUDA back end's code").
 * GPUPROF_SASS_ENABLE=created keeps the old place (for comparison). */
void gpd_cupti_sass_context_created(CUcontext ctx) {
  if (!s_always)
    return;
  if (s_enable_created) {
    gpd_cupti_sass_start(ctx);
    return;
  }
  pthread_mutex_lock(&s_mu);
  for (unsigned i = 0; i < SASS_MAXCTX; i++)
    if (s_defer[i] == NULL) {
      s_defer[i] = ctx;
      atomic_store(&s_ndefer, 1);
      break;
    }
  pthread_mutex_unlock(&s_mu);
}

void gpd_cupti_sass_on_api(CUcontext ctx) {
  if (atomic_load_explicit(&s_ndefer, memory_order_relaxed) == 0 || ctx == NULL)
    return;
  if (pthread_mutex_trylock(&s_mu) != 0)
    return; /* the next API call tries again */
  int found = 0, left = 0;
  for (unsigned i = 0; i < SASS_MAXCTX; i++) {
    if (s_defer[i] == ctx) {
      s_defer[i] = NULL;
      found = 1;
    }
    left |= s_defer[i] != NULL;
  }
  atomic_store(&s_ndefer, left);
  pthread_mutex_unlock(&s_mu);
  if (found) {
    SASS_DBG("enabling at the context's first API callback");
    gpd_cupti_sass_start(ctx);
  }
}

/* With the SASS Metrics API counting, every count CUPTI returned was 0
 * while CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL was enabled, in the shim
 * and in a program of CUPTI calls alone (tests/gpuanalysis/sass-probe.cu
 * "act"; docs/PERFORMANCE-CUDA.md, "Measurements behind the CUDA back
 * end's code");
 * with CUPTI_ACTIVITY_KIND_KERNEL (serialized) instead the counts were
 * exact ("actk", and the shim), and with no kernel records at all the
 * shim got no patched instruction (GPUPROF_SASS_KERNEL_ACTIVITY=off). */
int gpd_cupti_sass_kernel_kind(void) {
  if (!s_always)
    return CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  return s_kernel_serial ? CUPTI_ACTIVITY_KIND_KERNEL : 0;
}

void gpd_cupti_sass_module(uint64_t crc) {
  pthread_mutex_lock(&s_mu);
  unsigned k = 0;
  while (k < s_ncrc && s_crc[k] != crc)
    k++;
  if (k == s_ncrc && s_ncrc < SASS_MAXCRC)
    s_crc[s_ncrc++] = crc;
  pthread_mutex_unlock(&s_mu);
  SASS_DBG("module loaded: cuptiGetCubinCrc 0x%llx", (unsigned long long)crc);
}

void gpd_cupti_sass_fork_prepare(void) { pthread_mutex_lock(&s_mu); }
void gpd_cupti_sass_fork_parent(void) { pthread_mutex_unlock(&s_mu); }
void gpd_cupti_sass_fork_child(void) {
  pthread_mutex_unlock(&s_mu);
  s_avail = s_always = 0; /* no CUDA in a fork child */
  memset(s_ctx, 0, sizeof s_ctx);
  memset(s_defer, 0, sizeof s_defer);
  atomic_store(&s_nctx, 0);
  atomic_store(&s_ndefer, 0);
}

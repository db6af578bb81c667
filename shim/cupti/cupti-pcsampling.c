/* cupti-pcsampling.c - GPU PC sampling through CUPTI's PC Sampling API
 * (cuptiPCSampling*), continuous collection mode, one configuration per
 * CUDA context.
 *
 * On for the process lifetime with GPUPROF_PC_SAMPLING=1, or for a window
 * on the daemon's request (`gpuprof sample`: a Control of kind
 * PC_SAMPLING, gpd_cupti_pcs_control); GPUPROF_PC_SAMPLING_PERIOD=N
 * (5..31) samples every 2^N cycles per SM (CUPTI's default otherwise; a
 * Control's period wins); GPUPROF_PC_SAMPLING_HWBUF_MB sizes the hardware
 * buffer (default 256).
 *
 * Threads: a context is enabled and configured on a thread where it is
 * current: in CUPTI's context-created callback (lifetime mode, or a
 * window that is open then), or, for a window opened later, at the next
 * CUDA API call of an application thread in that context (the connection
 * thread only sets g_want and g_pending; the API callback checks one
 * atomic, and enables under a trylock, never waiting).  Every context
 * CUPTI creates is remembered (g_known) so a window knows them.  At a
 * window's end the connection thread only clears g_want (it never calls
 * CUPTI: it must stay free to answer the daemon); each sampled context is
 * read one last time and disabled at its next CUDA API call, on that
 * application thread, so sampling's cost ends with the window (samples
 * read in between are kept; a context with no further API call stays
 * configured until it is destroyed or the process exits).  A drain thread of
 * our own ("gpuprof-pcsamp") calls cuptiPCSamplingGetData every 100 ms,
 * adds the PCs into a bounded table and pushes the table as PCSAMPLE
 * records (deltas) plus a PCSTATS record every second, on its own ring:
 * nothing runs on the application's kernel launches.  Kernel-serialized
 * mode is not used: it serializes launches, and an earlier probe on a
 * GPU got no samples from it (docs/PERFORMANCE-CUDA.md).  A context being destroyed, and the
 * process at exit, are drained synchronously (cuptiPCSamplingDisable
 * leaves the last data in the configured buffer).
 *
 * Another tool holding the profiling hardware (DCGM's profiling metrics,
 * Nsight Compute): an enable or configuration refused with a busy code
 * (gpd_cupti_busy_name, pcs = 1) undoes what it enabled, counts one busy
 * window (the first refusal of a window; gpd_cupti_control_busy) and the
 * context is tried again at an API call after a backoff (1 s doubling to
 * 60 s, gpd_cupti_busy_retry; a new window tries at once), never at every
 * call.
 *
 * The cubin of every loaded module gets a CUBIN record {cubinCrc, content
 * hash}, so that the daemon finds the stored gpubin a sample names.
 * CUPTI shares one functionName string per function across records and
 * buffers; it is never freed here (bounded by the functions loaded).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda.h>
#include <cupti.h>
#include <cupti_pcsampling.h>

#include "backends.h"
#include "cupti-funcs.h"
#include "cupti-internal.h"
#include "gpuprof/clock.h"
#include "gpuprof/error.h"
#include "gpuprof/hash.h"
#include "gpuprof/log.h"
#include "internal.h"
#include "shim.h"

#define PCS_MAXCTX 16u
#define PCS_COLLECT 2048u        /* PC records per GetData */
#define PCS_TABLE (1u << 17)     /* aggregated keys before a push */
#define PCS_DRAIN_NS 100000000ull /* GetData every 100 ms */
#define PCS_PUSH_EVERY 10u        /* push every 10 drains */
#define PCS_WAIT_NS 200000000ull  /* ring-full wait budget per push, all records */

typedef struct pcs_ctx_s {
  CUcontext ctx;
  uint32_t device;
  uint32_t nstall;
  uint32_t *stall_idx;  /* CUPTI's stall indexes */
  uint32_t *stall_str;  /* our string id of each (GPD_STR_STALL) */
  CUpti_PCSamplingData data;
  uint32_t period_log2, sm_count, clock_khz;
  uint64_t total, dropped, non_user; /* not yet pushed */
} pcs_ctx_t;

typedef struct pcs_key_s {
  uint64_t cubin, pc;
  uint32_t func, stall, device;
  uint32_t samples; /* 0 = empty slot */
} pcs_key_t;

static atomic_int g_on;      /* the API is there: contexts are tracked */
static int g_always;          /* GPUPROF_PC_SAMPLING=1: every context, always */
static atomic_int g_want;     /* a window is open: enable contexts */
static atomic_int g_pending;  /* a context's state differs from the window's: on at the
                                 next API call (g_want), or off (window ended) */
static atomic_int g_tail;     /* a window ended and a context is still on: its last samples
                                 are kept until that context is disabled */
static atomic_int g_win_period = -1; /* the window's period (-1: g_period) */
static atomic_uint g_win_flags;      /* the window's GPD_CONTROL_F_* */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER; /* contexts, table, CUPTI calls */
static pcs_ctx_t *g_ctx[PCS_MAXCTX];
/* Contexts CUPTI created (and not yet destroyed); enabling: one thread is
 * configuring it outside the lock. */
static struct {
  CUcontext ctx;
  int enabling;
} g_known[PCS_MAXCTX];
static pcs_key_t *g_tab;
static uint32_t g_tab_n;
static int g_thread_started;
static int g_period = -1;
static size_t g_hwbuf = 256u << 20;
/* Busy (another tool): no enable before g_busy_retry (ns; 0: none);
 * refusals in a row, and whether this window counted one.  g_mu. */
static _Atomic(uint64_t) g_busy_retry;
static unsigned g_busy_run;
static int g_win_busy;
static atomic_ulong c_pcs_records, c_pcs_samples, c_pcs_full, c_pcs_err, c_pcs_pushfail;

static void pcs_push_locked(void);
static void pcs_finish(unsigned c);

/* Samples read now belong to a window (or to lifetime sampling). */
static int pcs_keep(void) {
  return g_always || atomic_load(&g_want) || atomic_load(&g_tail);
}

/* ------------------------------------------------------------- table */

static uint32_t key_hash(uint64_t cubin, uint64_t pc, uint32_t func, uint32_t stall) {
  uint64_t h = cubin * 0x9e3779b97f4a7c15ull ^ pc * 0xbf58476d1ce4e5b9ull ^
               ((uint64_t)func << 32 | stall) * 0x94d049bb133111ebull;
  return (uint32_t)(h ^ (h >> 31));
}

static void tab_add(uint64_t cubin, uint64_t pc, uint32_t func, uint32_t stall, uint32_t device,
                    uint32_t n) {
  if (g_tab_n * 2 >= PCS_TABLE) { /* full enough: push what we have */
    atomic_fetch_add(&c_pcs_full, 1);
    pcs_push_locked();
  }
  uint32_t i = key_hash(cubin, pc, func, stall) & (PCS_TABLE - 1);
  for (;; i = (i + 1) & (PCS_TABLE - 1)) {
    pcs_key_t *k = &g_tab[i];
    if (k->samples == 0) {
      *k = (pcs_key_t){cubin, pc, func, stall, device, n};
      g_tab_n++;
      return;
    }
    if (k->cubin == cubin && k->pc == pc && k->func == func && k->stall == stall &&
        k->device == device) {
      k->samples = k->samples + n < k->samples ? UINT32_MAX : k->samples + n;
      return;
    }
  }
}

/* Push the table and the contexts' totals (lock held; drain thread or a
 * context teardown / exit). */
/* Push one record, waiting for ring space out of *budget (ns). */
/* A record of n bytes (a multiple of the slot size) zeroed, with its
 * header for `type`. */
static void rec_zero(gpd_rec_hdr_t *h, size_t n, unsigned type) {
  memset(h, 0, n);
  h->type = (uint8_t)type;
  h->version = GPD_REC_VERSION;
  h->nslots = (uint8_t)(n / GPD_SLOT_SIZE);
}

static int push_budget(const void *rec, size_t len, uint64_t *budget) {
  uint64_t t0 = gpd_clock_ns();
  int rc = gpd_thread_push_wait(rec, len, *budget);
  uint64_t waited = gpd_clock_ns() - t0;
  *budget = waited < *budget ? *budget - waited : 0;
  return rc;
}

static void pcs_push_locked(void) {
  uint64_t budget = PCS_WAIT_NS;
  /* totals first: one small record each, so a full ring drops samples,
   * not the totals GSAMP:TOT/DRP are made of */
  for (unsigned c = 0; c < PCS_MAXCTX; c++) {
    pcs_ctx_t *x = g_ctx[c];
    if (x == NULL || (x->total == 0 && x->dropped == 0))
      continue;
    gpd_rec_pcstats_t r;
    rec_zero(&r.h, sizeof r, GPD_REC_PCSTATS);
    r.device = x->device;
    r.period_log2 = x->period_log2;
    r.total = x->total;
    r.dropped = x->dropped;
    r.non_user = x->non_user;
    r.sm_count = x->sm_count;
    r.clock_khz = x->clock_khz;
    if (push_budget(&r, sizeof r, &budget) == 0)
      x->total = x->dropped = x->non_user = 0;
  }
  for (uint32_t i = 0; i < PCS_TABLE && g_tab_n; i++) {
    pcs_key_t *k = &g_tab[i];
    if (k->samples == 0)
      continue;
    gpd_rec_pcsample_t r;
    rec_zero(&r.h, sizeof r, GPD_REC_PCSAMPLE);
    r.func = k->func;
    r.stall = k->stall;
    r.cubin_id = k->cubin;
    r.pc = k->pc;
    r.samples = k->samples;
    r.device = k->device;
    if (push_budget(&r, sizeof r, &budget) < 0)
      atomic_fetch_add(&c_pcs_pushfail, 1);
    else
      atomic_fetch_add(&c_pcs_records, 1);
    k->samples = 0;
    g_tab_n--;
  }
  g_tab_n = 0;
}

/* Take what CUPTI has for one context into the table (lock held). */
static void pcs_take(pcs_ctx_t *x, const CUpti_PCSamplingData *d) {
  x->total += d->totalSamples;
  x->dropped += d->droppedSamples;
  x->non_user += d->nonUsrKernelsTotalSamples;
  size_t n = d->totalNumPcs < PCS_COLLECT ? d->totalNumPcs : PCS_COLLECT;
  for (size_t i = 0; i < n; i++) {
    const CUpti_PCSamplingPCData *p = &d->pPcData[i];
    if (p->functionName == NULL)
      continue;
    uint32_t func = gpd_shim_string(p->functionName, GPD_STR_KERNEL);
    if (func == 0)
      continue;
    size_t ns = p->stallReasonCount < x->nstall ? p->stallReasonCount : x->nstall;
    for (size_t s = 0; s < ns; s++) {
      const CUpti_PCSamplingStallReason *sr = &p->stallReason[s];
      if (sr->samples == 0)
        continue;
      uint32_t str = 0;
      for (uint32_t j = 0; j < x->nstall; j++)
        if (x->stall_idx[j] == sr->pcSamplingStallReasonIndex)
          str = x->stall_str[j];
      if (str == 0)
        continue;
      atomic_fetch_add_explicit(&c_pcs_samples, sr->samples, memory_order_relaxed);
      tab_add(p->cubinCrc, p->pcOffset, func, str, x->device, sr->samples);
    }
  }
}

/* GetData until CUPTI has no more for this context (lock held). */
static void pcs_drain_ctx(pcs_ctx_t *x) {
  for (int rounds = 0; rounds < 64; rounds++) {
    CUpti_PCSamplingGetDataParams gp;
    memset(&gp, 0, sizeof gp);
    gp.size = CUpti_PCSamplingGetDataParamsSize;
    gp.ctx = x->ctx;
    gp.pcSamplingData = &x->data;
    CUptiResult r = gpd_cupti_fn.cuptiPCSamplingGetData(&gp);
    if (r != CUPTI_SUCCESS) {
      atomic_fetch_add(&c_pcs_err, 1);
      GPD_DEBUG("cuptiPCSamplingGetData: %d", (int)r);
      return;
    }
    if (pcs_keep())
      pcs_take(x, &x->data); /* else: outside every window, dropped */
    if (x->data.remainingNumPcs == 0)
      return;
  }
}

static void *pcs_main(void *arg) {
  (void)arg;
  for (unsigned tick = 1;; tick++) {
    struct timespec ts = {0, (long)PCS_DRAIN_NS};
    nanosleep(&ts, NULL);
    pthread_mutex_lock(&g_mu);
    for (unsigned c = 0; c < PCS_MAXCTX; c++)
      if (g_ctx[c])
        pcs_drain_ctx(g_ctx[c]);
    if (tick % PCS_PUSH_EVERY == 0)
      pcs_push_locked();
    pthread_mutex_unlock(&g_mu);
  }
  return NULL;
}

/* ------------------------------------------------------- public */

int gpd_cupti_pcs_setup(void *libcupti) {
  const char *e = getenv("GPUPROF_PC_SAMPLING");
  int asked = e && *e == '1';
  if (libcupti == NULL || (e && *e == '0'))
    return 0; /* GPUPROF_PC_SAMPLING=0: not even on request */
  const char *missing = gpd_cupti_resolve(libcupti, GPD_CUPTI_API_PCS);
  if (missing) {
    if (asked)
      GPD_WARN("PC sampling off: libcupti lacks %s", missing);
    return -ENOSYS;
  }
  const char *p = getenv("GPUPROF_PC_SAMPLING_PERIOD");
  if (p && *p) {
    long v = strtol(p, NULL, 10);
    if (v >= 5 && v <= 31)
      g_period = (int)v;
    else
      GPD_WARN("GPUPROF_PC_SAMPLING_PERIOD=%s outside 5..31: CUPTI's default", p);
  }
  const char *hb = getenv("GPUPROF_PC_SAMPLING_HWBUF_MB");
  if (hb && atol(hb) > 0 && atol(hb) <= 4096)
    g_hwbuf = (size_t)atol(hb) << 20;
  if (asked && (g_tab = calloc(PCS_TABLE, sizeof *g_tab)) == NULL)
    return -ENOMEM;
  g_always = asked;
  atomic_store(&g_on, 1);
  return asked;
}

static void ctx_free(pcs_ctx_t *x) {
  if (x == NULL)
    return;
  if (x->data.pPcData) {
    for (size_t i = 0; i < PCS_COLLECT; i++)
      free(x->data.pPcData[i].stallReason);
    free(x->data.pPcData);
  }
  free(x->stall_idx);
  free(x->stall_str);
  free(x);
}

static int set_attr(CUcontext ctx, CUpti_PCSamplingConfigurationInfo *info, size_t n) {
  CUpti_PCSamplingConfigurationInfoParams cp;
  memset(&cp, 0, sizeof cp);
  cp.size = CUpti_PCSamplingConfigurationInfoParamsSize;
  cp.ctx = ctx;
  cp.numAttributes = n;
  cp.pPCSamplingConfigurationInfo = info;
  return (int)gpd_cupti_fn.cuptiPCSamplingSetConfigurationAttribute(&cp);
}

/* Another tool refused `what` (busy name `name`): back off, and count
 * this window busy once.  Takes g_mu. */
static void pcs_busy(const char *name, const char *what) {
  static const gpd_cupti_mode_t nowin = {.mode = GPD_CUPTI_DETACHED};
  pthread_mutex_lock(&g_mu);
  uint64_t now = gpd_clock_ns();
  g_busy_run++;
  atomic_store(&g_busy_retry, gpd_cupti_busy_retry(&nowin, 0, now, g_busy_run));
  int count = !g_win_busy;
  g_win_busy = 1;
  pthread_mutex_unlock(&g_mu);
  if (count)
    gpd_cupti_control_busy(GPD_CUPTI_BUSY_PCS, name, what);
}

/* Enable and configure sampling of ctx (current on this thread), and add
 * it to g_ctx.  Takes g_mu only at the end.  0 or -1 (logged). */
static int pcs_ctx_enable(CUcontext ctx) {
  pcs_ctx_t *x = calloc(1, sizeof *x);
  CUptiResult r;
  const char *what = "allocation";
  char **names = NULL;
  if (x == NULL)
    goto fail;
  x->ctx = ctx;
  if (gpd_cupti_fn.cuptiGetDeviceId)
    gpd_cupti_fn.cuptiGetDeviceId(ctx, &x->device);
  CUpti_PCSamplingEnableParams ep = {CUpti_PCSamplingEnableParamsSize, NULL, ctx};
  what = "cuptiPCSamplingEnable";
  if ((r = gpd_cupti_fn.cuptiPCSamplingEnable(&ep)) != CUPTI_SUCCESS)
    goto fail_r;
  CUpti_PCSamplingGetNumStallReasonsParams np;
  memset(&np, 0, sizeof np);
  size_t nstall = 0;
  np.size = CUpti_PCSamplingGetNumStallReasonsParamsSize;
  np.ctx = ctx;
  np.numStallReasons = &nstall;
  what = "cuptiPCSamplingGetNumStallReasons";
  if ((r = gpd_cupti_fn.cuptiPCSamplingGetNumStallReasons(&np)) != CUPTI_SUCCESS)
    goto fail_r;
  what = "allocation";
  if (nstall == 0 || nstall > 1024)
    goto fail;
  x->nstall = (uint32_t)nstall;
  x->stall_idx = calloc(nstall, sizeof *x->stall_idx);
  x->stall_str = calloc(nstall, sizeof *x->stall_str);
  names = calloc(nstall, sizeof *names);
  if (!x->stall_idx || !x->stall_str || !names)
    goto fail;
  for (size_t i = 0; i < nstall; i++)
    if ((names[i] = calloc(1, CUPTI_STALL_REASON_STRING_SIZE)) == NULL)
      goto fail;
  CUpti_PCSamplingGetStallReasonsParams sp;
  memset(&sp, 0, sizeof sp);
  sp.size = CUpti_PCSamplingGetStallReasonsParamsSize;
  sp.ctx = ctx;
  sp.numStallReasons = nstall;
  sp.stallReasonIndex = x->stall_idx;
  sp.stallReasons = names;
  what = "cuptiPCSamplingGetStallReasons";
  if ((r = gpd_cupti_fn.cuptiPCSamplingGetStallReasons(&sp)) != CUPTI_SUCCESS)
    goto fail_r;
  for (size_t i = 0; i < nstall; i++) {
    names[i][CUPTI_STALL_REASON_STRING_SIZE - 1] = 0;
    x->stall_str[i] = gpd_shim_string(names[i], GPD_STR_STALL);
  }
  /* the buffer GetData fills */
  what = "allocation";
  x->data.size = sizeof x->data;
  x->data.collectNumPcs = PCS_COLLECT;
  if ((x->data.pPcData = calloc(PCS_COLLECT, sizeof *x->data.pPcData)) == NULL)
    goto fail;
  for (size_t i = 0; i < PCS_COLLECT; i++) {
    x->data.pPcData[i].size = sizeof(CUpti_PCSamplingPCData);
    if ((x->data.pPcData[i].stallReason = calloc(nstall, sizeof(CUpti_PCSamplingStallReason))) ==
        NULL)
      goto fail;
  }
  /* configuration: continuous, all stall reasons, buffers, period */
  CUpti_PCSamplingConfigurationInfo info[7];
  size_t ni = 0;
  memset(info, 0, sizeof info);
  info[ni].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE;
  info[ni++].attributeData.collectionModeData.collectionMode =
      CUPTI_PC_SAMPLING_COLLECTION_MODE_CONTINUOUS;
  info[ni].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_STALL_REASON;
  info[ni].attributeData.stallReasonData.stallReasonCount = nstall;
  info[ni++].attributeData.stallReasonData.pStallReasonIndex = x->stall_idx;
  info[ni].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SCRATCH_BUFFER_SIZE;
  info[ni++].attributeData.scratchBufferSizeData.scratchBufferSize = 4u << 20;
  info[ni].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_HARDWARE_BUFFER_SIZE;
  info[ni++].attributeData.hardwareBufferSizeData.hardwareBufferSize = g_hwbuf;
  info[ni].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER;
  info[ni++].attributeData.samplingDataBufferData.samplingDataBuffer = &x->data;
  info[ni].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_ENABLE_START_STOP_CONTROL;
  info[ni++].attributeData.enableStartStopControlData.enableStartStopControl = 0;
  int period = atomic_load(&g_win_period) > 0 ? atomic_load(&g_win_period) : g_period;
  if (period > 0) {
    info[ni].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD;
    info[ni++].attributeData.samplingPeriodData.samplingPeriod = (uint32_t)period;
  }
  what = "cuptiPCSamplingSetConfigurationAttribute";
  if ((r = (CUptiResult)set_attr(ctx, info, ni)) != CUPTI_SUCCESS)
    goto fail_r;
  /* what GSAMP:PER and GSAMP:EXP need */
  CUpti_PCSamplingConfigurationInfo q;
  memset(&q, 0, sizeof q);
  q.attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD;
  CUpti_PCSamplingConfigurationInfoParams qp;
  memset(&qp, 0, sizeof qp);
  qp.size = CUpti_PCSamplingConfigurationInfoParamsSize;
  qp.ctx = ctx;
  qp.numAttributes = 1;
  qp.pPCSamplingConfigurationInfo = &q;
  if (gpd_cupti_fn.cuptiPCSamplingGetConfigurationAttribute(&qp) == CUPTI_SUCCESS)
    x->period_log2 = q.attributeData.samplingPeriodData.samplingPeriod;
  int v;
  if (gpd_cupti_fn.cuDeviceGetAttribute &&
      gpd_cupti_fn.cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, (CUdevice)x->device) ==
          CUDA_SUCCESS)
    x->sm_count = (uint32_t)v;
  if (gpd_cupti_fn.cuDeviceGetAttribute &&
      gpd_cupti_fn.cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, (CUdevice)x->device) ==
          CUDA_SUCCESS)
    x->clock_khz = (uint32_t)v;
  for (size_t i = 0; i < nstall; i++)
    free(names[i]);
  free(names);
  names = NULL;
  pthread_mutex_lock(&g_mu);
  if (g_tab == NULL)
    g_tab = calloc(PCS_TABLE, sizeof *g_tab);
  unsigned slot = g_tab ? PCS_MAXCTX : PCS_MAXCTX + 1;
  for (unsigned c = 0; c < PCS_MAXCTX && slot == PCS_MAXCTX; c++)
    if (g_ctx[c] == NULL)
      slot = c;
  if (slot < PCS_MAXCTX)
    g_ctx[slot] = x;
  if (slot < PCS_MAXCTX && !g_thread_started) {
    pthread_t th;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    if (pthread_create(&th, NULL, pcs_main, NULL) == 0) {
      pthread_detach(th);
      pthread_setname_np(th, "gpuprof-pcsamp");
      g_thread_started = 1;
    } else {
      GPD_WARN("PC sampling: no drain thread; samples read at context end and exit only");
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
  }
  pthread_mutex_unlock(&g_mu);
  if (slot >= PCS_MAXCTX) {
    GPD_WARN("PC sampling: %s; not sampled",
             slot == PCS_MAXCTX ? "more than 16 CUDA contexts" : "no memory for the sample table");
    CUpti_PCSamplingDisableParams dp = {CUpti_PCSamplingDisableParamsSize, NULL, ctx};
    gpd_cupti_fn.cuptiPCSamplingDisable(&dp);
    ctx_free(x);
    return -1;
  }
  GPD_INFO("PC sampling on for a CUDA context (device %u, %u stall reasons, period 2^%u)",
           x->device, x->nstall, x->period_log2);
  pthread_mutex_lock(&g_mu);
  int was_busy = g_busy_run != 0;
  g_busy_run = 0;
  atomic_store(&g_busy_retry, 0);
  pthread_mutex_unlock(&g_mu);
  if (was_busy)
    gpd_cupti_control_unbusy(GPD_CUPTI_BUSY_PCS);
  return 0;
fail_r:
  if (gpd_cupti_busy_name((int)r, 1))
    pcs_busy(gpd_cupti_busy_name((int)r, 1), what); /* logged once there */
  else
    GPD_WARN("PC sampling off for a CUDA context: %s failed (%d)", what, (int)r);
  if (x && strcmp(what, "cuptiPCSamplingEnable") != 0) {
    CUpti_PCSamplingDisableParams dp = {CUpti_PCSamplingDisableParamsSize, NULL, ctx};
    gpd_cupti_fn.cuptiPCSamplingDisable(&dp);
  }
  goto out;
fail:
  GPD_WARN("PC sampling off for a CUDA context: %s failed", what);
out:
  if (names)
    for (size_t i = 0; i < (x ? x->nstall : 0); i++)
      free(names[i]);
  free(names);
  ctx_free(x);
  return -1;
}

/* Is ctx sampled now (lock held)? */
static int ctx_on(CUcontext ctx) {
  for (unsigned c = 0; c < PCS_MAXCTX; c++)
    if (g_ctx[c] && g_ctx[c]->ctx == ctx)
      return 1;
  return 0;
}

/* g_pending = a window is open and a known context is not on (lock held). */
static void pending_update(void) {
  int p = 0;
  if (atomic_load(&g_want) || (g_always && g_busy_run)) { /* lifetime: a busy context retries */
    for (unsigned k = 0; k < PCS_MAXCTX; k++)
      if (g_known[k].ctx && !g_known[k].enabling && !ctx_on(g_known[k].ctx))
        p = 1;
  } else if (!g_always) {
    for (unsigned c = 0; c < PCS_MAXCTX; c++)
      if (g_ctx[c])
        p = 1; /* a window ended: disable at the context's next API call */
    if (!p)
      atomic_store(&g_tail, 0);
  }
  atomic_store(&g_pending, p);
}

/* Enable ctx from this thread (where it is current) when a window is open
 * and it is not on yet; the configuration runs outside the lock.  wait =
 * 0: a trylock (API callbacks). */
static void ctx_sync_here(CUcontext ctx, int wait) {
  if (wait)
    pthread_mutex_lock(&g_mu);
  else if (pthread_mutex_trylock(&g_mu) != 0)
    return; /* the next API call tries again */
  if (!g_always && !atomic_load(&g_want)) {
    /* the window ended: read this context's last samples and disable it
     * here, on an application thread where it is current (the connection
     * thread never calls CUPTI; docs/ANALYZER-GPU.md) */
    for (unsigned c = 0; c < PCS_MAXCTX; c++)
      if (g_ctx[c] && g_ctx[c]->ctx == ctx) {
        pcs_finish(c);
        GPD_INFO("PC sampling off for a CUDA context (the window ended)");
      }
    pending_update();
    pthread_mutex_unlock(&g_mu);
    return;
  }
  int k = -1;
  for (unsigned i = 0; i < PCS_MAXCTX; i++)
    if (g_known[i].ctx == ctx)
      k = (int)i;
  if (k < 0 || g_known[k].enabling || ctx_on(ctx) || !(g_always || atomic_load(&g_want))) {
    pthread_mutex_unlock(&g_mu);
    return;
  }
  g_known[k].enabling = 1;
  pending_update();
  pthread_mutex_unlock(&g_mu);
  (void)pcs_ctx_enable(ctx);
  pthread_mutex_lock(&g_mu);
  for (unsigned i = 0; i < PCS_MAXCTX; i++)
    if (g_known[i].ctx == ctx)
      g_known[i].enabling = 0;
  pending_update();
  pthread_mutex_unlock(&g_mu);
}

void gpd_cupti_pcs_context_created(CUcontext ctx) {
  if (!atomic_load(&g_on))
    return;
  pthread_mutex_lock(&g_mu);
  unsigned k = PCS_MAXCTX;
  for (unsigned i = 0; i < PCS_MAXCTX && k == PCS_MAXCTX; i++)
    if (g_known[i].ctx == NULL)
      k = i;
  if (k < PCS_MAXCTX)
    g_known[k].ctx = ctx;
  pthread_mutex_unlock(&g_mu);
  if (k == PCS_MAXCTX)
    GPD_WARN("PC sampling: more than %u CUDA contexts; not sampled", PCS_MAXCTX);
  else if (g_always || atomic_load(&g_want))
    ctx_sync_here(ctx, 1);
}

int gpd_cupti_pcs_pending(void) { return atomic_load(&g_pending); }

void gpd_cupti_pcs_on_api(CUcontext ctx) {
  if (ctx && atomic_load_explicit(&g_pending, memory_order_relaxed)) {
    uint64_t retry = atomic_load_explicit(&g_busy_retry, memory_order_relaxed);
    if (retry == 0 || gpd_clock_ns() >= retry) /* busy: backing off */
      ctx_sync_here(ctx, 0);
  }
}

/* Last data of one context: GetData, then Disable, which leaves what was
 * still in flight in the configured buffer (lock held). */
static void pcs_finish(unsigned c) {
  pcs_ctx_t *x = g_ctx[c];
  pcs_drain_ctx(x);
  x->data.totalNumPcs = 0;
  x->data.totalSamples = x->data.droppedSamples = x->data.nonUsrKernelsTotalSamples = 0;
  CUpti_PCSamplingDisableParams dp = {CUpti_PCSamplingDisableParamsSize, NULL, x->ctx};
  if (gpd_cupti_fn.cuptiPCSamplingDisable(&dp) == CUPTI_SUCCESS && pcs_keep())
    pcs_take(x, &x->data);
  pcs_push_locked();
  g_ctx[c] = NULL;
  ctx_free(x);
}

void gpd_cupti_pcs_context_destroy(CUcontext ctx) {
  if (!atomic_load(&g_on))
    return;
  pthread_mutex_lock(&g_mu);
  for (unsigned c = 0; c < PCS_MAXCTX; c++)
    if (g_ctx[c] && g_ctx[c]->ctx == ctx)
      pcs_finish(c);
  for (unsigned k = 0; k < PCS_MAXCTX; k++)
    if (g_known[k].ctx == ctx)
      g_known[k].ctx = NULL;
  pending_update();
  pthread_mutex_unlock(&g_mu);
}

int gpd_cupti_pcs_control(int enable, uint32_t duration_ms, uint32_t period, uint32_t flags,
                          uint32_t *targets, char *msg, size_t n) {
  if (!atomic_load(&g_on)) {
    snprintf(msg, n, "PC sampling is not available (libcupti lacks the PC Sampling API, or "
                     "GPUPROF_PC_SAMPLING=0)");
    return GPD_ENOVENDOR;
  }
  if (g_always) {
    snprintf(msg, n, "on for the process lifetime (GPUPROF_PC_SAMPLING=1); unchanged");
    return 0;
  }
  unsigned known = 0, stopped = 0;
  pthread_mutex_lock(&g_mu);
  for (unsigned k = 0; k < PCS_MAXCTX; k++)
    known += g_known[k].ctx != NULL;
  if (enable) {
    g_win_busy = 0; /* a new window: tried at once, counted once if busy */
    atomic_store(&g_busy_retry, 0);
    atomic_store(&g_win_period, period >= 5 && period <= 31 ? (int)period : -1);
    atomic_store(&g_win_flags, flags);
    atomic_store(&g_want, 1);
    pending_update();
    *targets = known;
    /* --counts is refused: SASS patching and PC sampling in one process
     * lost the patched kernels' samples, and the counts were all zero
     * while kernel records are traced (docs/VALIDATION.md) */
    const char *nc = (flags & GPD_CONTROL_F_COUNTS)
                         ? "; --counts refused (no SASS counts with PC sampling or kernel tracing)"
                         : "";
    if (known)
      snprintf(msg, n, "%u CUDA context%s: sampling starts at the next CUDA call in each%s", known,
               known == 1 ? "" : "s", nc);
    else
      snprintf(msg, n, "no CUDA context yet: sampling starts with the first one%s", nc);
  } else {
    /* Stop: each sampled context is read one last time and disabled at
     * its next CUDA API call, on that application thread (ctx_sync_here);
     * until then its samples are kept (g_tail).  No CUPTI call here: when
     * this thread called cuptiPCSamplingDisable while the application
     * kept the GPU busy, it never answered again (docs/VALIDATION.md). */
    atomic_store(&g_want, 0);
    for (unsigned c = 0; c < PCS_MAXCTX; c++)
      stopped += g_ctx[c] != NULL;
    atomic_store(&g_tail, stopped > 0);
    pending_update();
    *targets = stopped;
    snprintf(msg, n, "sampling stops at the next CUDA call in %u CUDA context%s", stopped,
             stopped == 1 ? "" : "s");
  }
  pthread_mutex_unlock(&g_mu);
  (void)duration_ms; /* the shim core keeps the window */
  return 0;
}

void gpd_cupti_pcs_module_loaded(const void *cubin, size_t size) {
  if (!atomic_load(&g_on) || cubin == NULL || size == 0)
    return;
  CUpti_GetCubinCrcParams cp;
  memset(&cp, 0, sizeof cp);
  cp.size = CUpti_GetCubinCrcParamsSize;
  cp.cubinSize = size;
  cp.cubin = cubin;
  if (gpd_cupti_fn.cuptiGetCubinCrc(&cp) != CUPTI_SUCCESS)
    return;
  gpd_cupti_sass_module(cp.cubinCrc); /* SASS counts name modules by a 32-bit CRC */
  char hex[33];
  gpd_hash128_hex(cubin, size, hex);
  gpd_rec_cubin_t r;
  memset(&r, 0, sizeof r);
  r.h.type = GPD_REC_CUBIN;
  r.h.version = GPD_REC_VERSION;
  r.h.nslots = GPD_REC_NSLOTS(r);
  r.cubin_id = cp.cubinCrc;
  memcpy(r.hash, hex, sizeof r.hash);
  (void)gpd_thread_push(&r, sizeof r);
}

void gpd_cupti_pcs_fini(void) {
  if (!atomic_load(&g_on))
    return;
  pthread_mutex_lock(&g_mu);
  for (unsigned c = 0; c < PCS_MAXCTX; c++)
    if (g_ctx[c])
      pcs_finish(c);
  pcs_push_locked();
  pthread_mutex_unlock(&g_mu);
  if (getenv("GPUPROF_CUPTI_SELFTEST"))
    fprintf(stderr,
            "gpuprof-pcsamp: records=%lu samples=%lu table_full=%lu getdata_err=%lu "
            "pushfail=%lu\n",
            atomic_load(&c_pcs_records), atomic_load(&c_pcs_samples), atomic_load(&c_pcs_full),
            atomic_load(&c_pcs_err), atomic_load(&c_pcs_pushfail));
}

/* A fork child has no CUDA: sampling stays off there. */
void gpd_cupti_pcs_fork_prepare(void) { pthread_mutex_lock(&g_mu); }
void gpd_cupti_pcs_fork_parent(void) { pthread_mutex_unlock(&g_mu); }
void gpd_cupti_pcs_fork_child(void) {
  pthread_mutex_unlock(&g_mu);
  atomic_store(&g_on, 0);
  atomic_store(&g_want, 0);
  atomic_store(&g_pending, 0);
  atomic_store(&g_tail, 0);
}

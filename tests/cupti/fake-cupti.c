/* fake-cupti.c - a stand-in for libcuda + libcupti (built as libcuda.so.1,
 * named by GPUPROF_CUPTI_PATH too) that drives the shim's real CUDA back
 * end through the CUPTI calls it makes: the CUDA graph test
 * (test-cupti-graphs.sh).  It keeps the subscriber's callback and the
 * buffer callbacks, names two driver callback ids (cuLaunchKernel,
 * cuGraphLaunch), fires the resource callbacks the subscriber enabled, and
 * hands out kernel / memset activity records with graphNodeId at a flush.
 * The program (graph-app.c) calls the fakecu_* functions, as an
 * application calls CUDA:
 *   fakecu_capture(h, type)  a launch captured into a graph: the
 *                            cuLaunchKernel API callbacks around
 *                            GRAPHNODE_CREATED of node h;
 *   fakecu_add_node(h, type) cudaGraphAdd*Node: GRAPHNODE_CREATED alone;
 *   fakecu_clone(h, orig)    instantiation: GRAPHNODE_CLONED;
 *   fakecu_graph_launch(h, types, n)  cuGraphLaunch running nodes h[0..n):
 *                            one record each (kernel "gpd_fake_k<i>", or
 *                            a 4 KiB memset), all with the launch's
 *                            correlation id.
 *   fakecu_launch()          one cuLaunchKernel of kernel "gpd_fake_busy"
 *                            (test-cupti-busy.sh's busy-app);
 *   fakecu_context_create()  CONTEXT_CREATED of the one context, which
 *                            every API callback then names;
 *   fakecu_finalized()       1 while no subscriber is there after a
 *                            cuptiFinalize (0 before the first);
 *   fakecu_window()          while the kernel activity kind is enabled
 *                            (a tracing window), how many times it was
 *                            enabled (the window's number), else 0.
 * And the runtime's graph-building calls (libcudart's names, the
 * programs' references bind to the shim's interposers first):
 * cudaStreamBeginCapture / cudaStreamEndCapture / cudaGraphCreate (no
 * effect, graph handle 0x9), cudaGraphAddKernelNode (GRAPHNODE_CREATED of
 * a kernel node whose handle is the params' func value) and
 * cudaGraphAddMemsetNode (a memset node, handle = the params' dst).
 * The PC Sampling API is there too, with one stall reason
 * ("smsp__pcsamp_warps_issue_stalled_fake"): GetData hands back no PCs,
 * or with FAKE_CUPTI_PCS_SAMPLES=N, while the context is enabled, one PC
 * (kernel "gpd_fake_busy", cubin CRC 1, offset 0x10) with N samples of
 * that reason at each call.
 * A node's CUPTI id is its handle's value.
 *
 * Runtime launches (test-cupti-duty.sh's duty-app): cudaLaunchKernel
 * (libcudart's name: the shim's counting interposer counts it first)
 * calls the runtime API callbacks of cudaLaunchKernel_v7000 around one
 * kernel "gpd_fake_rt" with the call's correlation id, which runs
 * FAKE_CUPTI_KERNEL_MS ms (default 0): until then its record is
 * incomplete.  Like CUPTI, an unforced flush hands back nothing while a
 * queued record is incomplete; a forced one hands back everything, the
 * incomplete records without times (start = end = 0).
 *
 * Like CUPTI, it calls only the API callbacks the subscriber enabled, and
 * queues a record only while its activity kind is enabled; cuptiFinalize
 * drops the subscription, the enabled callbacks and kinds, and what is
 * queued.  Another tool holding CUPTI, on demand:
 *   FAKE_CUPTI_BUSY=N      the first N cuptiSubscribe calls return
 *                          CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
 *   FAKE_CUPTI_BUSY=/PATH  every call does while the file PATH exists;
 *   FAKE_CUPTI_PCS_BUSY=/PATH  cuptiPCSamplingEnable returns
 *                          CUPTI_ERROR_HARDWARE_BUSY while PATH exists.
 * FAKE_CUPTI_STATS=PATH: at unload, the kernel records handed to the
 * subscriber (at flushes), the subscribe calls, refused ones apart, and the
 * PC-sampling enables, refused ones apart, are written to PATH ("kernels K
 * subscribes S refused R pcs_enables E pcs_refused F pcs_samples N"; N:
 * the PC samples GetData handed out). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime_api.h>
#include <cupti.h>
#include <cupti_pcsampling.h>

static CUpti_CallbackFunc g_cb;
static void *g_ud;
static CUpti_BuffersCallbackRequestFunc g_req;
static CUpti_BuffersCallbackCompleteFunc g_done;
static unsigned char g_res_on[CUPTI_CBID_RESOURCE_SIZE];
static unsigned char g_drv_on[CUPTI_DRIVER_TRACE_CBID_SIZE];
static unsigned char g_rt_on[CUPTI_RUNTIME_TRACE_CBID_SIZE];
static unsigned char g_kind_on[CUPTI_ACTIVITY_KIND_COUNT];
static unsigned long g_delivered, g_subscribes, g_refused; /* g_mu */
static unsigned long g_pcs_enables, g_pcs_refused;          /* g_mu */
static unsigned long g_pcs_samples;                          /* g_mu */
static int g_pcs_on;                                         /* g_mu: enabled, not yet disabled */
#define FAKE_CTX ((CUcontext)(uintptr_t)0xc047e87)
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static uint32_t g_corr;
static uint64_t g_ts = 1000;
#define PEND_BYTES (1u << 20)
static _Alignas(8) uint8_t g_pend[PEND_BYTES];
static size_t g_npend;
/* Queued kernel records that complete later: their offset in g_pend and
 * when they complete (CLOCK_MONOTONIC ns); g_mu. */
#define LATE_MAX 4096
static struct {
  size_t off;
  uint64_t done;
} g_late[LATE_MAX];
static size_t g_nlate;

#define ALIGN8(n) (((n) + 7) & ~(size_t)7)

/* Another tool holds the subscription now (FAKE_CUPTI_BUSY); g_mu. */
static int busy_now(void) {
  const char *b = getenv("FAKE_CUPTI_BUSY");
  if (!b || !*b)
    return 0;
  if (*b == '/')
    return access(b, F_OK) == 0;
  return g_subscribes <= strtoul(b, NULL, 10);
}

CUptiResult CUPTIAPI cuptiSubscribe(CUpti_SubscriberHandle *s, CUpti_CallbackFunc cb, void *ud) {
  pthread_mutex_lock(&g_mu);
  g_subscribes++;
  int busy = busy_now();
  g_refused += (unsigned long)busy;
  pthread_mutex_unlock(&g_mu);
  if (busy)
    return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  __atomic_store_n(&g_ud, ud, __ATOMIC_RELAXED);
  __atomic_store_n(&g_cb, cb, __ATOMIC_RELEASE);
  *s = (CUpti_SubscriberHandle)&g_cb;
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiUnsubscribe(CUpti_SubscriberHandle s) {
  (void)s;
  __atomic_store_n(&g_cb, NULL, __ATOMIC_RELEASE);
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiEnableCallback(uint32_t on, CUpti_SubscriberHandle s, CUpti_CallbackDomain d,
                                         CUpti_CallbackId id) {
  (void)s;
  if (d == CUPTI_CB_DOMAIN_RESOURCE && id < CUPTI_CBID_RESOURCE_SIZE)
    __atomic_store_n(&g_res_on[id], (unsigned char)(on != 0), __ATOMIC_RELAXED);
  if (d == CUPTI_CB_DOMAIN_DRIVER_API && id < CUPTI_DRIVER_TRACE_CBID_SIZE)
    __atomic_store_n(&g_drv_on[id], (unsigned char)(on != 0), __ATOMIC_RELAXED);
  if (d == CUPTI_CB_DOMAIN_RUNTIME_API && id < CUPTI_RUNTIME_TRACE_CBID_SIZE)
    __atomic_store_n(&g_rt_on[id], (unsigned char)(on != 0), __ATOMIC_RELAXED);
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiEnableDomain(uint32_t on, CUpti_SubscriberHandle s, CUpti_CallbackDomain d) {
  (void)on, (void)s, (void)d;
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiGetCallbackName(CUpti_CallbackDomain d, uint32_t id, const char **name) {
  if (d == CUPTI_CB_DOMAIN_DRIVER_API && id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel)
    *name = "cuLaunchKernel";
  else if (d == CUPTI_CB_DOMAIN_DRIVER_API && id == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch)
    *name = "cuGraphLaunch";
  else if (d == CUPTI_CB_DOMAIN_RUNTIME_API && id == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000)
    *name = "cudaLaunchKernel_v7000";
  else
    return CUPTI_ERROR_INVALID_PARAMETER;
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult r, const char **s) {
  *s = r == CUPTI_SUCCESS ? "success" : "fake CUPTI error";
  return CUPTI_SUCCESS;
}
static unsigned long g_kernel_enables;
CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind k) {
  if (k == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
    __atomic_add_fetch(&g_kernel_enables, 1, __ATOMIC_RELAXED);
  if ((unsigned)k < CUPTI_ACTIVITY_KIND_COUNT)
    __atomic_store_n(&g_kind_on[k], 1, __ATOMIC_RELAXED);
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiActivityDisable(CUpti_ActivityKind k) {
  if ((unsigned)k < CUPTI_ACTIVITY_KIND_COUNT)
    __atomic_store_n(&g_kind_on[k], 0, __ATOMIC_RELAXED);
  return CUPTI_SUCCESS;
}
static int kind_on(CUpti_ActivityKind k) { return __atomic_load_n(&g_kind_on[k], __ATOMIC_RELAXED); }
CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc req,
                                                    CUpti_BuffersCallbackCompleteFunc done) {
  g_req = req;
  g_done = done;
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc f) {
  (void)f;
  return CUPTI_SUCCESS;
}

static size_t rec_size(const CUpti_Activity *r) {
  return ALIGN8(r->kind == CUPTI_ACTIVITY_KIND_MEMSET ? sizeof(CUpti_ActivityMemset4)
                                                       : sizeof(CUpti_ActivityKernel10));
}

CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t *buf, size_t valid, CUpti_Activity **rec) {
  size_t off = *rec ? (size_t)((uint8_t *)*rec - buf) + rec_size(*rec) : 0;
  if (off >= valid)
    return CUPTI_ERROR_MAX_LIMIT_REACHED;
  *rec = (CUpti_Activity *)(buf + off);
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext c, uint32_t s, size_t *n) {
  (void)c, (void)s;
  *n = 0;
  return CUPTI_SUCCESS;
}
static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The late records complete by now get their times; 1 when one is still
 * incomplete.  g_mu. */
static int late_settle(void) {
  uint64_t now = mono_ns();
  int left = 0;
  for (size_t i = 0; i < g_nlate; i++) {
    CUpti_ActivityKernel10 *k = (CUpti_ActivityKernel10 *)(g_pend + g_late[i].off);
    if (k->start == 0 && now >= g_late[i].done) {
      k->start = g_ts;
      k->end = g_ts += 100;
    }
    left |= k->start == 0;
  }
  return left;
}

CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t flag) {
  pthread_mutex_lock(&g_mu);
  if (late_settle() && !(flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED)) {
    pthread_mutex_unlock(&g_mu);
    return CUPTI_SUCCESS; /* the buffer holds an incomplete record: not handed back */
  }
  g_nlate = 0;
  if (g_npend && g_req && g_done) {
    uint8_t *buf = NULL;
    size_t size = 0, maxrec = 0;
    g_req(&buf, &size, &maxrec);
    if (buf && size >= g_npend) {
      memcpy(buf, g_pend, g_npend);
      for (size_t off = 0; off < g_npend;) {
        const CUpti_Activity *r = (const CUpti_Activity *)(g_pend + off);
        g_delivered += r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
        off += rec_size(r);
      }
      g_done(NULL, 0, buf, size, g_npend);
      g_npend = 0;
    }
  }
  pthread_mutex_unlock(&g_mu);
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiGetDeviceId(CUcontext c, uint32_t *dev) {
  (void)c;
  *dev = 0;
  return CUPTI_SUCCESS;
}
static unsigned long g_finalizes;
CUptiResult CUPTIAPI cuptiFinalize(void) {
  pthread_mutex_lock(&g_mu);
  g_finalizes++;
  __atomic_store_n(&g_cb, NULL, __ATOMIC_RELEASE);
  memset(g_res_on, 0, sizeof g_res_on);
  memset(g_drv_on, 0, sizeof g_drv_on);
  memset(g_rt_on, 0, sizeof g_rt_on);
  g_nlate = 0;
  memset(g_kind_on, 0, sizeof g_kind_on);
  g_req = NULL;
  g_done = NULL;
  g_npend = 0;
  g_nlate = 0;
  pthread_mutex_unlock(&g_mu);
  return CUPTI_SUCCESS;
}

__attribute__((destructor)) static void fake_stats(void) {
  const char *p = getenv("FAKE_CUPTI_STATS");
  FILE *f = p && *p ? fopen(p, "w") : NULL;
  if (!f)
    return;
  pthread_mutex_lock(&g_mu);
  fprintf(f, "kernels %lu subscribes %lu refused %lu pcs_enables %lu pcs_refused %lu pcs_samples %lu\n", g_delivered,
          g_subscribes, g_refused, g_pcs_enables, g_pcs_refused, g_pcs_samples);
  pthread_mutex_unlock(&g_mu);
  fclose(f);
}
CUptiResult CUPTIAPI cuptiGetGraphNodeId(CUgraphNode n, uint64_t *id) {
  if (!n)
    return CUPTI_ERROR_INVALID_PARAMETER;
  *id = (uint64_t)(uintptr_t)n;
  return CUPTI_SUCCESS;
}

/* --- the "driver" the program calls ---------------------------------- */
/* The API callback of domain dom's id, if enabled. */
static void api_dom(CUpti_CallbackDomain dom, CUpti_CallbackId id, const char *fn, CUpti_ApiCallbackSite site,
                    uint32_t corr) {
  CUpti_CallbackData d;
  memset(&d, 0, sizeof d);
  d.callbackSite = site;
  d.functionName = fn;
  d.correlationId = corr;
  d.context = FAKE_CTX;
  const unsigned char *on = dom == CUPTI_CB_DOMAIN_RUNTIME_API ? g_rt_on : g_drv_on;
  unsigned n = dom == CUPTI_CB_DOMAIN_RUNTIME_API ? CUPTI_RUNTIME_TRACE_CBID_SIZE : CUPTI_DRIVER_TRACE_CBID_SIZE;
  CUpti_CallbackFunc cb = __atomic_load_n(&g_cb, __ATOMIC_ACQUIRE);
  if (cb && id < n && __atomic_load_n(&on[id], __ATOMIC_RELAXED))
    cb(__atomic_load_n(&g_ud, __ATOMIC_RELAXED), dom, id, &d);
}
static void api(CUpti_CallbackId id, const char *fn, CUpti_ApiCallbackSite site, uint32_t corr) {
  api_dom(CUPTI_CB_DOMAIN_DRIVER_API, id, fn, site, corr);
}

static void resource(CUpti_CallbackId id, uint64_t node, uint64_t orig, int type, CUcontext ctx) {
  CUpti_GraphData g;
  memset(&g, 0, sizeof g);
  g.node = (CUgraphNode)(uintptr_t)node;
  g.originalNode = (CUgraphNode)(uintptr_t)orig;
  g.nodeType = (CUgraphNodeType)type;
  CUpti_ResourceData r;
  memset(&r, 0, sizeof r);
  r.resourceDescriptor = &g;
  r.context = ctx;
  CUpti_CallbackFunc cb = __atomic_load_n(&g_cb, __ATOMIC_ACQUIRE);
  if (cb && __atomic_load_n(&g_res_on[id], __ATOMIC_RELAXED))
    cb(__atomic_load_n(&g_ud, __ATOMIC_RELAXED), CUPTI_CB_DOMAIN_RESOURCE, id, &r);
}

void fakecu_capture(uint64_t h, int type) {
  uint32_t c = __atomic_add_fetch(&g_corr, 1, __ATOMIC_RELAXED);
  api(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, "cuLaunchKernel", CUPTI_API_ENTER, c);
  resource(CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, h, 0, type, NULL);
  api(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, "cuLaunchKernel", CUPTI_API_EXIT, c);
}

void fakecu_add_node(uint64_t h, int type) { resource(CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, h, 0, type, NULL); }

void fakecu_clone(uint64_t h, uint64_t orig, int type) {
  resource(CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED, h, orig, type, NULL);
}

int fakecu_finalized(void) {
  return __atomic_load_n(&g_finalizes, __ATOMIC_RELAXED) && __atomic_load_n(&g_cb, __ATOMIC_ACQUIRE) == NULL;
}

unsigned long fakecu_window(void) {
  return kind_on(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) ? __atomic_load_n(&g_kernel_enables, __ATOMIC_RELAXED) : 0;
}

#define FAKE_GRAPH ((cudaGraph_t)(uintptr_t)0x9)
cudaError_t cudaStreamBeginCapture(cudaStream_t s, enum cudaStreamCaptureMode m) {
  (void)s, (void)m;
  return cudaSuccess;
}
cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *g) {
  (void)s;
  *g = FAKE_GRAPH;
  return cudaSuccess;
}
cudaError_t cudaGraphCreate(cudaGraph_t *g, unsigned int flags) {
  (void)flags;
  *g = FAKE_GRAPH;
  return cudaSuccess;
}
/* cudaGraphAdd*Node: node h of `type` made (handle *n). */
static cudaError_t add_node(cudaGraphNode_t *n, const void *h, int type) {
  *n = (cudaGraphNode_t)h;
  resource(CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, (uint64_t)(uintptr_t)h, 0, type, NULL);
  return cudaSuccess;
}
cudaError_t cudaGraphAddKernelNode(cudaGraphNode_t *n, cudaGraph_t g, const cudaGraphNode_t *deps, size_t nd,
                                   const struct cudaKernelNodeParams *p) {
  (void)g, (void)deps, (void)nd;
  return add_node(n, p->func, CU_GRAPH_NODE_TYPE_KERNEL);
}
cudaError_t cudaGraphAddMemsetNode(cudaGraphNode_t *n, cudaGraph_t g, const cudaGraphNode_t *deps, size_t nd,
                                   const struct cudaMemsetParams *p) {
  (void)g, (void)deps, (void)nd;
  return add_node(n, p->dst, CU_GRAPH_NODE_TYPE_MEMSET);
}

void fakecu_context_create(void) { resource(CUPTI_CBID_RESOURCE_CONTEXT_CREATED, 0, 0, 0, FAKE_CTX); }

static const char *const knames[] = {"gpd_fake_k0", "gpd_fake_k1", "gpd_fake_k2", "gpd_fake_k3"};

/* The fields of a one-block kernel record of kernel `name`. */
static void kernel_init(CUpti_ActivityKernel10 *k, const char *name) {
  k->kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k->name = name;
  k->gridX = k->gridY = k->gridZ = 1;
  k->blockX = 32;
  k->blockY = k->blockZ = 1;
}

/* Queue record r (n bytes) for the next flush; g_mu held. */
static void pend(const void *r, size_t n) {
  if (g_npend + ALIGN8(n) <= PEND_BYTES) {
    memcpy(g_pend + g_npend, r, n);
    g_npend += ALIGN8(n);
  }
}

/* The fields kernel and memset records share, for node h of launch c. */
#define RUN_FIELDS(r, c, h)  \
  do {                       \
    (r).start = g_ts;        \
    (r).end = g_ts += 100;   \
    (r).streamId = 1;        \
    (r).correlationId = (c); \
    (r).graphNodeId = (h);   \
  } while (0)

void fakecu_graph_launch(const uint64_t *h, const int *types, int n) {
  uint32_t c = __atomic_add_fetch(&g_corr, 1, __ATOMIC_RELAXED);
  api(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, "cuGraphLaunch", CUPTI_API_ENTER, c);
  pthread_mutex_lock(&g_mu);
  for (int i = 0; i < n; i++) {
    if (!kind_on(types[i] == CU_GRAPH_NODE_TYPE_MEMSET ? CUPTI_ACTIVITY_KIND_MEMSET
                                                       : CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL))
      continue; /* not traced now */
    if (types[i] == CU_GRAPH_NODE_TYPE_MEMSET) {
      CUpti_ActivityMemset4 m;
      memset(&m, 0, sizeof m);
      m.kind = CUPTI_ACTIVITY_KIND_MEMSET;
      m.bytes = 4096;
      m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
      RUN_FIELDS(m, c, h[i]);
      pend(&m, sizeof m);
    } else {
      CUpti_ActivityKernel10 k;
      memset(&k, 0, sizeof k);
      kernel_init(&k, knames[i & 3]);
      RUN_FIELDS(k, c, h[i]);
      pend(&k, sizeof k);
    }
  }
  pthread_mutex_unlock(&g_mu);
  api(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, "cuGraphLaunch", CUPTI_API_EXIT, c);
}

cudaError_t cudaLaunchKernel(const void *f, dim3 g, dim3 b, void **a, size_t smem, cudaStream_t st) {
  (void)f, (void)g, (void)b, (void)a, (void)smem, (void)st;
  const char *e = getenv("FAKE_CUPTI_KERNEL_MS");
  uint64_t run = (e ? strtoull(e, NULL, 10) : 0) * 1000000u;
  uint32_t c = __atomic_add_fetch(&g_corr, 1, __ATOMIC_RELAXED);
  const CUpti_CallbackId id = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
  api_dom(CUPTI_CB_DOMAIN_RUNTIME_API, id, "cudaLaunchKernel", CUPTI_API_ENTER, c);
  pthread_mutex_lock(&g_mu);
  if (kind_on(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) && g_nlate < LATE_MAX &&
      g_npend + ALIGN8(sizeof(CUpti_ActivityKernel10)) <= PEND_BYTES) {
    CUpti_ActivityKernel10 k;
    memset(&k, 0, sizeof k);
    kernel_init(&k, "gpd_fake_rt");
    k.streamId = 1;
    k.correlationId = c;
    g_late[g_nlate].off = g_npend;
    g_late[g_nlate++].done = mono_ns() + run; /* times at the first flush after it */
    pend(&k, sizeof k);
  }
  pthread_mutex_unlock(&g_mu);
  api_dom(CUPTI_CB_DOMAIN_RUNTIME_API, id, "cudaLaunchKernel", CUPTI_API_EXIT, c);
  return cudaSuccess;
}

void fakecu_launch(void) {
  uint32_t c = __atomic_add_fetch(&g_corr, 1, __ATOMIC_RELAXED);
  api(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, "cuLaunchKernel", CUPTI_API_ENTER, c);
  pthread_mutex_lock(&g_mu);
  if (kind_on(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)) {
    CUpti_ActivityKernel10 k;
    memset(&k, 0, sizeof k);
    kernel_init(&k, "gpd_fake_busy");
    RUN_FIELDS(k, c, 0);
    pend(&k, sizeof k);
  }
  pthread_mutex_unlock(&g_mu);
  api(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, "cuLaunchKernel", CUPTI_API_EXIT, c);
}

/* --- PC sampling: nothing sampled; Enable refused on demand ---------- */
CUptiResult CUPTIAPI cuptiPCSamplingEnable(CUpti_PCSamplingEnableParams *p) {
  (void)p;
  const char *b = getenv("FAKE_CUPTI_PCS_BUSY");
  int busy = b && *b == '/' && access(b, F_OK) == 0;
  pthread_mutex_lock(&g_mu);
  g_pcs_enables++;
  g_pcs_refused += (unsigned long)busy;
  g_pcs_on |= !busy;
  pthread_mutex_unlock(&g_mu);
  return busy ? CUPTI_ERROR_HARDWARE_BUSY : CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiPCSamplingDisable(CUpti_PCSamplingDisableParams *p) {
  (void)p;
  pthread_mutex_lock(&g_mu);
  g_pcs_on = 0;
  pthread_mutex_unlock(&g_mu);
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiPCSamplingSetConfigurationAttribute(CUpti_PCSamplingConfigurationInfoParams *p) {
  (void)p;
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiPCSamplingGetConfigurationAttribute(CUpti_PCSamplingConfigurationInfoParams *p) {
  for (size_t i = 0; i < p->numAttributes; i++)
    if (p->pPCSamplingConfigurationInfo[i].attributeType == CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD)
      p->pPCSamplingConfigurationInfo[i].attributeData.samplingPeriodData.samplingPeriod = 10;
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiPCSamplingGetData(CUpti_PCSamplingGetDataParams *p) {
  CUpti_PCSamplingData *d = p->pcSamplingData;
  const char *e = getenv("FAKE_CUPTI_PCS_SAMPLES");
  unsigned long n = e ? strtoul(e, NULL, 10) : 0;
  d->totalNumPcs = d->remainingNumPcs = 0;
  d->totalSamples = d->droppedSamples = d->nonUsrKernelsTotalSamples = 0;
  pthread_mutex_lock(&g_mu);
  if (g_pcs_on && n && d->collectNumPcs >= 1 && d->pPcData && d->pPcData[0].stallReason) {
    CUpti_PCSamplingPCData *pc = &d->pPcData[0];
    pc->cubinCrc = 1;
    pc->pcOffset = 0x10;
    pc->functionIndex = 0;
    pc->functionName = (char *)"gpd_fake_busy";
    pc->stallReasonCount = 1;
    pc->stallReason[0].pcSamplingStallReasonIndex = 0;
    pc->stallReason[0].samples = (uint32_t)n;
    d->totalNumPcs = 1;
    d->totalSamples = n;
    g_pcs_samples += n;
  }
  pthread_mutex_unlock(&g_mu);
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiPCSamplingGetNumStallReasons(CUpti_PCSamplingGetNumStallReasonsParams *p) {
  *p->numStallReasons = 1;
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiPCSamplingGetStallReasons(CUpti_PCSamplingGetStallReasonsParams *p) {
  if (p->numStallReasons < 1)
    return CUPTI_ERROR_INVALID_PARAMETER;
  p->stallReasonIndex[0] = 0;
  snprintf(p->stallReasons[0], CUPTI_STALL_REASON_STRING_SIZE, "smsp__pcsamp_warps_issue_stalled_fake");
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiGetCubinCrc(CUpti_GetCubinCrcParams *p) {
  p->cubinCrc = 1;
  return CUPTI_SUCCESS;
}

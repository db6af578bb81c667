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
 * A node's CUPTI id is its handle's value. */
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include <cupti.h>

static CUpti_CallbackFunc g_cb;
static void *g_ud;
static CUpti_BuffersCallbackRequestFunc g_req;
static CUpti_BuffersCallbackCompleteFunc g_done;
static unsigned char g_res_on[CUPTI_CBID_RESOURCE_SIZE];
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static uint32_t g_corr;
static uint64_t g_ts = 1000;
#define PEND_BYTES (1u << 20)
static _Alignas(8) uint8_t g_pend[PEND_BYTES];
static size_t g_npend;

#define ALIGN8(n) (((n) + 7) & ~(size_t)7)

CUptiResult CUPTIAPI cuptiSubscribe(CUpti_SubscriberHandle *s, CUpti_CallbackFunc cb, void *ud) {
  g_cb = cb;
  g_ud = ud;
  *s = (CUpti_SubscriberHandle)&g_cb;
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiUnsubscribe(CUpti_SubscriberHandle s) {
  (void)s;
  g_cb = NULL;
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiEnableCallback(uint32_t on, CUpti_SubscriberHandle s, CUpti_CallbackDomain d,
                                         CUpti_CallbackId id) {
  (void)s;
  if (d == CUPTI_CB_DOMAIN_RESOURCE && id < CUPTI_CBID_RESOURCE_SIZE)
    g_res_on[id] = (unsigned char)(on != 0);
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
  else
    return CUPTI_ERROR_INVALID_PARAMETER;
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult r, const char **s) {
  *s = r == CUPTI_SUCCESS ? "success" : "fake CUPTI error";
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind k) {
  (void)k;
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiActivityDisable(CUpti_ActivityKind k) {
  (void)k;
  return CUPTI_SUCCESS;
}
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
CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t flag) {
  (void)flag;
  pthread_mutex_lock(&g_mu);
  if (g_npend && g_req && g_done) {
    uint8_t *buf = NULL;
    size_t size = 0, maxrec = 0;
    g_req(&buf, &size, &maxrec);
    if (buf && size >= g_npend) {
      memcpy(buf, g_pend, g_npend);
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
CUptiResult CUPTIAPI cuptiFinalize(void) { return CUPTI_SUCCESS; }
CUptiResult CUPTIAPI cuptiGetGraphNodeId(CUgraphNode n, uint64_t *id) {
  if (!n)
    return CUPTI_ERROR_INVALID_PARAMETER;
  *id = (uint64_t)(uintptr_t)n;
  return CUPTI_SUCCESS;
}

/* --- the "driver" the program calls ---------------------------------- */
static void api(CUpti_CallbackId id, const char *fn, CUpti_ApiCallbackSite site, uint32_t corr) {
  CUpti_CallbackData d;
  memset(&d, 0, sizeof d);
  d.callbackSite = site;
  d.functionName = fn;
  d.correlationId = corr;
  if (g_cb)
    g_cb(g_ud, CUPTI_CB_DOMAIN_DRIVER_API, id, &d);
}

static void resource(CUpti_CallbackId id, uint64_t node, uint64_t orig, int type) {
  CUpti_GraphData g;
  memset(&g, 0, sizeof g);
  g.node = (CUgraphNode)(uintptr_t)node;
  g.originalNode = (CUgraphNode)(uintptr_t)orig;
  g.nodeType = (CUgraphNodeType)type;
  CUpti_ResourceData r;
  memset(&r, 0, sizeof r);
  r.resourceDescriptor = &g;
  if (g_cb && g_res_on[id])
    g_cb(g_ud, CUPTI_CB_DOMAIN_RESOURCE, id, &r);
}

void fakecu_capture(uint64_t h, int type) {
  uint32_t c = __atomic_add_fetch(&g_corr, 1, __ATOMIC_RELAXED);
  api(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, "cuLaunchKernel", CUPTI_API_ENTER, c);
  resource(CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, h, 0, type);
  api(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, "cuLaunchKernel", CUPTI_API_EXIT, c);
}

void fakecu_add_node(uint64_t h, int type) { resource(CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, h, 0, type); }

void fakecu_clone(uint64_t h, uint64_t orig, int type) { resource(CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED, h, orig, type); }

static const char *const knames[] = {"gpd_fake_k0", "gpd_fake_k1", "gpd_fake_k2", "gpd_fake_k3"};

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
      k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
      k.name = knames[i & 3];
      k.gridX = k.gridY = k.gridZ = 1;
      k.blockX = 32;
      k.blockY = k.blockZ = 1;
      RUN_FIELDS(k, c, h[i]);
      pend(&k, sizeof k);
    }
  }
  pthread_mutex_unlock(&g_mu);
  api(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, "cuGraphLaunch", CUPTI_API_EXIT, c);
}

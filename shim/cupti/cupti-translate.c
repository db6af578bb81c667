/* cupti-translate.c - CUPTI activity records -> gpd_rec_activity_t.
 *
 * Pure functions over the structs of the installed CUPTI header (CUDA 13.0:
 * CUpti_ActivityKernel10, CUpti_ActivityMemcpy6, CUpti_ActivityMemcpyPtoP4,
 * CUpti_ActivityMemset4, CUpti_ActivityMemory4, CUpti_ActivitySynchronization2,
 * CUpti_ActivityDevice5), so that tests/cupti/test-cupti-translate.c can fill the
 * real structs and check every field.  cupti-api.c asks CUPTI for exactly
 * these record versions by compiling against the same header.  Kernel,
 * memcpy and memset records keep CUPTI's graphNodeId (ACTIVITY.graph_node):
 * the daemon places the work of a graph launch by it (cupti-graph.c,
 * daemon/graph.c).
 */
#include <errno.h>
#include <string.h>

#include "cupti-internal.h"

unsigned gpd_cupti_copy_kind(unsigned k) {
  switch (k) {
  case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return GPD_COPY_H2D;
  case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return GPD_COPY_D2H;
  case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: return GPD_COPY_H2A;
  case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: return GPD_COPY_A2H;
  case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA: return GPD_COPY_A2A;
  case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD: return GPD_COPY_A2D;
  case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA: return GPD_COPY_D2A;
  case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return GPD_COPY_D2D;
  case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return GPD_COPY_H2H;
  case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return GPD_COPY_P2P;
  default: return GPD_COPY_UNK;
  }
}

unsigned gpd_cupti_mem_kind(unsigned k) {
  switch (k) {
  case CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE: return GPD_MEM_PAG;
  case CUPTI_ACTIVITY_MEMORY_KIND_PINNED: return GPD_MEM_PIN;
  case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE: return GPD_MEM_DEV;
  case CUPTI_ACTIVITY_MEMORY_KIND_ARRAY: return GPD_MEM_ARY;
  case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED: return GPD_MEM_MAN;
  case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC: return GPD_MEM_DST;
  case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC: return GPD_MEM_MST;
  default: return GPD_MEM_UNK;
  }
}

unsigned gpd_cupti_sync_kind(unsigned k) {
  switch (k) {
  case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE: return GPD_SYNC_EVT;
  case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT: return GPD_SYNC_STRE;
  case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE: return GPD_SYNC_STR;
  case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE: return GPD_SYNC_CTX;
  default: return GPD_SYNC_UNK;
  }
}

static uint64_t xlate_corr(const gpd_cupti_xlate_t *x, uint32_t c) {
  if (x && x->corr_map) c = x->corr_map(c);
  return GPD_CORR(GPD_API_CUDA, c);
}

static uint32_t clamp_pos(int64_t v) {
  if (v <= 0) return 0;
  if (v > (int64_t)UINT32_MAX) return UINT32_MAX;
  return (uint32_t)v;
}

static void xlate_kernel(const gpd_cupti_xlate_t *x, const CUpti_ActivityKernel10 *k,
                         gpd_rec_activity_t *o) {
  o->op = GPD_OP_KERNEL;
  o->device = k->deviceId;
  o->context = k->contextId;
  o->stream = k->streamId;
  o->corr = xlate_corr(x, k->correlationId);
  o->start = k->start;
  o->end = k->end;
  o->name = (k->name && x && x->intern) ? x->intern(k->name, GPD_STR_KERNEL) : 0;
  o->blocks = clamp_pos((int64_t)k->gridX * k->gridY * k->gridZ);
  o->block_threads = clamp_pos((int64_t)k->blockX * k->blockY * k->blockZ);
  o->regs_per_thread = k->registersPerThread;
  o->static_smem = clamp_pos(k->staticSharedMemory);
  o->dynamic_smem = clamp_pos(k->dynamicSharedMemory);
  o->local_mem = k->localMemoryPerThread;
  o->graph_node = k->graphNodeId;
  const gpd_cupti_devprops_t *p = (x && x->devprops) ? x->devprops(k->deviceId) : NULL;
  o->occ_permille = p ? gpd_cupti_occupancy_permille(p, o->block_threads, o->regs_per_thread,
                                                     o->static_smem + o->dynamic_smem,
                                                     k->sharedMemoryExecuted)
                      : 0;
}


/* The fields that memcpy, peer memcpy and memset records share by name
 * (their structs differ): device, context, stream, correlation, [start,
 * end), bytes and the graph node that ran it. */
#define XLATE_COPY_LIKE(x, m, o)                                             \
  do {                                                                       \
    (o)->device = (m)->deviceId;                                             \
    (o)->context = (m)->contextId;                                           \
    (o)->stream = (m)->streamId;                                             \
    (o)->corr = xlate_corr((x), (m)->correlationId);                         \
    (o)->start = (m)->start;                                                 \
    (o)->end = (m)->end;                                                     \
    (o)->bytes = (m)->bytes;                                                 \
    (o)->graph_node = (m)->graphNodeId;                                      \
  } while (0)

int gpd_cupti_translate(const gpd_cupti_xlate_t *x, const CUpti_Activity *rec,
                        gpd_rec_activity_t *o) {
  if (!rec || !o) return -EINVAL;
  gpd_rec_hdr_t h = o->h;
  memset(o, 0, sizeof *o);
  o->h = h;
  o->api = GPD_API_CUDA;
  switch (rec->kind) {
  case CUPTI_ACTIVITY_KIND_KERNEL:
  case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    xlate_kernel(x, (const CUpti_ActivityKernel10 *)rec, o);
    return 1;
  case CUPTI_ACTIVITY_KIND_MEMCPY: {
    const CUpti_ActivityMemcpy6 *m = (const CUpti_ActivityMemcpy6 *)rec;
    o->op = GPD_OP_COPY;
    o->subkind = (uint8_t)gpd_cupti_copy_kind(m->copyKind);
    XLATE_COPY_LIKE(x, m, o);
    return 1;
  }
  case CUPTI_ACTIVITY_KIND_MEMCPY2: {
    const CUpti_ActivityMemcpyPtoP4 *m = (const CUpti_ActivityMemcpyPtoP4 *)rec;
    o->op = GPD_OP_COPY;
    /* MEMCPY2 is the peer-to-peer record: its copyKind is PTOP or, for
     * two contexts on one device, DTOD. */
    o->subkind = (uint8_t)gpd_cupti_copy_kind(m->copyKind);
    XLATE_COPY_LIKE(x, m, o);
    return 1;
  }
  case CUPTI_ACTIVITY_KIND_MEMSET: {
    const CUpti_ActivityMemset4 *m = (const CUpti_ActivityMemset4 *)rec;
    o->op = GPD_OP_MEMSET;
    o->subkind = (uint8_t)gpd_cupti_mem_kind(m->memoryKind);
    XLATE_COPY_LIKE(x, m, o);
    return 1;
  }
  case CUPTI_ACTIVITY_KIND_MEMORY2: {
    const CUpti_ActivityMemory4 *m = (const CUpti_ActivityMemory4 *)rec;
    if (m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION)
      o->op = GPD_OP_ALLOC;
    else if (m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE)
      o->op = GPD_OP_FREE;
    else
      return 0;
    o->subkind = (uint8_t)gpd_cupti_mem_kind(m->memoryKind);
    o->device = m->deviceId;
    o->context = m->contextId;
    o->stream = m->streamId == (uint32_t)-1 ? 0 : m->streamId; /* no stream */
    o->corr = xlate_corr(x, m->correlationId);
    /* MEMORY2 carries one host timestamp: a zero-length interval. */
    o->start = m->timestamp;
    o->end = m->timestamp;
    o->bytes = m->bytes;
    return 1;
  }
  case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
    const CUpti_ActivitySynchronization2 *s = (const CUpti_ActivitySynchronization2 *)rec;
    o->op = GPD_OP_SYNC;
    o->subkind = (uint8_t)gpd_cupti_sync_kind(s->type);
    o->context = s->contextId;
    /* CUPTI_SYNCHRONIZATION_INVALID_VALUE (all ones) = no stream. */
    o->stream = s->streamId == (uint32_t)-1 ? 0 : s->streamId;
    o->corr = xlate_corr(x, s->correlationId);
    o->start = s->start;
    o->end = s->end;
    return 1;
  }
  default:
    return 0;
  }
}

/* Base name of a CUDA API function as CUPTI names it: leading '_' dropped,
 * any "_v2", "_ptsz", "_ptds", "_v7000" suffix cut (no CUDA API name has an
 * inner underscore). */
static size_t classify_base(const char *name, const char **start) {
  while (*name == '_') name++;
  *start = name;
  const char *u = strchr(name, '_');
  return u ? (size_t)(u - name) : strlen(name);
}

static int base_is(const char *b, size_t n, const char *s) {
  return strlen(s) == n && memcmp(b, s, n) == 0;
}

static int base_has_prefix(const char *b, size_t n, const char *p) {
  size_t m = strlen(p);
  return n >= m && memcmp(b, p, m) == 0;
}

unsigned gpd_cupti_classify(const char *name, int *multi) {
  static const char *const launch[] = {
      "cudaLaunchKernel", "cudaLaunchKernelExC", "cudaLaunchCooperativeKernel",
      "cudaLaunchCooperativeKernelMultiDevice", "cudaLaunch", "cuLaunchKernel",
      "cuLaunchKernelEx", "cuLaunchCooperativeKernel", "cuLaunchCooperativeKernelMultiDevice",
      "cuLaunch", "cuLaunchGrid", "cuLaunchGridAsync"};
  static const char *const sync[] = {
      "cudaDeviceSynchronize", "cudaThreadSynchronize", "cudaStreamSynchronize",
      "cudaEventSynchronize", "cudaStreamWaitEvent", "cuCtxSynchronize",
      "cuStreamSynchronize", "cuEventSynchronize", "cuStreamWaitEvent"};
  static const char *const alloc[] = {"cudaMalloc", "cudaHostAlloc", "cuMemAlloc",
                                      "cuMemHostAlloc", "cuMemCreate", "cuArrayCreate",
                                      "cuArray3DCreate", "cuMipmappedArrayCreate"};
  static const char *const freep[] = {"cudaFree", "cuMemFree", "cuMemRelease",
                                      "cuArrayDestroy", "cuMipmappedArrayDestroy"};
  int m = 0;
  unsigned op = GPD_OP_NONE;
  const char *b;
  size_t n;
  if (!name) goto out;
  n = classify_base(name, &b);
  if (base_is(b, n, "cudaGraphLaunch") || base_is(b, n, "cuGraphLaunch")) {
    op = GPD_OP_KERNEL;
    m = 1;
    goto out;
  }
  for (size_t i = 0; i < sizeof launch / sizeof *launch; i++)
    if (base_is(b, n, launch[i])) { op = GPD_OP_KERNEL; goto out; }
  for (size_t i = 0; i < sizeof sync / sizeof *sync; i++)
    if (base_is(b, n, sync[i])) { op = GPD_OP_SYNC; goto out; }
  if (base_has_prefix(b, n, "cudaMemcpy") || base_has_prefix(b, n, "cuMemcpy")) {
    op = GPD_OP_COPY;
    goto out;
  }
  if (base_has_prefix(b, n, "cudaMemset") || base_has_prefix(b, n, "cuMemset")) {
    op = GPD_OP_MEMSET;
    goto out;
  }
  for (size_t i = 0; i < sizeof alloc / sizeof *alloc; i++)
    if (base_has_prefix(b, n, alloc[i])) { op = GPD_OP_ALLOC; goto out; }
  for (size_t i = 0; i < sizeof freep / sizeof *freep; i++)
    if (base_has_prefix(b, n, freep[i])) { op = GPD_OP_FREE; goto out; }
out:
  if (multi) *multi = m;
  return op;
}

/* test-cupti-translate.c - unit test of shim/cupti/cupti-translate.c:
 * fills the REAL CUDA 13.0 CUPTI structs (CUpti_ActivityKernel10,
 * CUpti_ActivityMemcpy6, CUpti_ActivityMemcpyPtoP4, CUpti_ActivityMemset4,
 * CUpti_ActivityMemory4, CUpti_ActivitySynchronization2) and checks every
 * field of the gpd_rec_activity_t, each copy / memory / sync kind mapping
 * and the API-name classification. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "cupti-internal.h"

static const char *last_name;
static unsigned last_kind;
static uint32_t stub_intern(const char *t, unsigned k) { last_name = t; last_kind = k; return 42; }
static uint32_t stub_map(uint32_t c) { return c == 777 ? 700 : c; }
static gpd_cupti_devprops_t h100 = {32, 2048, 64, 32, 65536, 65536, 233472, 232448, 1024, 9, 0};
static const gpd_cupti_devprops_t *stub_props(uint32_t d) { return d == 1 ? &h100 : NULL; }
static const gpd_cupti_xlate_t X = {stub_intern, stub_map, stub_props};

static void assert_zero_tail(const gpd_rec_activity_t *a) {
  assert_true(a->graph_node == 0);
  assert_int_equal(a->reserved, 0);
}

static void test_kernel(void **st) {
  (void)st;
  CUpti_ActivityKernel10 k;
  memset(&k, 0, sizeof k);
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.registersPerThread = 32;
  k.start = 1000; k.end = 5000;
  k.deviceId = 1; k.contextId = 3; k.streamId = 13;
  k.gridX = 4096; k.gridY = 2; k.gridZ = 3;
  k.blockX = 128; k.blockY = 2; k.blockZ = 1;
  k.staticSharedMemory = 1024; k.dynamicSharedMemory = 2048;
  k.localMemoryPerThread = 16;
  k.correlationId = 777;
  k.name = "_Z5scalePffi";
  k.sharedMemoryExecuted = 0;
  gpd_rec_activity_t a;
  memset(&a, 0xab, sizeof a);
  assert_int_equal(gpd_cupti_translate(&X, (CUpti_Activity *)&k, &a), 1);
  assert_int_equal(a.api, GPD_API_CUDA);
  assert_int_equal(a.op, GPD_OP_KERNEL);
  assert_int_equal(a.subkind, 0);
  assert_int_equal(a.device, 1);
  assert_int_equal(a.context, 3);
  assert_int_equal(a.stream, 13);
  assert_true(a.corr == GPD_CORR(GPD_API_CUDA, 700)); /* through corr_map */
  assert_int_equal(GPD_CORR_API(a.corr), GPD_API_CUDA);
  assert_int_equal(a.start, 1000);
  assert_int_equal(a.end, 5000);
  assert_int_equal(a.bytes, 0);
  assert_int_equal(a.name, 42);
  assert_string_equal(last_name, "_Z5scalePffi"); /* mangled kept */
  assert_int_equal(last_kind, GPD_STR_KERNEL);
  assert_int_equal(a.blocks, 4096 * 2 * 3);
  assert_int_equal(a.block_threads, 256);
  assert_int_equal(a.regs_per_thread, 32);
  assert_int_equal(a.static_smem, 1024);
  assert_int_equal(a.dynamic_smem, 2048);
  assert_int_equal(a.local_mem, 16);
  /* 256 thr, 32 regs, 3 KiB + 1 KiB reserved smem: 8 blocks -> 2048/2048 */
  assert_int_equal(a.occ_permille, 1000);
  assert_zero_tail(&a);
  /* the 0xab header the caller set is preserved */
  assert_int_equal(a.h.type, 0xab);
  /* launched by a CUDA graph: its node id rides along */
  k.graphNodeId = 0x123456789abull;
  k.graphId = 7;
  assert_int_equal(gpd_cupti_translate(&X, (CUpti_Activity *)&k, &a), 1);
  assert_true(a.graph_node == 0x123456789abull);
  k.graphNodeId = 0;

  /* unknown device: no occupancy; no name; KIND_KERNEL takes the same path */
  k.kind = CUPTI_ACTIVITY_KIND_KERNEL;
  k.deviceId = 0; k.name = NULL; k.correlationId = 5;
  assert_int_equal(gpd_cupti_translate(&X, (CUpti_Activity *)&k, &a), 1);
  assert_int_equal(a.occ_permille, 0);
  assert_int_equal(a.name, 0);
  assert_true(a.corr == GPD_CORR(GPD_API_CUDA, 5));
  /* negative dims never wrap */
  k.gridX = -1;
  assert_int_equal(gpd_cupti_translate(&X, (CUpti_Activity *)&k, &a), 1);
  assert_int_equal(a.blocks, 0);
}

static void test_memcpy(void **st) {
  (void)st;
  static const unsigned map[][2] = {
      {CUPTI_ACTIVITY_MEMCPY_KIND_UNKNOWN, GPD_COPY_UNK}, {CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, GPD_COPY_H2D},
      {CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, GPD_COPY_D2H},    {CUPTI_ACTIVITY_MEMCPY_KIND_HTOA, GPD_COPY_H2A},
      {CUPTI_ACTIVITY_MEMCPY_KIND_ATOH, GPD_COPY_A2H},    {CUPTI_ACTIVITY_MEMCPY_KIND_ATOA, GPD_COPY_A2A},
      {CUPTI_ACTIVITY_MEMCPY_KIND_ATOD, GPD_COPY_A2D},    {CUPTI_ACTIVITY_MEMCPY_KIND_DTOA, GPD_COPY_D2A},
      {CUPTI_ACTIVITY_MEMCPY_KIND_DTOD, GPD_COPY_D2D},    {CUPTI_ACTIVITY_MEMCPY_KIND_HTOH, GPD_COPY_H2H},
      {CUPTI_ACTIVITY_MEMCPY_KIND_PTOP, GPD_COPY_P2P},    {99, GPD_COPY_UNK}};
  for (size_t i = 0; i < sizeof map / sizeof *map; i++) {
    CUpti_ActivityMemcpy6 m;
    memset(&m, 0, sizeof m);
    m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    m.copyKind = (uint8_t)map[i][0];
    m.bytes = 4194304 + i; m.start = 10 + i; m.end = 20 + i;
    m.deviceId = 2; m.contextId = 4; m.streamId = 7; m.correlationId = 100 + (uint32_t)i;
    m.runtimeCorrelationId = 9999;
    gpd_rec_activity_t a;
    memset(&a, 0, sizeof a);
    assert_int_equal(gpd_cupti_translate(&X, (CUpti_Activity *)&m, &a), 1);
    assert_int_equal(gpd_cupti_copy_kind(map[i][0]), map[i][1]);
    assert_int_equal(a.api, GPD_API_CUDA);
    assert_int_equal(a.op, GPD_OP_COPY);
    assert_int_equal(a.subkind, map[i][1]);
    assert_int_equal(a.device, 2);
    assert_int_equal(a.context, 4);
    assert_int_equal(a.stream, 7);
    assert_true(a.corr == GPD_CORR(GPD_API_CUDA, 100 + i));
    assert_int_equal(a.start, 10 + i);
    assert_int_equal(a.end, 20 + i);
    assert_int_equal(a.bytes, 4194304 + i);
    assert_int_equal(a.name, 0);
    assert_int_equal(a.blocks + a.block_threads + a.regs_per_thread + a.static_smem +
                         a.dynamic_smem + a.local_mem + a.occ_permille, 0);
    assert_zero_tail(&a);
    m.graphNodeId = 1000 + i;
    assert_int_equal(gpd_cupti_translate(&X, (CUpti_Activity *)&m, &a), 1);
    assert_true(a.graph_node == 1000 + i);
  }
  CUpti_ActivityMemcpyPtoP4 p;
  memset(&p, 0, sizeof p);
  p.kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
  p.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
  p.bytes = 1 << 20; p.start = 50; p.end = 90;
  p.deviceId = 0; p.contextId = 1; p.streamId = 2; p.srcDeviceId = 0; p.dstDeviceId = 1;
  p.correlationId = 31;
  p.graphNodeId = 99;
  gpd_rec_activity_t a;
  assert_int_equal(gpd_cupti_translate(&X, (CUpti_Activity *)&p, &a), 1);
  assert_true(a.graph_node == 99);
  assert_int_equal(a.op, GPD_OP_COPY);
  assert_int_equal(a.subkind, GPD_COPY_P2P);
  assert_int_equal(a.bytes, 1 << 20);
  assert_int_equal(a.start, 50);
  assert_int_equal(a.end, 90);
  assert_int_equal(a.device, 0);
  assert_int_equal(a.context, 1);
  assert_int_equal(a.stream, 2);
  assert_true(a.corr == GPD_CORR(GPD_API_CUDA, 31));
}

static const unsigned memmap[][2] = {
    {CUPTI_ACTIVITY_MEMORY_KIND_UNKNOWN, GPD_MEM_UNK},  {CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE, GPD_MEM_PAG},
    {CUPTI_ACTIVITY_MEMORY_KIND_PINNED, GPD_MEM_PIN},   {CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, GPD_MEM_DEV},
    {CUPTI_ACTIVITY_MEMORY_KIND_ARRAY, GPD_MEM_ARY},    {CUPTI_ACTIVITY_MEMORY_KIND_MANAGED, GPD_MEM_MAN},
    {CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC, GPD_MEM_DST},
    {CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC, GPD_MEM_MST}, {1234, GPD_MEM_UNK}};

static void test_memset(void **st) {
  (void)st;
  for (size_t i = 0; i < sizeof memmap / sizeof *memmap; i++) {
    CUpti_ActivityMemset4 m;
    memset(&m, 0, sizeof m);
    m.kind = CUPTI_ACTIVITY_KIND_MEMSET;
    m.value = 0; m.bytes = 4194304; m.start = 7; m.end = 8;
    m.deviceId = 1; m.contextId = 2; m.streamId = 3; m.correlationId = 44;
    m.memoryKind = (uint16_t)memmap[i][0];
    m.graphNodeId = 5 + i;
    gpd_rec_activity_t a;
    assert_int_equal(gpd_cupti_translate(&X, (CUpti_Activity *)&m, &a), 1);
    assert_true(a.graph_node == 5 + i);
    assert_int_equal(gpd_cupti_mem_kind(memmap[i][0]), memmap[i][1]);
    assert_int_equal(a.op, GPD_OP_MEMSET);
    assert_int_equal(a.subkind, memmap[i][1]);
    assert_int_equal(a.bytes, 4194304);
    assert_int_equal(a.start, 7);
    assert_int_equal(a.end, 8);
    assert_int_equal(a.device, 1);
    assert_int_equal(a.context, 2);
    assert_int_equal(a.stream, 3);
    assert_true(a.corr == GPD_CORR(GPD_API_CUDA, 44));
    /* occupancy is 1 (on device 1) only for kernels */
    assert_int_equal(a.occ_permille, 0);
  }
}

static void test_memory(void **st) {
  (void)st;
  for (size_t i = 0; i < sizeof memmap / sizeof *memmap; i++) {
    for (unsigned opk = 0; opk < 3; opk++) {
      CUpti_ActivityMemory4 m;
      memset(&m, 0, sizeof m);
      m.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
      m.memoryOperationType = (CUpti_ActivityMemoryOperationType)opk;
      m.memoryKind = (CUpti_ActivityMemoryKind)memmap[i][0];
      m.correlationId = 55; m.address = 0x7000; m.bytes = 8388608; m.timestamp = 123456;
      m.deviceId = 0; m.contextId = 1; m.streamId = opk == 2 ? (uint32_t)-1 : 9;
      gpd_rec_activity_t a;
      int rc = gpd_cupti_translate(&X, (CUpti_Activity *)&m, &a);
      if (opk == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_INVALID) { assert_int_equal(rc, 0); continue; }
      assert_int_equal(rc, 1);
      assert_int_equal(a.op, opk == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION ? GPD_OP_ALLOC
                                                                                    : GPD_OP_FREE);
      assert_int_equal(a.subkind, memmap[i][1]);
      assert_int_equal(a.bytes, 8388608);
      assert_int_equal(a.start, 123456);
      assert_int_equal(a.end, 123456);
      assert_int_equal(a.device, 0);
      assert_int_equal(a.context, 1);
      assert_int_equal(a.stream, opk == 2 ? 0 : 9); /* all ones = no stream */
      assert_true(a.corr == GPD_CORR(GPD_API_CUDA, 55));
    }
  }
}

static void test_sync(void **st) {
  (void)st;
  static const unsigned map[][2] = {
      {CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_UNKNOWN, GPD_SYNC_UNK},
      {CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE, GPD_SYNC_EVT},
      {CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT, GPD_SYNC_STRE},
      {CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, GPD_SYNC_STR},
      {CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE, GPD_SYNC_CTX}, {77, GPD_SYNC_UNK}};
  for (size_t i = 0; i < sizeof map / sizeof *map; i++) {
    CUpti_ActivitySynchronization2 s;
    memset(&s, 0, sizeof s);
    s.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
    s.type = (CUpti_ActivitySynchronizationType)map[i][0];
    s.start = 300; s.end = 900; s.correlationId = 66; s.contextId = 2;
    s.streamId = i == 4 ? CUPTI_SYNCHRONIZATION_INVALID_VALUE : 5;
    gpd_rec_activity_t a;
    assert_int_equal(gpd_cupti_translate(&X, (CUpti_Activity *)&s, &a), 1);
    assert_int_equal(gpd_cupti_sync_kind(map[i][0]), map[i][1]);
    assert_int_equal(a.op, GPD_OP_SYNC);
    assert_int_equal(a.subkind, map[i][1]);
    assert_int_equal(a.start, 300);
    assert_int_equal(a.end, 900);
    assert_int_equal(a.context, 2);
    assert_int_equal(a.stream, i == 4 ? 0 : 5);
    assert_int_equal(a.bytes, 0);
    assert_int_equal(a.device, 0);
    assert_true(a.corr == GPD_CORR(GPD_API_CUDA, 66));
  }
}

static void test_other_kinds(void **st) {
  (void)st;
  CUpti_ActivityDevice5 d;
  memset(&d, 0, sizeof d);
  d.kind = CUPTI_ACTIVITY_KIND_DEVICE;
  gpd_rec_activity_t a;
  assert_int_equal(gpd_cupti_translate(&X, (CUpti_Activity *)&d, &a), 0);
  assert_int_equal(gpd_cupti_translate(&X, NULL, &a), -EINVAL);
  /* NULL context: identity correlation, no name, no occupancy */
  CUpti_ActivityKernel10 k;
  memset(&k, 0, sizeof k);
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.correlationId = 777; k.name = "x"; k.blockX = k.blockY = k.blockZ = 1;
  k.gridX = k.gridY = k.gridZ = 1;
  assert_int_equal(gpd_cupti_translate(NULL, (CUpti_Activity *)&k, &a), 1);
  assert_true(a.corr == GPD_CORR(GPD_API_CUDA, 777));
  assert_int_equal(a.name, 0);
  assert_int_equal(a.blocks, 1);
}

static void test_classify(void **st) {
  (void)st;
  static const struct { const char *n; unsigned op; int multi; } c[] = {
      {"cudaLaunchKernel_v7000", GPD_OP_KERNEL, 0}, {"cudaLaunchKernel_ptsz_v7000", GPD_OP_KERNEL, 0},
      {"__cudaLaunchKernel_v13000", GPD_OP_KERNEL, 0}, {"cudaLaunchKernelExC_v11060", GPD_OP_KERNEL, 0},
      {"cudaLaunchCooperativeKernel_v9000", GPD_OP_KERNEL, 0}, {"cuLaunchKernel", GPD_OP_KERNEL, 0},
      {"cuLaunchKernelEx", GPD_OP_KERNEL, 0}, {"cuLaunchKernelEx_ptsz", GPD_OP_KERNEL, 0},
      {"cuLaunchCooperativeKernel", GPD_OP_KERNEL, 0},
      {"cudaGraphLaunch_v10000", GPD_OP_KERNEL, 1}, {"cuGraphLaunch_ptsz", GPD_OP_KERNEL, 1},
      {"cudaMemcpy_v3020", GPD_OP_COPY, 0}, {"cudaMemcpyAsync_ptsz_v7000", GPD_OP_COPY, 0},
      {"cudaMemcpy2DAsync_v3020", GPD_OP_COPY, 0}, {"cudaMemcpy3DPeer_v4000", GPD_OP_COPY, 0},
      {"cudaMemcpyPeerAsync_v4000", GPD_OP_COPY, 0}, {"cuMemcpyHtoD_v2", GPD_OP_COPY, 0},
      {"cuMemcpyDtoHAsync_v2", GPD_OP_COPY, 0}, {"cuMemcpy3DPeer", GPD_OP_COPY, 0},
      {"cudaMemset_v3020", GPD_OP_MEMSET, 0}, {"cudaMemset2DAsync_v3020", GPD_OP_MEMSET, 0},
      {"cuMemsetD8_v2", GPD_OP_MEMSET, 0}, {"cuMemsetD32Async", GPD_OP_MEMSET, 0},
      {"cudaMalloc_v3020", GPD_OP_ALLOC, 0}, {"cudaMallocHost_v3020", GPD_OP_ALLOC, 0},
      {"cudaHostAlloc_v3020", GPD_OP_ALLOC, 0}, {"cudaMallocManaged_v6000", GPD_OP_ALLOC, 0},
      {"cudaMallocAsync_v11020", GPD_OP_ALLOC, 0}, {"cudaMallocFromPoolAsync_v11020", GPD_OP_ALLOC, 0},
      {"cuMemAlloc_v2", GPD_OP_ALLOC, 0}, {"cuMemAllocManaged", GPD_OP_ALLOC, 0},
      {"cuMemHostAlloc", GPD_OP_ALLOC, 0}, {"cuMemAllocAsync", GPD_OP_ALLOC, 0},
      {"cudaFree_v3020", GPD_OP_FREE, 0}, {"cudaFreeHost_v3020", GPD_OP_FREE, 0},
      {"cudaFreeAsync_v11020", GPD_OP_FREE, 0}, {"cuMemFree_v2", GPD_OP_FREE, 0},
      {"cuMemFreeHost", GPD_OP_FREE, 0}, {"cuMemFreeAsync", GPD_OP_FREE, 0},
      {"cudaDeviceSynchronize_v3020", GPD_OP_SYNC, 0}, {"cudaStreamSynchronize_v3020", GPD_OP_SYNC, 0},
      {"cudaEventSynchronize_v3020", GPD_OP_SYNC, 0}, {"cudaStreamWaitEvent_ptsz_v7000", GPD_OP_SYNC, 0},
      {"cuCtxSynchronize", GPD_OP_SYNC, 0}, {"cuStreamSynchronize", GPD_OP_SYNC, 0},
      {"cuEventSynchronize", GPD_OP_SYNC, 0}, {"cuStreamWaitEvent", GPD_OP_SYNC, 0},
      {"cudaGetDeviceCount_v3020", GPD_OP_NONE, 0}, {"cudaEventRecord_v3020", GPD_OP_NONE, 0},
      {"cudaStreamCreate_v3020", GPD_OP_NONE, 0}, {"cuCtxGetCurrent", GPD_OP_NONE, 0},
      {"cudaLaunchHostFunc_v10000", GPD_OP_NONE, 0}, {"cudaGraphLaunchX", GPD_OP_NONE, 0},
      {"", GPD_OP_NONE, 0}};
  for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
    int m = -1;
    unsigned op = gpd_cupti_classify(c[i].n, &m);
    if (op != c[i].op || m != c[i].multi) fail_msg("%s: op %u multi %d", c[i].n, op, m);
  }
  assert_int_equal(gpd_cupti_classify(NULL, NULL), GPD_OP_NONE);
}

int main(void) {
  const struct CMUnitTest t[] = {
      cmocka_unit_test(test_kernel), cmocka_unit_test(test_memcpy), cmocka_unit_test(test_memset),
      cmocka_unit_test(test_memory), cmocka_unit_test(test_sync), cmocka_unit_test(test_other_kinds),
      cmocka_unit_test(test_classify)};
  return cmocka_run_group_tests(t, NULL, NULL);
}

/* l0-known - a Level Zero program with a known call structure (for the
 * shim's Level Zero tests; runs on the test's fake driver, whose kernels
 * sleep for the time their module text names).
 *
 *   main -> init   : zeInit, one context, module "axpy=2ms;scale=1ms;norm=0.5ms"
 *                    5 allocations: x, y, z (1 MiB, device), w (256 KiB,
 *                    device), h (64 KiB, host); on an immediate list:
 *                    3 x 1 MiB copies H2D (no event), 1 fill of 4 KiB on w
 *                    (event + zeEventHostSynchronize), 1 copy D2D 256 KiB
 *                    (no event), 2 copies D2H of 64 KiB (y -> h, w -> a
 *                    malloc'd buffer) on one event, synchronized and reset
 *                    between them
 *   main -> solve -> step (S times): a regular list reset, axpy N times,
 *                    scale M times, 1 barrier, closed, executed,
 *                    zeCommandQueueSynchronize
 *   main -> replay : build_norm appends norm once to a regular list, which
 *                    is then executed R times (synchronized each time)
 *   main -> finish : 5 zeMemFree
 *
 * Usage: l0-known [S N M R] [--native FILE] (defaults 5 3 2 3).  Prints
 * "checksum <value>" (the same with or without the shim), or
 * "level zero unavailable (0x...)" and exits 0 when zeInit fails.
 * --native FILE writes the module's native binary there.
 * init/step/solve/replay/build_norm/finish are global so that tests can
 * name them.
 */
#include <level_zero/ze_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))
#define MIB (1024 * 1024)
#define CHECK(x)                                                                                    \
  do {                                                                                              \
    ze_result_t r_ = (x);                                                                           \
    if (r_ != ZE_RESULT_SUCCESS) {                                                                  \
      fprintf(stderr, "l0-known: %s failed: 0x%x (line %d)\n", #x, (unsigned)r_, __LINE__);         \
      exit(1);                                                                                      \
    }                                                                                               \
  } while (0)

static const char module_text[] = "axpy=2000000;scale=1000000;norm=500000";

typedef struct known_s {
  ze_driver_handle_t drv;
  ze_device_handle_t dev;
  ze_context_handle_t ctx;
  ze_module_handle_t mod;
  ze_kernel_handle_t axpy, scale, norm;
  ze_command_queue_handle_t q;
  ze_command_list_handle_t imm, cl, cl2;
  ze_event_pool_handle_t pool;
  ze_event_handle_t ev;
  void *x, *y, *z, *w, *h;
  float *host;
  unsigned char back[64 * 1024];
} known_t;

NOINLINE void init(known_t *k, const char *native) {
  uint32_t n = 1;
  CHECK(zeDriverGet(&n, &k->drv));
  n = 1;
  CHECK(zeDeviceGet(k->drv, &n, &k->dev));
  ze_context_desc_t cd = {ZE_STRUCTURE_TYPE_CONTEXT_DESC, NULL, 0};
  CHECK(zeContextCreate(k->drv, &cd, &k->ctx));
  ze_module_desc_t md = {ZE_STRUCTURE_TYPE_MODULE_DESC, NULL, ZE_MODULE_FORMAT_IL_SPIRV, sizeof module_text - 1,
                         (const uint8_t *)module_text, NULL, NULL};
  CHECK(zeModuleCreate(k->ctx, k->dev, &md, &k->mod, NULL));
  if (native) {
    size_t sz = 0;
    CHECK(zeModuleGetNativeBinary(k->mod, &sz, NULL));
    uint8_t *b = malloc(sz);
    CHECK(zeModuleGetNativeBinary(k->mod, &sz, b));
    FILE *f = fopen(native, "wb");
    if (!f || fwrite(b, 1, sz, f) != sz || fclose(f) != 0) {
      perror(native);
      exit(1);
    }
    free(b);
  }
  ze_kernel_desc_t kd = {ZE_STRUCTURE_TYPE_KERNEL_DESC, NULL, 0, "axpy"};
  CHECK(zeKernelCreate(k->mod, &kd, &k->axpy));
  kd.pKernelName = "scale";
  CHECK(zeKernelCreate(k->mod, &kd, &k->scale));
  kd.pKernelName = "norm";
  CHECK(zeKernelCreate(k->mod, &kd, &k->norm));
  CHECK(zeKernelSetGroupSize(k->axpy, 64, 1, 1));

  ze_device_mem_alloc_desc_t dd = {ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, NULL, 0, 0};
  ze_host_mem_alloc_desc_t hd = {ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC, NULL, 0};
  CHECK(zeMemAllocDevice(k->ctx, &dd, MIB, 64, k->dev, &k->x));
  CHECK(zeMemAllocDevice(k->ctx, &dd, MIB, 64, k->dev, &k->y));
  CHECK(zeMemAllocDevice(k->ctx, &dd, MIB, 64, k->dev, &k->z));
  CHECK(zeMemAllocDevice(k->ctx, &dd, 256 * 1024, 64, k->dev, &k->w));
  CHECK(zeMemAllocHost(k->ctx, &hd, 64 * 1024, 64, &k->h));

  ze_command_queue_desc_t qd = {ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, NULL, 0, 0, 0,
                                ZE_COMMAND_QUEUE_MODE_DEFAULT, ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
  CHECK(zeCommandQueueCreate(k->ctx, k->dev, &qd, &k->q));
  CHECK(zeCommandListCreateImmediate(k->ctx, k->dev, &qd, &k->imm));
  ze_command_list_desc_t ld = {ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC, NULL, 0, 0};
  CHECK(zeCommandListCreate(k->ctx, k->dev, &ld, &k->cl));
  CHECK(zeCommandListCreate(k->ctx, k->dev, &ld, &k->cl2));
  /* The application's pool: host visible, no timestamps asked for. */
  ze_event_pool_desc_t pd = {ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, NULL, ZE_EVENT_POOL_FLAG_HOST_VISIBLE, 4};
  CHECK(zeEventPoolCreate(k->ctx, &pd, 1, &k->dev, &k->pool));
  ze_event_desc_t ed = {ZE_STRUCTURE_TYPE_EVENT_DESC, NULL, 0, ZE_EVENT_SCOPE_FLAG_HOST, ZE_EVENT_SCOPE_FLAG_HOST};
  CHECK(zeEventCreate(k->pool, &ed, &k->ev));

  k->host = malloc(MIB);
  for (int i = 0; i < MIB / 4; i++)
    k->host[i] = (float)(i % 97) * 0.25f;
  CHECK(zeCommandListAppendMemoryCopy(k->imm, k->x, k->host, MIB, NULL, 0, NULL));
  CHECK(zeCommandListAppendMemoryCopy(k->imm, k->y, k->host, MIB, NULL, 0, NULL));
  CHECK(zeCommandListAppendMemoryCopy(k->imm, k->z, k->host, MIB, NULL, 0, NULL));
  float pat = 1.5f;
  CHECK(zeCommandListAppendMemoryFill(k->imm, k->w, &pat, sizeof pat, 4096, k->ev, 0, NULL));
  CHECK(zeEventHostSynchronize(k->ev, UINT64_MAX));
  CHECK(zeEventHostReset(k->ev));
  CHECK(zeCommandListAppendMemoryCopy(k->imm, (char *)k->w + 4096, k->x, 256 * 1024 - 4096, NULL, 0, NULL));
  CHECK(zeCommandListAppendMemoryCopy(k->imm, k->h, k->y, 64 * 1024, k->ev, 0, NULL));
  CHECK(zeEventHostSynchronize(k->ev, UINT64_MAX));
  CHECK(zeEventHostReset(k->ev));
  CHECK(zeCommandListAppendMemoryCopy(k->imm, k->back, k->w, 64 * 1024, k->ev, 0, NULL));
  CHECK(zeEventHostSynchronize(k->ev, UINT64_MAX));
}

NOINLINE void step(known_t *k, int n, int m) {
  ze_group_count_t g = {16, 1, 1};
  CHECK(zeCommandListReset(k->cl));
  for (int i = 0; i < n; i++)
    CHECK(zeCommandListAppendLaunchKernel(k->cl, k->axpy, &g, NULL, 0, NULL));
  for (int i = 0; i < m; i++)
    CHECK(zeCommandListAppendLaunchKernel(k->cl, k->scale, &g, NULL, 0, NULL));
  CHECK(zeCommandListAppendBarrier(k->cl, NULL, 0, NULL));
  CHECK(zeCommandListClose(k->cl));
  CHECK(zeCommandQueueExecuteCommandLists(k->q, 1, &k->cl, NULL));
  CHECK(zeCommandQueueSynchronize(k->q, UINT64_MAX));
}

NOINLINE void solve(known_t *k, int s, int n, int m) {
  for (int i = 0; i < s; i++)
    step(k, n, m);
}

NOINLINE void build_norm(known_t *k) {
  ze_group_count_t g = {4, 1, 1};
  CHECK(zeCommandListAppendLaunchKernel(k->cl2, k->norm, &g, NULL, 0, NULL));
  CHECK(zeCommandListClose(k->cl2));
}

NOINLINE void replay(known_t *k, int r) {
  build_norm(k);
  for (int i = 0; i < r; i++) {
    CHECK(zeCommandQueueExecuteCommandLists(k->q, 1, &k->cl2, NULL));
    CHECK(zeCommandQueueSynchronize(k->q, UINT64_MAX));
  }
}

NOINLINE void finish(known_t *k) {
  CHECK(zeMemFree(k->ctx, k->x));
  CHECK(zeMemFree(k->ctx, k->y));
  CHECK(zeMemFree(k->ctx, k->z));
  CHECK(zeMemFree(k->ctx, k->w));
  CHECK(zeMemFree(k->ctx, k->h));
  CHECK(zeEventDestroy(k->ev));
  CHECK(zeEventPoolDestroy(k->pool));
  CHECK(zeCommandListDestroy(k->cl));
  CHECK(zeCommandListDestroy(k->cl2));
  CHECK(zeCommandListDestroy(k->imm));
  CHECK(zeCommandQueueDestroy(k->q));
  CHECK(zeKernelDestroy(k->axpy));
  CHECK(zeKernelDestroy(k->scale));
  CHECK(zeKernelDestroy(k->norm));
  CHECK(zeModuleDestroy(k->mod));
  CHECK(zeContextDestroy(k->ctx));
}

int main(int argc, char **argv) {
  int v[4] = {5, 3, 2, 3}, nv = 0;
  const char *native = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--native") == 0 && i + 1 < argc)
      native = argv[++i];
    else if (nv < 4)
      v[nv++] = atoi(argv[i]);
  }
  ze_result_t r = zeInit(0);
  if (r != ZE_RESULT_SUCCESS) {
    printf("level zero unavailable (0x%x)\n", (unsigned)r);
    return 0;
  }
  static known_t k;
  init(&k, native);
  solve(&k, v[0], v[1], v[2]);
  replay(&k, v[3]);
  double sum = 0;
  const float *hf = k.h, *bf = (const float *)k.back;
  for (int i = 0; i < 16384; i++)
    sum += hf[i] + bf[i];
  finish(&k);
  free(k.host);
  printf("checksum %.3f\n", sum);
  return 0;
}

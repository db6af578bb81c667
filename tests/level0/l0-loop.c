/* l0-loop - a tight loop of empty kernel launches on Level Zero immediate
 * command lists (launch-bound), for bench-level0-overhead and the
 * level0.threads test.  Runs on the tests' fake driver (module "tiny=0":
 * the kernel does nothing).
 * Usage: l0-loop [iterations] [sync_every] [threads] (defaults 20000, 100,
 * 1): each thread has its own immediate list and event and launches
 * `iterations` kernels; every sync_every-th launch signals the event, which
 * the thread waits for and resets.  Prints "launches <n> ns_per_launch <x>"
 * (n = all threads' launches, x = wall time / n); exit 77 when zeInit
 * fails. */
#include <level_zero/ze_api.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CHECK(x)                                                                                 \
  do {                                                                                           \
    ze_result_t r_ = (x);                                                                        \
    if (r_ != ZE_RESULT_SUCCESS) {                                                               \
      fprintf(stderr, "l0-loop: %s failed: 0x%x\n", #x, (unsigned)r_);                           \
      exit(1);                                                                                   \
    }                                                                                            \
  } while (0)

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

typedef struct loop_s {
  ze_context_handle_t ctx;
  ze_device_handle_t dev;
  ze_kernel_handle_t k;
  long iters, sync_every;
} loop_t;

static void *run(void *arg) {
  const loop_t *l = arg;
  ze_command_queue_desc_t qd = {ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, NULL, 0, 0, 0,
                                ZE_COMMAND_QUEUE_MODE_DEFAULT, ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
  ze_command_list_handle_t imm;
  CHECK(zeCommandListCreateImmediate(l->ctx, l->dev, &qd, &imm));
  ze_event_pool_desc_t pd = {ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, NULL, ZE_EVENT_POOL_FLAG_HOST_VISIBLE, 1};
  ze_event_pool_handle_t pool;
  CHECK(zeEventPoolCreate(l->ctx, &pd, 1, (ze_device_handle_t *)&l->dev, &pool));
  ze_event_desc_t ed = {ZE_STRUCTURE_TYPE_EVENT_DESC, NULL, 0, ZE_EVENT_SCOPE_FLAG_HOST, ZE_EVENT_SCOPE_FLAG_HOST};
  ze_event_handle_t ev;
  CHECK(zeEventCreate(pool, &ed, &ev));
  ze_group_count_t g = {1, 1, 1};
  for (long i = 0; i < l->iters; i++) {
    int last = (i + 1) % l->sync_every == 0 || i + 1 == l->iters;
    CHECK(zeCommandListAppendLaunchKernel(imm, l->k, &g, last ? ev : NULL, 0, NULL));
    if (last) {
      CHECK(zeEventHostSynchronize(ev, UINT64_MAX));
      CHECK(zeEventHostReset(ev));
    }
  }
  CHECK(zeEventDestroy(ev));
  CHECK(zeEventPoolDestroy(pool));
  CHECK(zeCommandListDestroy(imm));
  return NULL;
}

int main(int argc, char **argv) {
  long iters = argc > 1 ? atol(argv[1]) : 20000;
  long sync_every = argc > 2 ? atol(argv[2]) : 100;
  int nth = argc > 3 ? atoi(argv[3]) : 1;
  if (sync_every < 1)
    sync_every = 1;
  if (nth < 1 || nth > 64)
    nth = 1;
  if (zeInit(0) != ZE_RESULT_SUCCESS)
    return 77;
  ze_driver_handle_t drv;
  loop_t l = {.iters = iters, .sync_every = sync_every};
  uint32_t n = 1;
  CHECK(zeDriverGet(&n, &drv));
  n = 1;
  CHECK(zeDeviceGet(drv, &n, &l.dev));
  ze_context_desc_t cd = {ZE_STRUCTURE_TYPE_CONTEXT_DESC, NULL, 0};
  CHECK(zeContextCreate(drv, &cd, &l.ctx));
  static const char text[] = "tiny=0";
  ze_module_desc_t md = {ZE_STRUCTURE_TYPE_MODULE_DESC, NULL, ZE_MODULE_FORMAT_IL_SPIRV, sizeof text - 1,
                         (const uint8_t *)text, NULL, NULL};
  ze_module_handle_t mod;
  CHECK(zeModuleCreate(l.ctx, l.dev, &md, &mod, NULL));
  ze_kernel_desc_t kd = {ZE_STRUCTURE_TYPE_KERNEL_DESC, NULL, 0, "tiny"};
  CHECK(zeKernelCreate(mod, &kd, &l.k));
  pthread_t th[64];
  double t0 = now_ns();
  if (nth == 1) {
    run(&l);
  } else {
    for (int i = 0; i < nth; i++)
      if (pthread_create(&th[i], NULL, run, &l) != 0)
        return 1;
    for (int i = 0; i < nth; i++)
      pthread_join(th[i], NULL);
  }
  double t1 = now_ns();
  printf("launches %ld ns_per_launch %.1f\n", iters * nth, (t1 - t0) / (double)(iters * nth));
  CHECK(zeKernelDestroy(l.k));
  CHECK(zeModuleDestroy(mod));
  CHECK(zeContextDestroy(l.ctx));
  return 0;
}

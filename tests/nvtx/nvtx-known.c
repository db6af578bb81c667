/* nvtx-known - OpenCL kernels inside NVTX ranges of a known structure
 * (tests/nvtx/nvtx.sh checks the profile with check.py).  Built with the
 * real NVTX v3 headers (header-only client): NVTX finds the shim through
 * NVTX_INJECTION64_PATH, which the shim sets.
 *
 *   main: tick x1                               (no range)
 *   main: push "outer"
 *           tick x2                             outer
 *           layer(): push "inner", tick x3, pop outer > inner (the node
 *                                               between main and layer)
 *           domain "io", registered "load" (twice: one handle):
 *           domain push, tick x4, domain pop    outer > io::load
 *           start "phase", tick x5              outer > phase
 *           (another thread ends "phase")
 *           tick x6                             outer
 *           a thread: push "worker", tick x2, pop   worker (its own stack:
 *                                               not under main's outer)
 *           a thread starts "orphan" and exits; main ends it (an unknown id)
 *           push L"wide\u00e9", tick x1, pop    outer > wide<e-acute>
 *         pop
 *   deep(): 40 nested pushes "d0".."d39", tick x7, 41 pops (one with
 *           nothing open), tick x1               d0 > ... > d31 (7), none (1)
 *
 * Prints "checksum N" and, when the shim is loaded, its NVTX counters
 * ("nvtx: kept=K deep=D unbalanced=U ..."). Exit 77 without an OpenCL
 * device.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include <nvtx3/nvToolsExt.h>

#include "ocl-common.h"

#define NOINLINE __attribute__((noinline))
#define N 1024

static const char *src = "__kernel void tick(__global int *y) { y[get_global_id(0)] += 1; }\n";

static ocl_env_t env;
static cl_kernel tick;
static cl_mem buf;

NOINLINE void launch(int n) {
  size_t g = N;
  for (int i = 0; i < n; i++)
    OCL_CHECK(clEnqueueNDRangeKernel(env.q, tick, 1, NULL, &g, NULL, 0, NULL, NULL));
  OCL_CHECK(clFinish(env.q));
}

NOINLINE void layer(void) {
  nvtxRangePushA("inner");
  launch(3);
  nvtxRangePop();
}

static void *ender(void *arg) {
  nvtxRangeEnd(*(nvtxRangeId_t *)arg);
  return NULL;
}

/* starts a range and exits with it open: the shim frees its slot at the
 * thread's exit, so main's later end of it names no open range */
static void *orphan(void *arg) {
  *(nvtxRangeId_t *)arg = nvtxRangeStartA("orphan");
  return NULL;
}

NOINLINE void *worker(void *arg) {
  (void)arg;
  nvtxRangePushA("worker");
  launch(2);
  nvtxRangePop();
  return NULL;
}

NOINLINE void deep(void) {
  char name[16];
  for (int i = 0; i < 40; i++) {
    snprintf(name, sizeof name, "d%d", i);
    nvtxRangePushA(name);
  }
  launch(7);
  for (int i = 0; i < 41; i++)
    nvtxRangePop();
  launch(1);
}

int main(void) {
  int rc = ocl_env_open(&env, src);
  if (rc == OCL_SKIP) {
    fprintf(stderr, "nvtx-known: no OpenCL device\n");
    return OCL_SKIP;
  }
  cl_int err;
  tick = clCreateKernel(env.prog, "tick", &err);
  OCL_CHECK(err);
  buf = clCreateBuffer(env.ctx, CL_MEM_READ_WRITE, N * sizeof(int), NULL, &err);
  OCL_CHECK(err);
  int zero = 0;
  OCL_CHECK(clEnqueueFillBuffer(env.q, buf, &zero, sizeof zero, 0, N * sizeof(int), 0, NULL, NULL));
  OCL_CHECK(clSetKernelArg(tick, 0, sizeof buf, &buf));

  launch(1);
  nvtxRangePushA("outer");
  launch(2);
  layer();

  nvtxDomainHandle_t io = nvtxDomainCreateA("io");
  nvtxStringHandle_t load = nvtxDomainRegisterStringA(io, "load");
  int again = nvtxDomainRegisterStringA(io, "load") == load; /* registered again: the same handle */
  nvtxEventAttributes_t a;
  memset(&a, 0, sizeof a);
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  a.message.registered = load;
  nvtxDomainRangePushEx(io, &a);
  launch(4);
  nvtxDomainRangePop(io);

  nvtxRangeId_t phase = nvtxRangeStartA("phase");
  launch(5);
  pthread_t th;
  if (pthread_create(&th, NULL, ender, &phase) != 0 || pthread_join(th, NULL) != 0)
    return 1;
  launch(6);
  if (pthread_create(&th, NULL, worker, NULL) != 0 || pthread_join(th, NULL) != 0)
    return 1;
  nvtxRangeId_t left = 0;
  if (pthread_create(&th, NULL, orphan, &left) != 0 || pthread_join(th, NULL) != 0)
    return 1;
  nvtxRangeEnd(left);

  nvtxRangePushW(L"wide\u00e9");
  launch(1);
  nvtxRangePop();
  nvtxRangePop();

  deep();

  int host[N];
  OCL_CHECK(clEnqueueReadBuffer(env.q, buf, CL_TRUE, 0, sizeof host, host, 0, NULL, NULL));
  long sum = 0;
  for (int i = 0; i < N; i++)
    sum += host[i];
  printf("checksum %ld\n", sum);
  void (*counts)(uint64_t *, int) = (void (*)(uint64_t *, int))dlsym(RTLD_DEFAULT, "gpd_shim__nvtx_counts");
  if (counts) {
    uint64_t c[7] = {0};
    counts(c, 7);
    printf("nvtx: kept=%llu deep=%llu unbalanced=%llu end_unknown=%llu starts_full=%llu labels_full=%llu "
           "nosite=%llu same_string=%d\n",
           (unsigned long long)c[0], (unsigned long long)c[1], (unsigned long long)c[2], (unsigned long long)c[3],
           (unsigned long long)c[4], (unsigned long long)c[5], (unsigned long long)c[6], again);
  }
  clReleaseMemObject(buf);
  clReleaseKernel(tick);
  ocl_env_close(&env);
  return 0;
}

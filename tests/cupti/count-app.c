/* count-app.c - libgpuprof.so's counting interposers of libcudart
 * (shim/cupti/cupti-count.c) against a stand-in libcudart.so.13
 * (fake-cudart.c), test cupti.count.  Linked against the fake, run with
 * the shim preloaded:
 *   count-app check   every wrapped function called with varied arguments
 *                     (the fake's return value depends on each), then 4
 *                     threads x 50000 launches: every return value as the
 *                     fake computes it, the fake's call count, and the
 *                     shim's counters exactly (kernel, graph launches
 *                     among them / copy / memset)
 *   count-app bench N ns per cudaLaunchKernel call (with and without the
 *                     preload: the wrapper's own cost; bench only)
 * Built a second time as count-app2 (-DTWO_CUDARTS), also linked against
 * libcaller12.so and through it a stand-in libcudart.so.12: check then
 * also launches through the library, whose calls must reach its own
 * runtime (values + 100) while the program's reach libcudart.so.13.
 * Built a third time as count-app3 (-DLATE_CUDART=path of libcaller12.so):
 * the library and its libcudart.so.12 are dlopen'ed only after the
 * program's first launches went to libcudart.so.13 (a plugin loaded
 * late); its launches must still reach its own runtime.
 * Exit 0 = pass, 1 = fail (a message says what). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fake-cudart.h"

cudaError_t cudaLaunchKernel_ptsz(const void *f, dim3 g, dim3 b, void **a, size_t smem, cudaStream_t s);
cudaError_t __cudaLaunchKernel(const void *f, dim3 g, dim3 b, void **a, size_t smem, cudaStream_t s);
cudaError_t __cudaLaunchKernel_ptsz(const void *f, dim3 g, dim3 b, void **a, size_t smem, cudaStream_t s);
cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t *c, const void *f, void **a);
cudaError_t cudaMemcpyAsync_ptsz(void *d, const void *src, size_t n, enum cudaMemcpyKind k, cudaStream_t s);
cudaError_t cudaMemsetAsync_ptsz(void *d, int v, size_t n, cudaStream_t s);
cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t g, cudaStream_t s);

#if defined TWO_CUDARTS || defined LATE_CUDART
cudaError_t caller12_launch(const void *f, dim3 g, dim3 b, void **a, size_t smem, cudaStream_t s);
#endif

#define NTHREAD 4
#define PER_THREAD 50000

static int fails;
#define CHECK(c, ...)                                                                                       \
  do {                                                                                                      \
    if (!(c)) {                                                                                             \
      fprintf(stderr, "count-app: FAIL line %d: ", __LINE__);                                               \
      fprintf(stderr, __VA_ARGS__);                                                                         \
      fputc('\n', stderr);                                                                                  \
      fails++;                                                                                              \
    }                                                                                                       \
  } while (0)

typedef cudaError_t (*launch_fn)(const void *, dim3, dim3, void **, size_t, cudaStream_t);

static void *thread_main(void *arg) {
  uintptr_t t = (uintptr_t)arg;
  long bad = 0;
  for (unsigned i = 0; i < PER_THREAD; i++) {
    dim3 g = {i, (unsigned)t, 1}, b = {128, 1, i & 7};
    cudaError_t rc = cudaLaunchKernel((void *)(t * 4096 + i), g, b, (void **)(uintptr_t)(i * 8), i, (cudaStream_t)t);
    bad += rc != fake_launch_rc((void *)(t * 4096 + i), g, b, (void **)(uintptr_t)(i * 8), i, (cudaStream_t)t);
  }
  return (void *)bad;
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv) {
  if (argc == 3 && !strcmp(argv[1], "bench")) {
    long n = atol(argv[2]);
    dim3 g = {1, 1, 1}, b = {32, 1, 1};
    unsigned sink = 0;
    uint64_t t = now_ns();
    for (long i = 0; i < n; i++)
      sink += (unsigned)cudaLaunchKernel((void *)1, g, b, NULL, 0, NULL);
    double ns = (double)(now_ns() - t) / (double)n;
    printf("count-app bench: %.2f ns per cudaLaunchKernel (%s, %ld calls, sink %u)\n", ns,
           dlsym(RTLD_DEFAULT, "gpd_shim__cuda_counts") ? "through libgpuprof.so" : "direct", n, sink);
    return 0;
  }
  void (*counts)(uint64_t *) = (void (*)(uint64_t *))dlsym(RTLD_DEFAULT, "gpd_shim__cuda_counts");
  if (!counts) {
    fprintf(stderr, "count-app: FAIL: gpd_shim__cuda_counts not found (libgpuprof.so not preloaded?)\n");
    return 1;
  }
  uint64_t c0[3], c1[3];
  counts(c0);
  /* every launch function, 10 calls each with different arguments */
  static const launch_fn launch[] = {cudaLaunchKernel, cudaLaunchKernel_ptsz, __cudaLaunchKernel,
                                     __cudaLaunchKernel_ptsz};
  uint64_t kernels = 0, copies = 0, sets = 0;
  for (unsigned f = 0; f < 4; f++)
    for (unsigned i = 0; i < 10; i++, kernels++) {
      dim3 g = {i + 1, f + 2, 3}, b = {64 + i, 2, f + 1};
      void **a = (void **)(uintptr_t)(0x1000 * (i + 1));
      cudaError_t rc = launch[f]((void *)(uintptr_t)(0x40 + f), g, b, a, 100 * i, (cudaStream_t)(uintptr_t)(f + i));
      CHECK(rc == fake_launch_rc((void *)(uintptr_t)(0x40 + f), g, b, a, 100 * i, (cudaStream_t)(uintptr_t)(f + i)),
            "launch function %u call %u returned %d", f, i, (int)rc);
    }
  for (unsigned i = 0; i < 10; i++) {
    cudaLaunchConfig_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.gridDim = (dim3){i + 5, 1, 2};
    cfg.blockDim = (dim3){256, i + 1, 1};
    cfg.dynamicSmemBytes = 48 * i;
    cfg.stream = (cudaStream_t)(uintptr_t)(i + 9);
    void **a = (void **)(uintptr_t)(0x2000 + i);
    cudaError_t r1 = cudaLaunchKernelExC(&cfg, (void *)(uintptr_t)0x77, a);
    cudaError_t r2 = cudaLaunchKernelExC_ptsz(&cfg, (void *)(uintptr_t)0x78, a);
    kernels += 2;
    CHECK(r1 == fake_launch_rc((void *)(uintptr_t)0x77, cfg.gridDim, cfg.blockDim, a, cfg.dynamicSmemBytes, cfg.stream),
          "cudaLaunchKernelExC call %u returned %d", i, (int)r1);
    CHECK(r2 == fake_launch_rc((void *)(uintptr_t)0x78, cfg.gridDim, cfg.blockDim, a, cfg.dynamicSmemBytes, cfg.stream),
          "cudaLaunchKernelExC_ptsz call %u returned %d", i, (int)r2);
  }
  for (unsigned i = 0; i < 6; i++) { /* graph launches count as kernel launches */
    cudaGraphExec_t ge = (cudaGraphExec_t)(uintptr_t)(0xa000 + 16 * i);
    cudaError_t r1 = cudaGraphLaunch(ge, (cudaStream_t)(uintptr_t)(i + 1));
    cudaError_t r2 = cudaGraphLaunch_ptsz(ge, (cudaStream_t)(uintptr_t)(i + 3));
    kernels += 2;
    CHECK(r1 == fake_graph_rc(ge, (cudaStream_t)(uintptr_t)(i + 1)), "cudaGraphLaunch call %u returned %d", i, (int)r1);
    CHECK(r2 == fake_graph_rc(ge, (cudaStream_t)(uintptr_t)(i + 3)), "cudaGraphLaunch_ptsz call %u returned %d", i,
          (int)r2);
  }
  for (unsigned i = 0; i < 7; i++) {
    void *d = (void *)(uintptr_t)(0x9000 + 8 * i);
    const void *s = (const void *)(uintptr_t)(0x3000 + i);
    cudaStream_t st = (cudaStream_t)(uintptr_t)(i + 2);
    cudaError_t r1 = cudaMemcpyAsync(d, s, 4096 + i, (enum cudaMemcpyKind)(i % 5), st);
    cudaError_t r2 = cudaMemcpyAsync_ptsz(d, s, 4096 + i, (enum cudaMemcpyKind)(i % 5), st);
    copies += 2;
    CHECK(r1 == fake_copy_rc(d, s, 4096 + i, (enum cudaMemcpyKind)(i % 5), st), "cudaMemcpyAsync call %u", i);
    CHECK(r2 == fake_copy_rc(d, s, 4096 + i, (enum cudaMemcpyKind)(i % 5), st), "cudaMemcpyAsync_ptsz call %u", i);
  }
  for (unsigned i = 0; i < 5; i++) {
    void *d = (void *)(uintptr_t)(0x5000 + 16 * i);
    cudaError_t r1 = cudaMemsetAsync(d, (int)i - 2, 100 + i, (cudaStream_t)(uintptr_t)i);
    cudaError_t r2 = cudaMemsetAsync_ptsz(d, (int)i - 2, 100 + i, (cudaStream_t)(uintptr_t)i);
    sets += 2;
    CHECK(r1 == fake_set_rc(d, (int)i - 2, 100 + i, (cudaStream_t)(uintptr_t)i), "cudaMemsetAsync call %u", i);
    CHECK(r2 == fake_set_rc(d, (int)i - 2, 100 + i, (cudaStream_t)(uintptr_t)i), "cudaMemsetAsync_ptsz call %u", i);
  }
#if defined TWO_CUDARTS || defined LATE_CUDART
#ifdef LATE_CUDART
  void *lib12 = dlopen(LATE_CUDART, RTLD_NOW | RTLD_LOCAL);
  CHECK(lib12 != NULL, "dlopen %s: %s", LATE_CUDART, dlerror());
  if (!lib12)
    return 1;
  launch_fn caller12 = (launch_fn)dlsym(lib12, "caller12_launch");
  CHECK(caller12 != NULL, "caller12_launch not found");
  if (!caller12)
    return 1;
#else
  launch_fn caller12 = caller12_launch;
#endif
  for (unsigned i = 0; i < 10; i++, kernels++) {
    dim3 g = {i + 3, 1, 1}, b = {32, 2, 1};
    void **a = (void **)(uintptr_t)(0x7000 + 8 * i);
    cudaError_t rc = caller12((void *)(uintptr_t)0x99, g, b, a, i, (cudaStream_t)(uintptr_t)i);
    CHECK(rc == 100 + fake_launch_rc((void *)(uintptr_t)0x99, g, b, a, i, (cudaStream_t)(uintptr_t)i),
          "the CUDA 12 library's launch %u returned %d: not its own runtime's value", i, (int)rc);
  }
  const uint64_t by12 = 10;
#else
  const uint64_t by12 = 0;
#endif
  pthread_t th[NTHREAD];
  for (uintptr_t t = 0; t < NTHREAD; t++)
    pthread_create(&th[t], NULL, thread_main, (void *)t);
  for (int t = 0; t < NTHREAD; t++) {
    void *bad;
    pthread_join(th[t], &bad);
    CHECK(bad == NULL, "thread %d: %ld launches returned the wrong value", t, (long)(intptr_t)bad);
  }
  kernels += (uint64_t)NTHREAD * PER_THREAD;
  counts(c1);
  CHECK(c1[0] - c0[0] == kernels, "kernel launches counted %llu, made %llu", (unsigned long long)(c1[0] - c0[0]),
        (unsigned long long)kernels);
  CHECK(c1[1] - c0[1] == copies, "copies counted %llu, made %llu", (unsigned long long)(c1[1] - c0[1]),
        (unsigned long long)copies);
  CHECK(c1[2] - c0[2] == sets, "memsets counted %llu, made %llu", (unsigned long long)(c1[2] - c0[2]),
        (unsigned long long)sets);
  CHECK(fake_cudart_calls() == kernels + copies + sets - by12, "the fake received %llu calls, made %llu",
        (unsigned long long)fake_cudart_calls(), (unsigned long long)(kernels + copies + sets - by12));
  /* 1 in 64 kernel launches timed; no tracing window in this process
   * (no CUPTI): every one in the between-windows bin */
  void (*timed)(uint64_t *, uint64_t *) = (void (*)(uint64_t *, uint64_t *))dlsym(RTLD_DEFAULT, "gpd_shim__cuda_timed");
  CHECK(timed != NULL, "gpd_shim__cuda_timed not found");
  if (timed) {
    uint64_t tn[2], tns[2];
    timed(tn, tns);
    CHECK(tn[0] == c1[0] / 64 - c0[0] / 64, "timed launches between windows %llu, want %llu",
          (unsigned long long)tn[0], (unsigned long long)(c1[0] / 64 - c0[0] / 64));
    CHECK(tn[1] == 0, "timed launches inside windows %llu, want 0", (unsigned long long)tn[1]);
    CHECK(tn[0] == 0 || tns[0] > 0, "timed launches took 0 ns");
  }
  printf("count-app: kernel %llu copy %llu memset %llu counted, fake calls %llu: %s\n",
         (unsigned long long)(c1[0] - c0[0]), (unsigned long long)(c1[1] - c0[1]), (unsigned long long)(c1[2] - c0[2]),
         (unsigned long long)fake_cudart_calls(), fails ? "FAIL" : "PASS");
  return fails ? 1 : 0;
}

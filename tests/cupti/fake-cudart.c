/* fake-cudart.c - a stand-in libcudart.so.13 (symbol version libcudart.so.13,
 * like NVIDIA's) exporting the runtime functions that libgpuprof.so's
 * counting interposers wrap (shim/cupti/cupti-count.c).  Each returns a
 * value computed from all of its arguments (fake-cudart.h) and counts the
 * calls it received.  Built a second time as libcudart.so.12
 * (-DFAKE_CUDART12: version libcudart.so.12, every value + 100) for the
 * process with two runtimes.  Test cupti.count. */
#include <stdatomic.h>

#include "fake-cudart.h"

#ifdef FAKE_CUDART12
#define fake_cudart_calls fake_cudart12_calls
#define RC(x) ((cudaError_t)((x) + 100))
#else
#define RC(x) (x)
#endif

static atomic_ulong g_calls;
uint64_t fake_cudart_calls(void) { return atomic_load(&g_calls); }

#define LAUNCH(name)                                                                                        \
  cudaError_t name(const void *f, dim3 g, dim3 b, void **a, size_t smem, cudaStream_t s);                    \
  cudaError_t name(const void *f, dim3 g, dim3 b, void **a, size_t smem, cudaStream_t s) {                   \
    atomic_fetch_add(&g_calls, 1);                                                                          \
    return RC(fake_launch_rc(f, g, b, a, smem, s));                                                         \
  }
LAUNCH(cudaLaunchKernel)
LAUNCH(cudaLaunchKernel_ptsz)
LAUNCH(__cudaLaunchKernel)
LAUNCH(__cudaLaunchKernel_ptsz)

#define LAUNCHEX(name)                                                                                      \
  cudaError_t name(const cudaLaunchConfig_t *c, const void *f, void **a);                                   \
  cudaError_t name(const cudaLaunchConfig_t *c, const void *f, void **a) {                                  \
    atomic_fetch_add(&g_calls, 1);                                                                          \
    return RC(fake_launch_rc(f, c->gridDim, c->blockDim, a, c->dynamicSmemBytes, c->stream));               \
  }
LAUNCHEX(cudaLaunchKernelExC)
LAUNCHEX(cudaLaunchKernelExC_ptsz)

#define COPY(name)                                                                                          \
  cudaError_t name(void *d, const void *src, size_t n, enum cudaMemcpyKind k, cudaStream_t s);               \
  cudaError_t name(void *d, const void *src, size_t n, enum cudaMemcpyKind k, cudaStream_t s) {              \
    atomic_fetch_add(&g_calls, 1);                                                                          \
    return RC(fake_copy_rc(d, src, n, k, s));                                                               \
  }
COPY(cudaMemcpyAsync)
COPY(cudaMemcpyAsync_ptsz)

#define SET(name)                                                                                           \
  cudaError_t name(void *d, int v, size_t n, cudaStream_t s);                                               \
  cudaError_t name(void *d, int v, size_t n, cudaStream_t s) {                                              \
    atomic_fetch_add(&g_calls, 1);                                                                          \
    return RC(fake_set_rc(d, v, n, s));                                                                     \
  }
SET(cudaMemsetAsync)
SET(cudaMemsetAsync_ptsz)

#define GRAPH(name)                                                                                         \
  cudaError_t name(cudaGraphExec_t g, cudaStream_t s);                                                      \
  cudaError_t name(cudaGraphExec_t g, cudaStream_t s) {                                                     \
    atomic_fetch_add(&g_calls, 1);                                                                          \
    return RC(fake_graph_rc(g, s));                                                                         \
  }
GRAPH(cudaGraphLaunch)
GRAPH(cudaGraphLaunch_ptsz)

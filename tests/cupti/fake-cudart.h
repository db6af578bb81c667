/* fake-cudart.h - what tests/cupti/fake-cudart.c (a stand-in libcudart.so.13
 * for the launch-counter test, cupti.count) returns: a value computed from
 * every argument, so a wrapper that loses or reorders one is seen.  Shared
 * by the fake and the test program (count-app.c). */
#ifndef GPD_FAKE_CUDART_H
#define GPD_FAKE_CUDART_H

#include <stdint.h>

#include <cuda_runtime_api.h>

static inline cudaError_t fake_launch_rc(const void *f, dim3 g, dim3 b, void **a, size_t smem, cudaStream_t s) {
  uint64_t v = g.x + 3ull * g.y + 5ull * g.z + 7ull * b.x + 11ull * b.y + 13ull * b.z + 17ull * smem +
               19ull * (uintptr_t)s + 23ull * (uintptr_t)a + 29ull * (uintptr_t)f;
  return (cudaError_t)(v % 97);
}
static inline cudaError_t fake_copy_rc(void *d, const void *src, size_t n, enum cudaMemcpyKind k, cudaStream_t s) {
  return (cudaError_t)(((uintptr_t)d + 3ull * (uintptr_t)src + 5ull * n + 7ull * (unsigned)k + 11ull * (uintptr_t)s) %
                       97);
}
static inline cudaError_t fake_set_rc(void *d, int val, size_t n, cudaStream_t s) {
  return (cudaError_t)(((uintptr_t)d + 3ull * (unsigned)val + 5ull * n + 7ull * (uintptr_t)s) % 97);
}
static inline cudaError_t fake_graph_rc(cudaGraphExec_t g, cudaStream_t s) {
  return (cudaError_t)((3ull * (uintptr_t)g + 7ull * (uintptr_t)s) % 97);
}

/** Calls the fake received, all functions together. */
uint64_t fake_cudart_calls(void);

#endif

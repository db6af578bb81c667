// cuda-host.cu - host code compiled by nvcc -O2 -g (tests/symbols.cmake,
// check_inline.py cuda): the launch stubs and cudaMalloc<T> are inlined
// into their callers.  Never run: the test resolves the return addresses
// of the calls to cudaLaunchKernel / cudaMalloc found in the binary.
// Markers "@name" as in inline.c.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void k_alpha(float *x, int n) { // @k_alpha
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * 1.5f + 1.0f;
}

__global__ void k_beta(float *x, int n) { // @k_beta
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * 0.5f - 1.0f;
}

__attribute__((noinline)) int stage_one(float *d) {
  for (int k = 0; k < 4; k++)
    k_alpha<<<256, 256>>>(d, 1 << 16); // @stage_one
  return cudaGetLastError() == cudaSuccess ? 0 : 2;
}

static inline __attribute__((always_inline)) void chain_c(float *d) {
  k_beta<<<256, 256>>>(d, 1 << 16); // @chain_c
}
static inline __attribute__((always_inline)) void chain_b(float *d) { chain_c(d); } // @chain_b
static inline __attribute__((always_inline)) void chain_a(float *d) { chain_b(d); } // @chain_a

__attribute__((noinline)) int stage_two(float *d) {
  for (int k = 0; k < 3; k++)
    chain_a(d); // @stage_two
  return cudaGetLastError() == cudaSuccess ? 0 : 2;
}

int main(void) {
  float *a = nullptr;
  if (cudaMalloc(&a, 4096 * sizeof(float)) != cudaSuccess) // @main
    return 2;
  int r = stage_one(a) + stage_two(a);
  cudaFree(a);
  std::printf("%d\n", r);
  return r;
}

// cuda-inline.cu - call paths through inlined host code, built with
// `nvcc -O2 -g` (host code optimized: the launch stubs and cudaMalloc<T>
// are inlined into their callers).  Exact, by construction:
//   kernel k_alpha launched ALPHA_LAUNCHES times, all from stage_one()
//     (the launch stub `k_alpha(float*, int)` is inlined into stage_one);
//   kernel k_beta launched BETA_LAUNCHES times, all from stage_two() through
//     an always_inline chain chain_a -> chain_b -> chain_c (three deep);
//   two cudaMalloc<float> calls made directly in main (the template wrapper
//     is inlined into main), one cudaFree each.
// tests/cuda/check-report.py inline checks that every physical frame keeps
// its own function (main, stage_one, stage_two) with the inlined chain
// below it, and that no vendor frame (libcuda, libcupti, libcudart) appears
// below the API call.  Exits 2 when there is no usable CUDA device.
#include <cstdio>
#include <cuda_runtime.h>

#define N (1 << 16)
#define ALPHA_LAUNCHES 4
#define BETA_LAUNCHES 3

#define CK(call)                                                               \
  do {                                                                         \
    cudaError_t e_ = (call);                                                   \
    if (e_ != cudaSuccess) {                                                   \
      std::printf("cuda error %s at %s:%d\n", cudaGetErrorName(e_), __FILE__,  \
                  __LINE__);                                                   \
      return 2;                                                                \
    }                                                                          \
  } while (0)

__global__ void k_alpha(float *x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * 1.5f + 1.0f;
}

__global__ void k_beta(float *x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * 0.5f - 1.0f;
}

__attribute__((noinline)) int stage_one(float *d) {
  for (int k = 0; k < ALPHA_LAUNCHES; k++)
    k_alpha<<<N / 256, 256>>>(d, N);
  return cudaGetLastError() == cudaSuccess ? 0 : 2;
}

static inline __attribute__((always_inline)) void chain_c(float *d) {
  k_beta<<<N / 256, 256>>>(d, N);
}
static inline __attribute__((always_inline)) void chain_b(float *d) { chain_c(d); }
static inline __attribute__((always_inline)) void chain_a(float *d) { chain_b(d); }

__attribute__((noinline)) int stage_two(float *d) {
  for (int k = 0; k < BETA_LAUNCHES; k++)
    chain_a(d);
  return cudaGetLastError() == cudaSuccess ? 0 : 2;
}

int main(void) {
  int ndev = 0;
  cudaError_t e = cudaGetDeviceCount(&ndev);
  if (e != cudaSuccess || ndev == 0) {
    std::printf("no CUDA device: %s\n", e != cudaSuccess ? cudaGetErrorName(e) : "0 devices");
    return 2;
  }
  std::printf("expect launches k_alpha=%d k_beta=%d\n", ALPHA_LAUNCHES, BETA_LAUNCHES);
  float *a = nullptr, *b = nullptr;
  CK(cudaMalloc(&a, N * sizeof(float)));
  CK(cudaMalloc(&b, N * sizeof(float)));
  CK(cudaMemset(a, 0, N * sizeof(float)));
  CK(cudaMemset(b, 0, N * sizeof(float)));
  if (stage_one(a)) return 2;
  if (stage_two(b)) return 2;
  CK(cudaDeviceSynchronize());
  CK(cudaFree(a));
  CK(cudaFree(b));
  std::printf("done\n");
  return 0;
}

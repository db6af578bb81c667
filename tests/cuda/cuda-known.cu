// cuda-known.cu - a CUDA program with a known call structure, for checking
// what gpuprof attributes (tests/test-cupti-nodriver.sh in CI with no driver;
// docs/VALIDATION.md on a GPU).  Exact, by construction:
//   kernel `scale` launched SCALE_LAUNCHES times, all from scale_on_gpu();
//   kernel `add`   launched ADD_LAUNCHES times,   all from add_on_gpu();
//   H2D bytes = 2 * N*4, D2H bytes = N*4, D2D bytes = N*2, one memset N*4 bytes;
//   3 streams, 1 event (record, stream-wait, synchronize), stream and
//   device synchronizations.
// Prints "expect ..." lines and a checksum; exits 0 on success, 2 when there
// is no usable CUDA device (the message names the CUDA error).
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define N (1 << 20)
#define SCALE_LAUNCHES 5
#define ADD_LAUNCHES 3

#define CK(call)                                                               \
  do {                                                                         \
    cudaError_t e_ = (call);                                                   \
    if (e_ != cudaSuccess) {                                                   \
      std::printf("cuda error %s at %s:%d\n", cudaGetErrorName(e_), __FILE__,  \
                  __LINE__);                                                   \
      return 2;                                                                \
    }                                                                          \
  } while (0)

__global__ void scale(float *x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = x[i];
    for (int k = 0; k < 200; k++) v = v * a + 0.5f * (1.0f - a);
    x[i] = v;
  }
}

__global__ void add(float *y, const float *x, int n) {
  __shared__ float tile[256];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  tile[threadIdx.x] = i < n ? x[i] : 0.0f;
  __syncthreads();
  if (i < n) y[i] += tile[threadIdx.x];
}

__attribute__((noinline)) static int scale_on_gpu(float *d, cudaStream_t *s) {
  for (int k = 0; k < SCALE_LAUNCHES; k++) {
    scale<<<N / 256, 256, 0, s[k % 3]>>>(d, 0.999f, N);
    CK(cudaGetLastError());
  }
  return 0;
}

__attribute__((noinline)) static int add_on_gpu(float *y, const float *x, cudaStream_t s) {
  for (int k = 0; k < ADD_LAUNCHES; k++) {
    add<<<N / 256, 256, 0, s>>>(y, x, N);
    CK(cudaGetLastError());
  }
  return 0;
}

int main(void) {
  int ndev = 0;
  cudaError_t e = cudaGetDeviceCount(&ndev);
  if (e != cudaSuccess || ndev == 0) {
    std::printf("no CUDA device: %s\n", e != cudaSuccess ? cudaGetErrorName(e) : "0 devices");
    return 2;
  }
  std::printf("expect launches scale=%d add=%d\n", SCALE_LAUNCHES, ADD_LAUNCHES);
  std::printf("expect bytes H2D=%d D2H=%d D2D=%d memset=%d\n", 2 * N * 4, N * 4, N * 2, N * 4);
  cudaStream_t s[3];
  for (int i = 0; i < 3; i++) CK(cudaStreamCreate(&s[i]));
  cudaEvent_t ev;
  CK(cudaEventCreate(&ev));
  float *h = nullptr, *dx = nullptr, *dy = nullptr;
  CK(cudaMallocHost(&h, N * 4));
  CK(cudaMalloc(&dx, N * 4));
  CK(cudaMalloc(&dy, N * 4));
  for (int i = 0; i < N; i++) h[i] = (float)(i % 97) / 97.0f;
  CK(cudaMemcpyAsync(dx, h, N * 4, cudaMemcpyHostToDevice, s[0]));  // H2D 4 MiB
  CK(cudaMemcpyAsync(dy, h, N * 4, cudaMemcpyHostToDevice, s[1]));  // H2D 4 MiB
  CK(cudaDeviceSynchronize());
  if (scale_on_gpu(dx, s)) return 2;
  CK(cudaEventRecord(ev, s[0]));
  CK(cudaStreamWaitEvent(s[2], ev, 0));
  CK(cudaMemsetAsync(dy, 0, N * 4, s[2]));                           // memset 4 MiB
  CK(cudaEventSynchronize(ev));
  CK(cudaDeviceSynchronize());
  if (add_on_gpu(dy, dx, s[2])) return 2;
  CK(cudaStreamSynchronize(s[2]));
  CK(cudaMemcpyAsync(dx, dy, N * 2, cudaMemcpyDeviceToDevice, s[1])); // D2D 2 MiB
  CK(cudaStreamSynchronize(s[1]));
  CK(cudaMemcpy(h, dy, N * 4, cudaMemcpyDeviceToHost));             // D2H 4 MiB
  double sum = 0;
  for (int i = 0; i < N; i++) sum += h[i];
  std::printf("checksum %.6e\n", sum);
  CK(cudaFree(dx));
  CK(cudaFree(dy));
  CK(cudaFreeHost(h));
  CK(cudaEventDestroy(ev));
  for (int i = 0; i < 3; i++) CK(cudaStreamDestroy(s[i]));
  return 0;
}

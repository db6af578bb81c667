// pcsamp-rec.cu - recursion on the GPU, for the GPU-machine validation of
// the GPU calling-context reconstruction (docs/VALIDATION.md): kernel
// recursive_k() calls the __noinline__ recursive device function rec()
// once; rec(d) calls work() and then itself with d - 1 until d = 0, so
// per thread rec runs depth + 1 times (1 call from the kernel, depth
// self calls) and work() depth + 1 times.  The reconstructed tree must
// fold the cycle: one [recursive] rec node below the kernel, work() below
// it, never an unbounded chain (Zhou et al. 2021 section 6.3 step 3).
// ./pcsamp-rec [launches] [depth]
#include <cstdio>
#include <cstdlib>

__device__ __noinline__ float work(const float *a, int n, float x) {
  float s = 0.f;
  for (int i = 0; i < n; i++)  // WORK-LOOP
    s = s * x + a[(i + threadIdx.x) & 1023];  // WORK-LINE
  return s;
}

__device__ __noinline__ float rec(const float *a, int d, int n, float x) {
  float s = work(a, n, x);                     // REC-WORK
  if (d > 0)
    s += rec(a, d - 1, n, x * 0.999f);         // REC-SELF
  return s;
}

__global__ void recursive_k(const float *a, int depth, int n, float *o) {
  o[blockIdx.x * blockDim.x + threadIdx.x] = rec(a, depth, n, 0.99f);  // REC-CALL
}

int main(int argc, char **argv) {
  int launches = argc > 1 ? atoi(argv[1]) : 100;
  int depth = argc > 2 ? atoi(argv[2]) : 7;
  float *a, *o;
  if (cudaMalloc(&a, 1024 * sizeof(float)) != cudaSuccess ||
      cudaMalloc(&o, 80 * 256 * sizeof(float)) != cudaSuccess) {
    fprintf(stderr, "pcsamp-rec: no GPU\n");
    return 77;
  }
  cudaMemset(a, 0, 1024 * sizeof(float));
  for (int i = 0; i < launches; i++)
    recursive_k<<<80, 256>>>(a, depth, 512, o);
  cudaError_t e = cudaDeviceSynchronize();
  printf("pcsamp-rec: %d launches, depth %d: %s\n", launches, depth, cudaGetErrorString(e));
  return e == cudaSuccess ? 0 : 1;
}

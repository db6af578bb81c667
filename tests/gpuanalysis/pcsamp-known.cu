// pcsamp-known.cu - a CUDA program of known GPU structure for PC sampling
// (gpuprofd analyzer tests and the GPU-machine validation):
//   kernel known() calls the __noinline__ device function hot() from two
//   call sites, once each, with a 3:1 work ratio (3n and n iterations);
//   kernel known_calls() calls it 3 times from one call site (a loop) and
//   once from another, with equal work per call: a 3:1 ratio in calls.
//   hot() holds one loop (the hot line is marked HOT-LINE); fact() is
//   recursive.
// Built with nvcc -cubin by the tests (structure only) and as a program
// for the GPU machine: ./pcsamp-known [iterations] | --steps SECONDS.
#include <cstdio>
#include <cstdlib>

__device__ __noinline__ float hot(const float *a, int n, float x) {
  float s = 0.f;
  for (int i = 0; i < n; i++)  // HOT-LOOP
    s = s * x + a[(i + threadIdx.x) & 1023];  // HOT-LINE
  return s;
}

__device__ __noinline__ int fact(int n) { return n <= 1 ? 1 : n * fact(n - 1); }  // FACT-LINE

__global__ void known(const float *a, int n, float *o) {
  float r = hot(a, 3 * n, 0.999f);  // CALL-3
  r += hot(a, n, 0.998f);           // CALL-1
  if (threadIdx.x == 0 && blockIdx.x == 0)
    r += (float)fact(n & 7);
  o[blockIdx.x * blockDim.x + threadIdx.x] = r;
}

__global__ void known_calls(const float *a, int n, int reps, float *o) {
  float r = 0.f;
#pragma unroll 1
  for (int k = 0; k < reps; k++)    // reps = 3 at run time: one call site
    r += hot(a, n, 0.997f - 1e-4f * k);  // CALLS-3 (k: no hoisting of a pure call)
  r += hot(a, n, 0.996f);           // CALLS-1
  o[blockIdx.x * blockDim.x + threadIdx.x] = r;
}

#ifndef PCSAMP_STRUCTURE_ONLY
#include <cstring>
#include <ctime>

static double now_s(clockid_t c) {
  struct timespec t;
  clock_gettime(c, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

// --steps SECONDS: a loop of equal steps (10 known_calls launches of
// ~0.2 ms each, then a synchronize) for SECONDS, one line per step with the wall-clock time
// it ended (CLOCK_REALTIME, to line up with a sampling window) and its
// duration: the application's own speed before, during and after a
// `gpuprof sample` window.
static int steps(const float *a, float *o, double secs) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  double t0 = now_s(CLOCK_MONOTONIC);
  for (int k = 0; now_s(CLOCK_MONOTONIC) - t0 < secs; k++) {
    double s0 = now_s(CLOCK_MONOTONIC);
    for (int i = 0; i < 10; i++)
      known_calls<<<80, 256>>>(a, 2048, 3, o);
    cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
      printf("pcsamp-known: %s\n", cudaGetErrorString(e));
      return 1;
    }
    printf("step %d end %.6f ms %.3f\n", k, now_s(CLOCK_REALTIME),
           1e3 * (now_s(CLOCK_MONOTONIC) - s0));
  }
  return 0;
}

int main(int argc, char **argv) {
  int iters = argc > 1 ? atoi(argv[1]) : 50;
  float *a, *o;
  if (cudaMalloc(&a, 1024 * sizeof(float)) != cudaSuccess ||
      cudaMalloc(&o, 80 * 256 * sizeof(float)) != cudaSuccess) {
    fprintf(stderr, "pcsamp-known: no GPU\n");
    return 77;
  }
  cudaMemset(a, 0, 1024 * sizeof(float));
  if (argc > 2 && strcmp(argv[1], "--steps") == 0)
    return steps(a, o, atof(argv[2]));
  for (int i = 0; i < iters; i++)
    known<<<80, 256>>>(a, 4096, o);
  for (int i = 0; i < 5 * iters; i++)
    known_calls<<<80, 256>>>(a, 64, 3, o);
  cudaError_t e = cudaDeviceSynchronize();
  printf("pcsamp-known: %d + %d launches: %s\n", iters, 5 * iters, cudaGetErrorString(e));
  return e == cudaSuccess ? 0 : 1;
}
#endif

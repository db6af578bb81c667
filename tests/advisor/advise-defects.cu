// advise-defects.cu - CUDA kernels with known performance defects, each
// with its fixed variant, for the advisor's GPU-machine validation
// (tests/advisor/gpu-advise.sh, docs/ADVISOR.md):
//   coalesce  each thread reads its own row (stride 64 floats)  | column reads
//   spill     40 live accumulators under __launch_bounds__(256, 8) (32
//             registers: spills to local memory)                 | (256, 2)
//   occupancy blocks of 32 threads (the 32-blocks-per-SM limit: 50 %) | 256
//   diverge   odd and even lanes take different loops            | by warp
//   unroll    a dependent load -> FMA loop kept rolled (unroll 1) | unroll 8
// Usage: advise-defects CASE VARIANT [REPS]   (VARIANT bad | fixed)
// prints "CASE VARIANT <mean ms per launch>" after REPS timed launches.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#define K 64  // row length of the coalescing case

__global__ void coalesce_bad(const float *in, float *out, int nt) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= nt) return;
  float s = 0.f;
  for (int k = 0; k < K; k++) s += in[t * K + k];  // COALESCE-BAD
  out[t] = s;
}

__global__ void coalesce_fixed(const float *in, float *out, int nt) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= nt) return;
  float s = 0.f;
  for (int k = 0; k < K; k++) s += in[k * nt + t];  // COALESCE-FIXED
  out[t] = s;
}

#define NACC 40
template <int MINB>
__global__ void __launch_bounds__(256, MINB) spill_kernel(const float *in, float *out, int n,
                                                          int nt) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= nt) return;
  float acc[NACC];
#pragma unroll
  for (int j = 0; j < NACC; j++) acc[j] = in[(t + j * 977) % nt];
  for (int it = 0; it < n; it++) {
#pragma unroll
    for (int j = 0; j < NACC; j++)  // SPILL-LOOP
      acc[j] = acc[j] * acc[(j + 7) % NACC] + acc[(j + 13) % NACC] * 0.5f;
  }
  float s = 0.f;
#pragma unroll
  for (int j = 0; j < NACC; j++) s += acc[j];
  out[t] = s;
}

// a latency-bound chain of dependent loads: more warps hide more of it
__global__ void chase(const int *next, float *out, int steps, int nt) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= nt) return;
  int p = t;
  for (int i = 0; i < steps; i++) p = next[p];  // CHASE-LOOP
  out[t] = (float)p;
}

__device__ __forceinline__ float work(float x, int n, float a) {
  for (int i = 0; i < n; i++) x = x * a + 0.25f;
  return x;
}

__global__ void diverge_bad(float *out, int n, int nt) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= nt) return;
  float x = (float)t;
  if (threadIdx.x & 1)  // DIVERGE-BAD
    x = work(x, n, 0.999f);
  else
    x = work(x + 1.f, n, 0.998f) * 2.f;
  out[t] = x;
}

__global__ void diverge_fixed(float *out, int n, int nt) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= nt) return;
  float x = (float)t;
  if ((threadIdx.x >> 5) & 1)  // DIVERGE-FIXED
    x = work(x, n, 0.999f);
  else
    x = work(x + 1.f, n, 0.998f) * 2.f;
  out[t] = x;
}

__global__ void unroll_bad(const float *in, const float *w, float *out, int k, int nt) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= nt) return;
  float s = 0.f;
#pragma unroll 1
  for (int i = 0; i < k; i++) s += in[i * nt + t] * w[i];  // UNROLL-BAD
  out[t] = s;
}

__global__ void unroll_fixed(const float *in, const float *w, float *out, int k, int nt) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= nt) return;
  float s = 0.f;
#pragma unroll 8
  for (int i = 0; i < k; i++) s += in[i * nt + t] * w[i];  // UNROLL-FIXED
  out[t] = s;
}

#define CK(x)                                                                       \
  do {                                                                              \
    cudaError_t e_ = (x);                                                           \
    if (e_ != cudaSuccess) {                                                        \
      fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_));                      \
      exit(1);                                                                      \
    }                                                                               \
  } while (0)

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s coalesce|spill|occupancy|diverge|unroll bad|fixed [reps]\n", argv[0]);
    return 2;
  }
  const char *c = argv[1];
  int fixed = strcmp(argv[2], "fixed") == 0;
  int reps = argc > 3 ? atoi(argv[3]) : 50;
  const int nt = 1 << 18;  // threads
  size_t nin = (size_t)nt * K;
  float *in, *out, *w;
  int *next;
  CK(cudaMalloc(&in, nin * sizeof(float)));
  CK(cudaMalloc(&out, nt * sizeof(float)));
  CK(cudaMalloc(&w, 4096 * sizeof(float)));
  CK(cudaMalloc(&next, nt * sizeof(int)));
  {
    float *h = (float *)malloc(nin * sizeof(float));
    for (size_t i = 0; i < nin; i++) h[i] = (float)(i % 97) * 0.01f;
    CK(cudaMemcpy(in, h, nin * sizeof(float), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(w, h, 4096 * sizeof(float), cudaMemcpyHostToDevice));
    int *hn = (int *)malloc(nt * sizeof(int));
    for (int i = 0; i < nt; i++) hn[i] = (int)(((long long)i * 7919 + 12345) % nt);
    CK(cudaMemcpy(next, hn, nt * sizeof(int), cudaMemcpyHostToDevice));
    free(h);
    free(hn);
  }
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  for (int pass = 0; pass < 2; pass++) {  // pass 0 warms up
    int n = pass ? reps : 3;
    CK(cudaEventRecord(e0));
    for (int r = 0; r < n; r++) {
      if (!strcmp(c, "coalesce")) {
        if (fixed) coalesce_fixed<<<nt / 256, 256>>>(in, out, nt);
        else coalesce_bad<<<nt / 256, 256>>>(in, out, nt);
      } else if (!strcmp(c, "spill")) {
        if (fixed) spill_kernel<2><<<nt / 256, 256>>>(in, out, 64, nt);
        else spill_kernel<8><<<nt / 256, 256>>>(in, out, 64, nt);
      } else if (!strcmp(c, "occupancy")) {
        int b = fixed ? 256 : 32;
        chase<<<nt / b, b>>>(next, out, 256, nt);
      } else if (!strcmp(c, "diverge")) {
        if (fixed) diverge_fixed<<<nt / 256, 256>>>(out, 512, nt);
        else diverge_bad<<<nt / 256, 256>>>(out, 512, nt);
      } else if (!strcmp(c, "unroll")) {
        /* a quarter of the threads: few warps, so latency is not hidden by others */
        if (fixed) unroll_fixed<<<nt / 4 / 256, 256>>>(in, w, out, 256, nt / 4);
        else unroll_bad<<<nt / 4 / 256, 256>>>(in, w, out, 256, nt / 4);
      } else {
        fprintf(stderr, "unknown case %s\n", c);
        return 2;
      }
    }
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    CK(cudaGetLastError());
    if (pass) {
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, e0, e1));
      printf("%s %s %.4f\n", c, fixed ? "fixed" : "bad", ms / n);
    }
  }
  return 0;
}

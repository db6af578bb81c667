// advise-suite.cu - the advisor's validation suite (docs/ADVISOR.md,
// tests/advisor/suite-split.txt): pairs of CUDA kernels, the first with one
// known performance defect, the second the same kernel with only that
// defect fixed, after the optimizers of Zhou et al., "GPA: A GPU
// Performance Advisor Based on Instruction Sampling" (CGO 2021, section 5,
// Table 2) and kernel shapes of Rodinia and PolyBench/GPU.  Each pair's
// kernels are named CASE_bad and CASE_fixed; the defect's line carries a
// "// CASE-BAD" comment, the fix's line "// CASE-FIXED".
//
// Usage:
//   advise-suite list                      the cases, one per line
//   advise-suite time [-r ROUNDS] [-m MS] CASE...
//       bare timing: ROUNDS alternating rounds (bad then fixed in odd
//       rounds, fixed then bad in even ones); in each, a variant is
//       launched (after 2 warm-ups) until its kernels took MS ms, each
//       launch timed by a cudaEvent pair; prints per round
//         round R CASE bad|fixed MEDIAN_MS N
//       and at the end, per case,
//         speedup CASE BAD_MS FIXED_MS SPEEDUP
//       (the medians over rounds of the per-round medians, and the median
//       over rounds of bad/fixed).
//   advise-suite run CASE bad|fixed|both [MS]
//       for recording (PC sampling): the variant(s) launched until their
//       kernels took MS (40) ms; prints
//         run CASE VARIANT MEDIAN_MS N
//   advise-suite CASE bad|fixed [REPS]
//       tests/advisor/gpu-advise.sh's form: REPS (50) launches after 3
//       warm-ups, prints "CASE VARIANT <mean ms per launch>".
// Exit 0, 2 on bad usage, 1 on a CUDA error, 77 without a GPU.
#include <algorithm>
#include <cfloat>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CK(x)                                                                       \
  do {                                                                              \
    cudaError_t e_ = (x);                                                           \
    if (e_ != cudaSuccess) {                                                        \
      fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_));                      \
      exit(1);                                                                      \
    }                                                                               \
  } while (0)

#define NA (1 << 26)     // floats in buffers a and b (256 MB each)
#define NO (1 << 24)     // floats in buffer o
#define NW 4096          // floats in the small table w (L1-resident)
#define NLINE (1 << 17)  // 128-byte lines of the coherent chase table (16 MB: L2-resident)

static float *g_a, *g_b, *g_o, *g_w, *g_bins;
static int *g_next, *g_line, *g_bounds_bad, *g_bounds_fixed;

__device__ __forceinline__ int gtid() { return blockIdx.x * blockDim.x + threadIdx.x; }

// ---------------------------------------------------------------- coalesce
// Global Memory Coalescing: each thread reads its own 64-float row | reads
// down a column, neighbouring threads neighbouring addresses.
#define K 64
__global__ void coalesce_bad(const float *in, float *out, int nt) {
  int t = gtid();
  if (t >= nt) return;
  float s = 0.f;
  for (int k = 0; k < K; k++) s += in[t * K + k];  // COALESCE-BAD
  out[t] = s;
}

__global__ void coalesce_fixed(const float *in, float *out, int nt) {
  int t = gtid();
  if (t >= nt) return;
  float s = 0.f;
  for (int k = 0; k < K; k++) s += in[k * nt + t];  // COALESCE-FIXED
  out[t] = s;
}

// --------------------------------------------------------------------- mvt
// Global Memory Coalescing, PolyBench/GPU mvt kernel 1: y = A x, one thread
// per row of a row-major A (a 4 KB stride between lanes) | A stored
// transposed, one thread per column.
#define MVT_R (1 << 16)
#define MVT_C 1024
__global__ void mvt_bad(const float *A, const float *x, float *y) {
  int i = gtid();
  float s = 0.f;
  for (int j = 0; j < MVT_C; j++) s += A[(size_t)i * MVT_C + j] * x[j];  // MVT-BAD
  y[i] = s;
}

__global__ void mvt_fixed(const float *At, const float *x, float *y) {
  int i = gtid();
  float s = 0.f;
  for (int j = 0; j < MVT_C; j++) s += At[(size_t)j * MVT_R + i] * x[j];  // MVT-FIXED
  y[i] = s;
}

// ------------------------------------------------------------------ atomic
// Memory Transaction Reduction: every thread adds into its block's bin in
// global memory (32 atomics per warp on one address) | a warp sums by
// shuffles first, one atomic per warp.
__global__ void atomic_bad(const float *in, float *bins) {
  float v = in[gtid()] * 0.5f;
  atomicAdd(&bins[(blockIdx.x & 63) * 32], v);  // ATOMIC-BAD
}

__global__ void atomic_fixed(const float *in, float *bins) {
  float v = in[gtid()] * 0.5f;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  if ((threadIdx.x & 31) == 0) atomicAdd(&bins[(blockIdx.x & 63) * 32], v);  // ATOMIC-FIXED
}

// ------------------------------------------------------------------ vector
// Memory Transaction Reduction: four 4-byte loads per thread from four
// planes | one 16-byte load of four neighbouring floats (the same bytes).
__global__ void vector_bad(const float *in, float *out, int nt) {
  int t = gtid();
  out[t] = in[t] + in[t + nt] + in[t + 2 * nt] + in[t + 3 * nt];  // VECTOR-BAD
}

__global__ void vector_fixed(const float *in, float *out, int nt) {
  int t = gtid();
  float4 v = reinterpret_cast<const float4 *>(in)[t];  // VECTOR-FIXED
  out[t] = v.x + v.y + v.z + v.w;
}

// --------------------------------------------------------------- transpose
// Shared-memory bank conflicts (NVIDIA's coalesced transpose): a 32x32
// tile read by columns, 32 lanes in one bank | the tile padded to 33.
#define TR_W 8192
template <int PAD>
__device__ __forceinline__ void transpose_body(const float *in, float *out) {
  __shared__ float tile[32][32 + PAD];
  int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
  for (int j = 0; j < 32; j += 8) tile[threadIdx.y + j][threadIdx.x] = in[(size_t)(y + j) * TR_W + x];
  __syncthreads();
  x = blockIdx.y * 32 + threadIdx.x;
  y = blockIdx.x * 32 + threadIdx.y;
  for (int j = 0; j < 32; j += 8)
    out[(size_t)(y + j) * TR_W + x] = tile[threadIdx.x][threadIdx.y + j];  // TRANSPOSE-READ
}
__global__ void transpose_bad(const float *in, float *out) { transpose_body<0>(in, out); }  // TRANSPOSE-BAD
__global__ void transpose_fixed(const float *in, float *out) { transpose_body<1>(in, out); }  // TRANSPOSE-FIXED

// ---------------------------------------------------------------- smemaos
// Shared-memory bank conflicts: per-thread records of 8 floats in shared
// memory (array of structures: stride 8 words, 8-way conflicts) | records
// padded to 9 words.
template <int W>
__device__ __forceinline__ void smemaos_body(const float *in, float *out, int reps) {
  __shared__ float rec[256][W];
  const float *src = in + (size_t)blockIdx.x * 256 * 8;
  for (int k = threadIdx.x; k < 256 * 8; k += 256) rec[k >> 3][k & 7] = src[k];
  __syncthreads();
  float s = 0.f;
  for (int r = 0; r < reps; r++)
#pragma unroll
    for (int k = 0; k < 8; k++) s = s * 0.999f + rec[threadIdx.x][(k + r) & 7];  // SMEMAOS-READ
  out[gtid()] = s;
}
__global__ void smemaos_bad(const float *in, float *out, int reps) { smemaos_body<8>(in, out, reps); }  // SMEMAOS-BAD
__global__ void smemaos_fixed(const float *in, float *out, int reps) { smemaos_body<9>(in, out, reps); }  // SMEMAOS-FIXED

// ------------------------------------------------------------------- spill
// Register Reuse: 40 live accumulators under __launch_bounds__(256, 8) (32
// registers: spills to local memory) | (256, 2).
#define NACC 40
__device__ __forceinline__ void spill_body(const float *in, float *out, int n, int nt) {
  int t = gtid();
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
__global__ void __launch_bounds__(256, 8) spill_bad(const float *in, float *out, int n, int nt) {  // SPILL-BAD
  spill_body(in, out, n, nt);
}
__global__ void __launch_bounds__(256, 2) spill_fixed(const float *in, float *out, int n, int nt) {  // SPILL-FIXED
  spill_body(in, out, n, nt);
}

// ---------------------------------------------------------------- localarr
// Register Reuse: a per-thread histogram of 32 bins indexed at run time
// lives in local memory | the same bins in shared memory, one column per
// thread.
#define LA_BINS 32
__global__ void localarr_bad(const float *w, float *out, int n) {
  float h[LA_BINS];  // LOCALARR-BAD
#pragma unroll
  for (int b = 0; b < LA_BINS; b++) h[b] = 0.f;
  int t = gtid();
  for (int i = 0; i < n; i++) {
    float v = w[(t + i * 7) & (NW - 1)];
    h[(t + i * 3) & (LA_BINS - 1)] += v;
  }
  float s = 0.f;
#pragma unroll
  for (int b = 0; b < LA_BINS; b++) s += h[b] * (float)(b + 1);
  out[t] = s;
}

__global__ void localarr_fixed(const float *w, float *out, int n) {
  __shared__ float h[LA_BINS][256];  // LOCALARR-FIXED
#pragma unroll
  for (int b = 0; b < LA_BINS; b++) h[b][threadIdx.x] = 0.f;
  int t = gtid();
  for (int i = 0; i < n; i++) {
    float v = w[(t + i * 7) & (NW - 1)];
    h[(t + i * 3) & (LA_BINS - 1)][threadIdx.x] += v;
  }
  float s = 0.f;
#pragma unroll
  for (int b = 0; b < LA_BINS; b++) s += h[b][threadIdx.x] * (float)(b + 1);
  out[t] = s;
}

// ------------------------------------------------------------------- chase
// Thread Increase that does not pay: a random pointer chase (each lane its
// own address) in blocks of 32 threads (the 32-blocks-per-SM limit: 50 %
// occupancy) | 256.  Bound by the memory system, not by warps.
__device__ __forceinline__ void chase_body(const int *next, float *out, int steps, int nt) {
  int t = gtid();
  if (t >= nt) return;
  int p = t;
  for (int i = 0; i < steps; i++) p = next[p];  // CHASE-LOOP
  out[t] = (float)p;
}
__global__ void chase_bad(const int *next, float *out, int steps, int nt) { chase_body(next, out, steps, nt); }
__global__ void chase_fixed(const int *next, float *out, int steps, int nt) { chase_body(next, out, steps, nt); }

// -------------------------------------------------- the coherent chase body
// A dependent walk over 128-byte lines of an L2-resident table: the 32
// lanes of a warp read one line per step (one request, four sectors), so a
// warp has one load in flight and more warps hide more latency.
__device__ __forceinline__ int cchase(const int *line, int steps) {
  int lane = threadIdx.x & 31;
  int p = (((gtid() >> 5) * 977) & (NLINE - 1)) << 5;
  for (int i = 0; i < steps; i++) p = line[p + lane];  // CCHASE-LOOP
  return p;
}

// --------------------------------------------------------------- blocksize
// Thread Increase: the coherent chase in blocks of 32 threads (50 %
// occupancy: at most 32 blocks per SM) | blocks of 256.
__global__ void blocksize_bad(const int *line, float *out, int steps) { out[gtid()] = (float)cchase(line, steps); }
__global__ void blocksize_fixed(const int *line, float *out, int steps) { out[gtid()] = (float)cchase(line, steps); }

// ---------------------------------------------------------------- gaussian
// Thread Increase, Rodinia gaussian Fan2 (one elimination step): 4x4
// thread blocks (16 threads: half-empty warps, 32 blocks per SM) | 16x16.
__device__ __forceinline__ void fan2_body(float *m, float *a, float *b, int size, int t) {
  int xidx = blockIdx.x * blockDim.x + threadIdx.x;
  if (xidx >= size - 1 - t) return;
  int yidx = blockIdx.y * blockDim.y + threadIdx.y;
  if (yidx >= size - t) return;
  a[size * (xidx + 1 + t) + (yidx + t)] -= m[size * (xidx + 1 + t) + t] * a[size * t + (yidx + t)];
  if (yidx == 0) b[xidx + 1 + t] -= m[size * (xidx + 1 + t) + (yidx + t)] * b[t];
}
__global__ void gaussian_bad(float *m, float *a, float *b, int size, int t) { fan2_body(m, a, b, size, t); }
__global__ void gaussian_fixed(float *m, float *a, float *b, int size, int t) { fan2_body(m, a, b, size, t); }

// ------------------------------------------------------------------ regocc
// Occupancy Increase (registers): 64 values loaded before the chase and
// summed after it stay live across it (~90 registers: 2 blocks of 256 per
// SM) | loaded after the chase.
#define RO_NV 64
__global__ void regocc_bad(const int *line, const float *w, float *out, int steps) {
  int t = gtid();
  float v[RO_NV];
#pragma unroll
  for (int k = 0; k < RO_NV; k++) v[k] = w[(t + 33 * k) & (NW - 1)];  // REGOCC-BAD
  int p = cchase(line, steps);
  float s = 0.f;
#pragma unroll
  for (int k = 0; k < RO_NV; k++) s += v[k];
  out[t] = (float)p + s;
}

__global__ void regocc_fixed(const int *line, const float *w, float *out, int steps) {
  int t = gtid();
  int p = cchase(line, steps);
  float s = 0.f;
#pragma unroll
  for (int k = 0; k < RO_NV; k++) s += w[(t + 33 * k) & (NW - 1)];  // REGOCC-FIXED
  out[t] = (float)p + s;
}

// ----------------------------------------------------------------- smemocc
// Occupancy Increase (shared memory): the coherent chase with 72 KB of
// dynamic shared memory per block, of which it uses 1 KB (3 blocks per SM)
// | 1 KB.
__device__ __forceinline__ void smemocc_body(const int *line, float *out, int steps) {
  extern __shared__ int sm[];
  int p = cchase(line, steps);
  sm[threadIdx.x] = p;
  __syncthreads();
  out[gtid()] = (float)sm[threadIdx.x ^ 1];
}
__global__ void smemocc_bad(const int *line, float *out, int steps) { smemocc_body(line, out, steps); }
__global__ void smemocc_fixed(const int *line, float *out, int steps) { smemocc_body(line, out, steps); }
#define SMEMOCC_BAD_BYTES (72 * 1024)   // SMEMOCC-BAD
#define SMEMOCC_FIXED_BYTES (1 * 1024)  // SMEMOCC-FIXED

// ---------------------------------------------------------------- blockinc
// Block Increase: a compute-bound grid-stride loop on 66 blocks of 1024
// threads (half of an H200's 132 SMs) | 264 blocks.
__device__ __forceinline__ void fma_grid_body(const float *in, float *out, int n, int chain) {
  for (int i = gtid(); i < n; i += gridDim.x * blockDim.x) {
    float x = in[i];
    for (int k = 0; k < chain; k++) x = x * 0.999f + 0.001f;  // FMA-CHAIN
    out[i] = x;
  }
}
__global__ void blockinc_bad(const float *in, float *out, int n, int chain) { fma_grid_body(in, out, n, chain); }
__global__ void blockinc_fixed(const float *in, float *out, int n, int chain) { fma_grid_body(in, out, n, chain); }
#define BLOCKINC_BAD_BLOCKS 66     // BLOCKINC-BAD
#define BLOCKINC_FIXED_BLOCKS 264  // BLOCKINC-FIXED

// ---------------------------------------------------------------- blockbal
// Block Balance: 264 blocks (two per SM) over 2 M elements, every 8th block
// given 8 times the elements of the others (a skewed partition) | equal
// shares.  Same kernel, the partition (bounds) differs.
__device__ __forceinline__ void blockbal_body(const float *in, float *out, const int *bounds, int chain) {
  int b0 = bounds[blockIdx.x], b1 = bounds[blockIdx.x + 1];
  for (int i = b0 + threadIdx.x; i < b1; i += blockDim.x) {
    float x = in[i];
    for (int k = 0; k < chain; k++) x = x * 0.999f + 0.001f;  // BLOCKBAL-CHAIN
    out[i] = x;
  }
}
__global__ void blockbal_bad(const float *in, float *out, const int *bounds, int chain) {
  blockbal_body(in, out, bounds, chain);
}
__global__ void blockbal_fixed(const float *in, float *out, const int *bounds, int chain) {
  blockbal_body(in, out, bounds, chain);
}
#define BB_BLOCKS 264
#define BB_N (1 << 21)

// ----------------------------------------------------------------- diverge
// Warp Balance (divergence): odd and even lanes take different loops | the
// branch by warp.
__device__ __forceinline__ float work(float x, int n, float a) {
  for (int i = 0; i < n; i++) x = x * a + 0.25f;
  return x;
}

__global__ void diverge_bad(float *out, int n, int nt) {
  int t = gtid();
  if (t >= nt) return;
  float x = (float)t;
  if (threadIdx.x & 1)  // DIVERGE-BAD
    x = work(x, n, 0.999f);
  else
    x = work(x + 1.f, n, 0.998f) * 2.f;
  out[t] = x;
}

__global__ void diverge_fixed(float *out, int n, int nt) {
  int t = gtid();
  if (t >= nt) return;
  float x = (float)t;
  if ((threadIdx.x >> 5) & 1)  // DIVERGE-FIXED
    x = work(x, n, 0.999f);
  else
    x = work(x + 1.f, n, 0.998f) * 2.f;
  out[t] = x;
}

// --------------------------------------------------------------- tripcount
// Warp Balance (divergence): a loop whose trip count depends on the lane
// (8..256: every warp runs the longest) | on the warp (the same 32 counts
// over 32 warps, each warp uniform).
__global__ void tripcount_bad(float *out) {
  int n = 8 + 8 * (threadIdx.x & 31);  // TRIPCOUNT-BAD
  out[gtid()] = work((float)gtid(), n, 0.999f);
}

__global__ void tripcount_fixed(float *out) {
  int n = 8 + 8 * ((gtid() >> 5) & 31);  // TRIPCOUNT-FIXED
  out[gtid()] = work((float)gtid(), n, 0.999f);
}

// ----------------------------------------------------------------- warpbal
// Warp Balance (synchronization): in each of 16 phases one warp computes
// the block's 256-entry tile while seven wait at __syncthreads | every
// warp computes its own entries.
#define WB_PHASES 16
__device__ __forceinline__ float wb_entry(float x, int ph) {
  for (int k = 0; k < 32; k++) x = x * 0.999f + 0.01f * (float)ph;
  return x;
}
__global__ void warpbal_bad(const float *in, float *out) {
  __shared__ float tile[256];
  float acc = 0.f;
  for (int ph = 0; ph < WB_PHASES; ph++) {
    if (threadIdx.x < 32) {  // WARPBAL-BAD
#pragma unroll 1
      for (int e = threadIdx.x; e < 256; e += 32) tile[e] = wb_entry(in[blockIdx.x * 256 + e], ph);
    }
    __syncthreads();
    acc += tile[(threadIdx.x * 7 + ph) & 255];
    __syncthreads();
  }
  out[gtid()] = acc;
}

__global__ void warpbal_fixed(const float *in, float *out) {
  __shared__ float tile[256];
  float acc = 0.f;
  for (int ph = 0; ph < WB_PHASES; ph++) {
    tile[threadIdx.x] = wb_entry(in[blockIdx.x * 256 + threadIdx.x], ph);  // WARPBAL-FIXED
    __syncthreads();
    acc += tile[(threadIdx.x * 7 + ph) & 255];
    __syncthreads();
  }
  out[gtid()] = acc;
}

// ------------------------------------------------------------------ unroll
// Loop Unrolling: a load -> FMA loop kept rolled (unroll 1) | unroll 8.
__global__ void unroll_bad(const float *in, const float *w, float *out, int k, int nt) {
  int t = gtid();
  if (t >= nt) return;
  float s = 0.f;
#pragma unroll 1
  for (int i = 0; i < k; i++) s += in[i * nt + t] * w[i];  // UNROLL-BAD
  out[t] = s;
}

__global__ void unroll_fixed(const float *in, const float *w, float *out, int k, int nt) {
  int t = gtid();
  if (t >= nt) return;
  float s = 0.f;
#pragma unroll 8
  for (int i = 0; i < k; i++) s += in[i * nt + t] * w[i];  // UNROLL-FIXED
  out[t] = s;
}

// ------------------------------------------------------------------ kmeans
// Loop Unrolling, Rodinia kmeans (kmeansPoint): the nearest of 5 clusters
// over 32 features, the feature loop kept rolled | unroll 8.
#define KM_NP (1 << 20)
template <int U>
__device__ __forceinline__ void kmeans_body(const float *feat, const float *clus, int *member, int nclus,
                                            int nfeat) {
  int pid = gtid();
  int best = 0;
  float dmin = FLT_MAX;
  for (int c = 0; c < nclus; c++) {
    float d = 0.f;
#pragma unroll U
    for (int l = 0; l < nfeat; l++) {  // KMEANS-LOOP
      float diff = feat[(size_t)l * KM_NP + pid] - clus[c * nfeat + l];
      d += diff * diff;
    }
    if (d < dmin) {
      dmin = d;
      best = c;
    }
  }
  member[pid] = best;
}
__global__ void kmeans_bad(const float *feat, const float *clus, int *member, int nclus, int nfeat) {
  kmeans_body<1>(feat, clus, member, nclus, nfeat);  // KMEANS-BAD
}
__global__ void kmeans_fixed(const float *feat, const float *clus, int *member, int nclus, int nfeat) {
  kmeans_body<8>(feat, clus, member, nclus, nfeat);  // KMEANS-FIXED
}

// ----------------------------------------------------------------- reorder
// Code Reordering: eight load -> store pairs in straight-line code; the
// pointers may alias, so no load moves above an earlier store (one load in
// flight) | the eight loads first, then the stores.
#define RE_NT (1 << 21)
__global__ void reorder_bad(const float *in, float *out) {
  int t = gtid();
#pragma unroll
  for (int k = 0; k < 8; k++) {
    float v = in[k * RE_NT + t];  // REORDER-BAD
    out[k * RE_NT + t] = v * v + 1.f;
  }
}

__global__ void reorder_fixed(const float *in, float *out) {
  int t = gtid();
  float v[8];
#pragma unroll
  for (int k = 0; k < 8; k++) v[k] = in[k * RE_NT + t];  // REORDER-FIXED
#pragma unroll
  for (int k = 0; k < 8; k++) out[k * RE_NT + t] = v[k] * v[k] + 1.f;
}

// --------------------------------------------------------------- fp64promo
// Strength Reduction: a double literal turns one multiply of a float loop
// into F2F.F64.F32, DMUL, F2F.F32.F64 | a float literal.
__global__ void fp64promo_bad(const float *w, float *out, int n) {
  float x = w[gtid() & (NW - 1)], s = 0.f, u = 1.f;
  for (int i = 0; i < n; i++) {
    x = x * 0.999;  // FP64PROMO-BAD
    s = s * 0.5f + x;
    u = u * x + s;
  }
  out[gtid()] = s + u;
}

__global__ void fp64promo_fixed(const float *w, float *out, int n) {
  float x = w[gtid() & (NW - 1)], s = 0.f, u = 1.f;
  for (int i = 0; i < n; i++) {
    x = x * 0.999f;  // FP64PROMO-FIXED
    s = s * 0.5f + x;
    u = u * x + s;
  }
  out[gtid()] = s + u;
}

// -------------------------------------------------------------------- fdiv
// Strength Reduction (Rodinia hotspot's divisions): an IEEE division by a
// loop-invariant divisor in the loop | a multiply by its reciprocal, taken
// once.
__global__ void fdiv_bad(const float *w, float *out, int n, float d) {
  float s = 0.f;
  for (int i = 0; i < n; i++) s = s * 0.5f + w[(gtid() + i) & (NW - 1)] / d;  // FDIV-BAD
  out[gtid()] = s;
}

__global__ void fdiv_fixed(const float *w, float *out, int n, float d) {
  float s = 0.f, rd = 1.f / d;
  for (int i = 0; i < n; i++) s = s * 0.5f + w[(gtid() + i) & (NW - 1)] * rd;  // FDIV-FIXED
  out[gtid()] = s;
}

// ------------------------------------------------------------------ inline
// Function Inlining: a small __noinline__ device function called in the
// hot loop | __forceinline__.
#define INL_BODY return (s * a + v) * 0.5f + v * a
__device__ __noinline__ float inl_step_call(float s, float v, float a) { INL_BODY; }  // INLINE-BAD
__device__ __forceinline__ float inl_step_inl(float s, float v, float a) { INL_BODY; }  // INLINE-FIXED
__global__ void inline_bad(const float *w, float *out, int n) {
  float s = 0.f;
  for (int i = 0; i < n; i++) s = inl_step_call(s, w[(gtid() + 3 * i) & (NW - 1)], 0.999f);
  out[gtid()] = s;
}
__global__ void inline_fixed(const float *w, float *out, int n) {
  float s = 0.f;
  for (int i = 0; i < n; i++) s = inl_step_inl(s, w[(gtid() + 3 * i) & (NW - 1)], 0.999f);
  out[gtid()] = s;
}

// ---------------------------------------------------------------- fastmath
// Fast Math: sinf / cosf (full-range reduction, polynomials) in a loop |
// __sinf / __cosf (MUFU.SIN / MUFU.COS).
__global__ void fastmath_bad(const float *w, float *out, int n) {
  float x = w[gtid() & (NW - 1)];
  for (int i = 0; i < n; i++) x = sinf(x) * 0.9f + cosf(x * 0.5f);  // FASTMATH-BAD
  out[gtid()] = x;
}

__global__ void fastmath_fixed(const float *w, float *out, int n) {
  float x = w[gtid() & (NW - 1)];
  for (int i = 0; i < n; i++) x = __sinf(x) * 0.9f + __cosf(x * 0.5f);  // FASTMATH-FIXED
  out[gtid()] = x;
}

// ----------------------------------------------------------------- fastexp
// Fast Math: expf / logf | __expf / __logf (MUFU.EX2 / MUFU.LG2 with a
// multiply).
__global__ void fastexp_bad(const float *w, float *out, int n) {
  float x = w[gtid() & (NW - 1)];
  for (int i = 0; i < n; i++) x = expf(x * -0.5f) + logf(x + 1.5f);  // FASTEXP-BAD
  out[gtid()] = x;
}

__global__ void fastexp_fixed(const float *w, float *out, int n) {
  float x = w[gtid() & (NW - 1)];
  for (int i = 0; i < n; i++) x = __expf(x * -0.5f) + __logf(x + 1.5f);  // FASTEXP-FIXED
  out[gtid()] = x;
}

// ------------------------------------------------------------------- setup
__global__ void suite_init(float *a, float *b, float *w, int *next, int *line, int nchase) {
  for (size_t i = gtid(); i < (size_t)NA; i += (size_t)gridDim.x * blockDim.x) {
    a[i] = (float)(i % 97) * 0.01f;
    b[i] = (float)(i % 89) * 0.01f;
    if (i < NW) w[i] = 1.f + (float)(i % 13) * 0.01f;
    if (i < (size_t)nchase) next[i] = (int)(((long long)i * 7919 + 12345) % nchase);
    if (i < (size_t)NLINE * 32) line[i] = (int)((((i >> 5) * 7919 + 12345) & (NLINE - 1)) << 5);
  }
}

#define NT (1 << 20)   // threads of most cases
#define ONT (1 << 18)  // threads of the cases of gpu-advise.sh's first suite

typedef void (*launch_fn)(int fixed);

static void l_coalesce(int f) {
  if (f) coalesce_fixed<<<ONT / 256, 256>>>(g_a, g_o, ONT);
  else coalesce_bad<<<ONT / 256, 256>>>(g_a, g_o, ONT);
}
static void l_mvt(int f) {
  if (f) mvt_fixed<<<MVT_R / 256, 256>>>(g_a, g_w, g_o);
  else mvt_bad<<<MVT_R / 256, 256>>>(g_a, g_w, g_o);
}
static void l_atomic(int f) {
  if (f) atomic_fixed<<<(1 << 22) / 256, 256>>>(g_a, g_bins);
  else atomic_bad<<<(1 << 22) / 256, 256>>>(g_a, g_bins);
}
static void l_vector(int f) {
  if (f) vector_fixed<<<(1 << 22) / 256, 256>>>(g_a, g_o, 1 << 22);
  else vector_bad<<<(1 << 22) / 256, 256>>>(g_a, g_o, 1 << 22);
}
static void l_transpose(int f) {
  dim3 grid(TR_W / 32, TR_W / 32), block(32, 8);
  if (f) transpose_fixed<<<grid, block>>>(g_a, g_b);
  else transpose_bad<<<grid, block>>>(g_a, g_b);
}
static void l_smemaos(int f) {
  if (f) smemaos_fixed<<<4096, 256>>>(g_a, g_o, 64);
  else smemaos_bad<<<4096, 256>>>(g_a, g_o, 64);
}
static void l_spill(int f) {
  if (f) spill_fixed<<<ONT / 256, 256>>>(g_a, g_o, 64, ONT);
  else spill_bad<<<ONT / 256, 256>>>(g_a, g_o, 64, ONT);
}
static void l_localarr(int f) {
  if (f) localarr_fixed<<<NT / 256, 256>>>(g_w, g_o, 256);
  else localarr_bad<<<NT / 256, 256>>>(g_w, g_o, 256);
}
static void l_chase(int f) {
  if (f) chase_fixed<<<ONT / 256, 256>>>(g_next, g_o, 256, ONT);  // CHASE-FIXED
  else chase_bad<<<ONT / 32, 32>>>(g_next, g_o, 256, ONT);  // CHASE-BAD
}
static void l_blocksize(int f) {
  if (f) blocksize_fixed<<<NT / 256, 256>>>(g_line, g_o, 128);  // BLOCKSIZE-FIXED
  else blocksize_bad<<<NT / 32, 32>>>(g_line, g_o, 128);  // BLOCKSIZE-BAD
}
static void l_gaussian(int f) {
  const int size = 4096;
  if (f) gaussian_fixed<<<dim3(size / 16, size / 16), dim3(16, 16)>>>(g_b, g_a, g_o, size, 0);  // GAUSSIAN-FIXED
  else gaussian_bad<<<dim3(size / 4, size / 4), dim3(4, 4)>>>(g_b, g_a, g_o, size, 0);  // GAUSSIAN-BAD
}
static void l_regocc(int f) {
  if (f) regocc_fixed<<<NT / 256, 256>>>(g_line, g_w, g_o, 128);
  else regocc_bad<<<NT / 256, 256>>>(g_line, g_w, g_o, 128);
}
static void l_smemocc(int f) {
  if (f) smemocc_fixed<<<NT / 256, 256, SMEMOCC_FIXED_BYTES>>>(g_line, g_o, 128);
  else smemocc_bad<<<NT / 256, 256, SMEMOCC_BAD_BYTES>>>(g_line, g_o, 128);
}
static void l_blockinc(int f) {
  if (f) blockinc_fixed<<<BLOCKINC_FIXED_BLOCKS, 1024>>>(g_a, g_o, 1 << 22, 256);
  else blockinc_bad<<<BLOCKINC_BAD_BLOCKS, 1024>>>(g_a, g_o, 1 << 22, 256);
}
static void l_blockbal(int f) {
  if (f) blockbal_fixed<<<BB_BLOCKS, 512>>>(g_a, g_o, g_bounds_fixed, 512);  // BLOCKBAL-FIXED
  else blockbal_bad<<<BB_BLOCKS, 512>>>(g_a, g_o, g_bounds_bad, 512);  // BLOCKBAL-BAD
}
static void l_diverge(int f) {
  if (f) diverge_fixed<<<ONT / 256, 256>>>(g_o, 512, ONT);
  else diverge_bad<<<ONT / 256, 256>>>(g_o, 512, ONT);
}
static void l_tripcount(int f) {
  if (f) tripcount_fixed<<<NT / 256, 256>>>(g_o);
  else tripcount_bad<<<NT / 256, 256>>>(g_o);
}
static void l_warpbal(int f) {
  if (f) warpbal_fixed<<<NT / 256, 256>>>(g_a, g_o);
  else warpbal_bad<<<NT / 256, 256>>>(g_a, g_o);
}
static void l_unroll(int f) {
  /* a quarter of the threads: few warps, so latency is not hidden by others */
  if (f) unroll_fixed<<<ONT / 4 / 256, 256>>>(g_a, g_w, g_o, 256, ONT / 4);
  else unroll_bad<<<ONT / 4 / 256, 256>>>(g_a, g_w, g_o, 256, ONT / 4);
}
static void l_kmeans(int f) {
  if (f) kmeans_fixed<<<KM_NP / 256, 256>>>(g_a, g_w, (int *)g_o, 5, 32);
  else kmeans_bad<<<KM_NP / 256, 256>>>(g_a, g_w, (int *)g_o, 5, 32);
}
static void l_reorder(int f) {
  if (f) reorder_fixed<<<RE_NT / 256, 256>>>(g_a, g_b);
  else reorder_bad<<<RE_NT / 256, 256>>>(g_a, g_b);
}
static void l_fp64promo(int f) {
  if (f) fp64promo_fixed<<<NT / 256, 256>>>(g_w, g_o, 256);
  else fp64promo_bad<<<NT / 256, 256>>>(g_w, g_o, 256);
}
static void l_fdiv(int f) {
  if (f) fdiv_fixed<<<NT / 256, 256>>>(g_w, g_o, 256, 3.7f);
  else fdiv_bad<<<NT / 256, 256>>>(g_w, g_o, 256, 3.7f);
}
static void l_inline(int f) {
  if (f) inline_fixed<<<NT / 256, 256>>>(g_w, g_o, 256);
  else inline_bad<<<NT / 256, 256>>>(g_w, g_o, 256);
}
static void l_fastmath(int f) {
  if (f) fastmath_fixed<<<NT / 256, 256>>>(g_w, g_o, 128);
  else fastmath_bad<<<NT / 256, 256>>>(g_w, g_o, 128);
}
static void l_fastexp(int f) {
  if (f) fastexp_fixed<<<NT / 256, 256>>>(g_w, g_o, 128);
  else fastexp_bad<<<NT / 256, 256>>>(g_w, g_o, 128);
}

static const struct {
  const char *name;
  launch_fn launch;
} cases[] = {
    {"coalesce", l_coalesce},   {"mvt", l_mvt},           {"atomic", l_atomic},
    {"vector", l_vector},       {"transpose", l_transpose}, {"smemaos", l_smemaos},
    {"spill", l_spill},         {"localarr", l_localarr}, {"chase", l_chase},
    {"blocksize", l_blocksize}, {"gaussian", l_gaussian}, {"regocc", l_regocc},
    {"smemocc", l_smemocc},     {"blockinc", l_blockinc}, {"blockbal", l_blockbal},
    {"diverge", l_diverge},     {"tripcount", l_tripcount}, {"warpbal", l_warpbal},
    {"unroll", l_unroll},       {"kmeans", l_kmeans},     {"reorder", l_reorder},
    {"fp64promo", l_fp64promo}, {"fdiv", l_fdiv},         {"inline", l_inline},
    {"fastmath", l_fastmath},   {"fastexp", l_fastexp},
};
#define NCASES (sizeof cases / sizeof cases[0])

static int find_case(const char *name) {
  for (size_t i = 0; i < NCASES; i++)
    if (strcmp(cases[i].name, name) == 0) return (int)i;
  return -1;
}

/* Partitions of blockbal: every 8th block 8 shares, the others 1 | equal. */
static void bounds(int skewed, int *h) {
  int w[BB_BLOCKS], total = 0;
  for (int b = 0; b < BB_BLOCKS; b++) total += w[b] = skewed && b % 8 == 0 ? 8 : 1;
  long long acc = 0;
  for (int b = 0; b <= BB_BLOCKS; b++) {
    h[b] = (int)(acc * BB_N / total);
    if (b < BB_BLOCKS) acc += w[b];
  }
}

static void setup(void) {
  CK(cudaMalloc(&g_a, (size_t)NA * sizeof(float)));
  CK(cudaMalloc(&g_b, (size_t)NA * sizeof(float)));
  CK(cudaMalloc(&g_o, (size_t)NO * sizeof(float)));
  CK(cudaMalloc(&g_w, NW * sizeof(float)));
  CK(cudaMalloc(&g_bins, 64 * 32 * sizeof(float)));
  CK(cudaMalloc(&g_next, ONT * sizeof(int)));
  CK(cudaMalloc(&g_line, (size_t)NLINE * 32 * sizeof(int)));
  CK(cudaMalloc(&g_bounds_bad, (BB_BLOCKS + 1) * sizeof(int)));
  CK(cudaMalloc(&g_bounds_fixed, (BB_BLOCKS + 1) * sizeof(int)));
  CK(cudaMemset(g_bins, 0, 64 * 32 * sizeof(float)));
  suite_init<<<1024, 256>>>(g_a, g_b, g_w, g_next, g_line, ONT);
  int h[BB_BLOCKS + 1];
  bounds(1, h);
  CK(cudaMemcpy(g_bounds_bad, h, sizeof h, cudaMemcpyHostToDevice));
  bounds(0, h);
  CK(cudaMemcpy(g_bounds_fixed, h, sizeof h, cudaMemcpyHostToDevice));
  CK(cudaFuncSetAttribute(smemocc_bad, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEMOCC_BAD_BYTES));
  CK(cudaDeviceSynchronize());
  CK(cudaGetLastError());
}

/* Launches case c's variant after 2 warm-ups until its kernels took ms
 * milliseconds (at least 5, at most maxn launches), each timed by an event
 * pair; returns the median ms per launch, *n the launches timed. */
#define BATCH 64
static double measure(int c, int fixed, double ms, int maxn, int *n) {
  static cudaEvent_t ev[2 * BATCH];
  static int made;
  if (!made) {
    for (int i = 0; i < 2 * BATCH; i++) CK(cudaEventCreate(&ev[i]));
    made = 1;
  }
  cases[c].launch(fixed);
  cases[c].launch(fixed);
  CK(cudaDeviceSynchronize());
  CK(cudaGetLastError());
  std::vector<float> t;
  double total = 0;
  while ((total < ms || t.size() < 5) && (int)t.size() < maxn) {
    /* a first batch of 4 estimates the launch time, later ones what is left */
    int want = 4;
    if (!t.empty()) {
      want = (int)((ms - total) / (total / t.size())) + 1;
      want = std::max(want, 5 - (int)t.size());
      want = std::min(std::min(want, BATCH), maxn - (int)t.size());
    }
    int b = 0;
    for (; b < want; b++) {
      CK(cudaEventRecord(ev[2 * b]));
      cases[c].launch(fixed);
      CK(cudaEventRecord(ev[2 * b + 1]));
    }
    CK(cudaEventSynchronize(ev[2 * b - 1]));
    CK(cudaGetLastError());
    for (int i = 0; i < b; i++) {
      float e = 0;
      CK(cudaEventElapsedTime(&e, ev[2 * i], ev[2 * i + 1]));
      t.push_back(e);
      total += e;
    }
  }
  std::sort(t.begin(), t.end());
  *n = (int)t.size();
  return t.size() % 2 ? t[t.size() / 2] : 0.5 * (t[t.size() / 2 - 1] + t[t.size() / 2]);
}

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

static int usage(const char *argv0) {
  fprintf(stderr,
          "usage: %s list | time [-r ROUNDS] [-m MS] CASE... | run CASE bad|fixed|both [MS] |"
          " CASE bad|fixed [REPS]\n",
          argv0);
  return 2;
}

static int cmd_time(int argc, char **argv) {
  int rounds = 5;
  double ms = 20;
  std::vector<int> cs;
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "-r") && i + 1 < argc) rounds = atoi(argv[++i]);
    else if (!strcmp(argv[i], "-m") && i + 1 < argc) ms = atof(argv[++i]);
    else if (find_case(argv[i]) >= 0) cs.push_back(find_case(argv[i]));
    else {
      fprintf(stderr, "unknown case %s\n", argv[i]);
      return 2;
    }
  }
  if (cs.empty() || rounds < 1) return 2;
  setup();
  std::vector<std::vector<double>> tb(NCASES), tf(NCASES), ratio(NCASES);
  for (int r = 1; r <= rounds; r++) {
    for (int c : cs) {
      double v[2];
      for (int k = 0; k < 2; k++) {
        int fixed = (r % 2) ? k : 1 - k, n;
        v[fixed] = measure(c, fixed, ms, 20000, &n);
        printf("round %d %s %s %.6f %d\n", r, cases[c].name, fixed ? "fixed" : "bad", v[fixed], n);
      }
      tb[c].push_back(v[0]);
      tf[c].push_back(v[1]);
      ratio[c].push_back(v[0] / v[1]);
      fflush(stdout);
    }
  }
  for (int c : cs)
    printf("speedup %s %.6f %.6f %.4f\n", cases[c].name, median(tb[c]), median(tf[c]), median(ratio[c]));
  return 0;
}

static int cmd_run(int argc, char **argv) {
  if (argc < 2) return 2;
  int c = find_case(argv[0]);
  int both = !strcmp(argv[1], "both");
  if (c < 0 || (!both && strcmp(argv[1], "bad") && strcmp(argv[1], "fixed"))) return 2;
  double ms = argc > 2 ? atof(argv[2]) : 40;
  setup();
  for (int fixed = 0; fixed < 2; fixed++) {
    if (!both && fixed != !strcmp(argv[1], "fixed")) continue;
    int n;
    double m = measure(c, fixed, ms, 20000, &n);
    printf("run %s %s %.6f %d\n", cases[c].name, fixed ? "fixed" : "bad", m, n);
    fflush(stdout);
  }
  return 0;
}

static int cmd_legacy(int argc, char **argv) {
  int c = find_case(argv[0]);
  if (c < 0) {
    fprintf(stderr, "unknown case %s\n", argv[0]);
    return 2;
  }
  int fixed = !strcmp(argv[1], "fixed");
  int reps = argc > 2 ? atoi(argv[2]) : 50;
  setup();
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  for (int pass = 0; pass < 2; pass++) { /* pass 0 warms up */
    int n = pass ? reps : 3;
    CK(cudaEventRecord(e0));
    for (int r = 0; r < n; r++) cases[c].launch(fixed);
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    CK(cudaGetLastError());
    if (pass) {
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, e0, e1));
      printf("%s %s %.4f\n", cases[c].name, fixed ? "fixed" : "bad", ms / n);
    }
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) return usage(argv[0]);
  if (!strcmp(argv[1], "list")) {
    for (size_t i = 0; i < NCASES; i++) printf("%s\n", cases[i].name);
    return 0;
  }
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    fprintf(stderr, "advise-suite: no GPU\n");
    return 77;
  }
  if (!strcmp(argv[1], "time")) return cmd_time(argc - 2, argv + 2) == 2 ? usage(argv[0]) : 0;
  if (!strcmp(argv[1], "run")) return cmd_run(argc - 2, argv + 2) == 2 ? usage(argv[0]) : 0;
  if (argc < 3) return usage(argv[0]);
  return cmd_legacy(argc - 1, argv + 1);
}

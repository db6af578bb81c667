/* bench-capture - cost of the shim's capture per intercepted call.
 *
 * For call depths 8, 32, 128 (frames above the measuring function): build
 * a recursion of that depth, then time, in the steady (memoized) state,
 *   capture+push : gpd_shim_capture() + gpd_shim_push_invoke() into a
 *                  region created here (a consumer thread drains it),
 *   capture      : gpd_shim_capture() alone (warm: verified replay),
 *   push         : gpd_shim_corr_next() + gpd_shim_push_invoke() alone,
 *   unw_backtrace: bare libunwind backtrace at the same depth,
 *   fp walk      : a frame-pointer walk at the same depth.
 * Each figure: median over 201 batches of 2000 calls of (batch ns / 2000);
 * a second table gives the 10th percentile of the same batches (the
 * batches that other processes slowed least).  On a loaded machine use
 * more, smaller batches (bench-capture 4001 200): a batch of 2000 calls
 * is often cut by another process's time slice, and the median of one
 * run moved by up to 2x with the load of the 2-core VM, while the 10th
 * percentile of 200-call batches stays within a few %.
 * Usage: bench-capture [batches [calls per batch]]
 */
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <sched.h> /* sched_getaffinity, CPU_COUNT (_GNU_SOURCE from the build) */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "gpuprof/clock.h"
#include "gpuprof/region.h"
#include "shim.h"
#include "bench-drain.h"

int gpd_shim__attach_region(int fd);
int gpd_shim__fp_backtrace(void **buf, int max);

static int nbatches = 201, batch = 2000;
static gpd_region_t R;
static atomic_int stop;
static volatile uint32_t sink_node;

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

enum { M_CAPTURE, M_CAPONLY, M_PUSH, M_UNW, M_FP, M_VARY, M_N };

/* 16 call sites that reach the capture: a stack that changes at every call
 * (the case of an interpreter, whose native stack rarely repeats). */
__attribute__((noinline)) static void vary_capture(void) {
  uint32_t node = gpd_shim_capture();
  gpd_shim_push_invoke(gpd_shim_corr_next(GPD_API_OPENCL), node, GPD_API_OPENCL, GPD_OP_KERNEL, 0, 0);
  __asm__ volatile("" ::: "memory");
}
#define VIA(k) \
  __attribute__((noinline)) static void via##k(void) { vary_capture(); __asm__ volatile("" ::: "memory"); }
VIA(0) VIA(1) VIA(2) VIA(3) VIA(4) VIA(5) VIA(6) VIA(7)
VIA(8) VIA(9) VIA(10) VIA(11) VIA(12) VIA(13) VIA(14) VIA(15)
static void (*const vias[16])(void) = {via0, via1, via2, via3, via4, via5, via6, via7,
                                        via8, via9, via10, via11, via12, via13, via14, via15};
static double results[3][M_N], results_p10[3][M_N];

__attribute__((noinline)) static double measure(int mode, double *p10) {
  double *v = malloc(sizeof(double) * (size_t)nbatches);
  void *buf[300];
  for (int b = -5; b < nbatches; b++) { /* 5 warm-up batches */
    uint64_t t0 = gpd_clock_ns();
    for (int i = 0; i < batch; i++) {
      if (mode == M_CAPTURE) {
        uint32_t node = gpd_shim_capture();
        gpd_shim_push_invoke(gpd_shim_corr_next(GPD_API_OPENCL), node, GPD_API_OPENCL, GPD_OP_KERNEL, t0, 0);
      } else if (mode == M_CAPONLY) {
        sink_node = gpd_shim_capture();
      } else if (mode == M_PUSH) {
        gpd_shim_push_invoke(gpd_shim_corr_next(GPD_API_OPENCL), sink_node, GPD_API_OPENCL, GPD_OP_KERNEL, t0, 0);
      } else if (mode == M_VARY) {
        vias[i & 15]();
      } else if (mode == M_UNW) {
        unw_backtrace(buf, 300);
      } else {
        gpd_shim__fp_backtrace(buf, 300);
      }
      __asm__ volatile("" ::: "memory");
    }
    uint64_t t1 = gpd_clock_ns();
    if (b >= 0)
      v[b] = (double)(t1 - t0) / batch;
  }
  qsort(v, (size_t)nbatches, sizeof *v, cmp);
  double med = v[nbatches / 2];
  *p10 = v[nbatches / 10];
  free(v);
  return med;
}

__attribute__((noinline)) static void recurse(int depth, int row) {
  if (depth > 0) {
    recurse(depth - 1, row);
    __asm__ volatile("" ::: "memory"); /* not a tail call */
    return;
  }
  for (int m = 0; m < M_N; m++)
    results[row][m] = measure(m, &results_p10[row][m]);
}

int main(int argc, char **argv) {
  if (argc > 1)
    nbatches = atoi(argv[1]) | 1;
  if (argc > 2 && atoi(argv[2]) > 0)
    batch = atoi(argv[2]);
  if (gpd_region_create(&R, 8, 1u << 16, (int32_t)getpid(), 1) != 0 || gpd_shim__attach_region(dup(R.fd)) != 0) {
    fprintf(stderr, "bench-capture: cannot set up a region\n");
    return 1;
  }
  pthread_t th;
  bench_drain_t drain = {&R, &stop};
  pthread_create(&th, NULL, bench_drain, &drain);
  static const int depths[3] = {8, 32, 128};
  for (int r = 0; r < 3; r++)
    recurse(depths[r], r);
  atomic_store(&stop, 1);
  pthread_join(th, NULL);
  uint64_t drops = 0;
  for (uint32_t i = 0; i < R.nrings; i++)
    drops += atomic_load(&R.ctl[i].drops);
  printf("# bench-capture: median ns per call, %d batches x %d calls, warm (memoized)\n", nbatches, batch);
  printf("%-6s %14s %12s %10s %14s %10s %14s\n", "depth", "capture+push", "capture", "push", "unw_backtrace",
         "fp walk", "varying+push");
  for (int r = 0; r < 3; r++)
    printf("%-6d %14.1f %12.1f %10.1f %14.1f %10.1f %14.1f\n", depths[r], results[r][M_CAPTURE],
           results[r][M_CAPONLY], results[r][M_PUSH], results[r][M_UNW], results[r][M_FP], results[r][M_VARY]);
  printf("# 10th percentile of the same batches (ns per call)\n");
  for (int r = 0; r < 3; r++)
    printf("%-6d %14.1f %12.1f %10.1f %14.1f %10.1f %14.1f\n", depths[r], results_p10[r][M_CAPTURE],
           results_p10[r][M_CAPONLY], results_p10[r][M_PUSH], results_p10[r][M_UNW], results_p10[r][M_FP],
           results_p10[r][M_VARY]);
  printf("# varying: each call reaches the capture through one of 16 call sites in turn, as a loop's\n"
         "# GPU operations do (replayed from the per-thread recorded unwinds, 64 of them)\n");
  printf("# ring drops during the run: %llu (consumer could not keep up)\n", (unsigned long long)drops);
  /* the drain thread must have a core of its own: on the same core (taskset
   * -c N) its time slices fall inside the producer's timed batches (the
   * H100 host's 136.6 ns at depth 32 on one core was 74-89 on two) */
  cpu_set_t cs;
  if (sched_getaffinity(0, sizeof cs, &cs) == 0 && CPU_COUNT(&cs) < 2)
    printf("# WARNING: 1 CPU allowed: the consumer thread shares the producer's core, and its time is in the figures\n");
  return 0;
}

/* ocl-loop - a tight loop of small kernel launches (launch-bound), for
 * the overhead bench.  Usage: ocl-loop [iterations] [sync_every] [warmup]
 * (defaults 20000, 100, 100).  The warm-up launches run before the timed
 * ones (the first compiles the kernel); a long warm-up takes one-time costs
 * out of the figure (under the shim: the first lap through fresh ring
 * pages, docs/PERFORMANCE.md).  Prints "launches <n> ns_per_launch <x>".
 * Exit 77 without a device. */
#include <time.h>

#include "ocl-common.h"

static const char *src = "__kernel void tiny(__global int *y) { y[get_global_id(0)] += 1; }\n";

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

__attribute__((noinline)) static void loop(ocl_env_t *e, cl_kernel k, long iters, long sync_every) {
  size_t g = 64;
  for (long i = 0; i < iters; i++) {
    OCL_CHECK(clEnqueueNDRangeKernel(e->q, k, 1, NULL, &g, NULL, 0, NULL, NULL));
    if ((i + 1) % sync_every == 0)
      OCL_CHECK(clFinish(e->q));
  }
  OCL_CHECK(clFinish(e->q));
}

int main(int argc, char **argv) {
  long iters = argc > 1 ? atol(argv[1]) : 20000;
  long sync_every = argc > 2 ? atol(argv[2]) : 100;
  long warmup = argc > 3 ? atol(argv[3]) : 100;
  if (sync_every < 1)
    sync_every = 1;
  ocl_env_t e;
  if (ocl_env_open(&e, src)) {
    fprintf(stderr, "ocl-loop: no OpenCL device\n");
    return OCL_SKIP;
  }
  cl_int err;
  cl_mem b = clCreateBuffer(e.ctx, CL_MEM_READ_WRITE, 64 * sizeof(int), NULL, &err);
  OCL_CHECK(err);
  cl_kernel k = clCreateKernel(e.prog, "tiny", &err);
  OCL_CHECK(err);
  OCL_CHECK(clSetKernelArg(k, 0, sizeof b, &b));
  loop(&e, k, warmup > 0 ? warmup : 1, sync_every); /* warm-up: PoCL compiles on first launch */
  double t0 = now_ns();
  loop(&e, k, iters, sync_every);
  double t1 = now_ns();
  printf("launches %ld ns_per_launch %.1f\n", iters, (t1 - t0) / (double)iters);
  clReleaseKernel(k);
  clReleaseMemObject(b);
  ocl_env_close(&e);
  return 0;
}

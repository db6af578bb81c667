/* ocl-loop - a tight loop of small kernel launches (launch-bound), for
 * the overhead bench.  Usage: ocl-loop [iterations] [sync_every] [warmup]
 * (defaults 20000, 100, 100).  The warm-up launches run before the timed
 * ones (the first compiles the kernel); a long warm-up takes one-time costs
 * out of the figure (under the shim: the first lap through fresh ring
 * pages, docs/PERFORMANCE.md).  Prints "launches <n> ns_per_launch <x>".
 * OCL_LOOP_PROFILE=1: what any tool that times every kernel makes the
 * runtime do, without a tool: the queue is made with
 * CL_QUEUE_PROFILING_ENABLE, every launch returns an event, and after each
 * clFinish every event's start and end are read and the event released
 * (bench-opencl-overhead's "profiling floor" row).
 * Exit 77 without a device. */
#include <time.h>

#include "ocl-common.h"

static const char *src = "__kernel void tiny(__global int *y) { y[get_global_id(0)] += 1; }\n";

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

#define LOOP_EVMAX 1024

static int profile; /* OCL_LOOP_PROFILE=1 */
static cl_event evs[LOOP_EVMAX];
static long nev;
static volatile cl_ulong ev_sum; /* keeps the reads */

/* Read and release the events of the launches since the last finish. */
static void harvest(void) {
  for (long j = 0; j < nev; j++) {
    cl_ulong t0 = 0, t1 = 0;
    OCL_CHECK(clGetEventProfilingInfo(evs[j], CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL));
    OCL_CHECK(clGetEventProfilingInfo(evs[j], CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL));
    ev_sum += t1 - t0;
    clReleaseEvent(evs[j]);
  }
  nev = 0;
}

__attribute__((noinline)) static void loop(ocl_env_t *e, cl_kernel k, long iters, long sync_every) {
  size_t g = 64;
  for (long i = 0; i < iters; i++) {
    OCL_CHECK(clEnqueueNDRangeKernel(e->q, k, 1, NULL, &g, NULL, 0, NULL, profile ? &evs[nev++] : NULL));
    if ((i + 1) % sync_every == 0 || nev == LOOP_EVMAX) {
      OCL_CHECK(clFinish(e->q));
      harvest();
    }
  }
  OCL_CHECK(clFinish(e->q));
  harvest();
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
  const char *pv = getenv("OCL_LOOP_PROFILE");
  profile = pv && *pv == '1';
  if (profile) {
    cl_queue_properties props[] = {CL_QUEUE_PROPERTIES, CL_QUEUE_PROFILING_ENABLE, 0};
    clReleaseCommandQueue(e.q);
    e.q = clCreateCommandQueueWithProperties(e.ctx, e.dev, props, &err);
    OCL_CHECK(err);
  }
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

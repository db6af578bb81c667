/* ocl-gap - a known-structure OpenCL program for the trace tests
 * (tests/trace/): two in-order queues, exact kernel counts, and one
 * deliberate GPU-idle gap while the CPU computes in cpu_think.
 *
 *   main -> warm:          ka once on queue 1, kb once on queue 2, clFinish
 *                          both (PoCL compiles kernels at their first launch:
 *                          that idle time stays out of the bursts)
 *   main -> burst (twice): N1 x kernel ka on queue 1, N2 x kernel kb on
 *                          queue 2, clFinish(q1), clFinish(q2)
 *   between the bursts: cpu_think: THINK_MS of CPU work (a measured busy
 *                          loop, no GPU API call), then clFinish(q1)
 *
 * Kernels per queue: 2 * N1 + 1 ka on queue 1, 2 * N2 + 1 kb on queue 2.
 * Usage: ocl-gap [N1 N2 THINK_MS] (defaults 6 4 300).  cpu_think prints
 * "thinking" when it starts; with OCL_GAP_GATE=FILE it also spins until
 * FILE exists (live tests open their window while it waits).  Prints
 * "ocl-gap N1 N2 THINK_MS sum"; with OCL_GAP_GATE2=FILE it then spins
 * (no GPU call) until FILE exists, before releasing anything.  Exit 77
 * without an OpenCL device.
 */
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../apps/ocl-common.h"

#define NOINLINE __attribute__((noinline))
#define N (64 * 1024)

static const char *src =
    "__kernel void ka(__global float *y) { size_t i = get_global_id(0); y[i] = y[i] * 0.5f + 1.0f; }\n"
    "__kernel void kb(__global float *y) { size_t i = get_global_id(0); y[i] = y[i] + 2.0f; }\n";

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static volatile double sink;

NOINLINE void burst(cl_command_queue q1, cl_command_queue q2, cl_kernel ka, cl_kernel kb, int n1,
                    int n2) {
  size_t g = N;
  for (int i = 0; i < n1; i++)
    OCL_CHECK(clEnqueueNDRangeKernel(q1, ka, 1, NULL, &g, NULL, 0, NULL, NULL));
  for (int i = 0; i < n2; i++)
    OCL_CHECK(clEnqueueNDRangeKernel(q2, kb, 1, NULL, &g, NULL, 0, NULL, NULL));
  OCL_CHECK(clFinish(q1));
  OCL_CHECK(clFinish(q2));
}

NOINLINE void warm(cl_command_queue q1, cl_command_queue q2, cl_kernel ka, cl_kernel kb) {
  size_t g = N;
  OCL_CHECK(clEnqueueNDRangeKernel(q1, ka, 1, NULL, &g, NULL, 0, NULL, NULL));
  OCL_CHECK(clEnqueueNDRangeKernel(q2, kb, 1, NULL, &g, NULL, 0, NULL, NULL));
  OCL_CHECK(clFinish(q1));
  OCL_CHECK(clFinish(q2));
}

/* CPU work the GPU waits for: the idleness must be blamed here. */
NOINLINE void cpu_think(cl_command_queue q1, int ms) {
  uint64_t end = now_ns() + (uint64_t)ms * 1000000ull;
  const char *gate = getenv("OCL_GAP_GATE");
  double x = 1.0;
  printf("thinking\n");
  fflush(stdout);
  while (now_ns() < end || (gate && access(gate, F_OK) != 0))
    for (int i = 0; i < 1000; i++)
      x = x * 1.0000001 + 1e-9;
  sink = x;
  OCL_CHECK(clFinish(q1));
}

int main(int argc, char **argv) {
  int n1 = argc > 1 ? atoi(argv[1]) : 6, n2 = argc > 2 ? atoi(argv[2]) : 4;
  int think = argc > 3 ? atoi(argv[3]) : 300;
  ocl_env_t e;
  int rc = ocl_env_open(&e, src);
  if (rc)
    return rc;
  cl_int err;
  cl_command_queue q2 = clCreateCommandQueueWithProperties(e.ctx, e.dev, NULL, &err);
  OCL_CHECK(err);
  cl_mem b1 = clCreateBuffer(e.ctx, CL_MEM_READ_WRITE, N * sizeof(float), NULL, &err);
  OCL_CHECK(err);
  cl_mem b2 = clCreateBuffer(e.ctx, CL_MEM_READ_WRITE, N * sizeof(float), NULL, &err);
  OCL_CHECK(err);
  cl_kernel ka = clCreateKernel(e.prog, "ka", &err);
  OCL_CHECK(err);
  cl_kernel kb = clCreateKernel(e.prog, "kb", &err);
  OCL_CHECK(err);
  OCL_CHECK(clSetKernelArg(ka, 0, sizeof(cl_mem), &b1));
  OCL_CHECK(clSetKernelArg(kb, 0, sizeof(cl_mem), &b2));
  float zero = 0;
  OCL_CHECK(clEnqueueFillBuffer(e.q, b1, &zero, sizeof zero, 0, N * sizeof(float), 0, NULL, NULL));
  OCL_CHECK(clEnqueueFillBuffer(q2, b2, &zero, sizeof zero, 0, N * sizeof(float), 0, NULL, NULL));
  OCL_CHECK(clFinish(e.q));
  OCL_CHECK(clFinish(q2));
  warm(e.q, q2, ka, kb);
  burst(e.q, q2, ka, kb, n1, n2);
  cpu_think(e.q, think);
  burst(e.q, q2, ka, kb, n1, n2);
  float out[4];
  OCL_CHECK(clEnqueueReadBuffer(q2, b2, CL_TRUE, 0, sizeof out, out, 0, NULL, NULL));
  printf("ocl-gap %d %d %d %.1f\n", n1, n2, think, (double)out[0]);
  fflush(stdout);
  const char *gate2 = getenv("OCL_GAP_GATE2");
  while (gate2 && access(gate2, F_OK) != 0)
    nanosleep(&(struct timespec){0, 10000000L}, NULL);
  clReleaseKernel(ka);
  clReleaseKernel(kb);
  clReleaseMemObject(b1);
  clReleaseMemObject(b2);
  clReleaseCommandQueue(q2);
  ocl_env_close(&e);
  return 0;
}

/* ocl-inline - an OpenCL program whose kernel launches sit in inlined
 * code, built at -O2 -g by tests/cli.cmake for the end-to-end inline test
 * (test_cli.py inline):
 *
 *   main -> phase_c (not inlined) -> helper (inlined) -> clEnqueueNDRangeKernel
 *
 * kernel `bump` is launched PHASE_C_LAUNCHES times, all through helper; the
 * line of helper's call in phase_c and of the enqueue in helper carry the
 * markers "@phase_c" and "@helper".  Prints "sum <value>".  Exit 77 without
 * an OpenCL device. */
#include "../apps/ocl-common.h"

#define PHASE_C_LAUNCHES 6
#define N 1024

static const char *src = "__kernel void bump(__global float *y) { size_t i = get_global_id(0); y[i] += 1.0f; }\n";

static inline cl_int helper(cl_command_queue q, cl_kernel k) {
  size_t g = N;
  cl_int rc = clEnqueueNDRangeKernel(q, k, 1, NULL, &g, NULL, 0, NULL, NULL); /* @helper */
  return rc == CL_SUCCESS ? 0 : rc;
}

__attribute__((noinline)) int phase_c(cl_command_queue q, cl_kernel k) {
  int bad = 0;
  for (int i = 0; i < PHASE_C_LAUNCHES; i++)
    bad += helper(q, k) != 0; /* @phase_c */
  return bad + (clFinish(q) != CL_SUCCESS);
}

int main(void) {
  ocl_env_t e;
  int rc = ocl_env_open(&e, src);
  if (rc)
    return rc;
  cl_int err;
  float host[N] = {0};
  cl_mem y = clCreateBuffer(e.ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof host, host, &err);
  OCL_CHECK(err);
  cl_kernel k = clCreateKernel(e.prog, "bump", &err);
  OCL_CHECK(err);
  OCL_CHECK(clSetKernelArg(k, 0, sizeof y, &y));
  if (phase_c(e.q, k))
    return 1;
  OCL_CHECK(clEnqueueReadBuffer(e.q, y, CL_TRUE, 0, sizeof host, host, 0, NULL, NULL));
  double sum = 0;
  for (int i = 0; i < N; i++)
    sum += host[i];
  printf("sum %.0f\n", sum);
  clReleaseKernel(k);
  clReleaseMemObject(y);
  ocl_env_close(&e);
  return 0;
}

/* ocl-known - an OpenCL program with a known call structure (for the shim
 * and integration tests).
 *
 *   main -> init  : 4 clCreateBuffer (x, y, z: 1 MiB each; w: 256 KiB)
 *                   3 x 1 MiB writes (H2D), 1 fill of 4 KiB (+ clWaitForEvents
 *                   on its event), 1 copy of 256 KiB (D2D), 2 reads of 64 KiB
 *                   (D2H, blocking)
 *   main -> solve -> step (S times): kernel axpy N times, kernel scale M
 *                   times, clFinish
 *   main -> finish: checksum through clEnqueueMapBuffer (not intercepted),
 *                   clFinish, 4 clReleaseMemObject
 *
 * Usage: ocl-known [S N M] (defaults 5 3 2).  Prints "checksum <value>",
 * the same with or without the shim.  Exit 77 without an OpenCL device.
 * Compiled with -DOCL_KNOWN_NO_MAIN the workload is a library function
 * (ocl_known_run) for the in-process interception test.
 * init/step/solve/finish are global so that tests can resolve them (dladdr).
 */
#include <string.h>

#include "ocl-common.h"

#define NOINLINE __attribute__((noinline))
#define OCL_KNOWN_N (256 * 1024) /* floats = 1 MiB */

static const char *ocl_known_src =
    "__kernel void axpy(float a, __global const float *x, __global float *y) {\n"
    "  size_t i = get_global_id(0); y[i] = a * x[i] + y[i]; }\n"
    "__kernel void scale(float s, __global float *y) {\n"
    "  size_t i = get_global_id(0); y[i] = y[i] * s; }\n";

typedef struct known_s {
  ocl_env_t env;
  cl_mem x, y, z, w;
  cl_kernel axpy, scale;
  float *host;
  float rd1[16384], rd2[16384]; /* 64 KiB each */
} known_t;

NOINLINE void init(known_t *k) {
  cl_int err;
  size_t bytes = OCL_KNOWN_N * sizeof(float);
  k->x = clCreateBuffer(k->env.ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
  OCL_CHECK(err);
  k->y = clCreateBuffer(k->env.ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
  OCL_CHECK(err);
  k->z = clCreateBuffer(k->env.ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
  OCL_CHECK(err);
  k->w = clCreateBuffer(k->env.ctx, CL_MEM_READ_WRITE, 256 * 1024, NULL, &err);
  OCL_CHECK(err);
  k->host = malloc(bytes);
  for (int i = 0; i < OCL_KNOWN_N; i++)
    k->host[i] = (float)(i % 97) * 0.25f;
  OCL_CHECK(clEnqueueWriteBuffer(k->env.q, k->x, CL_TRUE, 0, bytes, k->host, 0, NULL, NULL));
  for (int i = 0; i < OCL_KNOWN_N; i++)
    k->host[i] = (float)(i % 13) * 0.5f;
  OCL_CHECK(clEnqueueWriteBuffer(k->env.q, k->y, CL_TRUE, 0, bytes, k->host, 0, NULL, NULL));
  OCL_CHECK(clEnqueueWriteBuffer(k->env.q, k->z, CL_TRUE, 0, bytes, k->host, 0, NULL, NULL));
  float pat = 1.5f;
  cl_event ev;
  OCL_CHECK(clEnqueueFillBuffer(k->env.q, k->w, &pat, sizeof pat, 0, 4096, 0, NULL, &ev));
  OCL_CHECK(clWaitForEvents(1, &ev));
  OCL_CHECK(clReleaseEvent(ev));
  OCL_CHECK(clEnqueueCopyBuffer(k->env.q, k->x, k->w, 0, 0, 256 * 1024, 0, NULL, NULL));
  OCL_CHECK(clEnqueueReadBuffer(k->env.q, k->y, CL_TRUE, 0, sizeof k->rd1, k->rd1, 0, NULL, NULL));
  OCL_CHECK(clEnqueueReadBuffer(k->env.q, k->w, CL_TRUE, 0, sizeof k->rd2, k->rd2, 0, NULL, NULL));
  k->axpy = clCreateKernel(k->env.prog, "axpy", &err);
  OCL_CHECK(err);
  k->scale = clCreateKernel(k->env.prog, "scale", &err);
  OCL_CHECK(err);
}

NOINLINE void step(known_t *k, int n, int m) {
  size_t g = OCL_KNOWN_N;
  float a = 0.5f, s = 0.75f;
  OCL_CHECK(clSetKernelArg(k->axpy, 0, sizeof a, &a));
  OCL_CHECK(clSetKernelArg(k->axpy, 1, sizeof(cl_mem), &k->x));
  OCL_CHECK(clSetKernelArg(k->axpy, 2, sizeof(cl_mem), &k->y));
  OCL_CHECK(clSetKernelArg(k->scale, 0, sizeof s, &s));
  OCL_CHECK(clSetKernelArg(k->scale, 1, sizeof(cl_mem), &k->y));
  for (int i = 0; i < n; i++)
    OCL_CHECK(clEnqueueNDRangeKernel(k->env.q, k->axpy, 1, NULL, &g, NULL, 0, NULL, NULL));
  for (int i = 0; i < m; i++)
    OCL_CHECK(clEnqueueNDRangeKernel(k->env.q, k->scale, 1, NULL, &g, NULL, 0, NULL, NULL));
  OCL_CHECK(clFinish(k->env.q));
}

NOINLINE void solve(known_t *k, int s, int n, int m) {
  for (int i = 0; i < s; i++)
    step(k, n, m);
}

NOINLINE double finish(known_t *k) {
  cl_int err;
  size_t bytes = OCL_KNOWN_N * sizeof(float);
  float *p = clEnqueueMapBuffer(k->env.q, k->y, CL_TRUE, CL_MAP_READ, 0, bytes, 0, NULL, NULL, &err);
  OCL_CHECK(err);
  double sum = 0;
  for (int i = 0; i < OCL_KNOWN_N; i++)
    sum += (double)p[i] * (double)((i % 7) + 1);
  for (int i = 0; i < 16384; i++)
    sum += (double)k->rd1[i] + 2.0 * (double)k->rd2[i];
  OCL_CHECK(clEnqueueUnmapMemObject(k->env.q, k->y, p, 0, NULL, NULL));
  OCL_CHECK(clFinish(k->env.q));
  clReleaseKernel(k->axpy);
  clReleaseKernel(k->scale);
  OCL_CHECK(clReleaseMemObject(k->x));
  OCL_CHECK(clReleaseMemObject(k->y));
  OCL_CHECK(clReleaseMemObject(k->z));
  OCL_CHECK(clReleaseMemObject(k->w));
  free(k->host);
  return sum;
}

/* Run the workload; 0, or OCL_SKIP without a device. */
NOINLINE int ocl_known_run(int s, int n, int m, double *checksum) {
  static known_t k;
  memset(&k, 0, sizeof k);
  int rc = ocl_env_open(&k.env, ocl_known_src);
  if (rc)
    return rc;
  init(&k);
  solve(&k, s, n, m);
  *checksum = finish(&k);
  ocl_env_close(&k.env);
  return 0;
}

#ifndef OCL_KNOWN_NO_MAIN
int main(int argc, char **argv) {
  int s = argc > 1 ? atoi(argv[1]) : 5;
  int n = argc > 2 ? atoi(argv[2]) : 3;
  int m = argc > 3 ? atoi(argv[3]) : 2;
  double sum = 0;
  int rc = ocl_known_run(s, n, m, &sum);
  if (rc == OCL_SKIP) {
    fprintf(stderr, "ocl-known: no OpenCL device\n");
    return OCL_SKIP;
  }
  printf("checksum %.6f\n", sum);
  return rc;
}
#endif

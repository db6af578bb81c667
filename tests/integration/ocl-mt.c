/* ocl-mt: T threads, each launching kernel `mt` K times from worker() on
 * its own queue, then reading back.  Prints "sum S" (S = T*K*64*1).
 *   ocl-mt T K        exit 77 when no OpenCL platform exists. */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static const char *src = "__kernel void mt(__global int *a) { a[get_global_id(0)] += 1; }\n";
static cl_context ctx;
static cl_device_id dev;
static cl_program prog;
static int K;

#define CHECK(x)                                                       \
  do {                                                                 \
    cl_int e_ = (x);                                                   \
    if (e_ != CL_SUCCESS) { fprintf(stderr, "%s: %d\n", #x, e_); exit(1); } \
  } while (0)

__attribute__((noinline)) static long worker_launches(cl_command_queue q, cl_kernel k, cl_mem b) {
  size_t n = 64;
  for (int i = 0; i < K; i++) CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &n, NULL, 0, NULL, NULL));
  CHECK(clFinish(q));
  int h[64];
  CHECK(clEnqueueReadBuffer(q, b, CL_TRUE, 0, sizeof h, h, 0, NULL, NULL));
  long s = 0;
  for (int i = 0; i < 64; i++) s += h[i];
  return s;
}

static void *worker(void *arg) {
  cl_int err;
  cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
  CHECK(err);
  cl_kernel k = clCreateKernel(prog, "mt", &err);
  CHECK(err);
  int zero[64] = {0};
  cl_mem b = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof zero, zero, &err);
  CHECK(err);
  CHECK(clSetKernelArg(k, 0, sizeof b, &b));
  *(long *)arg = worker_launches(q, k, b);
  clReleaseMemObject(b);
  clReleaseKernel(k);
  clReleaseCommandQueue(q);
  return NULL;
}

int main(int argc, char **argv) {
  int T = argc > 1 ? atoi(argv[1]) : 4;
  K = argc > 2 ? atoi(argv[2]) : 25;
  cl_platform_id plat;
  cl_uint np = 0;
  if (clGetPlatformIDs(1, &plat, &np) != CL_SUCCESS || !np) return 77;
  CHECK(clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, NULL));
  cl_int err;
  ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
  CHECK(err);
  prog = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
  CHECK(err);
  CHECK(clBuildProgram(prog, 1, &dev, "", NULL, NULL));
  pthread_t th[64];
  long res[64];
  if (T > 64) T = 64;
  for (int i = 0; i < T; i++) pthread_create(&th[i], NULL, worker, &res[i]);
  long s = 0;
  for (int i = 0; i < T; i++) { pthread_join(th[i], NULL); s += res[i]; }
  printf("sum %ld\n", s);
  clReleaseProgram(prog);
  clReleaseContext(ctx);
  return 0;
}

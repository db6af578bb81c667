/* ocl-steady: an OpenCL application that works steadily, for the
 * integration tests that kill things around it.
 *   ocl-steady ITERATIONS SLEEP_MS [hang|rect|until FILE]
 * "until FILE": iterations until FILE exists, then ITERATIONS more (a test
 * lets it work while it kills things around it, then lets it finish with
 * work done after that; the count it must find is the N printed at the end).
 * "rect": after the loop, rect_copies() moves a 16 x 4 x 2 box (128 bytes)
 * with clEnqueueWriteBufferRect, clEnqueueCopyBufferRect and
 * clEnqueueReadBufferRect (H2D, D2D, D2H 128 bytes each).
 * Each iteration launches kernel `tick` once from work_step() and waits
 * with clFinish.  Prints "done N sum S" at the end (S is the same with or
 * without the shim), then, with "hang", prints "ready" and sleeps until
 * killed.  Exit 77 when no OpenCL platform exists.  With "hang" or "until"
 * it dies of SIGALRM after GPD_STEADY_MAX_S (600) seconds, so that a test
 * that lost track of it cannot leave it running for ever. */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GPD_STEADY_MAX_S 600

static const char *src =
    "__kernel void tick(__global int *a) { a[get_global_id(0)] += 1; }\n";

#define CHECK(x)                                                       \
  do {                                                                 \
    cl_int e_ = (x);                                                   \
    if (e_ != CL_SUCCESS) {                                            \
      fprintf(stderr, "%s failed: %d\n", #x, e_);                      \
      exit(1);                                                         \
    }                                                                  \
  } while (0)

__attribute__((noinline)) static void work_step(cl_command_queue q, cl_kernel k) {
  size_t n = 64;
  CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &n, NULL, 0, NULL, NULL));
  CHECK(clFinish(q));
}

__attribute__((noinline)) static void rect_copies(cl_context ctx, cl_command_queue q) {
  cl_int err;
  char host[512], back[512];
  for (int i = 0; i < 512; i++) host[i] = (char)i;
  cl_mem a = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 512, NULL, &err);
  CHECK(err);
  cl_mem b = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 512, NULL, &err);
  CHECK(err);
  size_t zero[3] = {0, 0, 0}, region[3] = {16, 4, 2};
  CHECK(clEnqueueWriteBufferRect(q, a, CL_TRUE, zero, zero, region, 32, 128, 32, 128, host, 0, NULL, NULL));
  CHECK(clEnqueueCopyBufferRect(q, a, b, zero, zero, region, 32, 128, 32, 128, 0, NULL, NULL));
  CHECK(clEnqueueReadBufferRect(q, b, CL_TRUE, zero, zero, region, 32, 128, 32, 128, back, 0, NULL, NULL));
  int ok = 1;
  for (int z = 0; z < 2; z++)
    for (int y = 0; y < 4; y++)
      for (int x = 0; x < 16; x++) ok &= back[z * 128 + y * 32 + x] == host[z * 128 + y * 32 + x];
  printf("rect %s\n", ok ? "ok" : "WRONG");
  clReleaseMemObject(a);
  clReleaseMemObject(b);
}

int main(int argc, char **argv) {
  int iters = argc > 1 ? atoi(argv[1]) : 100;
  int sleep_ms = argc > 2 ? atoi(argv[2]) : 0;
  int hang = argc > 3 && strcmp(argv[3], "hang") == 0;
  int rect = argc > 3 && strcmp(argv[3], "rect") == 0;
  const char *until = argc > 4 && strcmp(argv[3], "until") == 0 ? argv[4] : NULL;
  if (hang || until)
    alarm(GPD_STEADY_MAX_S);
  cl_platform_id plat;
  cl_uint np = 0;
  if (clGetPlatformIDs(1, &plat, &np) != CL_SUCCESS || np == 0) {
    fprintf(stderr, "no OpenCL platform\n");
    return 77;
  }
  cl_device_id dev;
  CHECK(clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, NULL));
  cl_int err;
  cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
  CHECK(err);
  cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
  CHECK(err);
  cl_program prog = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
  CHECK(err);
  CHECK(clBuildProgram(prog, 1, &dev, "", NULL, NULL));
  cl_kernel k = clCreateKernel(prog, "tick", &err);
  CHECK(err);
  int host[64] = {0};
  cl_mem buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof host, host, &err);
  CHECK(err);
  CHECK(clSetKernelArg(k, 0, sizeof buf, &buf));
  int done = 0;
  for (int i = 0; i < iters; i++) {
    if (until && access(until, F_OK) != 0)
      i = -1; /* not told yet: the ITERATIONS count from then on */
    work_step(q, k);
    done++;
    if (sleep_ms) usleep((useconds_t)sleep_ms * 1000);
  }
  CHECK(clEnqueueReadBuffer(q, buf, CL_TRUE, 0, sizeof host, host, 0, NULL, NULL));
  long sum = 0;
  for (int i = 0; i < 64; i++) sum += host[i];
  printf("done %d sum %ld\n", done, sum);
  if (rect)
    rect_copies(ctx, q);
  fflush(stdout);
  if (hang) {
    usleep(300 * 1000); /* let the last completion callbacks push their records */
    printf("ready\n");
    fflush(stdout);
    for (;;) pause();
  }
  clReleaseMemObject(buf);
  clReleaseKernel(k);
  clReleaseProgram(prog);
  clReleaseCommandQueue(q);
  clReleaseContext(ctx);
  return 0;
}

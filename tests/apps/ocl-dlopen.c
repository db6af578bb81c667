/* ocl-dlopen - the ocl-known workload (same call structure, same counts
 * and bytes: see ocl-known.c) reaching OpenCL only through a private
 * handle: dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL) and dlsym'd
 * function pointers, as Python's ctypes and framework loaders do.  The
 * program does not link libOpenCL, so a preloaded library's cl* symbols
 * are never called; only the ICD loader's layers see these calls.
 *
 * Usage: ocl-dlopen [S N M] (defaults 5 3 2).  Prints "checksum <value>"
 * (equal to ocl-known's) and, first, "OPENCL_LAYERS=<value>" as this
 * process sees it before any OpenCL call.  Exit 77 without libOpenCL or an
 * OpenCL device.
 */
#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

/* Every OpenCL function ocl-known.c and ocl-common.h call. */
#define OCL_DL_FNS(X)                                                                                          \
  X(clGetPlatformIDs) X(clGetDeviceIDs) X(clCreateContext) X(clCreateCommandQueueWithProperties)               \
  X(clCreateProgramWithSource) X(clBuildProgram) X(clCreateBuffer) X(clEnqueueWriteBuffer)                   \
  X(clEnqueueFillBuffer) X(clWaitForEvents) X(clReleaseEvent) X(clEnqueueCopyBuffer) X(clEnqueueReadBuffer)  \
  X(clCreateKernel) X(clSetKernelArg) X(clEnqueueNDRangeKernel) X(clFinish) X(clEnqueueMapBuffer)            \
  X(clEnqueueUnmapMemObject) X(clReleaseKernel) X(clReleaseMemObject) X(clReleaseProgram)                    \
  X(clReleaseCommandQueue) X(clReleaseContext)

#define OCL_DL_PTR(n) static __typeof__(&n) dl_##n;
OCL_DL_FNS(OCL_DL_PTR)

/* From here on the workload's cl* names are the pointers. */
#define clGetPlatformIDs dl_clGetPlatformIDs
#define clGetDeviceIDs dl_clGetDeviceIDs
#define clCreateContext dl_clCreateContext
#define clCreateCommandQueueWithProperties dl_clCreateCommandQueueWithProperties
#define clCreateProgramWithSource dl_clCreateProgramWithSource
#define clBuildProgram dl_clBuildProgram
#define clCreateBuffer dl_clCreateBuffer
#define clEnqueueWriteBuffer dl_clEnqueueWriteBuffer
#define clEnqueueFillBuffer dl_clEnqueueFillBuffer
#define clWaitForEvents dl_clWaitForEvents
#define clReleaseEvent dl_clReleaseEvent
#define clEnqueueCopyBuffer dl_clEnqueueCopyBuffer
#define clEnqueueReadBuffer dl_clEnqueueReadBuffer
#define clCreateKernel dl_clCreateKernel
#define clSetKernelArg dl_clSetKernelArg
#define clEnqueueNDRangeKernel dl_clEnqueueNDRangeKernel
#define clFinish dl_clFinish
#define clEnqueueMapBuffer dl_clEnqueueMapBuffer
#define clEnqueueUnmapMemObject dl_clEnqueueUnmapMemObject
#define clReleaseKernel dl_clReleaseKernel
#define clReleaseMemObject dl_clReleaseMemObject
#define clReleaseProgram dl_clReleaseProgram
#define clReleaseCommandQueue dl_clReleaseCommandQueue
#define clReleaseContext dl_clReleaseContext

#define OCL_KNOWN_NO_MAIN
#include "ocl-known.c"

int main(int argc, char **argv) {
  const char *layers = getenv("OPENCL_LAYERS");
  printf("OPENCL_LAYERS=%s\n", layers ? layers : "");
  fflush(stdout);
  void *h = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "ocl-dlopen: %s\n", dlerror());
    return OCL_SKIP;
  }
#define OCL_DL_SYM(n)                                               \
  if (!(dl_##n = (__typeof__(dl_##n))dlsym(h, #n))) {               \
    fprintf(stderr, "ocl-dlopen: %s not in libOpenCL.so.1\n", #n); \
    return OCL_SKIP;                                                \
  }
  OCL_DL_FNS(OCL_DL_SYM)
  int s = argc > 1 ? atoi(argv[1]) : 5;
  int n = argc > 2 ? atoi(argv[2]) : 3;
  int m = argc > 3 ? atoi(argv[3]) : 2;
  double sum = 0;
  int rc = ocl_known_run(s, n, m, &sum);
  if (rc == OCL_SKIP) {
    fprintf(stderr, "ocl-dlopen: no OpenCL device\n");
    return OCL_SKIP;
  }
  printf("checksum %.6f\n", sum);
  return rc;
}

/* ocl-common.h - tiny helpers shared by the OpenCL test programs. */
#ifndef OCL_COMMON_H
#define OCL_COMMON_H

#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>

#define OCL_SKIP 77

#define OCL_CHECK(call)                                                                  \
  do {                                                                                   \
    cl_int ocl_rc_ = (call);                                                             \
    if (ocl_rc_ != CL_SUCCESS) {                                                         \
      fprintf(stderr, "%s:%d: %s failed: %d\n", __FILE__, __LINE__, #call, ocl_rc_);     \
      exit(1);                                                                           \
    }                                                                                    \
  } while (0)

typedef struct ocl_env_s {
  cl_platform_id plat;
  cl_device_id dev;
  cl_context ctx;
  cl_command_queue q;
  cl_program prog;
} ocl_env_t;

/* 0, or OCL_SKIP when no platform/device exists. */
static inline int ocl_env_open(ocl_env_t *e, const char *src) {
  cl_uint n = 0;
  if (clGetPlatformIDs(1, &e->plat, &n) != CL_SUCCESS || n == 0)
    return OCL_SKIP;
  if (clGetDeviceIDs(e->plat, CL_DEVICE_TYPE_ALL, 1, &e->dev, &n) != CL_SUCCESS || n == 0)
    return OCL_SKIP;
  cl_int err;
  e->ctx = clCreateContext(NULL, 1, &e->dev, NULL, NULL, &err);
  OCL_CHECK(err);
  e->q = clCreateCommandQueueWithProperties(e->ctx, e->dev, NULL, &err);
  OCL_CHECK(err);
  e->prog = clCreateProgramWithSource(e->ctx, 1, &src, NULL, &err);
  OCL_CHECK(err);
  OCL_CHECK(clBuildProgram(e->prog, 1, &e->dev, "", NULL, NULL));
  return 0;
}

static inline void ocl_env_close(ocl_env_t *e) {
  clReleaseProgram(e->prog);
  clReleaseCommandQueue(e->q);
  clReleaseContext(e->ctx);
}

#endif

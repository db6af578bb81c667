/* nvtx-py.c - NVTX and OpenCL for a Python script through ctypes
 * (tests/nvtx/nvtx-py.py): NVTX from the real NVTX v3 headers, as PyTorch's
 * torch._C._nvtx has it (its client finds the shim through
 * NVTX_INJECTION64_PATH), and one OpenCL write (GXCOPY:H2D) per upload(). */
#include <stdint.h>

#include <nvtx3/nvToolsExt.h>

#include "ocl-common.h"

static ocl_env_t env;
static cl_mem buf;
static char data[4096];

int nvtx_push(const char *name) { return nvtxRangePushA(name); }
int nvtx_pop(void) { return nvtxRangePop(); }

/* 0, or OCL_SKIP without an OpenCL device. */
int ocl_open(void) {
  int rc = ocl_env_open(&env, "__kernel void nop(void) {}\n");
  if (rc)
    return rc;
  cl_int err;
  buf = clCreateBuffer(env.ctx, CL_MEM_READ_WRITE, sizeof data, NULL, &err);
  OCL_CHECK(err);
  return 0;
}

void upload(void) { OCL_CHECK(clEnqueueWriteBuffer(env.q, buf, CL_TRUE, 0, sizeof data, data, 0, NULL, NULL)); }

void ocl_close(void) {
  OCL_CHECK(clFinish(env.q));
  clReleaseMemObject(buf);
  ocl_env_close(&env);
}

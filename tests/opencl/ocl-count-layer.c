/* ocl-count-layer - a user's own OpenCL loader layer, for the test that
 * OPENCL_LAYERS set by the user is kept next to the shim's layer.  It
 * counts the clEnqueueNDRangeKernel and clEnqueueWriteBuffer calls that
 * reach it and, at unload, writes "ndrange=<n> write=<m>\n" to the file
 * named by OCL_COUNT_LAYER_OUT (if set). */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl_layer.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const cl_icd_dispatch *target;
static cl_icd_dispatch mine;
static atomic_long n_ndrange, n_write;

static cl_int CL_API_CALL count_ndrange(cl_command_queue q, cl_kernel k, cl_uint dim, const size_t *off,
                                        const size_t *gws, const size_t *lws, cl_uint nw, const cl_event *wl,
                                        cl_event *ev) {
  atomic_fetch_add(&n_ndrange, 1);
  return target->clEnqueueNDRangeKernel(q, k, dim, off, gws, lws, nw, wl, ev);
}

static cl_int CL_API_CALL count_write(cl_command_queue q, cl_mem b, cl_bool blocking, size_t off, size_t size,
                                      const void *ptr, cl_uint nw, const cl_event *wl, cl_event *ev) {
  atomic_fetch_add(&n_write, 1);
  return target->clEnqueueWriteBuffer(q, b, blocking, off, size, ptr, nw, wl, ev);
}

CL_API_ENTRY cl_int CL_API_CALL clGetLayerInfo(cl_layer_info name, size_t size, void *value, size_t *size_ret) {
  if (name != CL_LAYER_API_VERSION)
    return CL_INVALID_VALUE;
  cl_layer_api_version v = CL_LAYER_API_VERSION_100;
  if (value) {
    if (size < sizeof v)
      return CL_INVALID_VALUE;
    memcpy(value, &v, sizeof v);
  }
  if (size_ret)
    *size_ret = sizeof v;
  return CL_SUCCESS;
}

CL_API_ENTRY cl_int CL_API_CALL clInitLayer(cl_uint n, const cl_icd_dispatch *t, cl_uint *n_ret,
                                            const cl_icd_dispatch **d_ret) {
  size_t need = offsetof(cl_icd_dispatch, clEnqueueNDRangeKernel) / sizeof(void *) + 1;
  if (!t || !n_ret || !d_ret || n < need)
    return CL_INVALID_VALUE;
  target = t;
  mine.clEnqueueNDRangeKernel = count_ndrange;
  mine.clEnqueueWriteBuffer = count_write;
  *n_ret = sizeof mine / sizeof(void *);
  *d_ret = &mine;
  return CL_SUCCESS;
}

__attribute__((destructor)) static void count_report(void) {
  const char *out = getenv("OCL_COUNT_LAYER_OUT");
  FILE *f = out ? fopen(out, "w") : NULL;
  if (!f)
    return;
  fprintf(f, "ndrange=%ld write=%ld\n", atomic_load(&n_ndrange), atomic_load(&n_write));
  fclose(f);
}

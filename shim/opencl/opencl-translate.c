/* opencl-translate.c - a completed OpenCL command -> vendor-neutral
 * ACTIVITY record.
 *
 * Clock: CL_PROFILING_COMMAND_START/END are ns of the device's clock.
 * PoCL (the CPU runtime used here) stamps them with CLOCK_MONOTONIC_RAW,
 * which is the gpuprof clock (gpuprof/clock.h), so no conversion is done.
 * A runtime on another clock would need an offset (clGetDeviceAndHostTimer,
 * OpenCL 2.1; PoCL does not support it) -- see docs/SHIM.md.
 * When a profiling query fails (queue without CL_QUEUE_PROFILING_ENABLE,
 * failed command) the host times [enqueue, callback] are used and the
 * record is flagged GPD_ACTIVITY_HOST_TIME.
 */
#include <string.h>

#include "gpuprof/clock.h"
#include "opencl.h"

void gpd_ocl_translate(const gpd_ocl_ctx_t *c, cl_event e, cl_int status, gpd_rec_activity_t *a) {
  const gpd_ocl_api_t *api = gpd_ocl_api();
  memset(a, 0, sizeof *a);
  a->api = GPD_API_OPENCL;
  a->op = c->op;
  a->subkind = c->subkind;
  a->device = c->device;
  a->corr = c->corr;
  a->bytes = c->bytes;
  a->stream = c->stream;
  a->name = c->name;
  cl_ulong start = 0, end = 0;
  int ok = status == CL_COMPLETE &&
           api->clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_START, sizeof start, &start, NULL) == CL_SUCCESS &&
           api->clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_END, sizeof end, &end, NULL) == CL_SUCCESS &&
           start > 0 && end >= start;
  if (ok) {
    a->start = start;
    a->end = end;
  } else {
    a->start = c->ts;
    a->end = gpd_clock_ns();
    a->h.flags = GPD_ACTIVITY_HOST_TIME;
  }
}

/* opencl-loader.c - what every file of the OpenCL back end reads and none
 * of them owns alone: the next definitions of the cl* calls
 * (dlsym(RTLD_NEXT), falling back to dlopen of the ICD loader), the loader
 * layer's next table and the word that says a loader installed it (set by
 * opencl-layer.c's clInitLayer), and the table the back end's own calls use
 * (the layer's next table once a loader installed the layer).  Below
 * opencl-api.c, opencl-calls.c, opencl-layer.c, opencl-events.c,
 * opencl-pending.c and opencl-translate.c; it calls none of them.
 */
#include <dlfcn.h>

#include "gpuprof/error.h"
#include "gpuprof/log.h"
#include "opencl.h"

static gpd_ocl_api_t ocl_next;
static uintptr_t ocl_next_base; /* module of the next definitions */
static pthread_once_t ocl_once = PTHREAD_ONCE_INIT;
static int ocl_log_sym;
static atomic_int ocl_ready; /* 1: the event API was found (OpenCL in use) */

gpd_ocl_api_t gpd_ocl_layer_next;
_Atomic uintptr_t gpd_ocl__layer_base;

const gpd_ocl_api_t *gpd_ocl_layer_api(void) {
  return atomic_load_explicit(&gpd_ocl__layer_base, memory_order_acquire) ? &gpd_ocl_layer_next : NULL;
}

int gpd_ocl_ready(void) { return atomic_load(&ocl_ready); }

static void ocl_resolve(void) {
  void *h = NULL;
#define GPD_OCL_FN(ret, name, args)                                                                     \
  ocl_next.name = (ret(CL_API_CALL *) args)dlsym(RTLD_NEXT, #name);                                     \
  if (!ocl_next.name) {                                                                                 \
    if (!h)                                                                                             \
      h = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);                                              \
    if (h)                                                                                              \
      ocl_next.name = (ret(CL_API_CALL *) args)dlsym(h, #name);                                         \
    if (!ocl_next.name)                                                                                 \
      GPD_LOG_ONCE(ocl_log_sym, GPD_LOG_WARN, "OpenCL: %s not found; some calls are not profiled", #name); \
  }
#include "opencl-fns.h"
#undef GPD_OCL_FN
  Dl_info info;
  if (ocl_next.clFinish && dladdr((void *)ocl_next.clFinish, &info))
    ocl_next_base = (uintptr_t)info.dli_fbase;
  gpd_shim_vendor_module("libOpenCL.so");
  gpd_shim_vendor_module("libpocl");
  const gpd_ocl_api_t *a = gpd_ocl_layer_api();
  if (!a)
    a = &ocl_next;
  int ok = a->clSetEventCallback && a->clGetEventProfilingInfo && a->clReleaseEvent && a->clRetainEvent;
  gpd_shim_backend_status(GPD_API_OPENCL, ok, ok ? 0 : GPD_ENOVENDOR,
                          ok ? NULL : "OpenCL event API not found");
  atomic_store(&ocl_ready, ok);
}

const gpd_ocl_api_t *gpd_ocl_next(void) {
  pthread_once(&ocl_once, ocl_resolve);
  return &ocl_next;
}

uintptr_t gpd_ocl_next_base(void) { return ocl_next_base; }

const gpd_ocl_api_t *gpd_ocl_api(void) {
  pthread_once(&ocl_once, ocl_resolve);
  const gpd_ocl_api_t *l = gpd_ocl_layer_api();
  return l ? l : &ocl_next;
}

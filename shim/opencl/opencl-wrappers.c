/* opencl-wrappers.c - the interposed OpenCL entry points (and nothing
 * else), one per call of opencl-calls.h.
 *
 * Each one resolves its next definition (dlsym(RTLD_NEXT)).  When that
 * definition lives in the ICD loader that installed the shim's layer
 * (opencl-layer.c), the call is passed through untouched: the loader
 * dispatches it to the layer, which records it.  Otherwise (a loader
 * without layer support, a vendor libOpenCL linked directly, the layer
 * turned off) the wrapper records it itself with the same body
 * (gpd_ocl_call_<name>, opencl-calls.c).  Either way a call is recorded
 * once.
 */
#include "opencl.h"

#define GPD_OCL_CALL(ret, name, params, args)                          \
  GPD_EXPORT CL_API_ENTRY ret CL_API_CALL name params {                \
    const gpd_ocl_api_t *next = gpd_ocl_next();                        \
    if (next->name && gpd_ocl_layer_covers())                          \
      return next->name args;                                          \
    return gpd_ocl_call_##name(next, GPD_OCL_UNPAREN args);            \
  }
#include "opencl-calls.h"
#undef GPD_OCL_CALL

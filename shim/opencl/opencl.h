/* opencl.h - internals of the shim's OpenCL back end.
 *
 *   opencl-calls.h      X-macro list of the recorded calls (named params)
 *   opencl-calls.c      the recording bodies gpd_ocl_call_<name>
 *   opencl-wrappers.c   the exported, interposed cl* symbols (only those)
 *   opencl-layer.c      the ICD loader layer (clGetLayerInfo, clInitLayer)
 *   opencl-api.c        the dlsym(RTLD_NEXT) table, queue/device tables,
 *                       callback contexts (slab + lock-free free list),
 *                       the CL_COMPLETE event callback
 *   opencl-translate.c  event profiling info -> gpd_rec_activity_t
 */
#ifndef GPUPROF_SHIM_OPENCL_H
#define GPUPROF_SHIM_OPENCL_H

#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>
#include <stdatomic.h>
#include <stdint.h>

#include "../internal.h"

/** The next definitions of the intercepted and used OpenCL calls. */
typedef struct gpd_ocl_api_s {
#define GPD_OCL_FN(ret, name, args) ret(CL_API_CALL *name) args;
#include "opencl-fns.h"
#undef GPD_OCL_FN
} gpd_ocl_api_t;

/** The interposed symbols' next definitions (dlsym(RTLD_NEXT), fallback
 *  dlopen("libOpenCL.so.1"); members NULL where not found).  First call of
 *  this or gpd_ocl_api(): resolves, registers the vendor modules (their
 *  frames are dropped from captures) and reports the back-end status. */
const gpd_ocl_api_t *gpd_ocl_next(void);
/** Module base of the next definitions (0 = unknown); after gpd_ocl_next(). */
uintptr_t gpd_ocl_next_base(void);
/** The table the back end's own calls use (events, profiling, info): the
 *  layer's next table once the layer is installed (straight to the driver,
 *  not through outer layers), else gpd_ocl_next(). */
const gpd_ocl_api_t *gpd_ocl_api(void);

/** The layer's next table, or NULL while no loader installed the layer. */
const gpd_ocl_api_t *gpd_ocl_layer_api(void);
/** 1 when calls to the next definitions pass through the installed layer
 *  (the interposed symbol must then pass the call through untouched);
 *  0 otherwise, logging once why (only while the shim is active). */
int gpd_ocl_layer_covers(void);

#define GPD_OCL_UNPAREN(...) __VA_ARGS__
/** Recording bodies, one per call of opencl-calls.h: call `next->name`
 *  with the application's arguments and return its result unchanged;
 *  around it, when the shim is active and this thread is not already
 *  inside the shim: capture, INVOKE, and an ACTIVITY (event callback for
 *  device commands, host times for alloc/free/sync).  Queue creation
 *  forces CL_QUEUE_PROFILING_ENABLE.  A NULL `next->name` fails the call
 *  (CL_INVALID_OPERATION).  Any application thread. */
#define GPD_OCL_CALL(ret, name, params, args) \
  ret gpd_ocl_call_##name(const gpd_ocl_api_t *next, GPD_OCL_UNPAREN params);
#include "opencl-calls.h"
#undef GPD_OCL_CALL

/** Callback context of one enqueued command (slab-allocated). */
typedef struct gpd_ocl_ctx_s {
  _Atomic uint32_t next; /* free-list link: index + 1, 0 = end */
  uint32_t self;         /* own index */
  uint64_t corr;
  uint64_t ts;           /* host time at enqueue (fallback start) */
  uint64_t bytes;
  uint32_t stream;
  uint32_t device;
  uint32_t name;         /* kernel name string id */
  uint8_t op, subkind;
} gpd_ocl_ctx_t;

gpd_ocl_ctx_t *gpd_ocl_ctx_get(void);
void gpd_ocl_ctx_put(gpd_ocl_ctx_t *c);

/** Process-local queue id (stream) and device index of a queue. */
uint32_t gpd_ocl_queue_id(cl_command_queue q, uint32_t *device);
/** Record a new queue (created through our wrappers). */
void gpd_ocl_queue_new(cl_command_queue q, cl_device_id dev);

/** Set up the completion callback for event e (ours if owned, else we
 *  retain it).  On failure releases what it took and returns nonzero. */
int gpd_ocl_watch(cl_event e, int owned, gpd_ocl_ctx_t *c);

/** Fill an ACTIVITY from the completed event (device times) or, when
 *  profiling info is missing, from host times with GPD_ACTIVITY_HOST_TIME. */
void gpd_ocl_translate(const gpd_ocl_ctx_t *c, cl_event e, cl_int status, gpd_rec_activity_t *a);

/** Kernel name string id (0 if unknown). */
uint32_t gpd_ocl_kernel_name(cl_kernel k);

extern _Atomic long gpd_ocl_pending_n;

#endif

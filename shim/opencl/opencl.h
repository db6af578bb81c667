/* opencl.h - internals of the shim's OpenCL back end.
 *
 *   opencl-calls.h      X-macro list of the recorded calls (named params)
 *   opencl-calls.c      the recording bodies gpd_ocl_call_<name>
 *   opencl-wrappers.c   the exported, interposed cl* symbols (only those)
 *   opencl-layer.c      the ICD loader layer (clGetLayerInfo, clInitLayer)
 *   opencl-loader.c     the dlsym(RTLD_NEXT) table, the layer's next table
 *                       and its installed word, the table our calls use
 *   opencl-api.c        queue/device tables, kernel names, fork hooks, the
 *                       ops table
 *   opencl-events.c     callback contexts (slab + lock-free free list), the
 *                       CL_COMPLETE event callback
 *   opencl-translate.c  event profiling info -> gpd_rec_activity_t
 *   opencl-pending.c    per-queue lists of commands whose ACTIVITY is
 *                       still to be pushed (harvested at synchronization)
 *
 * Which calls which: wrappers over layer and calls; calls over api,
 * pending, events; api over pending; pending over events; events over
 * translate; all over loader (no file calls one above it).
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

/** The layer's next table (filled by clInitLayer, opencl-layer.c, before
 *  it publishes gpd_ocl__layer_base). */
extern gpd_ocl_api_t gpd_ocl_layer_next;
/** Module base of the ICD loader that installed the layer; 0 = not
 *  installed.  Written once by clInitLayer (release), read with acquire. */
extern _Atomic uintptr_t gpd_ocl__layer_base;
/** The layer's next table, or NULL while no loader installed the layer. */
const gpd_ocl_api_t *gpd_ocl_layer_api(void);
/** 1 once the next definitions were resolved and the event API was found
 *  (OpenCL in use), else 0.  Any thread. */
int gpd_ocl_ready(void);
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

#define GPD_OCL_MAX_QUEUES 4096u /* queue table slots (power of two) */

/** Callback context of one enqueued command (slab-allocated), also the
 *  command's fields in a pending list. */
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

/* ---- callback contexts and the event callback (opencl-events.c) ---- */

/** A free callback context, or NULL when OCL_MAX_SLABS slabs are in use
 *  (logged once).  Lock-free except when a slab is added; any thread. */
gpd_ocl_ctx_t *gpd_ocl_ctx_get(void);
/** Give c back to the free list.  Any thread. */
void gpd_ocl_ctx_put(gpd_ocl_ctx_t *c);
/** Fork hooks: take / release the slab lock (prepare; parent and child). */
void gpd_ocl_ctx_lock(void);
void gpd_ocl_ctx_unlock(void);
/** Fork child, after gpd_ocl_ctx_unlock: every context free again (the
 *  parent's commands never complete here), gpd_ocl_pending_n 0. */
void gpd_ocl_ctx_reset(void);

typedef struct gpd_ocl_pend_s gpd_ocl_pend_t;

/** Process-local queue id (stream) and device index of a queue. */
uint32_t gpd_ocl_queue_id(cl_command_queue q, uint32_t *device);
/** The same, and the queue's pending list in *pend (made on first use;
 *  NULL for a queue without CL_QUEUE_PROFILING_ENABLE, when out of memory
 *  or when the queue table is full). */
uint32_t gpd_ocl_queue_get(cl_command_queue q, uint32_t *device, gpd_ocl_pend_t **pend);
/** The pending list of a known queue, or NULL (never makes one). */
gpd_ocl_pend_t *gpd_ocl_queue_pend(cl_command_queue q);
/** Record a new queue (created through our wrappers). */
void gpd_ocl_queue_new(cl_command_queue q, cl_device_id dev);

/** Set up the completion callback for event e with a copy of the
 *  command's fields `f` (its next/self unused) in a callback context.
 *  Takes the caller's reference to e: the callback releases it.  0, or -1
 *  when no context is left or the runtime refused the callback (the
 *  reference is released and the ACTIVITY lost). */
int gpd_ocl_watch(cl_event e, const gpd_ocl_ctx_t *f);

/** Fill an ACTIVITY from the completed event (device times) or, when
 *  profiling info is missing, from host times with GPD_ACTIVITY_HOST_TIME. */
void gpd_ocl_translate(const gpd_ocl_ctx_t *c, cl_event e, cl_int status, gpd_rec_activity_t *a);

/* ---- pending lists (opencl-pending.c); any thread ---- */

/** A new empty list (registers the exit harvest on the first). */
gpd_ocl_pend_t *gpd_ocl_pend_new(void);
/** Defer command `c` with event `e` (the caller's reference passes to the
 *  list).  0, or -1 when the list is full of incomplete commands: the
 *  caller keeps its reference (then use gpd_ocl_watch). */
int gpd_ocl_pend_add(gpd_ocl_pend_t *l, cl_event e, const gpd_ocl_ctx_t *c);
/** Sequence number the next added command gets (snapshot before a
 *  clFinish). */
uint64_t gpd_ocl_pend_seq(gpd_ocl_pend_t *l);
/** After clFinish succeeded: push and release the commands added before
 *  the snapshot `upto` (complete, no query). */
void gpd_ocl_pend_finish(gpd_ocl_pend_t *l, uint64_t upto);
/** Push and release the commands whose event has completed (one
 *  CL_EVENT_COMMAND_EXECUTION_STATUS query each): of one list / every list. */
void gpd_ocl_pend_completed(gpd_ocl_pend_t *l);
void gpd_ocl_pend_completed_all(void);
/** Queue release: completed commands pushed, the others handed to the
 *  CL_COMPLETE callback; the list is left empty. */
void gpd_ocl_pend_release(gpd_ocl_pend_t *l);
/** Commands in all lists (tests: gpd_shim__ocl_pending). */
long gpd_ocl_pend_count(void);
/** Fork child: drop every list. */
void gpd_ocl_pend_fork_child(void);

/** Kernel name string id (0 if unknown).  Cached per kernel handle after
 *  the first call (clGetKernelInfo and the string table's hash only then);
 *  any thread. */
uint32_t gpd_ocl_kernel_name(cl_kernel k);
/** clReleaseKernel(k) is about to run: forget k's cached name (its handle
 *  may then name another kernel).  Any thread. */
void gpd_ocl_kname_forget(cl_kernel k);

/** Commands handed to the CL_COMPLETE callback and not pushed yet
 *  (opencl-events.c). */
extern _Atomic long gpd_ocl_pending_n;

#endif

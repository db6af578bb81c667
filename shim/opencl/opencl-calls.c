/* opencl-calls.c - the recording bodies of the OpenCL calls, shared by the
 * interposed symbols (opencl-wrappers.c) and the loader layer
 * (opencl-layer.c), which differ only in the `next` table they pass.
 * Each one calls the next definition with the application's arguments and
 * returns its result unchanged; around it, when the shim is active and the
 * thread is not already inside the shim (an interposed symbol recording a
 * call that then passes our layer): capture the calling context, take a
 * correlation id, push INVOKE, and arrange for an ACTIVITY (event callback
 * for device commands, host times for alloc/free/sync).
 *
 * Event semantics: if the application passes an event pointer it gets its
 * event as usual; we retain it and release that retain when its ACTIVITY
 * is pushed.  If it passes NULL we pass our own and release it then.  The
 * command then waits in its queue's pending list (opencl-pending.c) until
 * a clFinish, clWaitForEvents, blocking transfer, queue release or exit
 * harvests it; a full list of incomplete commands, or a queue without
 * profiling, hands it to a CL_COMPLETE callback instead (host times of a
 * queue without profiling then end at completion, not at a harvest).
 * Queues are created with CL_QUEUE_PROFILING_ENABLE added (visible to
 * clGetCommandQueueInfo(CL_QUEUE_PROPERTIES): docs/SHIM.md) unless the
 * shim will not record (gpd_shim_may_record: disabled, or no daemon
 * listening): PoCL's profiling alone costs ~0.25 us per launch.
 */
#include <string.h>

#include "gpuprof/clock.h"
#include "gpuprof/log.h"
#include "opencl.h"

#define OCL_MAX_PROPS 64 /* queue property list entries we can rewrite */

typedef struct ocl_call_s {
  uint64_t ts;
  uint64_t corr;
  uint32_t node;
  int prev;
  int timed;       /* one of the self-cost meter's timed operations */
  uint64_t self;   /* timed: the shim's time before the vendor call (ns) */
  uint64_t post0;  /* timed: when the shim's work after it began (0: none) */
} ocl_call_t;

static int ocl_log_props;

/* Enter: returns 1 when this call is profiled (then call ocl_leave). */
static inline int ocl_begin(ocl_call_t *c) {
  c->prev = gpd_thread_enter();
  if (c->prev || !gpd_shim_active()) {
    gpd_thread_leave(c->prev);
    return 0;
  }
  /* Resolved (vendor modules registered) before the first capture: on the
   * layer path libOpenCL's frames lie between the caller and us. */
  (void)gpd_ocl_api();
  c->ts = gpd_clock_ns();
  c->node = gpd_shim_capture();
  c->corr = gpd_shim_corr_next(GPD_API_OPENCL);
  c->post0 = 0;
  if ((c->timed = gpd_shim__meter_pick()) != 0)
    c->self = gpd_clock_ns() - c->ts;
  return 1;
}

/* The shim's work after the vendor call begins (self-cost meter). */
static inline void ocl_after(ocl_call_t *c) {
  if (c->timed)
    c->post0 = gpd_clock_ns();
}

/* Leave a profiled call: counted by the self-cost meter (internal.h). */
static inline void ocl_leave(ocl_call_t *c) {
  if (c->timed && c->post0)
    c->self += gpd_clock_ns() - c->post0;
  gpd_shim__meter_add(GPD_API_OPENCL, c->self, c->timed);
  gpd_thread_leave(c->prev);
}

/* After a successful enqueue: INVOKE, and the command with a reference to
 * its event in the queue's pending list (or, that full, a callback).  With
 * `sync` (a blocking transfer) the queue's completed commands are
 * harvested. */
static void ocl_enqueued(ocl_call_t *c, cl_command_queue q, cl_event *user_ev, cl_event mine, unsigned op,
                         unsigned subkind, uint64_t bytes, cl_kernel k, int sync) {
  cl_event e = user_ev ? *user_ev : mine;
  ocl_after(c);
  (void)gpd_shim_push_invoke(c->corr, c->node, GPD_API_OPENCL, op, c->ts, 0);
  if (!e)
    return;
  const gpd_ocl_api_t *api = gpd_ocl_api();
  if (user_ev && api->clRetainEvent(e) != CL_SUCCESS)
    return;
  gpd_ocl_ctx_t x;
  memset(&x, 0, sizeof x);
  x.corr = c->corr;
  x.ts = c->ts;
  x.bytes = bytes;
  x.op = (uint8_t)op;
  x.subkind = (uint8_t)subkind;
  gpd_ocl_pend_t *l;
  x.stream = gpd_ocl_queue_get(q, &x.device, &l);
  x.name = k ? gpd_ocl_kernel_name(k) : 0;
  if (l && gpd_ocl_pend_add(l, e, &x) == 0) {
    if (sync)
      gpd_ocl_pend_completed(l);
    return;
  }
  (void)gpd_ocl_watch(e, &x);
}

/* Host-measured operation (alloc, free, sync): INVOKE + ACTIVITY now. */
static void ocl_hosted(ocl_call_t *c, unsigned op, unsigned subkind, uint64_t bytes, cl_command_queue q) {
  ocl_after(c);
  gpd_rec_activity_t a;
  memset(&a, 0, sizeof a);
  a.api = GPD_API_OPENCL;
  a.op = (uint8_t)op;
  a.subkind = (uint8_t)subkind;
  a.corr = c->corr;
  a.start = c->ts;
  a.bytes = bytes;
  if (q)
    a.stream = gpd_ocl_queue_id(q, &a.device);
  (void)gpd_shim_push_host_op(c->node, &a);
}

static uint64_t ocl_region_bytes(const size_t *region) {
  return region ? (uint64_t)region[0] * region[1] * region[2] : 0;
}

/* ------------------------------------------------------------ queues */

cl_command_queue gpd_ocl_call_clCreateCommandQueue(const gpd_ocl_api_t *next, cl_context ctx, cl_device_id dev,
                                                   cl_command_queue_properties props, cl_int *err) {
  if (!next->clCreateCommandQueue) {
    if (err)
      *err = CL_INVALID_OPERATION;
    return NULL;
  }
  int prev = gpd_thread_enter();
  if (prev || !gpd_shim_may_record()) { /* an outer shim frame creates this queue; or no profiling */
    gpd_thread_leave(prev);
    return next->clCreateCommandQueue(ctx, dev, props, err);
  }
  cl_int e = CL_SUCCESS;
  cl_command_queue q = next->clCreateCommandQueue(ctx, dev, props | CL_QUEUE_PROFILING_ENABLE, &e);
  if (e != CL_SUCCESS && !(props & CL_QUEUE_PROFILING_ENABLE)) /* runtime refused profiling: as asked */
    q = next->clCreateCommandQueue(ctx, dev, props, &e);
  if (q)
    gpd_ocl_queue_new(q, dev);
  if (err)
    *err = e;
  gpd_thread_leave(prev);
  return q;
}

cl_command_queue gpd_ocl_call_clCreateCommandQueueWithProperties(const gpd_ocl_api_t *next, cl_context ctx,
                                                                 cl_device_id dev,
                                                                 const cl_queue_properties *props, cl_int *err) {
  if (!next->clCreateCommandQueueWithProperties) {
    if (err)
      *err = CL_INVALID_OPERATION;
    return NULL;
  }
  int prev = gpd_thread_enter();
  if (prev || !gpd_shim_may_record()) {
    gpd_thread_leave(prev);
    return next->clCreateCommandQueueWithProperties(ctx, dev, props, err);
  }
  /* Copy {key, value, ..., 0} and OR CL_QUEUE_PROFILING_ENABLE into
   * CL_QUEUE_PROPERTIES (append it if absent). */
  cl_queue_properties mine[OCL_MAX_PROPS + 3];
  size_t n = 0;
  int fits = 1, found = 0;
  if (props) {
    while (props[n] != 0) {
      if (n + 2 > OCL_MAX_PROPS) {
        fits = 0;
        break;
      }
      mine[n] = props[n];
      mine[n + 1] = props[n + 1];
      if (props[n] == CL_QUEUE_PROPERTIES) {
        mine[n + 1] |= CL_QUEUE_PROFILING_ENABLE;
        found = 1;
      }
      n += 2;
    }
  }
  cl_int e = CL_SUCCESS;
  cl_command_queue q = NULL;
  if (fits) {
    if (!found) {
      mine[n++] = CL_QUEUE_PROPERTIES;
      mine[n++] = CL_QUEUE_PROFILING_ENABLE;
    }
    mine[n] = 0;
    q = next->clCreateCommandQueueWithProperties(ctx, dev, mine, &e);
  }
  if (!fits || e != CL_SUCCESS) {
    if (!fits)
      GPD_LOG_ONCE(ocl_log_props, GPD_LOG_WARN, "OpenCL: queue property list too long; profiling not forced");
    q = next->clCreateCommandQueueWithProperties(ctx, dev, props, &e);
  }
  if (q)
    gpd_ocl_queue_new(q, dev);
  if (err)
    *err = e;
  gpd_thread_leave(prev);
  return q;
}

/* The body every clEnqueue* call shares: call through when not
 * profiling; else pass our own event when the application passed none,
 * and on success push the INVOKE and defer the event (`sync`: the call
 * blocked until its command completed).  `q` and `ev` are the
 * body's queue and event-out parameters; the variadic part is the
 * application's arguments before `ev`. */
#define OCL_ENQUEUE(fn, op, subkind, bytes, kernel, sync, ...)                                                    \
  do {                                                                                                            \
    if (!next->fn)                                                                                                \
      return CL_INVALID_OPERATION;                                                                                \
    ocl_call_t c_;                                                                                                \
    if (!ocl_begin(&c_))                                                                                          \
      return next->fn(__VA_ARGS__, ev);                                                                           \
    cl_event mine_ = NULL;                                                                                        \
    cl_int ret_ = next->fn(__VA_ARGS__, ev ? ev : &mine_);                                                        \
    if (ret_ == CL_SUCCESS)                                                                                       \
      ocl_enqueued(&c_, q, ev, mine_, (op), (subkind), (bytes), (kernel), (sync));                                \
    ocl_leave(&c_);                                                                                               \
    return ret_;                                                                                                  \
  } while (0)

/* ------------------------------------------------------------ kernels */

cl_int gpd_ocl_call_clEnqueueNDRangeKernel(const gpd_ocl_api_t *next, cl_command_queue q, cl_kernel k, cl_uint dim,
                                           const size_t *off, const size_t *gws, const size_t *lws, cl_uint nw,
                                           const cl_event *wl, cl_event *ev) {
  OCL_ENQUEUE(clEnqueueNDRangeKernel, GPD_OP_KERNEL, 0, 0, k, 0, q, k, dim, off, gws, lws, nw, wl);
}

cl_int gpd_ocl_call_clEnqueueTask(const gpd_ocl_api_t *next, cl_command_queue q, cl_kernel k, cl_uint nw,
                                  const cl_event *wl, cl_event *ev) {
  OCL_ENQUEUE(clEnqueueTask, GPD_OP_KERNEL, 0, 0, k, 0, q, k, nw, wl);
}

/* ------------------------------------------------------------ copies */

cl_int gpd_ocl_call_clEnqueueReadBuffer(const gpd_ocl_api_t *next, cl_command_queue q, cl_mem b, cl_bool blocking,
                                        size_t off, size_t size, void *ptr, cl_uint nw, const cl_event *wl,
                                        cl_event *ev) {
  OCL_ENQUEUE(clEnqueueReadBuffer, GPD_OP_COPY, GPD_COPY_D2H, size, NULL, blocking, q, b, blocking, off, size, ptr, nw, wl);
}

cl_int gpd_ocl_call_clEnqueueWriteBuffer(const gpd_ocl_api_t *next, cl_command_queue q, cl_mem b, cl_bool blocking,
                                         size_t off, size_t size, const void *ptr, cl_uint nw, const cl_event *wl,
                                         cl_event *ev) {
  OCL_ENQUEUE(clEnqueueWriteBuffer, GPD_OP_COPY, GPD_COPY_H2D, size, NULL, blocking, q, b, blocking, off, size, ptr, nw, wl);
}

cl_int gpd_ocl_call_clEnqueueCopyBuffer(const gpd_ocl_api_t *next, cl_command_queue q, cl_mem src, cl_mem dst,
                                        size_t soff, size_t doff, size_t size, cl_uint nw, const cl_event *wl,
                                        cl_event *ev) {
  OCL_ENQUEUE(clEnqueueCopyBuffer, GPD_OP_COPY, GPD_COPY_D2D, size, NULL, 0, q, src, dst, soff, doff, size, nw, wl);
}

cl_int gpd_ocl_call_clEnqueueReadBufferRect(const gpd_ocl_api_t *next, cl_command_queue q, cl_mem b,
                                            cl_bool blocking, const size_t *boff, const size_t *hoff,
                                            const size_t *region, size_t brow, size_t bslice, size_t hrow,
                                            size_t hslice, void *ptr, cl_uint nw, const cl_event *wl,
                                            cl_event *ev) {
  OCL_ENQUEUE(clEnqueueReadBufferRect, GPD_OP_COPY, GPD_COPY_D2H, ocl_region_bytes(region), NULL, blocking, q, b, blocking,
              boff, hoff, region, brow, bslice, hrow, hslice, ptr, nw, wl);
}

cl_int gpd_ocl_call_clEnqueueWriteBufferRect(const gpd_ocl_api_t *next, cl_command_queue q, cl_mem b,
                                             cl_bool blocking, const size_t *boff, const size_t *hoff,
                                             const size_t *region, size_t brow, size_t bslice, size_t hrow,
                                             size_t hslice, const void *ptr, cl_uint nw, const cl_event *wl,
                                             cl_event *ev) {
  OCL_ENQUEUE(clEnqueueWriteBufferRect, GPD_OP_COPY, GPD_COPY_H2D, ocl_region_bytes(region), NULL, blocking, q, b, blocking,
              boff, hoff, region, brow, bslice, hrow, hslice, ptr, nw, wl);
}

cl_int gpd_ocl_call_clEnqueueCopyBufferRect(const gpd_ocl_api_t *next, cl_command_queue q, cl_mem src, cl_mem dst,
                                            const size_t *soff, const size_t *doff, const size_t *region,
                                            size_t srow, size_t sslice, size_t drow, size_t dslice, cl_uint nw,
                                            const cl_event *wl, cl_event *ev) {
  OCL_ENQUEUE(clEnqueueCopyBufferRect, GPD_OP_COPY, GPD_COPY_D2D, ocl_region_bytes(region), NULL, 0, q, src, dst,
              soff, doff, region, srow, sslice, drow, dslice, nw, wl);
}

cl_int gpd_ocl_call_clEnqueueFillBuffer(const gpd_ocl_api_t *next, cl_command_queue q, cl_mem b, const void *pat,
                                        size_t psize, size_t off, size_t size, cl_uint nw, const cl_event *wl,
                                        cl_event *ev) {
  OCL_ENQUEUE(clEnqueueFillBuffer, GPD_OP_MEMSET, GPD_MEM_DEV, size, NULL, 0, q, b, pat, psize, off, size, nw, wl);
}

/* ------------------------------------------------------------ memory */

cl_mem gpd_ocl_call_clCreateBuffer(const gpd_ocl_api_t *next, cl_context ctx, cl_mem_flags flags, size_t size,
                                   void *host, cl_int *err) {
  if (!next->clCreateBuffer) {
    if (err)
      *err = CL_INVALID_OPERATION;
    return NULL;
  }
  ocl_call_t c;
  if (!ocl_begin(&c))
    return next->clCreateBuffer(ctx, flags, size, host, err);
  cl_mem m = next->clCreateBuffer(ctx, flags, size, host, err);
  if (m)
    ocl_hosted(&c, GPD_OP_ALLOC, GPD_MEM_DEV, size, NULL);
  ocl_leave(&c);
  return m;
}

cl_int gpd_ocl_call_clReleaseMemObject(const gpd_ocl_api_t *next, cl_mem m) {
  if (!next->clReleaseMemObject)
    return CL_INVALID_OPERATION;
  ocl_call_t c;
  if (!ocl_begin(&c))
    return next->clReleaseMemObject(m);
  size_t size = 0;
  if (next->clGetMemObjectInfo)
    (void)next->clGetMemObjectInfo(m, CL_MEM_SIZE, sizeof size, &size, NULL);
  cl_int ret = next->clReleaseMemObject(m);
  if (ret == CL_SUCCESS)
    ocl_hosted(&c, GPD_OP_FREE, GPD_MEM_DEV, size, NULL);
  ocl_leave(&c);
  return ret;
}

/* ------------------------------------------------------------ sync */

/* The harvests below run whether or not this call is recorded (a list
 * made while profiling is emptied also after the daemon went away). */

cl_int gpd_ocl_call_clFinish(const gpd_ocl_api_t *next, cl_command_queue q) {
  if (!next->clFinish)
    return CL_INVALID_OPERATION;
  gpd_ocl_pend_t *l = gpd_ocl_queue_pend(q);
  uint64_t upto = l ? gpd_ocl_pend_seq(l) : 0;
  ocl_call_t c;
  int rec = ocl_begin(&c);
  cl_int ret = next->clFinish(q);
  if (ret == CL_SUCCESS && rec)
    ocl_hosted(&c, GPD_OP_SYNC, GPD_SYNC_STR, 0, q);
  if (ret == CL_SUCCESS && l)
    gpd_ocl_pend_finish(l, upto);
  if (rec)
    ocl_leave(&c);
  return ret;
}

cl_int gpd_ocl_call_clWaitForEvents(const gpd_ocl_api_t *next, cl_uint n, const cl_event *list) {
  if (!next->clWaitForEvents)
    return CL_INVALID_OPERATION;
  ocl_call_t c;
  int rec = ocl_begin(&c);
  cl_int ret = next->clWaitForEvents(n, list);
  if (ret == CL_SUCCESS && rec)
    ocl_hosted(&c, GPD_OP_SYNC, GPD_SYNC_EVT, 0, NULL);
  if (ret == CL_SUCCESS)
    gpd_ocl_pend_completed_all();
  if (rec)
    ocl_leave(&c);
  return ret;
}

/* ------------------------------------------------------------ queues */

cl_int gpd_ocl_call_clReleaseCommandQueue(const gpd_ocl_api_t *next, cl_command_queue q) {
  if (!next->clReleaseCommandQueue)
    return CL_INVALID_OPERATION;
  gpd_ocl_pend_t *l = gpd_ocl_queue_pend(q);
  if (l) /* before the handle can be reused by a new queue */
    gpd_ocl_pend_release(l);
  return next->clReleaseCommandQueue(q);
}

/* ------------------------------------------------------------ kernels */

/* Not recorded: the kernel-name cache forgets the handle before the
 * runtime may free it (and a later clCreateKernel may return it again). */
cl_int gpd_ocl_call_clReleaseKernel(const gpd_ocl_api_t *next, cl_kernel k) {
  if (!next->clReleaseKernel)
    return CL_INVALID_OPERATION;
  gpd_ocl_kname_forget(k);
  return next->clReleaseKernel(k);
}

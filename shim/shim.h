/* shim.h - what the shim core offers its vendor back ends (opencl/, cupti/,
 * level0/).  Implemented in shim/ C files.  Every function here is safe to call
 * before the shim is connected or when it never will be (then it does
 * nothing and returns 0 / an error code): a back end never checks.
 *
 * Thread rules: any application or vendor thread may call these; each
 * thread lazily claims its own ring on first push (gpd_shim_push*), so no
 * call takes a lock, allocates, or makes a syscall on the hot path
 * (the first push on a thread claims a ring: one CAS).
 */
#ifndef GPUPROF_SHIM_H
#define GPUPROF_SHIM_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "gpuprof/record.h"

/** True once the shim holds a region (registered with a daemon). */
int gpd_shim_active(void);

/** 0 when the shim will not record what is set up now: disabled
 *  (GPUPROF_DISABLE=1), or not registered and no daemon listening at the
 *  socket (the connection thread's last attempt, internal.h no_listener);
 *  else 1 (registered, or a daemon that has not answered yet).  A back end asks before it makes a vendor object
 *  costlier for the sake of profiling (an OpenCL queue with
 *  CL_QUEUE_PROFILING_ENABLE).  Any thread. */
int gpd_shim_may_record(void);

/** Capture the calling context of the current thread: unwind with
 *  libunwind (unw_backtrace), drop the innermost frames that lie in the
 *  shim itself or in a registered vendor module (gpd_shim_vendor_module),
 *  intern the remaining path root-first (memoized against this thread's
 *  previous path, announcing new nodes with NODE records and new modules
 *  with MODULE records), and return the leaf node id (0 = unavailable). */
uint32_t gpd_shim_capture(void);

/** The child of context `parent` (a node from gpd_shim_capture) that is
 *  not a frame but a label (`label`, e.g. "<omp target>": a NODE with
 *  GPD_NODE_F_LABEL, announced once per daemon epoch).  Interned like a
 *  frame: the same (parent, label) gives the same id.  0 when unavailable
 *  (not active, parent 0, string or intern table full).  Any thread. */
uint32_t gpd_shim_label_node(uint32_t parent, const char *label);

/** Register a load module whose frames are "vendor" (libOpenCL, libcuda,
 *  libcudart, libcupti, libze_loader...): matched by substring of the
 *  module path, e.g. "libcuda.so".  Call at back-end init. */
void gpd_shim_vendor_module(const char *path_substring);

/** Next correlation id for `api` (GPD_CORR(api, n), n from a process-wide
 *  counter that survives a daemon restart). */
uint64_t gpd_shim_corr_next(unsigned api);

/** Push an INVOKE for `corr` at context `node` (from gpd_shim_capture).
 *  ts = gpd_clock_ns() at API entry.  0 or -ENOSPC (dropped, counted) or
 *  -ENOTCONN (no daemon). */
int gpd_shim_push_invoke(uint64_t corr, uint32_t node, unsigned api, unsigned op,
                         uint64_t ts, unsigned flags);

/** Push an ACTIVITY (a->h is filled in by the shim). */
int gpd_shim_push_activity(gpd_rec_activity_t *a);

/** An operation timed on the host (allocation, free, host
 *  synchronization): push its INVOKE (at a->start) and its ACTIVITY
 *  [a->start, now).  The caller fills api, op, subkind, corr, start and,
 *  where known, bytes, stream and device.  Application thread. */
int gpd_shim_push_host_op(uint32_t node, gpd_rec_activity_t *a);

/** Push a TRACEWIN (gpuprof/record.h): back end `api` closed the tracing
 *  window [start, end) ns, or with final = 1 the run ends (start = end =
 *  now); t0, windows, window_ns are cumulative (the back end's start, the
 *  count and total length of the windows closed so far, and the kernel
 *  launches counted since t0 and inside the windows: 0, 0 when not
 *  counted); duty = 1 when the windows are a duty cycle's.  0, -ENOTCONN (no daemon), -ENOTSUP
 *  (the daemon predates the record) or -ENOSPC.  Any thread. */
int gpd_shim_push_tracewin(unsigned api, int duty, int final, uint64_t t0, uint64_t start,
                           uint64_t end, uint64_t windows, uint64_t window_ns, uint64_t launches,
                           uint64_t launches_in);

/** Push a GRAPHNODE (gpuprof/record.h): CUDA graph node `id` was created
 *  at context `node` (orig 0), or is a copy of node `orig` (node 0).  0,
 *  -ENOTCONN (no daemon), -ENOTSUP (the daemon predates the record),
 *  -EINVAL or -ENOSPC.  Any thread (the one making the node). */
int gpd_shim_push_graphnode(uint64_t id, uint32_t node, uint64_t orig);

/** Same, but when the ring is full wait for the daemon to drain it, in
 *  steps of 100 us, up to `max_wait_ns`; the record counts as dropped only
 *  if it still does not fit.  Only for a vendor's own completion thread
 *  (CUPTI's buffer thread), never on an application thread. */
int gpd_shim_push_activity_wait(gpd_rec_activity_t *a, uint64_t max_wait_ns);
/** The same, but the wait also ends (the record counted as dropped) as
 *  soon as *stop is non-zero (stop may be NULL): a long wait that must
 *  end when the process starts to exit. */
int gpd_shim_push_activity_wait_stop(gpd_rec_activity_t *a, uint64_t max_wait_ns, const atomic_int *stop);

/** Intern a string: returns its id (> 0), pushing a STRING record the
 *  first time this text is seen in the process (kind: gpd_str_t).  Uses a
 *  bounded process-wide table; returns 0 if full or not connected. */
uint32_t gpd_shim_string(const char *text, unsigned kind);

/** Report a back end's state (STATUS record + kept by the shim so that a
 *  late connection re-sends it).  `why` may be NULL. */
void gpd_shim_backend_status(unsigned api, int enabled, int code, const char *why);

/** Hand a GPU binary (cubin) to the daemon once per content hash; the
 *  bytes are copied to a bounded queue and sent by the shim's connection
 *  thread in GpuBinary chunks.  Returns 0, -ENOMEM / -ENOSPC (queue full,
 *  dropped and logged once), -ENOTCONN. */
int gpd_shim_gpubin(const void *data, size_t len, const char *kind);

#endif

/* level0.h - internals of the shim's Level Zero back end.
 *
 *   level0-wrappers.c   the only exported symbol (zeInit: the moment the
 *                       loader is up and a tracer can be created) and the
 *                       constructor that asks the loader for its tracing
 *                       layer (ZE_ENABLE_TRACING_LAYER=1)
 *   level0-api.c        set-up after zeInit: the tracer, the back-end ops
 *                       table and its status
 *   level0-loader.c     the loader's functions (dlsym on the loader that
 *                       served zeInit), the state word, the layer flag:
 *                       below every other file here
 *   level0-tracer.c     the prologue / epilogue callbacks: capture, INVOKE,
 *                       events injected where the application gave none
 *   level0-commands.c   the table of commands in flight and the collector
 *                       thread that turns completed events into ACTIVITYs
 *   level0-translate.c  device timestamps -> gpuprof clock; a completed
 *                       command -> gpd_rec_activity_t
 *
 * Everything the back end calls in the loader goes through the tracing
 * layer too; the layer does not trace calls made inside a callback (its
 * thread-local recursion guard), and the shim's own reentrancy guard
 * (gpd_thread_enter) makes every callback pass through calls the collector
 * thread makes.
 */
#ifndef GPUPROF_SHIM_LEVEL0_H
#define GPUPROF_SHIM_LEVEL0_H

#include <level_zero/layers/zel_tracing_api.h>
#include <level_zero/ze_api.h>
#include <stdatomic.h>
#include <stdint.h>

#include "../internal.h"

/** The loader functions the back end calls (resolved in the loader module
 *  that served the application's zeInit; NULL where missing). */
#define GPD_L0_FNS(X)                                                                                            \
  X(zelTracerCreate, (const zel_tracer_desc_t *, zel_tracer_handle_t *))                                       \
  X(zelTracerDestroy, (zel_tracer_handle_t))                                                                   \
  X(zelTracerSetPrologues, (zel_tracer_handle_t, zel_core_callbacks_t *))                                      \
  X(zelTracerSetEpilogues, (zel_tracer_handle_t, zel_core_callbacks_t *))                                      \
  X(zelTracerSetEnabled, (zel_tracer_handle_t, ze_bool_t))                                                     \
  X(zeDriverGet, (uint32_t *, ze_driver_handle_t *))                                                           \
  X(zeDeviceGet, (ze_driver_handle_t, uint32_t *, ze_device_handle_t *))                                       \
  X(zeDeviceGetProperties, (ze_device_handle_t, ze_device_properties_t *))                                     \
  X(zeDeviceGetGlobalTimestamps, (ze_device_handle_t, uint64_t *, uint64_t *))                                 \
  X(zeEventPoolCreate, (ze_context_handle_t, const ze_event_pool_desc_t *, uint32_t, ze_device_handle_t *,      \
                        ze_event_pool_handle_t *))                                                             \
  X(zeEventPoolDestroy, (ze_event_pool_handle_t))                                                              \
  X(zeEventCreate, (ze_event_pool_handle_t, const ze_event_desc_t *, ze_event_handle_t *))                     \
  X(zeEventDestroy, (ze_event_handle_t))                                                                       \
  X(zeEventHostReset, (ze_event_handle_t))                                                                     \
  X(zeEventQueryStatus, (ze_event_handle_t))                                                                   \
  X(zeEventQueryKernelTimestamp, (ze_event_handle_t, ze_kernel_timestamp_result_t *))                          \
  X(zeMemGetAllocProperties, (ze_context_handle_t, const void *, ze_memory_allocation_properties_t *,          \
                              ze_device_handle_t *))                                                           \
  X(zeMemGetAddressRange, (ze_context_handle_t, const void *, void **, size_t *))                              \
  X(zeModuleGetNativeBinary, (ze_module_handle_t, size_t *, uint8_t *))

typedef struct gpd_l0_api_s {
#define GPD_L0_MEMBER(name, args) ze_result_t(ZE_APICALL *name) args;
  GPD_L0_FNS(GPD_L0_MEMBER)
#undef GPD_L0_MEMBER
} gpd_l0_api_t;

/* ------------------------------------------------------- level0-loader.c */
/** The resolved loader functions (valid once gpd_l0_on_init succeeded). */
extern gpd_l0_api_t gpd_l0;
/** Set by level0-wrappers.c's constructor: 1 when the shim asked for the
 *  tracing layer, -1 when the user turned it off
 *  (ZE_ENABLE_TRACING_LAYER=0), 0 when the back end is off
 *  (GPUPROF_DISABLE, GPUPROF_LEVEL0=0). */
extern int gpd_l0_layer_env;
/** Fill gpd_l0 from the loader module that defines next_init (dladdr,
 *  dlopen RTLD_NOLOAD, dlsym; the reference is dropped again).  0 with
 *  *loader its path and *missing the first function it lacks (NULL: it
 *  has all); -1 when that module cannot be opened.  Set-up only (under
 *  level0-api.c's init lock). */
int gpd_l0_loader_resolve(void *next_init, const char **loader, const char **missing);

/* ---------------------------------------------------------- level0-api.c */

/** Called by the zeInit wrapper after the application's zeInit returned
 *  `res`; `next_init` is the next definition (its module is the loader).
 *  First successful call: resolve, check the driver, create and enable
 *  the tracer, report the status.  Any thread; once per process. */
void gpd_l0_on_init(void *next_init, ze_result_t res);

/** The back end's state (in level0-loader.c; level0-api.c writes it): 0
 *  not started, 1 recording, 2 disabled. */
extern _Atomic int gpd_l0__state;
/** 1 while the tracer is enabled and the back end records.  Any thread;
 *  one load, inline: the tracer and the collector ask it without calling
 *  back into level0-api.c. */
static inline int gpd_l0_recording(void) {
  return atomic_load_explicit(&gpd_l0__state, memory_order_acquire) == 1;
}
/** Disable the back end (logged once, STATUS with `why`). */
void gpd_l0_disable(int code, const char *why);

/* ------------------------------------------------------- level0-tracer.c */
/** Fill the prologue / epilogue tables with the recording callbacks. */
void gpd_l0_tracer_callbacks(zel_core_callbacks_t *pro, zel_core_callbacks_t *epi);

/* ----------------------------------------------------- level0-commands.c */

/** Per-device clock sync: host ns (gpuprof clock) and device ticks read
 *  together, the device's tick rate and kernel timestamp width. */
typedef struct gpd_l0_clock_s {
  uint64_t host_ns;     /* gpuprof clock at the sample (midpoint) */
  uint64_t dev_ticks;   /* device global timestamp at the sample */
  uint64_t hz;          /* device timer ticks per second */
  uint32_t valid_bits;  /* bits of a kernel timestamp (wraps above) */
} gpd_l0_clock_t;

/** One command the back end waits on.  State machine (atomic `state`):
 *  FREE -> APPENDED (regular list, not executed yet) -> ARMED (submitted)
 *  -> BUSY (one thread queries it) -> DONE (regular list: re-armed by the
 *  next execution) or FREE (immediate list). */
enum { L0_FREE = 0, L0_APPENDED, L0_ARMED, L0_BUSY, L0_DONE };

typedef struct gpd_l0_cmd_s {
  _Atomic uint32_t state;
  _Atomic uint32_t next_free; /* free-list link: index + 1 (a stale popper may read it) */
  uint64_t corr;
  uint64_t ts;                /* host ns of the append / last submission */
  uint64_t bytes;
  ze_event_handle_t event;
  ze_command_list_handle_t list;
  ze_context_handle_t ctx;
  uint32_t stream, device, name;
  uint32_t blocks, block_threads;
  uint8_t op, subkind, owned, immediate;
} gpd_l0_cmd_t;

/** A free command slot (zeroed but for its index), or NULL when the table
 *  is full (logged once; the command is then not profiled). */
gpd_l0_cmd_t *gpd_l0_cmd_get(void);
/** Back to the free list; returns its own event to the cache. */
void gpd_l0_cmd_put(gpd_l0_cmd_t *c);
/** Publish a filled slot: ARMED (immediate) or APPENDED (regular list). */
void gpd_l0_cmd_publish(gpd_l0_cmd_t *c);
/** zeCommandQueueExecuteCommandLists: before (reset our events of
 *  commands already completed once) and after (arm them). */
void gpd_l0_cmd_execute(ze_command_list_handle_t *lists, uint32_t n, int after);
/** A list is reset or destroyed: finish and drop its commands. */
void gpd_l0_cmd_list_gone(ze_command_list_handle_t list);
/** The application resets or destroys event `e`: finish the commands that
 *  wait on it first (on this thread). */
void gpd_l0_cmd_event_gone(ze_event_handle_t e);
/** Wake the collector (a host synchronization returned). */
void gpd_l0_cmd_kick(void);
/** An event of our own for context `ctx` (host visible, kernel
 *  timestamps), or NULL. */
ze_event_handle_t gpd_l0_event_get(ze_context_handle_t ctx, ze_device_handle_t dev);
/** Our event back to the cache (reset first).  Takes no lock of the
 *  caller's; any thread. */
void gpd_l0_event_put(ze_context_handle_t ctx, ze_event_handle_t ev);
/** Flush what completed and stop the collector (process exit). */
void gpd_l0_cmd_shutdown(void);
void gpd_l0_cmd_fork_prepare(void);
void gpd_l0_cmd_fork_parent(void);
void gpd_l0_cmd_fork_child(void);

/** Device index (process-local, < 64) of a device handle; the device's
 *  clock sync is taken the first time. */
uint32_t gpd_l0_device_index(ze_device_handle_t d);
/** The device's clock sync, refreshed when older than 1 s; NULL when the
 *  device cannot be read. Collector thread. */
const gpd_l0_clock_t *gpd_l0_device_clock(uint32_t idx);

/* ---------------------------------------------------- level0-translate.c */

/** Device kernel timestamp `ticks` (kernelTimestampValidBits wide) -> ns
 *  on the gpuprof clock: the device's global timestamp and the host clock
 *  were read together (c->dev_ticks, c->host_ns); the distance from that
 *  sample, taken modulo 2^valid_bits and read as signed (a timestamp up to
 *  half the wrap period before or after the sample), is scaled by the
 *  timer rate:  ns = host_ns + (ticks - dev_ticks) * 1e9 / hz.
 *  (As Level Zero's spec says for kernel timestamps; the HPCToolkit GPU
 *  paper, "Measurement of GPU-accelerated applications", aligns device and
 *  host clocks the same way.)  Pure function. */
uint64_t gpd_l0_ticks_to_ns(const gpd_l0_clock_t *c, uint64_t ticks);

/** Fill an ACTIVITY for command `c`: device times from `ts` when given
 *  (global kernel timestamps converted with `clk`), else host times
 *  [c->ts, now] flagged GPD_ACTIVITY_HOST_TIME. */
void gpd_l0_translate(const gpd_l0_cmd_t *c, const ze_kernel_timestamp_result_t *ts, const gpd_l0_clock_t *clk,
                      gpd_rec_activity_t *a);

#endif

/* cupti-internal.h - what the files of the CUPTI back end share.
 *
 * cupti-translate.c and cupti-occupancy.c are pure (no CUPTI calls, no shim
 * calls except through the string-intern hook passed in), so unit tests
 * link them alone; cupti-api.c is the only file that talks to libcupti.
 */
#ifndef GPUPROF_CUPTI_INTERNAL_H
#define GPUPROF_CUPTI_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cupti.h>

#include "gpuprof/record.h"

/** Device properties that theoretical occupancy needs.  All 0 = unknown. */
typedef struct gpd_cupti_devprops_s {
  uint32_t warp_size;          /* threads per warp (32) */
  uint32_t max_threads_per_sm; /* = max warps per SM * warp size */
  uint32_t max_warps_per_sm;
  uint32_t max_blocks_per_sm;
  uint32_t regs_per_sm;        /* 32-bit registers per SM */
  uint32_t max_regs_per_block;
  uint32_t smem_per_sm;        /* bytes of shared memory per SM */
  uint32_t max_smem_per_block; /* bytes, opt-in maximum */
  uint32_t reserved_smem_per_block; /* bytes the system reserves per block */
  uint32_t cc_major, cc_minor;
} gpd_cupti_devprops_t;

/** Theoretical occupancy of one launch, in 1/1000 (GKER:OCC_THR = active
 *  threads per SM / max threads per SM).  `block_threads` threads per block,
 *  `regs` registers per thread, `smem` bytes of shared memory per block
 *  (static + dynamic), `smem_config` the shared memory the SM was
 *  configured with for this launch in bytes (0 = the device maximum).
 *  Returns 0 when the properties are unknown or the launch cannot run.
 *  Pure function, any thread.  Formula and source: cupti-occupancy.c. */
uint32_t gpd_cupti_occupancy_permille(const gpd_cupti_devprops_t *p, uint32_t block_threads,
                                      uint32_t regs, uint32_t smem, uint32_t smem_config);

/** Fill `p` from a CUPTI DEVICE activity record.  Pure. */
void gpd_cupti_devprops_from_record(gpd_cupti_devprops_t *p, const CUpti_ActivityDevice5 *d);

/** Translation context: how the pure translator reaches the outside. */
typedef struct gpd_cupti_xlate_s {
  /** Interns a kernel name (gpd_shim_string in the shim; a stub in tests). */
  uint32_t (*intern)(const char *text, unsigned kind);
  /** Maps a CUPTI correlation id to the one the INVOKE carried (nested
   *  driver call inside a runtime call); NULL = identity. */
  uint32_t (*corr_map)(uint32_t corr);
  /** Device properties by CUPTI device id; NULL or unknown = no occupancy. */
  const gpd_cupti_devprops_t *(*devprops)(uint32_t device);
} gpd_cupti_xlate_t;

/** Map CUPTI enums to gpuprof ones (seed 003 Tables 8.2-8.5).  Unknown
 *  values map to the *_UNK member.  Pure. */
unsigned gpd_cupti_copy_kind(unsigned cupti_copy_kind);
unsigned gpd_cupti_mem_kind(unsigned cupti_memory_kind);
unsigned gpd_cupti_sync_kind(unsigned cupti_sync_type);

/** Translate one CUPTI activity record into `out` (header left for the
 *  shim to fill).  Handles CONCURRENT_KERNEL / KERNEL (CUpti_ActivityKernel10),
 *  MEMCPY (CUpti_ActivityMemcpy6), MEMCPY2 (CUpti_ActivityMemcpyPtoP4),
 *  MEMSET (CUpti_ActivityMemset4), MEMORY2 (CUpti_ActivityMemory4) and
 *  SYNCHRONIZATION (CUpti_ActivitySynchronization2).  Returns 1 when `out`
 *  holds an activity to push, 0 for a record kind that yields none (DEVICE,
 *  ...), -EINVAL on NULL.  Correlation ids become GPD_CORR(GPD_API_CUDA, id).
 *  Pure apart from x->intern; any thread. */
int gpd_cupti_translate(const gpd_cupti_xlate_t *x, const CUpti_Activity *rec,
                        gpd_rec_activity_t *out);

/** Classify a CUDA runtime/driver API function by name (as CUPTI names it,
 *  e.g. "cudaMemcpyAsync_ptsz", "cuLaunchKernelEx"): returns the gpd_op_t
 *  whose INVOKE the call must push, or GPD_OP_NONE.  *multi is set to 1 for
 *  graph launches (one invocation, many activities).  Pure. */
unsigned gpd_cupti_classify(const char *name, int *multi);

/* cupti-mode.c: GPUPROF_CUDA_TRACE and the duty-cycle estimator (pure). */
/** Tracing modes (docs/CUDA.md). */
enum { GPD_CUPTI_FULL = 0, GPD_CUPTI_DETACHED = 1, GPD_CUPTI_DUTY = 2 };
/** What the CUDA back end traces, and when. */
typedef struct gpd_cupti_mode_s {
  unsigned mode;      /* GPD_CUPTI_FULL / _DETACHED / _DUTY */
  unsigned ops;       /* traced operation classes: bit (1 << gpd_op_t) */
  uint32_t window_ms; /* duty: window length, ms */
  uint32_t period_ms; /* duty: window start to window start, ms (> window_ms) */
  unsigned finalize;  /* detach with cuptiFinalize: detached/duty with every class unless "keep" */
} gpd_cupti_mode_t;
/** The unforced flushes that drain a detached window's records
 *  (cupti-control.c, window_drain: one every 1 ms while a launch noted in
 *  the window has no record yet): GPD_CUPTI_DRAIN_TRIES by default, or
 *  GPUPROF_CUDA_DRAIN_TRIES = s (decimal 0..1000; 0 = the forced flush
 *  alone, the drain's cost experiment of docs/PERFORMANCE-CUDA.md).
 *  NULL or "" = the default.  0, or -EINVAL (*tries = the default).
 *  Pure. */
#define GPD_CUPTI_DRAIN_TRIES 20u
int gpd_cupti_drain_parse(const char *s, unsigned *tries);

/** Parse GPUPROF_CUDA_TRACE: comma list of at most one mode (full,
 *  detached, duty:W/P with W ms and P s), operation classes (kernel,
 *  copy, memset, alloc, sync, all, coarse), and "keep" or "finalize":
 *  whether a detach of the detached and duty modes keeps CUPTI loaded or
 *  unloads it with cuptiFinalize (the default; the next attach subscribes
 *  again).  Full tracing never finalizes.  NULL or "" = full, all.
 *  0, or -EINVAL (unknown word, bad numbers, two modes): *m then holds
 *  the defaults.  Pure. */
int gpd_cupti_mode_parse(const char *s, gpd_cupti_mode_t *m);
/** Where the CUDA back end's mode came from (gpd_cupti_mode_resolve). */
enum { GPD_CUPTI_SRC_DEFAULT = 0, GPD_CUPTI_SRC_DAEMON = 1, GPD_CUPTI_SRC_ENV = 2 };
struct gpd_shim_policy_s;
/** The mode the back end runs, by precedence: GPUPROF_CUDA_TRACE (`env`,
 *  non-empty: the user asked; parsed as gpd_cupti_mode_parse, full when
 *  not understood) wins over the daemon's policy (`pol`, non-NULL: mode
 *  full / detached / duty with its window and period, finalize between
 *  windows), which wins over the compiled default (full: no daemon
 *  policy, e.g. no daemon or an older one).  *m is filled, `text` gets
 *  the mode in GPUPROF_CUDA_TRACE syntax.  Returns GPD_CUPTI_SRC_*.
 *  Pure. */
int gpd_cupti_mode_resolve(const char *env, const struct gpd_shim_policy_s *pol, gpd_cupti_mode_t *m,
                           char *text, size_t n);
/** m in GPUPROF_CUDA_TRACE syntax: "full", "detached", "duty:10/3",
 *  "duty:20/0.5" (mode only, no classes).  Pure. */
void gpd_cupti_mode_text(const gpd_cupti_mode_t *m, char *out, size_t n);
/** Duty schedule from t0 (ns): *on = 1 when `now` is inside a window;
 *  returns the next window boundary (ns).  Pure. */
uint64_t gpd_cupti_duty_next(const gpd_cupti_mode_t *m, uint64_t t0, uint64_t now, int *on);
/** The controller's decision at `now` (ns): 1 when tracing must be
 *  attached: inside a duty window of m (from t0), or inside the on-demand
 *  window [from, until) (until 0 = none, UINT64_MAX = until stopped);
 *  *next = the next time the answer can change (UINT64_MAX: never by
 *  itself).  Pure. */
int gpd_cupti_ctl_want(const gpd_cupti_mode_t *m, uint64_t t0, uint64_t from, uint64_t until, uint64_t now,
                       uint64_t *next);

/** Another tool holds CUPTI or the profiling hardware: the name of the
 *  CUPTI result `result` ("CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED",
 *  ...) when it says so, else NULL (a real error).  pcs = 1: a PC-sampling
 *  call (more codes mean busy there).  Codes and the header's words:
 *  cupti-mode.c.  Pure. */
const char *gpd_cupti_busy_name(int result, int pcs);
/** Busy windows back off: the first retry one window (duty) or
 *  GPD_CUPTI_BUSY_FIRST_MS (on-demand) later, doubling with each busy
 *  attempt in a row, at most GPD_CUPTI_BUSY_MAX_MS apart (the daemon's
 *  default period_max_ms; the shim is not told the policy's). */
#define GPD_CUPTI_BUSY_FIRST_MS 1000u
#define GPD_CUPTI_BUSY_MAX_MS 60000u
/** When (ns) to try again after the run-th busy attempt in a row (run >=
 *  1) at `now`: duty mode m (from t0): the start of a later window, 1, 2,
 *  4, ... windows on, at most GPD_CUPTI_BUSY_MAX_MS / period (and at least
 *  1) windows; otherwise now + GPD_CUPTI_BUSY_FIRST_MS doubled run-1
 *  times, at most GPD_CUPTI_BUSY_MAX_MS.  Pure. */
uint64_t gpd_cupti_busy_retry(const gpd_cupti_mode_t *m, uint64_t t0, uint64_t now, unsigned run);

/* cupti-control.c: the tracing controller (detached and duty modes,
 * on-demand windows, detach by cuptiFinalize) and the daemon's Controls
 * and CollectReports for the back end.  cupti-api.c calls it; it reaches
 * the CUPTI layer only through the switch table handed to it at start. */
struct gpd_control_s;
struct gpd_shim_collect_s;
/** What the controller switches in the CUPTI layer (cupti-api.c). */
typedef struct gpd_cupti_switch_s {
  /** Attach (1) or detach (0) tracing: the classified API callbacks and
   *  the activity kinds.  Controller, its lock held.  NULL, or (attach
   *  only) the busy name (gpd_cupti_busy_name) of an enable that another
   *  tool refused: everything enabled is off again. */
  const char *(*trace)(int on);
  /** The kernel-launch API callbacks alone on (1) or off (0): an armed
   *  finalize runs in the next launch's EXIT callback. */
  void (*launch_callbacks)(uint32_t on);
  /** cuptiFinalize: NULL, or CUPTI's error text. */
  const char *(*finalize)(void);
  /** Subscribe again after a finalize: NULL, or CUPTI's error text with
   *  *step naming the call that failed and *busy its busy name
   *  (gpd_cupti_busy_name; NULL: a real error); nothing stays subscribed
   *  after a failure. */
  const char *(*subscribe)(const char **step, const char **busy);
  /** cuptiActivityFlushAll (forced: the buffers being filled too). */
  void (*flush)(int forced);
  /** 1 while the back end runs (started, not disabled). */
  int (*running)(void);
  /** Start a back-end thread (signals blocked, detached, named).  0 or
   *  -errno. */
  int (*thread_start)(void *(*main_fn)(void *), const char *name);
  /** PC sampling (cupti-pcsampling.c), reached through this table so that
   *  it stays below the controller: gpd_cupti_pcs_pending and
   *  gpd_cupti_pcs_control. */
  int (*pcs_pending)(void);
  int (*pcs_control)(int enable, uint32_t duration_ms, uint32_t period, uint32_t flags, uint32_t *targets,
                     char *msg, size_t n);
} gpd_cupti_switch_t;
/** Resolve the mode (GPUPROF_CUDA_TRACE, else the daemon's policy, else
 *  full; PC sampling or SASS counts keep CUPTI loaded) and keep `sw`
 *  (static storage).  Returns the traced operation classes (bit 1 <<
 *  gpd_op_t).  Once, from gpd_cupti_start, before the back end runs. */
unsigned gpd_cupti_control_setup(const gpd_cupti_switch_t *sw);
/** The back end runs: attach for good (full), or start detached with the
 *  controller thread (duty, GPUPROF_CUDA_ATTACH) and arm the finalize.
 *  busy: NULL, or the busy name of the start's subscription, which
 *  another tool refused: the back end then starts unsubscribed (as after
 *  a finalize) and its first window subscribes (gpd_cupti_control_can_wait
 *  said 1). */
void gpd_cupti_control_start(const char *busy);
/** 1 when the mode resolved by gpd_cupti_control_setup has windows that
 *  can wait for another tool to let go of CUPTI (detached, duty), 0 for
 *  full tracing. */
int gpd_cupti_control_can_wait(void);
/** Kinds of busy window (gpd_cupti_control_busy). */
enum { GPD_CUPTI_BUSY_TRACE = 0, GPD_CUPTI_BUSY_PCS = 1, GPD_CUPTI_BUSY_KINDS };
/** A window of `kind` did not start because another tool holds CUPTI or
 *  the profiling hardware (`name`: gpd_cupti_busy_name; `step`: the call):
 *  one busy window counted (CollectReport busy_windows), the first one of
 *  the process logged.  Any thread; a lock of its own, never held long. */
void gpd_cupti_control_busy(unsigned kind, const char *name, const char *step);
/** A window of `kind` started: not busy any more (the count stays). */
void gpd_cupti_control_unbusy(unsigned kind);
/** The process builds a CUDA graph (cupti-graph.c's interposers of
 *  cudaStreamBeginCapture and cudaGraphCreate, before the call): from now
 *  on CUPTI stays loaded between windows (no more finalizes; an armed one
 *  is called off), and a finalized CUPTI is subscribed again here, so
 *  that the graph-node resource callbacks see every node the graph gets,
 *  windows or not.  Once per process (later calls: one relaxed load).
 *  An application thread outside any CUPTI callback; takes g_mode_mu
 *  (waits at most ~1 s for a running finalize).  0, or -EBUSY (another
 *  tool holds CUPTI: the nodes made now are not seen), -EIO (CUPTI could
 *  not be subscribed again), -ENOTSUP (the back end is not running). */
int gpd_cupti_control_graphs(void);
/** An API's EXIT callback while detached (an application thread): run
 *  the armed finalize, once.  Takes no lock. */
void gpd_cupti_control_api_exit(void);
/** 1 while CUPTI is loaded (no finalize running or done): a flush may
 *  call it.  Any thread, lock-free. */
int gpd_cupti_control_loaded(void);
/** Exit, first step: no more windows (the run ends now for the
 *  summary). */
void gpd_cupti_control_fini(void);
/** Exit, after the exit flush (the open window's records are in, so its
 *  launches traced whole are known): the summary (STATUS, TRACEWIN
 *  records of the open window and of the run's end), once. */
void gpd_cupti_control_summary(void);
/** Exit, second step: call off an armed finalize or wait (1 s at most)
 *  for a running one.  1 when CUPTI is still loaded (the exit flush may
 *  run), 0 after a finalize. */
int gpd_cupti_control_quiesce(void);
/** The back end's ops-table hooks (backends.h): a Control (PC sampling,
 *  TRACE, POLICY) and the CollectReport.  Connection thread. */
int gpd_cupti_control_apply(const struct gpd_control_s *c, uint32_t *targets, char *msg, size_t n);
int gpd_cupti_control_collect(struct gpd_shim_collect_s *o);
void gpd_cupti_control_fork_prepare(void);
void gpd_cupti_control_fork_parent(void);
void gpd_cupti_control_fork_child(void);

/* cupti-count.c: counting interposers of libcudart's launch, copy and
 * memset calls (the duty-cycle estimate's launch-based fraction). */
enum { GPD_CUPTI_COUNT_KERNEL = 0, GPD_CUPTI_COUNT_COPY, GPD_CUPTI_COUNT_MEMSET, GPD_CUPTI_NCOUNT };
/** The calls counted since load, per GPD_CUPTI_COUNT_* (kernel launches
 *  of cudaLaunchKernel[ExC][_ptsz] and __cudaLaunchKernel[_ptsz],
 *  cudaMemcpyAsync[_ptsz], cudaMemsetAsync[_ptsz]).  Any thread. */
void gpd_cupti_count_read(uint64_t out[GPD_CUPTI_NCOUNT]);
/** This thread's latest kernel-launch count (0 before its first counted
 *  launch): CUPTI's runtime callbacks tell the counted launches from the
 *  static cudart's inside cuBLAS or cuDNN with it (cupti-api.c). */
extern __thread uint64_t gpd_cupti__tls_counted;
/** Kernel launches timed by the counters between windows: 1 in this
 *  many (inside windows every one). */
#define GPD_CUPTI_TIME_EVERY 64u
/** Bins of the timed launches (gpd_cupti__time_bin). */
enum { GPD_CUPTI_BIN_NONE = -1, GPD_CUPTI_BIN_OUT = 0, GPD_CUPTI_BIN_IN = 1 };
/** Which bin a timed launch starting now goes to: set by the tracing
 *  controller at each window edge (cupti-control.c), read relaxed by the
 *  launching threads (a launch racing an edge lands in either bin). */
extern _Atomic int gpd_cupti__time_bin;
/** The timed kernel launches per bin (GPD_CUPTI_BIN_OUT, _IN) since load:
 *  calls n[] and their wall time ns[] (ns, from before the call into
 *  libcudart to its return, tracing callbacks included).  Any thread. */
void gpd_cupti_count_timed(uint64_t n[2], uint64_t ns[2]);
/** The definition of runtime function `name` that the interposer `self`
 *  called from return address `ret` must call next: the call site's
 *  cached choice (the default next definition, or the caller's own
 *  libcudart when several are mapped; "Call sites" in cupti-count.c),
 *  resolved and cached at the site's first call.  `next` caches the
 *  default next definition (static storage, NULL at first).  NULL when
 *  no definition exists (logged once).  Any thread, lock-free. */
void *gpd_cupti_count_next(_Atomic(void *) *next, const char *name, const void *ret, void *self);

/* cupti-whole.c: the counted kernel launches a window traced whole
 * (INVOKE and kernel activity record), the duty estimate's numerator. */
/** Slots of the table (8 bytes each): launches noted and not yet matched
 *  beyond this many correlation ids back are lost (counted). */
#define GPD_CUPTI_WHOLE_SLOTS 16384u
/** A counted kernel launch's runtime API callback while attached: note
 *  {epoch, correlation id}.  Application threads, lock-free. */
void gpd_cupti_whole_note(uint32_t epoch, uint32_t corr);
/** A complete kernel activity record pushed (epoch of the records, its
 *  correlation id after aliasing): a noted launch is traced whole.
 *  CUPTI's buffer thread or a flushing thread, lock-free. */
void gpd_cupti_whole_record(uint32_t epoch, uint32_t corr);
/** A window opens (the controller, before its attach): every slot free,
 *  the window's counts 0. */
void gpd_cupti_whole_open(void);
/** This window's launches traced whole; *pending (may be NULL): noted
 *  ones whose record has not come (nor was lost).  Any thread. */
uint64_t gpd_cupti_whole_read(uint64_t *pending);

/* cupti-pcsampling.c: GPU PC sampling (GPUPROF_PC_SAMPLING=1), continuous
 * mode, one configuration per context; samples are read and pushed by a
 * thread of its own.  All no-ops unless setup returned 1. */
#include <cuda.h>
/** Read the environment, dlsym the PC Sampling API from libcupti: 1 on
 *  for the process lifetime (GPUPROF_PC_SAMPLING=1), 0 available on
 *  request (a Control) or off (GPUPROF_PC_SAMPLING=0), negative: the API
 *  is missing. */
int gpd_cupti_pcs_setup(void *libcupti);
/** CUPTI context-created callback: remember ctx; enable and configure
 *  sampling when it is on (lifetime, or a window is open). */
void gpd_cupti_pcs_context_created(CUcontext ctx);
/** At every CUDA API entry (application thread, ctx current): when a
 *  window waits for contexts (one relaxed atomic load otherwise), enable
 *  ctx here, under a trylock (never waits). */
void gpd_cupti_pcs_on_api(CUcontext ctx);
/** 1 while a context waits for its next API call to be enabled or
 *  disabled for a PC-sampling window (any thread). */
int gpd_cupti_pcs_pending(void);
/** A Control of kind PC_SAMPLING (connection thread): enable = open the
 *  window (contexts are enabled at their next API call, *targets = known
 *  contexts), 0 = read, disable and push every sampled context now.
 *  0, or GPD_ENOVENDOR with msg. */
int gpd_cupti_pcs_control(int enable, uint32_t duration_ms, uint32_t period, uint32_t flags,
                          uint32_t *targets, char *msg, size_t n);
/** Context destroy starting: read its last samples, disable, push. */
void gpd_cupti_pcs_context_destroy(CUcontext ctx);
/** Module loaded: push a CUBIN record {cubinCrc, content hash}. */
void gpd_cupti_pcs_module_loaded(const void *cubin, size_t size);
/** Exit: read, disable and push every context. */
void gpd_cupti_pcs_fini(void);
/* cupti-sass.c: exact SASS execution counts (CUPTI SASS Metrics API). */
/** dlsym the API; 1 when on for the process lifetime (GPUPROF_SASS_COUNTS=1),
 *  0 available on request or absent, negative: the API is missing. */
int gpd_cupti_sass_setup(void *libcupti);
/** Context created (its thread): start counting when on for the lifetime. */
void gpd_cupti_sass_context_created(CUcontext ctx);
/** Start counting in ctx (a thread where ctx is current); idempotent. */
void gpd_cupti_sass_start(CUcontext ctx);
/** Flush ctx's counts as PCSAMPLE records (stall "sass:inst_executed")
 *  and stop; ctx NULL: every context.  Any thread. */
void gpd_cupti_sass_stop(CUcontext ctx);
/** Module loaded: remember its cuptiGetCubinCrc value (at most 256), so
 *  that a SASS record's 32-bit cubinCrc maps to it.  Any thread. */
void gpd_cupti_sass_module(uint64_t crc);
/** End of a synchronizing API call on an application thread (ctx
 *  current): flush ctx's counts so far, at most once a second; never
 *  waits for the lock. */
void gpd_cupti_sass_on_sync(CUcontext ctx);
/** An API callback of an application thread in ctx: a context created
 *  in lifetime mode is enabled here (its first callback).  Never waits. */
void gpd_cupti_sass_on_api(CUcontext ctx);
/** The kernel activity kind the back end may enable: CONCURRENT_KERNEL,
 *  or with lifetime counts KERNEL (serialized; GPUPROF_SASS_KERNEL_ACTIVITY
 *  =off: none, 0): CUPTI gives zero counts while CONCURRENT_KERNEL is on. */
int gpd_cupti_sass_kernel_kind(void);
/** A module is about to be unloaded: flush every counting context. */
void gpd_cupti_sass_module_unloading(void);
void gpd_cupti_sass_fork_prepare(void);
void gpd_cupti_sass_fork_parent(void);
void gpd_cupti_sass_fork_child(void);

/* cupti-sassdec.c: flushed SASS records -> PCSAMPLE records (pure). */
struct CUpti_SassMetrics_Data;
/** What gpd_cupti_sass_decode did with the records, stage by stage: of
 *  `records`, `noname` had no function name, `zero` a zero count (the rest
 *  `nonzero`, `sum` executions in all); of those, the binary id matched a
 *  loaded module exactly (`crc_exact`), by its low 32 bits (`crc_low32`)
 *  or not at all (`crc_none`, pushed as it is); `nofunc` got no string id
 *  (not pushed); `pushed` were pushed whole, `pushfail` lost a record to a
 *  full ring; `recs_pushed` ring records in all.  `metric_other` counts
 *  values of a metric id other than the configured one (added anyway). */
typedef struct gpd_sass_stats_s {
  size_t records, noname, zero, nonzero, crc_exact, crc_low32, crc_none, nofunc, pushed, pushfail,
      recs_pushed, metric_other;
  uint64_t sum;
} gpd_sass_stats_t;
/** Where decoded counts go.  intern: a name's string id (0 = none);
 *  push: one record, 0 or negative (lost).  stall: the string id of
 *  "sass:inst_executed"; metric: the configured metric id (0 = any);
 *  crcs/ncrcs: cuptiGetCubinCrc of the loaded modules. */
typedef struct gpd_sass_sink_s {
  uint32_t (*intern)(void *ud, const char *text, unsigned kind);
  int (*push)(void *ud, const gpd_rec_pcsample_t *r);
  void *ud;
  uint32_t stall, device;
  uint64_t metric;
  const uint64_t *crcs;
  size_t ncrcs;
} gpd_sass_sink_t;
/** Map a SASS record's cubinCrc to a loaded module's id: 0 equal, 1 the
 *  one module whose low 32 bits equal it, -1 none or ambiguous (*out =
 *  crc).  Pure. */
int gpd_cupti_sass_crc_map(uint32_t crc, const uint64_t *known, size_t n, uint64_t *out);
/** Turn `n` flushed records of `inst` instances each into PCSAMPLE records
 *  (func = the function name's id, pc = pcOffset, samples = the summed
 *  count, split in records of at most 2^32-1) through s->push; fills *st.
 *  Pure apart from the hooks; any thread. */
void gpd_cupti_sass_decode(const gpd_sass_sink_t *s, const struct CUpti_SassMetrics_Data *d,
                           size_t n, size_t inst, gpd_sass_stats_t *st);

/* cupti-graph.c: CUDA graph nodes -> the context that created them. */
/** Counters of gpd_cupti_graph_handle: nodes reported created / cloned
 *  (kernel, memcpy, memset), of another type (not reported), without an
 *  id, without a context (capture gave none), records pushed, records
 *  lost to a full ring (or no daemon). */
enum {
  GPD_CUPTI_GRAPH_CREATED = 0, GPD_CUPTI_GRAPH_CLONED, GPD_CUPTI_GRAPH_OTHER, GPD_CUPTI_GRAPH_NOID,
  GPD_CUPTI_GRAPH_NOCTX, GPD_CUPTI_GRAPH_PUSHED, GPD_CUPTI_GRAPH_PUSHFAIL, GPD_CUPTI_GRAPH_NSTAT
};
/** What the graph handler reaches outside (libcupti and the shim core in
 *  the back end; stand-ins in tests).  node_id: CUPTI's id of a node, 0
 *  or -1; capture: this thread's context (gpd_shim_capture, 0 = none);
 *  push: one GRAPHNODE record, 0 or negative (lost). */
typedef struct gpd_cupti_graph_ops_s {
  int (*node_id)(CUgraphNode n, uint64_t *id);
  uint32_t (*capture)(void);
  int (*push)(const gpd_rec_graphnode_t *r);
} gpd_cupti_graph_ops_t;
/** A graph resource callback (cbid GRAPHNODE_CREATED or _CLONED, data g):
 *  a created kernel / memcpy / memset node gets this thread's context, a
 *  cloned one (or one reported created with an original node) its
 *  original's id, pushed as a GRAPHNODE record.  Returns 1
 *  when a record was pushed, else 0 (another callback, another node type,
 *  no id or context, push failed: counted).  The thread CUPTI calls it
 *  on (the one making the node).  Pure apart from ops. */
int gpd_cupti_graph_handle(const gpd_cupti_graph_ops_t *ops, unsigned cbid, const CUpti_GraphData *g);
/** Copy the counters (GPD_CUPTI_GRAPH_*).  Any thread. */
void gpd_cupti_graph_stats(uint64_t out[GPD_CUPTI_GRAPH_NSTAT]);
/** One "gpuprof-cupti: graph nodes ..." line of the counters on f
 *  (GPUPROF_CUPTI_SELFTEST). */
void gpd_cupti_graph_print(FILE *f);
/** dlsym cuptiGetGraphNodeId: 1 when graph nodes can be attributed. */
int gpd_cupti_graph_setup(void *libcupti);
/** The resource callbacks the back end enables for it. */
#define GPD_CUPTI_GRAPH_NCBID 2
extern const unsigned gpd_cupti_graph_cbids[GPD_CUPTI_GRAPH_NCBID];
/** Resource callback hook (cb_api): 1 when cbid was a graph node's
 *  (handled), 0 for the caller to handle. */
int gpd_cupti_graph_resource(unsigned cbid, const CUpti_ResourceData *rd);

void gpd_cupti_pcs_fork_prepare(void);
void gpd_cupti_pcs_fork_parent(void);
void gpd_cupti_pcs_fork_child(void);

#endif

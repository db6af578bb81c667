/* cupti-api.c - the CUDA back end of the shim: libcupti, loaded lazily.
 *
 * No link-time dependency on CUDA: libcupti is dlopen'd and every function
 * we call comes from a dlsym'd table; CUDA headers give types only.
 *
 * When it starts (gpd_cupti_start, at most once per process):
 *   - from InitializeInjection() (cupti-wrappers.c), which the CUDA driver
 *     calls inside cuInit when CUDA_INJECTION64_PATH names libgpuprof.so:
 *     the official, robust way.  gpd_cupti_init() sets that variable to the
 *     shim's own path when it is unset, so a plain LD_PRELOAD works too;
 *   - from gpd_cupti_init() (shim constructor) when libcuda is already
 *     loaded, or when the process is a CUDA program (libcudart loaded) and
 *     the driver cannot be found: then cuptiSubscribe fails and the back end
 *     reports itself disabled with the reason (no CUDA driver).
 * Every failure disables the back end: one log line, one STATUS record
 * (gpd_shim_backend_status), and the application runs unharmed.
 *
 * Callback API: runtime and driver domains, only the callback ids whose
 * names gpd_cupti_classify() picks (launch, copy, memset, alloc/free, sync).
 * At the outermost such API of a thread: gpd_shim_capture() and an INVOKE
 * with GPD_CORR(GPD_API_CUDA, CUPTI correlation id).  A nested call (the
 * driver call inside a runtime call) pushes nothing; if its correlation id
 * differs, it is aliased to the outer one so that its activity finds the
 * INVOKE.  Resource domain: context created (device properties for
 * occupancy), context destroy (a flush, handed to the shim's flusher
 * thread), module loaded (cubin -> gpubin).
 *
 * Activity API: CONCURRENT_KERNEL, MEMCPY, MEMCPY2, MEMSET, MEMORY2,
 * SYNCHRONIZATION, DEVICE; timestamps from gpd_clock_ns() through
 * cuptiActivityRegisterTimestampCallback; buffers from a bounded pool
 * (GPD_CUPTI_NBUF x GPD_CUPTI_BUFSZ); completed buffers are translated and
 * pushed on the thread CUPTI completes them on (its own ring).
 *
 * PC sampling (GPUPROF_PC_SAMPLING=1) lives in cupti-pcsampling.c.
 *
 * Environment: GPUPROF_CUDA=0 disables the back end; GPUPROF_CUPTI_PATH
 * names libcupti; GPUPROF_CUPTI_SELFTEST=1 prints counters to stderr at
 * exit (GPU validation without the daemon).
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda.h>
#include <cupti.h>

#include "cupti-internal.h"
#include "gpuprof/clock.h"
#include "gpuprof/duty.h"
#include "gpuprof/error.h"
#include "gpuprof/log.h"
#include "shim.h"
#include "backends.h"
#include "internal.h"

/* 1 MiB holds ~4000 kernel records = ~8000 ring slots: half of the
 * daemon's default ring (65536 slots), so one completed buffer fits. */
#define GPD_CUPTI_BUFSZ (1u << 20) /* bytes per activity buffer */
#define GPD_CUPTI_NBUF 64u         /* at most this many outstanding */
/* A full ring on the thread that completes a buffer: wait for the daemon
 * to give slots back, 100 us at a time.  The daemon frees a ring's slots
 * only after it committed what it read, and a commit waits for the
 * symbolization of new call sites: on the H100 (2026-11-24, a 1500-step
 * PyTorch loop) the first lookups in libtorch held a commit 2.5-4.0 s, and
 * a budget of 50 ms per buffer lost 11 000 to 33 000 of the run's 92 000
 * records (none with this policy, same loop).  So CUPTI's own thread
 * (and the back end's flusher and controller threads) waits up to
 * GPD_CUPTI_STALL_NS per record, every record that fits starting the wait
 * afresh: it waits as long as the daemon makes progress.  A record that
 * waited that long in vain marks the daemon stalled: no record waits
 * again until one fits.  CUPTI's buffers (GPD_CUPTI_NBUF) hold what
 * arrives meanwhile; when none is left CUPTI drops records (nobuf,
 * counted).  The exit flush runs on the application's thread: it keeps
 * 50 ms per buffer, and the exit ends every other wait (g_push_stop). */
#define GPD_CUPTI_WAIT_BUDGET_NS 50000000ull /* exit flush: per completed buffer */
#define GPD_CUPTI_STALL_NS 10000000000ull    /* other threads: per record */
static atomic_int g_push_stop;               /* exit begun: waits end */
static atomic_int g_push_stalled;            /* a record waited STALL_NS in vain */
static __thread int tls_exit_flush;          /* this thread runs the exit flush */
#define GPD_CUPTI_MAXDEV 64u
#define GPD_CUPTI_ALIAS_BITS 18u

/* --- dlsym'd libcupti (and two libcuda functions) ------------------- */
#define CUPTI_FUNCS(X)                                                                          \
  X(cuptiSubscribe, CUptiResult, (CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *))        \
  X(cuptiUnsubscribe, CUptiResult, (CUpti_SubscriberHandle))                                    \
  X(cuptiEnableCallback, CUptiResult,                                                           \
    (uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain, CUpti_CallbackId))                 \
  X(cuptiEnableDomain, CUptiResult, (uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain))   \
  X(cuptiGetCallbackName, CUptiResult, (CUpti_CallbackDomain, uint32_t, const char **))         \
  X(cuptiGetResultString, CUptiResult, (CUptiResult, const char **))                            \
  X(cuptiActivityEnable, CUptiResult, (CUpti_ActivityKind))                                     \
  X(cuptiActivityDisable, CUptiResult, (CUpti_ActivityKind))                                    \
  X(cuptiActivityRegisterCallbacks, CUptiResult,                                                \
    (CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc))                      \
  X(cuptiActivityRegisterTimestampCallback, CUptiResult, (CUpti_TimestampCallbackFunc))         \
  X(cuptiActivityGetNextRecord, CUptiResult, (uint8_t *, size_t, CUpti_Activity **))            \
  X(cuptiActivityGetNumDroppedRecords, CUptiResult, (CUcontext, uint32_t, size_t *))            \
  X(cuptiActivityFlushAll, CUptiResult, (uint32_t))                                             \
  X(cuptiGetDeviceId, CUptiResult, (CUcontext, uint32_t *))                                    \
  X(cuptiFinalize, CUptiResult, (void))

static struct {
#define X(n, r, a) r(CUPTIAPI *n) a;
  CUPTI_FUNCS(X)
#undef X
  CUresult (*cuDeviceGetAttribute)(int *, CUdevice_attribute, CUdevice);
} fn;

/* --- state --------------------------------------------------------- */
enum { ST_IDLE = 0, ST_STARTING, ST_RUNNING, ST_DISABLED };
static atomic_int g_state;
static void *g_lib;
static CUpti_SubscriberHandle g_sub;
static uint8_t g_rt_op[CUPTI_RUNTIME_TRACE_CBID_SIZE];  /* op | 0x80 = multi */
static uint8_t g_drv_op[CUPTI_DRIVER_TRACE_CBID_SIZE];
static gpd_cupti_devprops_t g_props[GPD_CUPTI_MAXDEV];
static atomic_int g_props_ok[GPD_CUPTI_MAXDEV];
static _Atomic(uint64_t) *g_alias; /* (driver corr << 32) | outer corr */

/* Buffer pool: at most GPD_CUPTI_NBUF buffers exist; freed ones are kept. */
static pthread_mutex_t g_pool_mu = PTHREAD_MUTEX_INITIALIZER;
static uint8_t *g_pool_free[GPD_CUPTI_NBUF];
static unsigned g_pool_nfree, g_pool_nalloc;

/* Counters (selftest / logs). */
/* c_invoke: written by application threads at every traced call, c_act by
 * CUPTI's buffer thread: lines of their own (no false sharing) */
static _Alignas(64) atomic_ulong c_invoke[GPD_OP_MAX];
static _Alignas(64) atomic_ulong c_act[GPD_OP_MAX];
static atomic_ulong c_copy_bytes[GPD_COPY_MAX];
static _Alignas(64) atomic_ulong c_invoke_rt[GPD_OP_MAX]; /* of which runtime API (GPUPROF_CUPTI_SELFTEST) */
static atomic_ulong c_rt_counted;            /* runtime kernel launches the counters saw (below) */
static __thread uint64_t tls_counted_seen;   /* gpd_cupti__tls_counted at this thread's last such */
static int g_count_check;                    /* GPUPROF_CUPTI_SELFTEST: the counters' check on */
static atomic_ulong c_incomplete; /* records without times (forced flush) */
static atomic_ulong c_alias, c_alias_diff, c_modules, c_ctx, c_dropped, c_nobuf, c_pushfail;

/* The outermost traced API in progress on this thread: its domain (0 =
 * none) and correlation id.  Only a driver API inside a runtime API is
 * nested (a runtime API runs driver APIs; neither domain nests in itself
 * through the callback layer), so an API whose EXIT never came (the
 * application longjmp'd out of it) is replaced by the next runtime call
 * or driver call of its own domain instead of switching capture off. */
static __thread uint32_t tls_outer_dom;
static __thread uint32_t tls_outer;
static __thread uint32_t tls_epoch; /* g_epoch when tls_outer* were set */

/* Tracing mode (GPUPROF_CUDA_TRACE, cupti-mode.c) and the attach state.
 * API callbacks and activity kinds are switched on and off together under
 * g_mode_mu by the controller thread (duty windows, on-demand windows);
 * g_epoch counts attaches, so that an API whose EXIT callback was switched
 * off cannot leave a stale "outer API" on its thread. */
static gpd_cupti_mode_t g_mode;
static pthread_mutex_t g_mode_mu = PTHREAD_MUTEX_INITIALIZER;
/* Where g_mode came from (GPD_CUPTI_SRC_*: the environment, the daemon's
 * policy, the default) and its text; CUPTI kept loaded between windows
 * for good (PC sampling or SASS counts asked for).  g_mode_mu. */
static int g_src;
static char g_mode_text[48];
static int g_keep_loaded;
static pthread_cond_t g_mode_cv = PTHREAD_COND_INITIALIZER;
static atomic_uint g_epoch;
static int g_on;                      /* tracing attached now (g_mode_mu) */
static uint64_t g_t0, g_on_since;     /* controller start, this window's start (ns) */
static uint64_t g_window_ns, g_windows; /* closed windows: total length, count */
static uint64_t g_edge_on_ns, g_edge_off_ns, g_edge_flush_ns; /* switching cost, summed */
static uint64_t g_edge_max_ns;        /* the longest attach, detach or flush */
static uint64_t g_attach_from, g_attach_until; /* on-demand window [from, until) (ns) */
static int g_stopping;                /* exit: no more windows */
static int g_ctl_started;
/* Launches counted by cupti-count.c (kernel launches through libcudart):
 * at the controller's start, at this window's opening, and inside the
 * closed windows (summed): the launch-based window fraction
 * f = g_cnt_in / (count now - g_cnt_t0) (common/duty.c). */
static uint64_t g_cnt_t0, g_cnt_open, g_cnt_in;
static double g_real_on, g_real_off; /* the last window, unix s (the exit summary) */
/* API callbacks attached (g_mode_mu writes; cb_api reads): while the
 * back end only waits for a finalize (below), an API callback pushes
 * nothing. */
static atomic_int g_api_on;
/* Detach by cuptiFinalize ("finalize" in GPUPROF_CUDA_TRACE): after a
 * window's records are flushed the controller arms the kernel-launch
 * callbacks, and the next such API's EXIT callback calls cuptiFinalize
 * on the application's thread (where CUPTI's own attach/detach sample
 * calls it: in the exit callsite of a driver or runtime API); the next
 * attach subscribes again (cupti_subscribe).  FIN_* states, g_fin. */
enum { FIN_NONE = 0, FIN_ARMED, FIN_RUNNING, FIN_DONE, FIN_BROKEN };
static atomic_int g_fin;
static atomic_ulong g_fin_ns, g_fin_n;   /* time in cuptiFinalize, count */
static uint64_t g_resub_ns, g_resub_n;   /* time to subscribe again (g_mode_mu) */

/* Flushes requested at context destroy run on the shim's flusher thread,
 * never on the application's (a flush completes buffers on the calling
 * thread, and completing waits for ring space).  Requests coalesce: at
 * most one flush runs and one more is pending. */
static pthread_mutex_t g_flush_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_flush_cv = PTHREAD_COND_INITIALIZER;
static int g_flush_req;
static atomic_ulong c_flush_req, c_flush_done;

/* --- helpers ------------------------------------------------------- */
static const char *cupti_errstr(CUptiResult r) {
  const char *s = NULL;
  if (fn.cuptiGetResultString && fn.cuptiGetResultString(r, &s) == CUPTI_SUCCESS && s) return s;
  return "CUPTI error";
}

static void cupti_disable(int code, const char *fmt, const char *arg) {
  char why[256];
  snprintf(why, sizeof why, fmt, arg ? arg : "");
  atomic_store(&g_state, ST_DISABLED);
  gpd_shim_backend_status(GPD_API_CUDA, 0, code, why);
  GPD_WARN("CUDA back end disabled: %s", why);
  if (getenv("GPUPROF_CUPTI_SELFTEST"))
    fprintf(stderr, "gpuprof-cupti: disabled: %s\n", why);
}

static void alias_put(uint32_t inner, uint32_t outer) {
  atomic_fetch_add_explicit(&c_alias, 1, memory_order_relaxed);
  if (!g_alias) return;
  atomic_store_explicit(&g_alias[inner & ((1u << GPD_CUPTI_ALIAS_BITS) - 1)],
                        ((uint64_t)inner << 32) | outer, memory_order_release);
}

static uint32_t alias_get(uint32_t c) {
  if (!g_alias) return c;
  uint64_t e = atomic_load_explicit(&g_alias[c & ((1u << GPD_CUPTI_ALIAS_BITS) - 1)],
                                    memory_order_acquire);
  return (uint32_t)(e >> 32) == c && e ? (uint32_t)e : c;
}

static const gpd_cupti_devprops_t *props_get(uint32_t dev) {
  if (dev >= GPD_CUPTI_MAXDEV || !atomic_load_explicit(&g_props_ok[dev], memory_order_acquire))
    return NULL;
  return &g_props[dev];
}

static uint32_t intern_kernel(const char *s, unsigned kind) { return gpd_shim_string(s, kind); }

static const gpd_cupti_xlate_t g_xlate = {intern_kernel, alias_get, props_get};

/* Device properties through libcuda (already loaded: we run inside it). */
static void props_query(uint32_t dev) {
  if (dev >= GPD_CUPTI_MAXDEV || atomic_load(&g_props_ok[dev]) || !fn.cuDeviceGetAttribute) return;
  gpd_cupti_devprops_t p = {0};
  int v;
#define A(field, attr) \
  if (fn.cuDeviceGetAttribute(&v, attr, (CUdevice)dev) == CUDA_SUCCESS) p.field = (uint32_t)v
  A(warp_size, CU_DEVICE_ATTRIBUTE_WARP_SIZE);
  A(max_threads_per_sm, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
  A(max_blocks_per_sm, CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR);
  A(regs_per_sm, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
  A(max_regs_per_block, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
  A(smem_per_sm, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
  A(max_smem_per_block, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  A(reserved_smem_per_block, CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK);
  A(cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  A(cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
#undef A
  if (!p.warp_size || !p.max_threads_per_sm) return;
  p.max_warps_per_sm = p.max_threads_per_sm / p.warp_size;
  g_props[dev] = p;
  atomic_store_explicit(&g_props_ok[dev], 1, memory_order_release);
}

/* --- deferred flush ------------------------------------------------ */
static void *flush_main(void *arg) {
  (void)arg;
  pthread_mutex_lock(&g_flush_mu);
  for (;;) {
    while (!g_flush_req) pthread_cond_wait(&g_flush_cv, &g_flush_mu);
    g_flush_req = 0; /* this flush serves every request made before it */
    pthread_mutex_unlock(&g_flush_mu);
    if (atomic_load(&g_state) == ST_RUNNING && atomic_load(&g_fin) < FIN_RUNNING)
      fn.cuptiActivityFlushAll(0); /* not after a finalize: it would load CUPTI again */
    atomic_fetch_add(&c_flush_done, 1);
    pthread_mutex_lock(&g_flush_mu);
  }
  return NULL;
}

/* Start a thread of the back end (all signals blocked, detached, named).
 * 0 or -errno. */
static int thread_start(void *(*main_fn)(void *), const char *name) {
  pthread_t th;
  pthread_attr_t attr;
  sigset_t all, old;
  int err = pthread_attr_init(&attr);
  if (err) return -err;
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  err = pthread_create(&th, &attr, main_fn, NULL);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  pthread_attr_destroy(&attr);
  if (err) return -err;
  pthread_setname_np(th, name);
  return 0;
}

/* Start the flusher.  0 or -errno; on failure flushes happen only at exit. */
static int flush_start(void) { return thread_start(flush_main, "gpuprof-flush"); }

/* Any thread: ask for a flush and return (the lock is only ever held for
 * a flag update, never across a flush). */
static void flush_request(void) {
  atomic_fetch_add(&c_flush_req, 1);
  pthread_mutex_lock(&g_flush_mu);
  g_flush_req = 1;
  pthread_cond_signal(&g_flush_cv);
  pthread_mutex_unlock(&g_flush_mu);
}

/* --- tracing controller (detached / duty modes) ------------------- */
/* The correlation id the daemon sees: CUPTI's id with the attach epoch in
 * bits 32..55.  A window's records are all delivered (a synchronous flush
 * at detach) before the next window's epoch begins, so an INVOKE and its
 * activity carry the same epoch; a launch caught half by a window's edge
 * (an INVOKE without activity, or a late record) can then never pair with
 * another window's operation, even if CUPTI's ids repeat across windows
 * (seen on the H100: kernels of one context attributed to another in
 * duty mode before this). */
static atomic_uint g_rec_epoch; /* epoch of the records being delivered */
static inline uint64_t trace_corr(uint32_t epoch, uint32_t corr) {
  return GPD_CORR(GPD_API_CUDA, ((uint64_t)(epoch & 0xffffffu) << 32) | corr);
}
static void trace_set(int on);

/* Switch tracing to what the schedule wants at `now`; returns the next
 * time (ns) it must look again (UINT64_MAX: only when signalled); *flush
 * = 1 after a detach (the caller flushes the window's records before
 * anything else, outside the lock).  Controller thread, g_mode_mu held. */
static void edge_add(uint64_t *sum, uint64_t dt) {
  *sum += dt;
  g_edge_max_ns = dt > g_edge_max_ns ? dt : g_edge_max_ns;
}

static double real_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t count_kernels(void) {
  uint64_t c[GPD_CUPTI_NCOUNT];
  gpd_cupti_count_read(c);
  return c[GPD_CUPTI_COUNT_KERNEL];
}

static int fin_reattach(void);

static uint64_t ctl_step(uint64_t now, int *flush) {
  uint64_t next;
  int want = gpd_cupti_ctl_want(&g_mode, g_t0, g_attach_from, g_attach_until, now, &next) && !g_stopping &&
             atomic_load(&g_state) == ST_RUNNING;
  /* A window counts from the end of the calls that open it to the start
   * of those that close it: a launch is recorded whole (INVOKE and
   * activity) only while every kind and callback is on. */
  if (want && !g_on) {
    uint64_t t = gpd_clock_ns();
    int err = fin_reattach();
    if (err == -EAGAIN)
      return now + 1000000; /* a finalize is still running: look again in 1 ms */
    if (err < 0)
      return UINT64_MAX; /* CUPTI could not be subscribed again: stays detached */
    trace_set(1);
    g_on_since = gpd_clock_ns();
    g_cnt_open = count_kernels();
    g_real_on = real_s();
    edge_add(&g_edge_on_ns, g_on_since - t);
  } else if (!want && g_on) {
    uint64_t cnt_off = count_kernels();
    g_cnt_in += cnt_off - g_cnt_open;
    uint64_t off = gpd_clock_ns();
    g_real_off = real_s();
    trace_set(0);
    edge_add(&g_edge_off_ns, gpd_clock_ns() - off);
    g_window_ns += off > g_on_since ? off - g_on_since : 0;
    g_windows++;
    /* the window for the report's duty-cycle estimate (daemon/tracewin.c) */
    (void)gpd_shim_push_tracewin(GPD_API_CUDA, g_mode.mode == GPD_CUPTI_DUTY, 0, g_t0, g_on_since,
                                 off > g_on_since ? off : g_on_since, g_windows, g_window_ns, cnt_off - g_cnt_t0,
                                 g_cnt_in);
    *flush = 1; /* the window's records, before the next window (trace_corr) */
  }
  return next;
}

/* --- detach by cuptiFinalize (g_fin) -------------------------------- */
/* Controller, g_mode_mu held, tracing detached and the window flushed:
 * switch on the kernel-launch callbacks so that the next launch's EXIT
 * finalizes (fin_run). */
static void fin_launch_callbacks(uint32_t on) {
  for (unsigned id = 1; id < CUPTI_RUNTIME_TRACE_CBID_SIZE; id++)
    if ((g_rt_op[id] & 0x7f) == GPD_OP_KERNEL)
      fn.cuptiEnableCallback(on, g_sub, CUPTI_CB_DOMAIN_RUNTIME_API, id);
  for (unsigned id = 1; id < CUPTI_DRIVER_TRACE_CBID_SIZE; id++)
    if ((g_drv_op[id] & 0x7f) == GPD_OP_KERNEL)
      fn.cuptiEnableCallback(on, g_sub, CUPTI_CB_DOMAIN_DRIVER_API, id);
}

static void fin_arm(void) {
  int e = FIN_NONE;
  if (atomic_compare_exchange_strong(&g_fin, &e, FIN_ARMED))
    fin_launch_callbacks(1);
}

/* An API's EXIT callback while detached (an application thread): the
 * armed finalize, once.  No lock: the controller may hold g_mode_mu
 * while it waits for this to end (fin_reattach). */
static void fin_run(void) {
  int e = FIN_ARMED;
  if (!atomic_compare_exchange_strong(&g_fin, &e, FIN_RUNNING))
    return;
  uint64_t t = gpd_clock_ns();
  CUptiResult r = fn.cuptiFinalize();
  atomic_fetch_add(&g_fin_ns, gpd_clock_ns() - t);
  atomic_fetch_add(&g_fin_n, 1);
  if (r != CUPTI_SUCCESS) {
    static atomic_int warned;
    if (!atomic_exchange(&warned, 1))
      GPD_WARN("cuptiFinalize: %s; CUPTI stays loaded between windows", cupti_errstr(r));
  }
  atomic_store(&g_fin, r == CUPTI_SUCCESS ? FIN_DONE : FIN_NONE);
}

/* Wait (bounded, ms) while a finalize runs; returns the state after. */
static int fin_wait(unsigned ms) {
  int s;
  for (unsigned i = 0; i < ms * 10 && (s = atomic_load(&g_fin)) == FIN_RUNNING; i++)
    nanosleep(&(struct timespec){0, 100000}, NULL);
  return atomic_load(&g_fin);
}

static CUptiResult cupti_subscribe(const char **step);

/* Controller, g_mode_mu held, before an attach: an armed finalize is
 * called off (its callbacks are among those the attach enables), a
 * finished one is followed by a new subscription.  0, -EAGAIN (a
 * finalize still runs after 100 ms: try later), -EIO (CUPTI could not
 * be subscribed again: tracing stays detached for good, logged). */
static int fin_reattach(void) {
  int s = FIN_ARMED;
  if (atomic_compare_exchange_strong(&g_fin, &s, FIN_NONE) || s == FIN_NONE)
    return 0;
  if (s == FIN_BROKEN)
    return -EIO;
  if ((s = fin_wait(100)) == FIN_RUNNING)
    return -EAGAIN;
  if (s != FIN_DONE)
    return 0;
  uint64_t t = gpd_clock_ns();
  const char *step = NULL;
  CUptiResult r = cupti_subscribe(&step);
  if (r != CUPTI_SUCCESS) {
    atomic_store(&g_fin, FIN_BROKEN);
    GPD_WARN("CUDA tracing: %s after cuptiFinalize: %s; no more windows", step, cupti_errstr(r));
    return -EIO;
  }
  g_resub_ns += gpd_clock_ns() - t;
  g_resub_n++;
  atomic_store(&g_fin, FIN_NONE);
  return 0;
}

static void *ctl_main(void *arg) {
  (void)arg;
  pthread_mutex_lock(&g_mode_mu);
  while (!g_stopping) {
    uint64_t now = gpd_clock_ns();
    int flush = 0;
    uint64_t next = ctl_step(now, &flush);
    if (flush) {
      /* Outside the lock (a control request must not wait for it); only
       * this thread attaches, so no window opens before it is done. */
      pthread_mutex_unlock(&g_mode_mu);
      /* Forced: the buffer being filled comes back too.  Unforced, the
       * H100 run of 2026-11-24 (duty:20/0.2) delivered 40 % of the
       * observed GPU time a window late, under the next epoch: activities
       * without their INVOKE (<unknown context>). */
      uint64_t t = gpd_clock_ns();
      fn.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
      t = gpd_clock_ns() - t;
      pthread_mutex_lock(&g_mode_mu);
      edge_add(&g_edge_flush_ns, t);
      if (g_mode.finalize && !g_on && !g_stopping)
        fin_arm();
      continue;
    }
    if (next == UINT64_MAX) {
      pthread_cond_wait(&g_mode_cv, &g_mode_mu);
      continue;
    }
    uint64_t d = next > now ? next - now : 0;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t at = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec + d;
    ts.tv_sec = (time_t)(at / 1000000000ull);
    ts.tv_nsec = (long)(at % 1000000000ull);
    pthread_cond_timedwait(&g_mode_cv, &g_mode_mu, &ts);
  }
  pthread_mutex_unlock(&g_mode_mu);
  return NULL;
}

/* Start the controller thread once (all signals blocked, detached); with
 * g_mode_mu held.  0 or -errno. */
static int ctl_start(void) {
  if (g_ctl_started)
    return 0;
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_destroy(&g_mode_cv);
  pthread_cond_init(&g_mode_cv, &ca);
  pthread_condattr_destroy(&ca);
  int err = thread_start(ctl_main, "gpuprof-cuptictl");
  if (err)
    return err;
  g_ctl_started = 1;
  return 0;
}

/* On-demand tracing (the daemon's TRACE control): attach now for
 * duration_ms (0 = until stopped), or detach (enable = 0); the controller
 * thread does it at once.  Any thread but an application's API callback;
 * holds g_mode_mu only briefly.  0 (also under full tracing: nothing to
 * switch), -ENOTSUP (the back end is not running), -errno. */
static int trace_control(int enable, uint32_t duration_ms) {
  if (atomic_load(&g_state) != ST_RUNNING)
    return -ENOTSUP;
  if (g_mode.mode == GPD_CUPTI_FULL)
    return 0; /* already tracing everything */
  pthread_mutex_lock(&g_mode_mu);
  uint64_t now = gpd_clock_ns();
  int err = ctl_start();
  if (!err) {
    g_attach_from = enable ? now : 0;
    g_attach_until = !enable ? 0 : duration_ms ? now + (uint64_t)duration_ms * 1000000ull : UINT64_MAX;
    pthread_cond_signal(&g_mode_cv);
  }
  pthread_mutex_unlock(&g_mode_mu);
  return err;
}

/* The duty-cycle summary: windows, window fraction, elapsed (exit). */
static void duty_summary(char *out, size_t n) {
  uint64_t now = gpd_clock_ns(), win = g_window_ns + (g_on ? now - g_on_since : 0);
  uint64_t el = now - g_t0;
  double f = gpd_duty_fraction(win, el);
  double nw = g_windows ? (double)g_windows : 1.0;
  uint64_t all = count_kernels() - g_cnt_t0, in = g_cnt_in + (g_on ? count_kernels() - g_cnt_open : 0);
  unsigned long fin_n = atomic_load(&g_fin_n);
  int len = snprintf(out, n,
           "CUDA tracing %s: %llu window(s), %.3f s traced of %.3f s (fraction f = %.5f); kernel time and "
           "counts per context estimate = observed / f, relative error ~ sqrt((1-f)/n) for n observed launches; "
           "switching per window: attach %.2f ms, detach %.2f ms, flush %.2f ms (longest %.2f ms); "
           "launches counted (cudart): %llu in windows of %llu (launch fraction f_launch = %.5f)",
           g_mode.mode == GPD_CUPTI_DUTY ? "duty-cycled" : "detached", (unsigned long long)(g_windows + (g_on ? 1 : 0)),
           (double)win / 1e9, (double)el / 1e9, f, (double)g_edge_on_ns / nw / 1e6, (double)g_edge_off_ns / nw / 1e6,
           (double)g_edge_flush_ns / nw / 1e6, (double)g_edge_max_ns / 1e6, (unsigned long long)in,
           (unsigned long long)all, gpd_duty_fraction(in, all));
  if (g_windows && len > 0 && (size_t)len < n)
    len += snprintf(out + len, n - (size_t)len, "; last window unix %.3f-%.3f", g_real_on, g_real_off);
  if ((g_mode.finalize || fin_n) && len > 0 && (size_t)len < n)
    snprintf(out + len, n - (size_t)len, "; finalize: %lu, %.2f ms each, subscribe again %.2f ms each", fin_n,
             fin_n ? (double)atomic_load(&g_fin_ns) / (double)fin_n / 1e6 : 0.0,
             g_resub_n ? (double)g_resub_ns / (double)g_resub_n / 1e6 : 0.0);
}

/* --- callbacks ----------------------------------------------------- */
static void CUPTIAPI cb_api(void *ud, CUpti_CallbackDomain dom, CUpti_CallbackId cbid,
                            const void *data) {
  (void)ud;
  if (dom == CUPTI_CB_DOMAIN_RESOURCE) {
    const CUpti_ResourceData *rd = data;
    if (gpd_cupti_graph_resource(cbid, rd)) /* graph node made or copied (cupti-graph.c) */
      return;
    if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED) {
      uint32_t dev = 0;
      atomic_fetch_add(&c_ctx, 1);
      if (fn.cuptiGetDeviceId(rd->context, &dev) == CUPTI_SUCCESS) props_query(dev);
      gpd_cupti_pcs_context_created(rd->context);
      gpd_cupti_sass_context_created(rd->context);
    } else if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) {
      gpd_cupti_sass_stop(rd->context);
      gpd_cupti_pcs_context_destroy(rd->context);
      flush_request();
    } else if (cbid == CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING) {
      gpd_cupti_sass_module_unloading(); /* its counts, before they go */
    } else if (cbid == CUPTI_CBID_RESOURCE_MODULE_LOADED) {
      const CUpti_ModuleResourceData *m = rd->resourceDescriptor;
      atomic_fetch_add(&c_modules, 1);
      if (m && m->pCubin && m->cubinSize) {
        gpd_shim_gpubin(m->pCubin, m->cubinSize, "cubin");
        gpd_cupti_pcs_module_loaded(m->pCubin, m->cubinSize);
      }
    }
    return;
  }
  if (!atomic_load_explicit(&g_api_on, memory_order_relaxed)) {
    /* detached: only the armed finalize's launch callbacks are on */
    if (((const CUpti_CallbackData *)data)->callbackSite == CUPTI_API_EXIT)
      fin_run();
    return;
  }
  unsigned op;
  if (dom == CUPTI_CB_DOMAIN_RUNTIME_API && cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE)
    op = g_rt_op[cbid];
  else if (dom == CUPTI_CB_DOMAIN_DRIVER_API && cbid < CUPTI_DRIVER_TRACE_CBID_SIZE)
    op = g_drv_op[cbid];
  else
    return;
  if (!op) return;
  const CUpti_CallbackData *cd = data;
  gpd_cupti_pcs_on_api(cd->context); /* a PC sampling window waits for it */
  gpd_cupti_sass_on_api(cd->context); /* SASS counts start at a context's first call */
  uint64_t st0 = GPD_ST_T0();
  uint32_t ep = atomic_load_explicit(&g_epoch, memory_order_relaxed);
  if (__builtin_expect(tls_epoch != ep, 0)) {
    tls_epoch = ep; /* attached since this thread's last traced API */
    tls_outer_dom = 0;
  }
  if (cd->callbackSite == CUPTI_API_EXIT) {
    if (dom == tls_outer_dom && cd->correlationId == tls_outer) tls_outer_dom = 0;
    if ((op & 0x7f) == GPD_OP_SYNC) gpd_cupti_sass_on_sync(cd->context); /* SASS counts so far */
    GPD_ST_ADD(GPD_ST_CB_OTHER, st0);
    return;
  }
  if (tls_outer_dom == CUPTI_CB_DOMAIN_RUNTIME_API && dom == CUPTI_CB_DOMAIN_DRIVER_API) {
    /* nested inside an API we already pushed */
    if (cd->correlationId != tls_outer) {
      atomic_fetch_add_explicit(&c_alias_diff, 1, memory_order_relaxed);
      alias_put(cd->correlationId, tls_outer);
    }
    GPD_ST_ADD(GPD_ST_CB_OTHER, st0);
    return;
  }
  uint64_t ts = gpd_clock_ns();
  tls_outer_dom = (uint32_t)dom;
  tls_outer = cd->correlationId;
  unsigned o = op & 0x7f;
  /* an OpenMP offload runtime's call: the construct's context from OMPT,
   * which then leaves this operation to us (shim/ompt/ompt-target.c) */
  uint32_t node = gpd_ompt_claim(o);
  if (!node)
    node = gpd_shim_capture();
  atomic_fetch_add_explicit(&c_invoke[o], 1, memory_order_relaxed);
  if (__builtin_expect(g_count_check, 0) && dom == CUPTI_CB_DOMAIN_RUNTIME_API) {
    atomic_fetch_add_explicit(&c_invoke_rt[o], 1, memory_order_relaxed);
    /* the first runtime launch callback after a counted call on this
     * thread is that call's (the static cudart inside cuBLAS or cuDNN
     * also calls back, but through no counted call): full tracing then
     * checks the counters exactly (selftest line) */
    if (o == GPD_OP_KERNEL && gpd_cupti__tls_counted != tls_counted_seen) {
      tls_counted_seen = gpd_cupti__tls_counted;
      atomic_fetch_add_explicit(&c_rt_counted, 1, memory_order_relaxed);
    }
  }
  uint64_t st1 = GPD_ST_IN_T0();
  gpd_shim_push_invoke(trace_corr(ep, cd->correlationId), node, GPD_API_CUDA, o, ts,
                       (op & 0x80) ? GPD_INVOKE_MULTI : 0);
  GPD_ST_IN_ADD(GPD_ST_PUSH_INVOKE, st1);
  GPD_ST_ADD(GPD_ST_CB_API, st0);
}

static void CUPTIAPI cb_buf_requested(uint8_t **buf, size_t *size, size_t *maxrec) {
  uint8_t *b = NULL;
  pthread_mutex_lock(&g_pool_mu);
  if (g_pool_nfree)
    b = g_pool_free[--g_pool_nfree];
  else if (g_pool_nalloc < GPD_CUPTI_NBUF && (b = aligned_alloc(8, GPD_CUPTI_BUFSZ)))
    g_pool_nalloc++;
  pthread_mutex_unlock(&g_pool_mu);
  if (!b) atomic_fetch_add(&c_nobuf, 1); /* CUPTI drops records; counted */
  *buf = b;
  *size = b ? GPD_CUPTI_BUFSZ : 0;
  *maxrec = 0;
}

static void CUPTIAPI cb_buf_completed(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size,
                                      size_t valid) {
  CUpti_Activity *rec = NULL;
  uint64_t budget = GPD_CUPTI_WAIT_BUDGET_NS;
  uint64_t st0 = GPD_ST_T0();
  (void)size;
  while (valid && fn.cuptiActivityGetNextRecord(buf, valid, &rec) == CUPTI_SUCCESS) {
    if (rec->kind == CUPTI_ACTIVITY_KIND_DEVICE) {
      const CUpti_ActivityDevice5 *d = (const CUpti_ActivityDevice5 *)rec;
      if (d->id < GPD_CUPTI_MAXDEV && !atomic_load(&g_props_ok[d->id])) {
        gpd_cupti_devprops_from_record(&g_props[d->id], d);
        atomic_store_explicit(&g_props_ok[d->id], 1, memory_order_release);
      }
      continue;
    }
    gpd_rec_activity_t a;
    memset(&a, 0, sizeof a);
    if (gpd_cupti_translate(&g_xlate, rec, &a) != 1) continue;
    if ((a.op == GPD_OP_KERNEL || a.op == GPD_OP_COPY || a.op == GPD_OP_MEMSET) && (a.start == 0 || a.end < a.start)) {
      /* a forced flush (a duty window's end) returns the records of work
       * still running with unknown times: counted, not pushed */
      atomic_fetch_add_explicit(&c_incomplete, 1, memory_order_relaxed);
      continue;
    }
    a.corr = trace_corr(atomic_load_explicit(&g_rec_epoch, memory_order_relaxed), (uint32_t)a.corr);
    atomic_fetch_add_explicit(&c_act[a.op], 1, memory_order_relaxed);
    if (a.op == GPD_OP_COPY && a.subkind < GPD_COPY_MAX)
      atomic_fetch_add_explicit(&c_copy_bytes[a.subkind], a.bytes, memory_order_relaxed);
    uint64_t t0 = gpd_clock_ns();
    int stalled = atomic_load_explicit(&g_push_stalled, memory_order_relaxed);
    uint64_t wait = tls_exit_flush ? budget : stalled ? 0 : GPD_CUPTI_STALL_NS;
    int rc = gpd_shim_push_activity_wait_stop(&a, wait, tls_exit_flush ? NULL : &g_push_stop);
    uint64_t waited = gpd_clock_ns() - t0;
    if (__builtin_expect(gpd_shim__stats_on, 0)) {
      atomic_fetch_add_explicit(&gpd_shim__stats[GPD_ST_ACT_PUSH].n, 1, memory_order_relaxed);
      atomic_fetch_add_explicit(&gpd_shim__stats[GPD_ST_ACT_PUSH].ns, waited, memory_order_relaxed);
    }
    budget = waited < budget ? budget - waited : 0;
    if (rc < 0) {
      atomic_fetch_add(&c_pushfail, 1);
      if (rc == -ENOSPC && wait && !tls_exit_flush && !atomic_load(&g_push_stop))
        atomic_store(&g_push_stalled, 1);
    } else if (stalled) {
      atomic_store(&g_push_stalled, 0);
    }
  }
  size_t dropped = 0;
  if (fn.cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped)
    atomic_fetch_add(&c_dropped, dropped);
  GPD_ST_ADD(GPD_ST_BUF_DONE, st0);
  if (!buf) return;
  pthread_mutex_lock(&g_pool_mu);
  if (g_pool_nfree < GPD_CUPTI_NBUF)
    g_pool_free[g_pool_nfree++] = buf;
  else
    free(buf);
  pthread_mutex_unlock(&g_pool_mu);
}

static uint64_t CUPTIAPI cb_timestamp(void) {
  if (__builtin_expect(gpd_shim__stats_on, 0))
    atomic_fetch_add_explicit(&gpd_shim__stats[GPD_ST_TS].n, 1, memory_order_relaxed);
  return gpd_clock_ns();
}

/* --- start / stop -------------------------------------------------- */
static void *cupti_dlopen(void) {
  static const char *const names[] = {
      "libcupti.so.13", "libcupti.so", "/usr/local/cuda/lib64/libcupti.so.13",
      "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13"};
  const char *env = getenv("GPUPROF_CUPTI_PATH");
  void *h = NULL;
  if (env && *env && (h = dlopen(env, RTLD_NOW | RTLD_LOCAL))) return h;
  for (size_t i = 0; !h && i < sizeof names / sizeof *names; i++)
    h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
  return h;
}

/* Which operation classes are traced: bit (1 << gpd_op_t), from
 * GPUPROF_CUDA_TRACE's class words (cupti-mode.c; default all; "coarse"
 * = kernel,copy,memset: no allocation or synchronization callbacks and no
 * MEMORY2 / SYNCHRONIZATION activity, the parts of CUPTI that cost most
 * on allocator- and sync-heavy programs). */
static unsigned g_trace = ~0u;

static void cupti_classify_domain(CUpti_CallbackDomain dom, uint8_t *tab, unsigned n) {
  for (unsigned id = 1; id < n; id++) {
    const char *name = NULL;
    if (fn.cuptiGetCallbackName(dom, id, &name) != CUPTI_SUCCESS || !name) continue;
    int multi = 0;
    unsigned op = gpd_cupti_classify(name, &multi);
    if (op == GPD_OP_NONE || !(g_trace & (1u << op))) continue;
    tab[id] = (uint8_t)(op | (multi ? 0x80 : 0));
  }
}

static const struct {
  unsigned op;
  CUpti_ActivityKind kind;
} g_kinds[] = {{GPD_OP_KERNEL, CUPTI_ACTIVITY_KIND_DEVICE},  {GPD_OP_KERNEL, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL},
               {GPD_OP_COPY, CUPTI_ACTIVITY_KIND_MEMCPY},    {GPD_OP_COPY, CUPTI_ACTIVITY_KIND_MEMCPY2},
               {GPD_OP_MEMSET, CUPTI_ACTIVITY_KIND_MEMSET},  {GPD_OP_ALLOC, CUPTI_ACTIVITY_KIND_MEMORY2},
               {GPD_OP_SYNC, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION}};

/* Attach (on = 1) or detach tracing: the classified API callbacks and the
 * activity kinds.  Caller holds g_mode_mu (or is the starting thread).
 * Detaching asks the flusher for the records of the window. */
static void trace_set(int on) {
  static const struct {
    CUpti_CallbackDomain dom;
    const uint8_t *tab;
    unsigned n;
  } doms[] = {{CUPTI_CB_DOMAIN_RUNTIME_API, g_rt_op, CUPTI_RUNTIME_TRACE_CBID_SIZE},
              {CUPTI_CB_DOMAIN_DRIVER_API, g_drv_op, CUPTI_DRIVER_TRACE_CBID_SIZE}};
  CUptiResult r;
  /* Callbacks on before the activity kinds, and off after them: a launch
   * at a window's edge then has an INVOKE without activity (not counted
   * anywhere), never an activity without INVOKE (<unknown context>). */
  if (on) {
    uint32_t e = atomic_fetch_add_explicit(&g_epoch, 1, memory_order_relaxed) + 1;
    atomic_store_explicit(&g_rec_epoch, e, memory_order_relaxed);
  }
  for (int pass = 0; pass < 2; pass++) {
    if (pass == (on ? 0 : 1))
      atomic_store(&g_api_on, on);
    if (pass == (on ? 0 : 1))
      for (size_t d = 0; d < sizeof doms / sizeof *doms; d++)
        for (unsigned id = 1; id < doms[d].n; id++)
          if (doms[d].tab[id])
            fn.cuptiEnableCallback(on ? 1 : 0, g_sub, doms[d].dom, id);
    if (pass != (on ? 1 : 0))
      continue;
    for (size_t i = 0; i < sizeof g_kinds / sizeof *g_kinds; i++) {
      if (!(g_trace & (1u << g_kinds[i].op)) || (!on && g_kinds[i].kind == CUPTI_ACTIVITY_KIND_DEVICE))
        continue; /* DEVICE records come once; leaving it on costs nothing */
      CUpti_ActivityKind kind = g_kinds[i].kind;
      if (kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL &&
          (kind = (CUpti_ActivityKind)gpd_cupti_sass_kernel_kind()) == 0)
        continue; /* SASS counts on: no kernel records (cupti-sass.c) */
      r = on ? fn.cuptiActivityEnable(kind) : fn.cuptiActivityDisable(kind);
      if (r != CUPTI_SUCCESS)
        GPD_WARN("cuptiActivity%s(%d): %s", on ? "Enable" : "Disable", (int)kind, cupti_errstr(r));
    }
  }
  g_on = on;
}

static void cupti_atexit(void) { gpd_cupti_fini(); }

/* Subscribe cb_api with the resource callbacks (context, module), the
 * timestamp callback and the activity buffer callbacks: at start, and
 * again after a finalize.  CUPTI's result; *step names the call that
 * failed (unsubscribed again if it was not the subscription). */
static CUptiResult cupti_subscribe(const char **step) {
  static const CUpti_CallbackId res[] = {CUPTI_CBID_RESOURCE_CONTEXT_CREATED, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING,
                                         CUPTI_CBID_RESOURCE_MODULE_LOADED, CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING};
  CUptiResult r;
  *step = "cuptiSubscribe";
  if ((r = fn.cuptiSubscribe(&g_sub, cb_api, NULL)) != CUPTI_SUCCESS)
    return r;
  for (size_t i = 0; i < sizeof res / sizeof *res; i++)
    fn.cuptiEnableCallback(1, g_sub, CUPTI_CB_DOMAIN_RESOURCE, res[i]);
  for (size_t i = 0; i < GPD_CUPTI_GRAPH_NCBID; i++)
    fn.cuptiEnableCallback(1, g_sub, CUPTI_CB_DOMAIN_RESOURCE, gpd_cupti_graph_cbids[i]);
  fn.cuptiActivityRegisterTimestampCallback(cb_timestamp);
  *step = "cuptiActivityRegisterCallbacks";
  if ((r = fn.cuptiActivityRegisterCallbacks(cb_buf_requested, cb_buf_completed)) != CUPTI_SUCCESS)
    fn.cuptiUnsubscribe(g_sub);
  return r;
}

/** Start the CUDA back end once: load libcupti, subscribe, enable.
 *  Returns 0 (running or already started), or a negative code after
 *  disabling the back end.  Any thread; idempotent. */
int gpd_cupti_start(void) {
  int expect = ST_IDLE;
  if (!atomic_compare_exchange_strong(&g_state, &expect, ST_STARTING))
    return expect == ST_DISABLED ? GPD_ENOVENDOR : 0;
  CUptiResult r;
  g_lib = cupti_dlopen();
  if (!g_lib) {
    cupti_disable(GPD_ENOVENDOR, "libcupti.so.13 not found: %s", dlerror());
    return GPD_ENOVENDOR;
  }
#define X(n, rt, a)                                                   \
  if (!(*(void **)&fn.n = dlsym(g_lib, #n))) {                        \
    cupti_disable(GPD_ENOVENDOR, "libcupti lacks %s", #n);            \
    return GPD_ENOVENDOR;                                             \
  }
  CUPTI_FUNCS(X)
#undef X
  void *cu = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (cu) *(void **)&fn.cuDeviceGetAttribute = dlsym(cu, "cuDeviceGetAttribute");
  g_count_check = getenv("GPUPROF_CUPTI_SELFTEST") != NULL; /* runtime launches vs counters */
  gpd_cupti_pcs_setup(g_lib); /* GPUPROF_PC_SAMPLING=1 (cupti-pcsampling.c) */
  gpd_cupti_sass_setup(g_lib); /* GPUPROF_SASS_COUNTS=1 (cupti-sass.c) */
  gpd_cupti_graph_setup(g_lib); /* graph nodes' contexts (cupti-graph.c) */
  const char *step = NULL;
  if ((r = cupti_subscribe(&step)) != CUPTI_SUCCESS) {
    char why[200];
    snprintf(why, sizeof why, "%s: %s (%d)%s", step, cupti_errstr(r), (int)r,
             r == CUPTI_ERROR_UNKNOWN || r == CUPTI_ERROR_NOT_INITIALIZED
                 ? " (no CUDA driver or GPU?)"
             : r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED ? " (another CUDA profiler?)"
                                                                   : "");
    cupti_disable((int)r, "%s", why);
    return GPD_EVENDOR;
  }
  g_alias = calloc(1u << GPD_CUPTI_ALIAS_BITS, sizeof *g_alias);
  /* GPUPROF_CUDA_TRACE wins over the daemon's policy, which wins over
   * full tracing (no daemon policy) */
  const char *tr = getenv("GPUPROF_CUDA_TRACE");
  gpd_shim_policy_t pol;
  gpd_cupti_mode_t chk;
  if (tr && *tr && gpd_cupti_mode_parse(tr, &chk) != 0)
    GPD_WARN("GPUPROF_CUDA_TRACE=%s not understood (full, detached, duty:W_MS/P_S, and kernel,copy,memset,"
             "alloc,sync): full tracing", tr);
  g_src = gpd_cupti_mode_resolve(tr, gpd_shim_policy(&pol) ? &pol : NULL, &g_mode, g_mode_text, sizeof g_mode_text);
  g_trace = g_mode.ops;
  const char *pcs = getenv("GPUPROF_PC_SAMPLING"), *sass = getenv("GPUPROF_SASS_COUNTS");
  g_keep_loaded = (pcs && *pcs && *pcs != '0') || (sass && *sass && *sass != '0');
  if (g_mode.finalize && g_keep_loaded) {
    GPD_WARN("CUDA tracing: finalize ignored with PC sampling or SASS counts (they keep CUPTI loaded)");
    g_mode.finalize = 0;
  }
  if (g_mode.mode == GPD_CUPTI_FULL)
    g_mode.finalize = 0;
  gpd_shim_vendor_module("libcupti.so");
  gpd_shim_vendor_module("libcuda.so");
  gpd_shim_vendor_module("libcudart.so");
  cupti_classify_domain(CUPTI_CB_DOMAIN_RUNTIME_API, g_rt_op, CUPTI_RUNTIME_TRACE_CBID_SIZE);
  cupti_classify_domain(CUPTI_CB_DOMAIN_DRIVER_API, g_drv_op, CUPTI_DRIVER_TRACE_CBID_SIZE);
  atomic_store(&g_state, ST_RUNNING);
  if (flush_start() < 0) GPD_WARN("CUDA back end: no flusher thread; buffers flushed at exit only");
  pthread_mutex_lock(&g_mode_mu);
  g_t0 = gpd_clock_ns();
  g_cnt_t0 = count_kernels();
  if (g_mode.mode == GPD_CUPTI_FULL) {
    trace_set(1);
  } else {
    /* Test hook for the GPU validation of on-demand attach without a
     * daemon: GPUPROF_CUDA_ATTACH=AFTER_MS:DURATION_MS. */
    const char *at = getenv("GPUPROF_CUDA_ATTACH");
    unsigned long a = 0, d = 0;
    if (at && sscanf(at, "%lu:%lu", &a, &d) == 2 && d) {
      g_attach_from = g_t0 + a * 1000000ull;
      g_attach_until = g_attach_from + d * 1000000ull;
    }
    if ((g_mode.mode == GPD_CUPTI_DUTY || g_attach_until) && ctl_start() < 0)
      GPD_WARN("CUDA back end: no tracing controller thread; tracing stays detached");
    else if (g_mode.mode == GPD_CUPTI_DUTY)
      GPD_INFO("CUDA tracing duty-cycled: %u ms every %u ms", g_mode.window_ms, g_mode.period_ms);
    /* Detached from the start, so finalized from the first launch on as
     * between two windows: CUPTI left subscribed with only its resource
     * and timestamp callbacks cost 1.015x-1.035x bare per step on the
     * H100's PyTorch loop, finalized 1.009x (2026-11-24, interleaved
     * turns of tests/cuda/torch-turns.py, docs/PERFORMANCE-CUDA.md).  A
     * window (duty, on-demand) calls it off or subscribes again
     * (fin_reattach). */
    if (g_mode.finalize)
      fin_arm();
  }
  pthread_mutex_unlock(&g_mode_mu);
  gpd_shim_backend_status(GPD_API_CUDA, 1, 0, NULL);
  atexit(cupti_atexit);
  GPD_INFO("CUDA back end on (CUPTI)");
  return 0;
}

/* Is a module whose path contains `sub` mapped in this process? */
struct find_ctx { const char *sub; int found; };
static int find_cb(struct dl_phdr_info *i, size_t n, void *arg) {
  struct find_ctx *f = arg;
  (void)n;
  if (i->dlpi_name && strstr(i->dlpi_name, f->sub)) f->found = 1;
  return f->found;
}
static int module_loaded(const char *sub) {
  struct find_ctx f = {sub, 0};
  dl_iterate_phdr(find_cb, &f);
  return f.found;
}

int gpd_cupti_init(void) {
  const char *e = getenv("GPUPROF_CUDA");
  if (e && *e == '0') return 0;
  /* Make the driver call InitializeInjection() in this library at cuInit. */
  if (!getenv("CUDA_INJECTION64_PATH")) {
    Dl_info di;
    if (dladdr((void *)gpd_cupti_init, &di) && di.dli_fname && di.dli_fname[0] == '/')
      setenv("CUDA_INJECTION64_PATH", di.dli_fname, 0);
  }
  if (module_loaded("libcuda.so")) return gpd_cupti_start();
  if (module_loaded("libcudart.so") || (e && *e == '1')) {
    /* A CUDA program before its first CUDA call.  With a driver the
     * injection starts us at cuInit; without one nothing ever would, so
     * say why here. */
    void *cu = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (!cu) {
      cupti_disable(GPD_ENOVENDOR, "libcuda.so.1 not loadable (no CUDA driver): %s", dlerror());
      return GPD_ENOVENDOR;
    }
    dlclose(cu);
  }
  return 0;
}

void gpd_cupti_fini(void) {
  gpd_cupti_sass_stop(NULL);
  if (g_mode.mode != GPD_CUPTI_FULL && atomic_load(&g_state) == ST_RUNNING) {
    char why[512];
    pthread_mutex_lock(&g_mode_mu);
    int first = !g_stopping;
    g_stopping = 1;
    duty_summary(why, sizeof why);
    if (first) {
      /* the open window (its records are flushed below) and the run's end:
       * the daemon's summary takes the record with the most windows */
      uint64_t now = gpd_clock_ns(), win = g_window_ns + (g_on && now > g_on_since ? now - g_on_since : 0);
      uint64_t cnt = count_kernels(), all = cnt - g_cnt_t0, in = g_cnt_in + (g_on ? cnt - g_cnt_open : 0);
      int duty = g_mode.mode == GPD_CUPTI_DUTY;
      if (g_on)
        (void)gpd_shim_push_tracewin(GPD_API_CUDA, duty, 0, g_t0, g_on_since, now > g_on_since ? now : g_on_since,
                                     g_windows + 1, win, all, in);
      (void)gpd_shim_push_tracewin(GPD_API_CUDA, duty, 1, g_t0, now, now, g_windows + (g_on ? 1 : 0), win, all, in);
    }
    pthread_cond_signal(&g_mode_cv);
    pthread_mutex_unlock(&g_mode_mu);
    if (first) {
      gpd_shim_backend_status(GPD_API_CUDA, 1, 0, why); /* the report shows f */
      if (getenv("GPUPROF_CUPTI_SELFTEST") || gpd_shim__stats_on)
        fprintf(stderr, "gpuprof-cupti: %s\n", why);
    }
  }
  gpd_cupti_pcs_fini();
  /* exit: CUPTI's thread stops waiting for ring space; this thread's
   * completions wait at most 50 ms per buffer */
  atomic_store(&g_push_stop, 1);
  tls_exit_flush = 1;
  int fin = FIN_ARMED; /* an armed finalize is called off; a running one ends first */
  if (!atomic_compare_exchange_strong(&g_fin, &fin, FIN_NONE))
    fin = fin_wait(1000);
  /* after a finalize nothing is left to flush (and a flush would load CUPTI again) */
  if (atomic_load(&g_state) == ST_RUNNING && (fin == FIN_ARMED || fin == FIN_NONE))
    fn.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  tls_exit_flush = 0;
  static atomic_int printed;
  if (getenv("GPUPROF_CUPTI_SELFTEST") && !atomic_exchange(&printed, 1)) {
    fprintf(stderr,
            "gpuprof-cupti: state=%d invokes kernel=%lu copy=%lu memset=%lu alloc=%lu free=%lu "
            "sync=%lu | activities kernel=%lu copy=%lu memset=%lu alloc=%lu free=%lu sync=%lu | "
            "bytes H2D=%lu D2H=%lu D2D=%lu P2P=%lu | nested=%lu aliased=%lu ctx=%lu modules=%lu "
            "dropped=%lu nobuf=%lu pushfail=%lu flushreq=%lu flushed=%lu\n",
            atomic_load(&g_state), c_invoke[1], c_invoke[2], c_invoke[3], c_invoke[4],
            c_invoke[5], c_invoke[6], c_act[1], c_act[2], c_act[3], c_act[4], c_act[5], c_act[6],
            c_copy_bytes[GPD_COPY_H2D], c_copy_bytes[GPD_COPY_D2H], c_copy_bytes[GPD_COPY_D2D],
            c_copy_bytes[GPD_COPY_P2P], c_alias, c_alias_diff, c_ctx, c_modules, c_dropped,
            c_nobuf, c_pushfail, c_flush_req, c_flush_done);
    uint64_t cnt[GPD_CUPTI_NCOUNT];
    gpd_cupti_count_read(cnt);
    fprintf(stderr,
            "gpuprof-cupti: incomplete records (forced flush, not pushed) %lu | runtime-API invokes kernel=%lu (of which after a counted call: %lu) copy=%lu memset=%lu | "
            "cudart calls counted (since load) kernel=%llu copy=%llu memset=%llu\n",
            c_incomplete, c_invoke_rt[1], c_rt_counted, c_invoke_rt[2], c_invoke_rt[3], (unsigned long long)cnt[GPD_CUPTI_COUNT_KERNEL],
            (unsigned long long)cnt[GPD_CUPTI_COUNT_COPY], (unsigned long long)cnt[GPD_CUPTI_COUNT_MEMSET]);
    gpd_cupti_graph_print(stderr);
  }
}

/* --- ops table ------------------------------------------------------ */
#include "backends.h"

static void cupti_fork_prepare(void) {
  pthread_mutex_lock(&g_mode_mu);
  pthread_mutex_lock(&g_pool_mu);
  pthread_mutex_lock(&g_flush_mu);
  gpd_cupti_pcs_fork_prepare();
  gpd_cupti_sass_fork_prepare();
}
static void cupti_fork_parent(void) {
  gpd_cupti_sass_fork_parent();
  gpd_cupti_pcs_fork_parent();
  pthread_mutex_unlock(&g_flush_mu);
  pthread_mutex_unlock(&g_pool_mu);
  pthread_mutex_unlock(&g_mode_mu);
}
/* CUDA is not usable in a fork child; only the locks need to be sane.  The
 * flusher thread is gone: its condition variable may record it as a
 * waiter, so it is made fresh. */
static void cupti_fork_child(void) {
  gpd_cupti_sass_fork_child();
  gpd_cupti_pcs_fork_child();
  pthread_mutex_unlock(&g_flush_mu);
  pthread_mutex_unlock(&g_pool_mu);
  pthread_mutex_unlock(&g_mode_mu);
  g_flush_cv = (pthread_cond_t)PTHREAD_COND_INITIALIZER;
  g_mode_cv = (pthread_cond_t)PTHREAD_COND_INITIALIZER;
  g_ctl_started = 0; /* the controller thread is gone too */
}
/* A new policy from the daemon (CONTROL_POLICY, connection thread): the
 * mode, window and period change live unless GPUPROF_CUDA_TRACE chose
 * them.  Full -> duty/detached: the controller detaches at its next step
 * and the duty schedule (and its window fraction) starts now; -> full:
 * the controller attaches for good.  The operation classes stay those of
 * the start (the callback tables are built once). */
static int policy_apply(const gpd_shim_policy_t *pol, uint32_t *targets, char *msg, size_t n) {
  if (!pol)
    return -EINVAL;
  pthread_mutex_lock(&g_mode_mu);
  if (g_src == GPD_CUPTI_SRC_ENV) {
    snprintf(msg, n, "GPUPROF_CUDA_TRACE=%s set: the environment wins", g_mode_text);
    pthread_mutex_unlock(&g_mode_mu);
    return 0;
  }
  gpd_cupti_mode_t nm;
  char text[sizeof g_mode_text];
  g_src = gpd_cupti_mode_resolve(NULL, pol, &nm, text, sizeof text);
  int was_full = g_mode.mode == GPD_CUPTI_FULL;
  int err = 0;
  if (nm.mode != GPD_CUPTI_FULL && was_full) {
    uint64_t now = gpd_clock_ns();
    g_t0 = now;
    g_cnt_t0 = count_kernels();
    g_window_ns = g_windows = g_cnt_in = 0;
    g_edge_on_ns = g_edge_off_ns = g_edge_flush_ns = 0;
    if (g_on) {
      g_on_since = now;
      g_cnt_open = g_cnt_t0;
    }
  }
  g_mode.mode = nm.mode;
  g_mode.window_ms = nm.window_ms;
  g_mode.period_ms = nm.period_ms;
  g_mode.finalize = nm.finalize && !g_keep_loaded;
  memcpy(g_mode_text, text, sizeof g_mode_text);
  if (nm.mode != GPD_CUPTI_DETACHED || g_on || was_full)
    err = ctl_start();
  pthread_cond_signal(&g_mode_cv);
  pthread_mutex_unlock(&g_mode_mu);
  if (err) {
    snprintf(msg, n, "no tracing controller thread: %s", strerror(-err));
    return err;
  }
  if (targets)
    *targets = 1;
  snprintf(msg, n, "CUDA tracing %s", text);
  return 0;
}

/* What the back end runs and costs (CollectReport; connection thread).
 * The counts cover the closed windows and the time up to the open one
 * (a window's cost is known when it closes). */
static int cupti_collect(gpd_shim_collect_t *o) {
  if (atomic_load(&g_state) != ST_RUNNING)
    return 0;
  pthread_mutex_lock(&g_mode_mu);
  static const char *const src[] = {"default", "daemon", "env"};
  snprintf(o->source, sizeof o->source, "%s", src[g_src % 3]);
  snprintf(o->mode, sizeof o->mode, "%s", g_mode_text);
  if (g_src == GPD_CUPTI_SRC_ENV)
    snprintf(o->note, sizeof o->note, "GPUPROF_CUDA_TRACE=%s set: the environment wins", g_mode_text);
  else if (g_src == GPD_CUPTI_SRC_DEFAULT)
    snprintf(o->note, sizeof o->note, "no daemon policy: full tracing");
  o->can_detach = 1;
  if (g_mode.mode != GPD_CUPTI_FULL) {
    uint64_t now = gpd_clock_ns(), cnt = count_kernels();
    uint64_t upto = g_on ? g_on_since : now, cupto = g_on ? g_cnt_open : cnt;
    o->elapsed_ns = upto > g_t0 ? upto - g_t0 : 0;
    o->window_ns = g_window_ns;
    o->windows = g_windows;
    o->launches = cupto - g_cnt_t0;
    o->launches_in = g_cnt_in;
    o->switch_ns = g_edge_on_ns + g_edge_off_ns + g_edge_flush_ns + atomic_load(&g_fin_ns);
  }
  pthread_mutex_unlock(&g_mode_mu);
  return 1;
}

/* Control from the daemon (shim/control.c, connection thread): PC
 * sampling windows (cupti-pcsampling.c) and TRACE, which attaches CUDA
 * tracing for the window (`gpuprof trace --job J --duration 10s`); the
 * shim core calls again with enable = 0 at the window's end. */
static int cupti_control(const gpd_control_t *c, uint32_t *targets, char *msg, size_t n) {
  if (atomic_load(&g_state) != ST_RUNNING)
    return -ENOTSUP;
  if (c->kind == GPD_CONTROL_PC_SAMPLING && c->enable) {
    /* PC sampling needs CUPTI loaded: no more finalizes in this process
     * (an armed one is called off; a finalized CUPTI comes back at the
     * next window's attach, whose API callbacks start the sampling) */
    pthread_mutex_lock(&g_mode_mu);
    if (g_mode.finalize)
      GPD_INFO("CUDA tracing: PC sampling asked for: CUPTI stays loaded between windows from now on");
    g_mode.finalize = 0;
    g_keep_loaded = 1;
    int armed = FIN_ARMED;
    if (atomic_compare_exchange_strong(&g_fin, &armed, FIN_NONE) && !g_on)
      fin_launch_callbacks(0); /* called off: detached, no callback left on */
    pthread_mutex_unlock(&g_mode_mu);
  }
  if (c->kind == GPD_CONTROL_PC_SAMPLING)
    return gpd_cupti_pcs_control(c->enable, c->duration_ms, c->period, c->flags, targets, msg, n);
  if (c->kind == GPD_CONTROL_POLICY)
    return policy_apply(c->policy, targets, msg, n);
  if (c->kind != GPD_CONTROL_TRACE)
    return -ENOTSUP;
  int err = trace_control(c->enable, c->duration_ms);
  if (err == 0 && targets)
    *targets = 1;
  if (msg && n)
    snprintf(msg, n, "%s",
             err ? "CUDA back end not running"
             : g_mode.mode == GPD_CUPTI_FULL ? "CUDA tracing is full (always attached)"
             : c->enable ? "CUDA tracing attached" : "CUDA tracing detached");
  return err;
}

static int cupti_status(char *why, size_t n) {
  int st = atomic_load(&g_state);
  if (why && n) why[0] = '\0';
  return st == ST_RUNNING ? 1 : st == ST_DISABLED ? 0 : -1;
}

/** The CUDA (CUPTI) back end for the shim core (backends.h). */
const gpd_backend_t gpd_backend_cupti = {
    .name = "cuda",
    .api = GPD_API_CUDA,
    .init = gpd_cupti_init,
    .fork_prepare = cupti_fork_prepare,
    .fork_parent = cupti_fork_parent,
    .fork_child = cupti_fork_child,
    .shutdown = gpd_cupti_fini,
    .status = cupti_status,
    .control = cupti_control,
    .collect = cupti_collect,
};

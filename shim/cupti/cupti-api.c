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
 * The tracing modes (full, detached, duty-cycled, on-demand windows) are
 * switched by the controller in cupti-control.c, which reaches this file
 * only through the switch table handed to it at start (g_switch).
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

#include <cuda.h>
#include <cupti.h>

#include "cupti-funcs.h"
#include "cupti-internal.h"
#include "gpuprof/clock.h"
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
 * symbolization of new call sites, which held a commit for seconds on a
 * PyTorch loop: a budget of 50 ms per buffer lost up to a third of the records
 * there, this policy none (docs/PERFORMANCE-CUDA.md, "Measurements behind
 * the CUDA back end's code").  So CUPTI's own thread
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

/* Attach state.  API callbacks and activity kinds are switched on and off
 * together by the tracing controller (cupti-control.c, trace_set);
 * g_epoch counts attaches, so that an API whose EXIT callback was switched
 * off cannot leave a stale "outer API" on its thread. */
static atomic_uint g_epoch;
/* API callbacks attached (trace_set writes; cb_api reads): while the
 * back end only waits for a finalize (cupti-control.c), an API callback
 * pushes nothing. */
static atomic_int g_api_on;

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
  if (gpd_cupti_fn.cuptiGetResultString && gpd_cupti_fn.cuptiGetResultString(r, &s) == CUPTI_SUCCESS && s) return s;
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
  if (dev >= GPD_CUPTI_MAXDEV || atomic_load(&g_props_ok[dev]) || !gpd_cupti_fn.cuDeviceGetAttribute) return;
  gpd_cupti_devprops_t p = {0};
  int v;
#define A(field, attr) \
  if (gpd_cupti_fn.cuDeviceGetAttribute(&v, attr, (CUdevice)dev) == CUDA_SUCCESS) p.field = (uint32_t)v
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
    if (atomic_load(&g_state) == ST_RUNNING && gpd_cupti_control_loaded())
      gpd_cupti_fn.cuptiActivityFlushAll(0); /* not after a finalize: it would load CUPTI again */
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

/* --- correlation ids across windows ------------------------------- */
/* The correlation id the daemon sees: CUPTI's id with the attach epoch in
 * bits 32..55.  A window's records are all delivered (a synchronous flush
 * at detach) before the next window's epoch begins, so an INVOKE and its
 * activity carry the same epoch; a launch caught half by a window's edge
 * (an INVOKE without activity, or a late record) can then never pair with
 * another window's operation, even if CUPTI's ids repeat across windows
 * (they did: kernels of one context were attributed to another in duty
 * mode before this; docs/PERFORMANCE-CUDA.md). */
static atomic_uint g_rec_epoch; /* epoch of the records being delivered */
static inline uint64_t trace_corr(uint32_t epoch, uint32_t corr) {
  return GPD_CORR(GPD_API_CUDA, ((uint64_t)(epoch & 0xffffffu) << 32) | corr);
}

/* The kernel-launch callbacks alone on or off (the switch table's
 * launch_callbacks): the controller arms a finalize with them, so that
 * the next launch's EXIT finalizes (cupti-control.c). */
static void launch_callbacks(uint32_t on) {
  for (unsigned id = 1; id < CUPTI_RUNTIME_TRACE_CBID_SIZE; id++)
    if ((g_rt_op[id] & 0x7f) == GPD_OP_KERNEL)
      gpd_cupti_fn.cuptiEnableCallback(on, g_sub, CUPTI_CB_DOMAIN_RUNTIME_API, id);
  for (unsigned id = 1; id < CUPTI_DRIVER_TRACE_CBID_SIZE; id++)
    if ((g_drv_op[id] & 0x7f) == GPD_OP_KERNEL)
      gpd_cupti_fn.cuptiEnableCallback(on, g_sub, CUPTI_CB_DOMAIN_DRIVER_API, id);
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
      if (gpd_cupti_fn.cuptiGetDeviceId(rd->context, &dev) == CUPTI_SUCCESS) props_query(dev);
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
    /* detached: only launch callbacks are on, for the armed finalize or
     * for a PC-sampling window that waits for a context's next call
     * (gpd_cupti_control_pcs_callbacks) */
    const CUpti_CallbackData *cd = data;
    gpd_cupti_pcs_on_api(cd->context);
    if (cd->callbackSite == CUPTI_API_EXIT)
      gpd_cupti_control_api_exit();
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
  if (__builtin_expect(g_count_check, 0) && dom == CUPTI_CB_DOMAIN_RUNTIME_API)
    atomic_fetch_add_explicit(&c_invoke_rt[o], 1, memory_order_relaxed);
  /* the first runtime launch callback after a counted call on this thread
   * is that call's (the static cudart inside cuBLAS or cuDNN also calls
   * back, but through no counted call): windows note it (the duty
   * estimate, cupti-whole.c), full tracing checks the counters exactly */
  if (o == GPD_OP_KERNEL && dom == CUPTI_CB_DOMAIN_RUNTIME_API && gpd_cupti__tls_counted != tls_counted_seen) {
    tls_counted_seen = gpd_cupti__tls_counted;
    if (g_count_check) atomic_fetch_add_explicit(&c_rt_counted, 1, memory_order_relaxed);
    if (gpd_cupti_control_can_wait()) gpd_cupti_whole_note(ep, cd->correlationId);
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
  while (valid && gpd_cupti_fn.cuptiActivityGetNextRecord(buf, valid, &rec) == CUPTI_SUCCESS) {
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
    uint32_t rep = atomic_load_explicit(&g_rec_epoch, memory_order_relaxed), corr = (uint32_t)a.corr;
    a.corr = trace_corr(rep, corr);
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
    if (rc >= 0 && a.op == GPD_OP_KERNEL) gpd_cupti_whole_record(rep, corr); /* its launch traced whole? */
    if (rc < 0) {
      atomic_fetch_add(&c_pushfail, 1);
      if (rc == -ENOSPC && wait && !tls_exit_flush && !atomic_load(&g_push_stop))
        atomic_store(&g_push_stalled, 1);
    } else if (stalled) {
      atomic_store(&g_push_stalled, 0);
    }
  }
  size_t dropped = 0;
  if (gpd_cupti_fn.cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped)
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
    if (gpd_cupti_fn.cuptiGetCallbackName(dom, id, &name) != CUPTI_SUCCESS || !name) continue;
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
 * activity kinds.  The controller's switch (cupti-control.c), its lock held.
 * Detaching asks the flusher for the records of the window.  NULL, or the
 * busy name of an activity kind another tool kept (attach only): then
 * everything this attach enabled is off again (a detach). */
static const char *trace_set(int on) {
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
            gpd_cupti_fn.cuptiEnableCallback(on ? 1 : 0, g_sub, doms[d].dom, id);
    if (pass != (on ? 1 : 0))
      continue;
    for (size_t i = 0; i < sizeof g_kinds / sizeof *g_kinds; i++) {
      if (!(g_trace & (1u << g_kinds[i].op)) || (!on && g_kinds[i].kind == CUPTI_ACTIVITY_KIND_DEVICE))
        continue; /* DEVICE records come once; leaving it on costs nothing */
      CUpti_ActivityKind kind = g_kinds[i].kind;
      if (kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL &&
          (kind = (CUpti_ActivityKind)gpd_cupti_sass_kernel_kind()) == 0)
        continue; /* SASS counts on: no kernel records (cupti-sass.c) */
      r = on ? gpd_cupti_fn.cuptiActivityEnable(kind) : gpd_cupti_fn.cuptiActivityDisable(kind);
      const char *busy = on && r != CUPTI_SUCCESS ? gpd_cupti_busy_name((int)r, 0) : NULL;
      if (busy) {
        (void)trace_set(0); /* the kinds and callbacks enabled so far */
        return busy;
      }
      if (r != CUPTI_SUCCESS)
        GPD_WARN("cuptiActivity%s(%d): %s", on ? "Enable" : "Disable", (int)kind, cupti_errstr(r));
    }
  }
  return NULL;
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
  if ((r = gpd_cupti_fn.cuptiSubscribe(&g_sub, cb_api, NULL)) != CUPTI_SUCCESS)
    return r;
  for (size_t i = 0; i < sizeof res / sizeof *res; i++)
    gpd_cupti_fn.cuptiEnableCallback(1, g_sub, CUPTI_CB_DOMAIN_RESOURCE, res[i]);
  for (size_t i = 0; i < GPD_CUPTI_GRAPH_NCBID; i++)
    gpd_cupti_fn.cuptiEnableCallback(1, g_sub, CUPTI_CB_DOMAIN_RESOURCE, gpd_cupti_graph_cbids[i]);
  gpd_cupti_fn.cuptiActivityRegisterTimestampCallback(cb_timestamp);
  *step = "cuptiActivityRegisterCallbacks";
  if ((r = gpd_cupti_fn.cuptiActivityRegisterCallbacks(cb_buf_requested, cb_buf_completed)) != CUPTI_SUCCESS)
    gpd_cupti_fn.cuptiUnsubscribe(g_sub);
  return r;
}

/* The switch the tracing controller holds (cupti-control.c): it reaches
 * libcupti only through these. */
static const char *sw_finalize(void) {
  CUptiResult r = gpd_cupti_fn.cuptiFinalize();
  return r == CUPTI_SUCCESS ? NULL : cupti_errstr(r);
}
static const char *sw_subscribe(const char **step, const char **busy) {
  CUptiResult r = cupti_subscribe(step);
  *busy = r == CUPTI_SUCCESS ? NULL : gpd_cupti_busy_name((int)r, 0);
  return r == CUPTI_SUCCESS ? NULL : cupti_errstr(r);
}
static void sw_flush(int forced) { gpd_cupti_fn.cuptiActivityFlushAll(forced ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0); }
static int sw_running(void) { return atomic_load(&g_state) == ST_RUNNING; }
static const gpd_cupti_switch_t g_switch = {trace_set,  launch_callbacks, sw_finalize, sw_subscribe, sw_flush, sw_running,
                                            thread_start, gpd_cupti_pcs_pending, gpd_cupti_pcs_control};

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
  const char *missing = gpd_cupti_resolve(g_lib, GPD_CUPTI_API_CORE);
  if (missing) {
    cupti_disable(GPD_ENOVENDOR, "libcupti lacks %s", missing);
    return GPD_ENOVENDOR;
  }
  g_count_check = getenv("GPUPROF_CUPTI_SELFTEST") != NULL; /* runtime launches vs counters */
  gpd_cupti_pcs_setup(g_lib); /* GPUPROF_PC_SAMPLING=1 (cupti-pcsampling.c) */
  gpd_cupti_sass_setup(g_lib); /* GPUPROF_SASS_COUNTS=1 (cupti-sass.c) */
  gpd_cupti_graph_setup(g_lib); /* graph nodes' contexts (cupti-graph.c) */
  g_trace = gpd_cupti_control_setup(&g_switch); /* the mode (cupti-control.c) */
  const char *step = NULL, *busy = NULL;
  /* Another tool holds the subscription: the detached and duty modes
   * start unsubscribed and their windows try again (cupti-control.c);
   * full tracing cannot wait and is disabled as for any error. */
  if ((r = cupti_subscribe(&step)) != CUPTI_SUCCESS &&
      (!(busy = gpd_cupti_busy_name((int)r, 0)) || !gpd_cupti_control_can_wait())) {
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
  gpd_shim_vendor_module("libcupti.so");
  gpd_shim_vendor_module("libcuda.so");
  gpd_shim_vendor_module("libcudart.so");
  cupti_classify_domain(CUPTI_CB_DOMAIN_RUNTIME_API, g_rt_op, CUPTI_RUNTIME_TRACE_CBID_SIZE);
  cupti_classify_domain(CUPTI_CB_DOMAIN_DRIVER_API, g_drv_op, CUPTI_DRIVER_TRACE_CBID_SIZE);
  atomic_store(&g_state, ST_RUNNING);
  if (flush_start() < 0) GPD_WARN("CUDA back end: no flusher thread; buffers flushed at exit only");
  gpd_cupti_control_start(busy);
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
  gpd_cupti_control_fini(); /* detached / duty: the summary */
  gpd_cupti_pcs_fini();
  /* exit: CUPTI's thread stops waiting for ring space; this thread's
   * completions wait at most 50 ms per buffer */
  atomic_store(&g_push_stop, 1);
  tls_exit_flush = 1;
  int loaded = gpd_cupti_control_quiesce(); /* an armed finalize is called off */
  /* after a finalize nothing is left to flush (and a flush would load CUPTI again) */
  if (atomic_load(&g_state) == ST_RUNNING && loaded)
    gpd_cupti_fn.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  tls_exit_flush = 0;
  gpd_cupti_control_summary(); /* after the flush: the last window's launches traced whole */
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
  gpd_cupti_control_fork_prepare();
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
  gpd_cupti_control_fork_parent();
}
/* CUDA is not usable in a fork child; only the locks need to be sane.  The
 * flusher thread is gone: its condition variable may record it as a
 * waiter, so it is made fresh. */
static void cupti_fork_child(void) {
  gpd_cupti_sass_fork_child();
  gpd_cupti_pcs_fork_child();
  pthread_mutex_unlock(&g_flush_mu);
  pthread_mutex_unlock(&g_pool_mu);
  gpd_cupti_control_fork_child(); /* the controller thread is gone too */
  g_flush_cv = (pthread_cond_t)PTHREAD_COND_INITIALIZER;
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
    .control = gpd_cupti_control_apply, /* cupti-control.c */
    .collect = gpd_cupti_control_collect,
};

/* cupti-count.c - counting interposers of the CUDA runtime's launch, copy
 * and memset calls: how many GPU operations the program launched, also
 * while CUDA tracing is detached (docs/CUDA.md, "The duty-cycle
 * estimate").
 *
 * Why: a duty-cycled run samples launches, and tracing slows a
 * launch-bound loop while a window is open (fewer launches per second
 * inside windows: docs/PERFORMANCE-CUDA.md), so the window's share of
 * the run's *time* overstates a launch's inclusion probability.  The
 * launch-based fraction f = (launches counted inside windows) /
 * (launches counted in the run) does not; the controller reads the
 * counters at each window's edges (cupti-control.c).
 *
 * Kernel launches include graph launches (cudaGraphLaunch[_ptsz]): one
 * count per replay, whatever the graph holds.
 *
 * How: libgpuprof.so exports these names (libgpuprof.map: its one
 * anonymous version node leaves them unversioned, so they also satisfy
 * the application's versioned references cudaLaunchKernel@libcudart.so.13
 * or .12); each wrapper adds 1 to a relaxed atomic counter and tail-calls
 * the next definition (dlsym(RTLD_NEXT), resolved once and cached).  No
 * allocation, no lock, no CUPTI: a few ns per call, counted whether
 * tracing is attached or not.  What it cannot see: launches that do not
 * go through the dynamic libcudart's exported functions (cuBLAS, cuDNN
 * and programs with a static cudart reach the driver directly), so the
 * counts are a sample of the launches in program order, not all of them
 * (the fraction assumes the others interleave with them the same way
 * inside and outside windows: a steady loop does).
 *
 * Several libcudart in one process (a library built against CUDA 12
 * beside PyTorch's 13): their callers' versioned references all bind to
 * these unversioned wrappers, and RTLD_NEXT would send every call to the
 * first of them.  So each call site (return address) is given its
 * definition when it first calls: the default next one while one
 * libcudart is mapped, else the caller's own (its object's scope); a
 * lock-free table of call sites keeps the choice (see "Call sites"
 * below), so a libcudart loaded late is handled too.  Known gap
 * (docs/CUDA.md): a caller that reaches the wrapper by a tail call is
 * seen as its own caller (nvcc's launch stubs pass an argument array on
 * their stack, so they never tail-call).
 *
 * A call whose next definition cannot be found (no libcudart in the
 * process: only a program that looked the name up itself can get here)
 * logs once and returns cudaErrorInitializationError: an error, never a
 * crash.  Any thread; the counters only grow (gpd_cupti_count_read).
 */
#include <dlfcn.h>
#include <link.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "cupti-internal.h"
#include "gpuprof/log.h"

#define EXPORT __attribute__((visibility("default")))

/* One cache line per counter: the program's launching threads add, the
 * controller reads. */
static struct {
  _Alignas(64) atomic_ulong n;
} g_count[GPD_CUPTI_NCOUNT];

void gpd_cupti_count_read(uint64_t out[GPD_CUPTI_NCOUNT]) {
  for (unsigned i = 0; i < GPD_CUPTI_NCOUNT; i++)
    out[i] = atomic_load_explicit(&g_count[i].n, memory_order_relaxed);
}

/** Test hook (tests/cupti/count-app.c): the counters since load. */
EXPORT void gpd_shim__cuda_counts(uint64_t out[GPD_CUPTI_NCOUNT]) { gpd_cupti_count_read(out); }

/* Launch timing (the governor's per-launch cost of tracing: governor.c
 * in the daemon).  A kernel launch is timed (CLOCK_MONOTONIC around the
 * next definition: two clock reads, tens of ns) and binned by
 * gpd_cupti__time_bin as the call starts: every launch inside a window
 * (GPD_CUPTI_BIN_IN: tracing's callbacks cost microseconds there, and a
 * window holds few launches), one in GPD_CUPTI_TIME_EVERY between
 * windows (GPD_CUPTI_BIN_OUT), none at a window's edge
 * (GPD_CUPTI_BIN_NONE: the detach and an armed cuptiFinalize, whose time
 * the switching cost already holds).  Per bin: timed calls and their
 * summed ns. */
_Atomic int gpd_cupti__time_bin = GPD_CUPTI_BIN_OUT;
static struct {
  _Alignas(64) atomic_ulong n;
  atomic_ulong ns;
} g_timed[2];

void gpd_cupti_count_timed(uint64_t n[2], uint64_t ns[2]) {
  for (unsigned i = 0; i < 2; i++) {
    n[i] = atomic_load_explicit(&g_timed[i].n, memory_order_relaxed);
    ns[i] = atomic_load_explicit(&g_timed[i].ns, memory_order_relaxed);
  }
}

/** Test hook (tests/cupti/count-app.c): the timed launches per bin. */
EXPORT void gpd_shim__cuda_timed(uint64_t n[2], uint64_t ns[2]) { gpd_cupti_count_timed(n, ns); }

static inline uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline void timed_add(int bin, uint64_t t0) {
  if (bin != GPD_CUPTI_BIN_OUT && bin != GPD_CUPTI_BIN_IN)
    return;
  uint64_t dt = mono_ns() - t0;
  atomic_fetch_add_explicit(&g_timed[bin].ns, dt, memory_order_relaxed);
  atomic_fetch_add_explicit(&g_timed[bin].n, 1, memory_order_relaxed);
}

/* A kernel launch also leaves its count in the thread's
 * gpd_cupti__tls_counted (the full-tracing check in cupti-api.c). */
__thread uint64_t gpd_cupti__tls_counted;

/* The shim's mapping generation (module.c; it moves when a dlclose
 * unmapped something).  Weak: the CUPTI self-test library links this
 * file without the shim core, and then reads generation 0. */
extern _Atomic uint32_t gpd_module__gen __attribute__((weak));

static inline uint32_t map_gen(void) {
  return &gpd_module__gen ? atomic_load_explicit(&gpd_module__gen, memory_order_acquire) : 0;
}

static int cudart_cb(struct dl_phdr_info *i, size_t n, void *arg) {
  (void)n;
  if (i->dlpi_name && strstr(i->dlpi_name, "libcudart.so"))
    ++*(int *)arg;
  return 0;
}

/* The caller's own definition of `name`: resolved in the scope of the
 * object that holds `ret` (dlsym on that object's handle: the object and
 * its dependencies, where the preloaded shim is not).  NULL when the
 * object has no name (the main program) or its scope finds only this
 * wrapper: the caller then takes the default next definition. */
static void *caller_fn(const void *ret, const char *name, void *self) {
  struct dl_find_object fo;
  if (_dl_find_object((void *)ret, &fo) != 0 || !fo.dlfo_link_map)
    return NULL;
  const char *path = fo.dlfo_link_map->l_name;
  void *h = path && *path ? dlopen(path, RTLD_LAZY | RTLD_NOLOAD) : NULL;
  void *fn = h ? dlsym(h, name) : NULL;
  if (h)
    dlclose(h); /* NOLOAD: only the reference it took */
  return fn == self ? NULL : fn;
}

/* Call sites.  Every call goes to the definition its call site was given
 * the first time it called (in this mapping generation): the default next
 * definition (dlsym(RTLD_NEXT): another interposer preloaded after us, or
 * libcudart) while one libcudart is mapped, the caller's own libcudart
 * when several are (a library built against CUDA 12 beside PyTorch's 13:
 * their callers' versioned references all bind to these unversioned
 * wrappers).  Deciding per call site, when the site first calls, also
 * covers a second libcudart loaded late (dlopen of a plugin after the
 * first launch): the plugin's sites are new.  A site's object cannot gain
 * a different libcudart without being unloaded, and an unload moves the
 * mapping generation, which retires every site.
 *
 * Table: a fixed pool of immutable entries (never freed or reused), found
 * through linearly probed slots holding pointers to them; readers
 * need no lock (acquire load of the slot, then the entry's fields, which
 * never change after the release store that published it).  A full pool
 * (SITE_POOL sites x generations: not met by real programs) leaves new
 * sites uncached: correct, a few microseconds a call. */
#define SITE_BITS 11
#define SITE_SLOTS (1u << SITE_BITS)
#define SITE_POOL 4096
#define SITE_PROBE 16 /* linear probing: a site lives within 16 slots of its hash */
typedef struct {
  const void *ret, *self;
  void *fn;
  uint32_t gen;
} count_site_t;
static count_site_t g_site_pool[SITE_POOL];
static atomic_uint g_site_used;
static _Atomic(count_site_t *) g_site_slot[SITE_SLOTS];

static inline size_t site_hash(const void *ret, const void *self) {
  uint64_t k = (uint64_t)(uintptr_t)ret ^ ((uint64_t)(uintptr_t)self << 7);
  return (size_t)((k * 0x9E3779B97F4A7C15ull) >> (64 - SITE_BITS));
}

static inline __attribute__((always_inline)) void *site_find(const void *ret, const void *self, uint32_t gen) {
  size_t h = site_hash(ret, self);
  for (size_t k = 0; k < SITE_PROBE; k++) {
    const count_site_t *e = atomic_load_explicit(&g_site_slot[(h + k) & (SITE_SLOTS - 1)], memory_order_acquire);
    if (!e)
      return NULL;
    if (e->ret == ret && e->self == self && e->gen == gen)
      return e->fn;
  }
  return NULL;
}

/* First call of a site in this generation: decide, then publish. */
static __attribute__((noinline)) void *site_miss(_Atomic(void *) *next, const char *name, const void *ret,
                                                 void *self, uint32_t gen) {
  void *fn = NULL;
  int n = 0;
  dl_iterate_phdr(cudart_cb, &n);
  if (n > 1)
    fn = caller_fn(ret, name, self);
  if (!fn) {
    fn = atomic_load_explicit(next, memory_order_acquire);
    if (!fn) {
      fn = dlsym(RTLD_NEXT, name);
      if (!fn) {
        static atomic_int warned;
        if (!atomic_exchange(&warned, 1))
          GPD_WARN("CUDA launch counter: no next definition of %s", name);
        return NULL; /* not cached: a libcudart loaded later is found then */
      }
      atomic_store_explicit(next, fn, memory_order_release);
    }
  }
  /* checked before the add too, so that the count cannot wrap around */
  unsigned i = atomic_load_explicit(&g_site_used, memory_order_relaxed);
  if (i < SITE_POOL)
    i = atomic_fetch_add_explicit(&g_site_used, 1, memory_order_relaxed);
  if (i >= SITE_POOL) {
    static atomic_int full;
    if (!atomic_exchange(&full, 1))
      GPD_INFO("CUDA launch counter: %u call sites cached, further ones resolved per call", SITE_POOL);
    return fn;
  }
  count_site_t *e = &g_site_pool[i];
  e->ret = ret;
  e->self = self;
  e->fn = fn;
  e->gen = gen;
  /* the first empty slot, or one of an older generation, in the site's
   * probe window; none (16 live sites there: not met at this table's
   * load) leaves the site uncached */
  size_t h = site_hash(ret, self);
  for (size_t k = 0; k < SITE_PROBE; k++) {
    _Atomic(count_site_t *) *slot = &g_site_slot[(h + k) & (SITE_SLOTS - 1)];
    count_site_t *o = atomic_load_explicit(slot, memory_order_acquire);
    if ((o == NULL || o->gen != gen) && atomic_compare_exchange_strong_explicit(slot, &o, e, memory_order_release,
                                                                                 memory_order_relaxed))
      break;
  }
  return fn;
}

void *gpd_cupti_count_next(_Atomic(void *) *next, const char *name, const void *ret, void *self) {
  uint32_t gen = map_gen();
  void *fn = site_find(ret, self, gen);
  return fn ? fn : site_miss(next, name, ret, self, gen);
}

/* Count one call of kind k; for a kernel launch the count is also the
 * thread's gpd_cupti__tls_counted, and `bin` is set to the bin the call
 * is timed in (GPD_CUPTI_BIN_NONE: not timed). */
#define COUNT(k, bin)                                                                          \
  do {                                                                                         \
    uint64_t c_ = atomic_fetch_add_explicit(&g_count[k].n, 1, memory_order_relaxed) + 1;        \
    if ((k) == GPD_CUPTI_COUNT_KERNEL) {                                                       \
      gpd_cupti__tls_counted = c_;                                                             \
      int b_ = atomic_load_explicit(&gpd_cupti__time_bin, memory_order_relaxed);               \
      if (b_ == GPD_CUPTI_BIN_IN || (b_ == GPD_CUPTI_BIN_OUT && c_ % GPD_CUPTI_TIME_EVERY == 0)) \
        bin = b_;                                                                              \
    }                                                                                          \
  } while (0)

/* WRAP(kind, name, params, args): the wrapper of one runtime function
 * returning cudaError_t. */
#define WRAP(kind, name, params, args)                                                         \
  typedef cudaError_t (*name##_fn) params;                                                     \
  static _Atomic(void *) name##_next;                                                          \
  EXPORT cudaError_t name params;                                                              \
  cudaError_t name params {                                                                    \
    int bin_ = GPD_CUPTI_BIN_NONE;                                                             \
    COUNT(kind, bin_);                                                                         \
    const void *ret_ = __builtin_return_address(0);                                           \
    uint32_t gen_ = map_gen();                                                                 \
    name##_fn f = (name##_fn)site_find(ret_, (void *)name, gen_);                              \
    if (__builtin_expect(f == NULL, 0))                                                        \
      f = (name##_fn)site_miss(&name##_next, #name, ret_, (void *)name, gen_);                 \
    if (!f)                                                                                    \
      return cudaErrorInitializationError;                                                     \
    if (__builtin_expect(bin_ != GPD_CUPTI_BIN_NONE, 0)) {                                     \
      uint64_t t0_ = mono_ns();                                                                \
      cudaError_t r_ = f args;                                                                 \
      timed_add(bin_, t0_);                                                                    \
      return r_;                                                                               \
    }                                                                                          \
    return f args;                                                                             \
  }

#define LAUNCH_P (const void *func, dim3 grid, dim3 block, void **args, size_t smem, cudaStream_t stream)
#define LAUNCH_A (func, grid, block, args, smem, stream)
/* <<<>>> of CUDA 13 calls __cudaLaunchKernel (which jumps to
 * cudaLaunchKernel inside libcudart, not through its PLT: counted once). */
WRAP(GPD_CUPTI_COUNT_KERNEL, cudaLaunchKernel, LAUNCH_P, LAUNCH_A)
WRAP(GPD_CUPTI_COUNT_KERNEL, cudaLaunchKernel_ptsz, LAUNCH_P, LAUNCH_A)
WRAP(GPD_CUPTI_COUNT_KERNEL, __cudaLaunchKernel, LAUNCH_P, LAUNCH_A)
WRAP(GPD_CUPTI_COUNT_KERNEL, __cudaLaunchKernel_ptsz, LAUNCH_P, LAUNCH_A)
WRAP(GPD_CUPTI_COUNT_KERNEL, cudaLaunchKernelExC, (const cudaLaunchConfig_t *cfg, const void *func, void **args),
     (cfg, func, args))
WRAP(GPD_CUPTI_COUNT_KERNEL, cudaLaunchKernelExC_ptsz,
     (const cudaLaunchConfig_t *cfg, const void *func, void **args), (cfg, func, args))
#define COPY_P (void *dst, const void *src, size_t n, enum cudaMemcpyKind kind, cudaStream_t stream)
#define COPY_A (dst, src, n, kind, stream)
WRAP(GPD_CUPTI_COUNT_COPY, cudaMemcpyAsync, COPY_P, COPY_A)
WRAP(GPD_CUPTI_COUNT_COPY, cudaMemcpyAsync_ptsz, COPY_P, COPY_A)
/* A graph launch counts as one kernel launch: the duty estimate's
 * fraction counts launches in program order, and a graph-replaying loop
 * launches its kernels through it (cupti-whole.c notes its correlation
 * id, which every kernel record of the replay carries; the first that
 * comes counts the launch as traced whole). */
WRAP(GPD_CUPTI_COUNT_KERNEL, cudaGraphLaunch, (cudaGraphExec_t exec, cudaStream_t stream), (exec, stream))
WRAP(GPD_CUPTI_COUNT_KERNEL, cudaGraphLaunch_ptsz, (cudaGraphExec_t exec, cudaStream_t stream), (exec, stream))
#define SET_P (void *dst, int value, size_t n, cudaStream_t stream)
#define SET_A (dst, value, n, stream)
WRAP(GPD_CUPTI_COUNT_MEMSET, cudaMemsetAsync, SET_P, SET_A)
WRAP(GPD_CUPTI_COUNT_MEMSET, cudaMemsetAsync_ptsz, SET_P, SET_A)

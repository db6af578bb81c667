/* cupti-count.c - counting interposers of the CUDA runtime's launch, copy
 * and memset calls: how many GPU operations the program launched, also
 * while CUDA tracing is detached (docs/CUDA.md, "The duty-cycle
 * estimate").
 *
 * Why: a duty-cycled run samples launches, and tracing slows a
 * launch-bound loop while a window is open (H100, 2026-11-24: 13.4 %
 * fewer launches per second inside windows), so the window's share of
 * the run's *time* overstates a launch's inclusion probability.  The
 * launch-based fraction f = (launches counted inside windows) /
 * (launches counted in the run) does not; the controller reads the
 * counters at each window's edges (cupti-api.c).
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
 * first of them.  So when a wrapper is first called and more than one
 * libcudart is mapped, every call is sent to the caller's own libcudart
 * instead: the calling object (_dl_find_object of the return address,
 * lock-free) is looked up in a small per-wrapper cache, and on a miss the
 * name is resolved in that object's own scope (dlsym on its handle: the
 * object and its dependencies, where the preloaded shim is not).  Known
 * gaps (docs/CUDA.md): a caller that reaches the wrapper by a tail call
 * is seen as its own caller (nvcc's launch stubs pass an argument array
 * on their stack, so they never tail-call); a second libcudart loaded
 * after a wrapper's first call is not noticed.
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

/* The next definition of `name`, cached in *slot (a benign race: every
 * thread finds the same address). */
static __attribute__((noinline)) void *next_fn_slow(_Atomic(void *) *slot, const char *name) {
  void *p = dlsym(RTLD_NEXT, name);
  if (p == NULL) {
    static atomic_int warned;
    if (!atomic_exchange(&warned, 1))
      GPD_WARN("CUDA launch counter: no next definition of %s", name);
    return NULL;
  }
  atomic_store_explicit(slot, p, memory_order_release);
  return p;
}

static inline __attribute__((always_inline)) void *next_fn(_Atomic(void *) *slot, const char *name) {
  void *p = atomic_load_explicit(slot, memory_order_acquire);
  return __builtin_expect(p != NULL, 1) ? p : next_fn_slow(slot, name);
}

__thread uint64_t gpd_cupti__tls_counted;

/* A kernel launch also leaves its count in the thread's
 * gpd_cupti__tls_counted (the full-tracing check in cupti-api.c). */
/* -1 not looked yet, 0 one libcudart (or none) mapped, 1 several */
static atomic_int g_multi = -1;

static int cudart_cb(struct dl_phdr_info *i, size_t n, void *arg) {
  (void)n;
  if (i->dlpi_name && strstr(i->dlpi_name, "libcudart.so"))
    ++*(int *)arg;
  return 0;
}

static __attribute__((noinline)) int multi_cudart_slow(void) {
  int n = 0;
  dl_iterate_phdr(cudart_cb, &n);
  int m = n > 1;
  atomic_store(&g_multi, m);
  if (m)
    GPD_INFO("CUDA launch counter: %d libcudart mapped, each call goes to its caller's", n);
  return m;
}

static inline __attribute__((always_inline)) int multi_cudart(void) {
  int m = atomic_load_explicit(&g_multi, memory_order_relaxed);
  return __builtin_expect(m >= 0, 1) ? m : multi_cudart_slow();
}

/* The caller's own definition of `name` (several libcudart mapped):
 * cached per calling object in `cache` (32 entries, then uncached). */
typedef struct {
  _Atomic(void *) obj, fn;
} caller_slot_t;
static void *caller_fn(caller_slot_t *cache, const void *ret, const char *name, void *self) {
  struct dl_find_object fo;
  if (_dl_find_object((void *)ret, &fo) != 0 || !fo.dlfo_link_map)
    return NULL;
  void *obj = fo.dlfo_link_map;
  for (int i = 0; i < 32; i++) {
    void *o = atomic_load_explicit(&cache[i].obj, memory_order_acquire);
    if (o == obj)
      return atomic_load_explicit(&cache[i].fn, memory_order_relaxed);
    if (!o)
      break;
  }
  const char *path = fo.dlfo_link_map->l_name;
  void *h = path && *path ? dlopen(path, RTLD_LAZY | RTLD_NOLOAD) : NULL;
  void *fn = h ? dlsym(h, name) : NULL;
  if (h)
    dlclose(h); /* NOLOAD: only the reference it took */
  if (fn == self)
    fn = NULL; /* the caller's scope found this wrapper: the default next one */
  for (int i = 0; i < 32; i++) {
    void *expect = NULL;
    if (atomic_load_explicit(&cache[i].obj, memory_order_acquire) == obj)
      break;
    if (atomic_load_explicit(&cache[i].obj, memory_order_relaxed) == NULL) {
      atomic_store_explicit(&cache[i].fn, fn, memory_order_relaxed);
      if (atomic_compare_exchange_strong(&cache[i].obj, &expect, obj))
        break;
    }
  }
  return fn;
}

#define COUNT(k)                                                                               \
  do {                                                                                         \
    uint64_t c_ = atomic_fetch_add_explicit(&g_count[k].n, 1, memory_order_relaxed) + 1;        \
    if ((k) == GPD_CUPTI_COUNT_KERNEL)                                                         \
      gpd_cupti__tls_counted = c_;                                                             \
  } while (0)

/* WRAP(kind, name, params, args): the wrapper of one runtime function
 * returning cudaError_t. */
#define WRAP(kind, name, params, args)                                                         \
  typedef cudaError_t (*name##_fn) params;                                                     \
  static _Atomic(void *) name##_next;                                                          \
  static caller_slot_t name##_callers[32];                                                     \
  EXPORT cudaError_t name params;                                                              \
  cudaError_t name params {                                                                    \
    COUNT(kind);                                                                               \
    name##_fn f = (name##_fn)next_fn(&name##_next, #name);                                     \
    if (__builtin_expect(multi_cudart(), 0)) {                                                 \
      name##_fn c = (name##_fn)caller_fn(name##_callers, __builtin_return_address(0), #name,     \
                                         (void *)name);                                       \
      f = c ? c : f;                                                                           \
    }                                                                                          \
    return f ? f args : cudaErrorInitializationError;                                          \
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
#define SET_P (void *dst, int value, size_t n, cudaStream_t stream)
#define SET_A (dst, value, n, stream)
WRAP(GPD_CUPTI_COUNT_MEMSET, cudaMemsetAsync, SET_P, SET_A)
WRAP(GPD_CUPTI_COUNT_MEMSET, cudaMemsetAsync_ptsz, SET_P, SET_A)

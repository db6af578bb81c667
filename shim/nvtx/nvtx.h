/* nvtx.h - NVTX ranges as calling-context nodes (shim/nvtx/, docs/NVTX.md).
 *
 * The shim is an NVTX v3 injection (nvtx-wrappers.c: InitializeInjectionNvtx2;
 * nvtx-api.c fills NVTX's callback slots).  Each open range of a thread --
 * pushed (nvtxRangePush*, nvtxDomainRangePushEx) or started
 * (nvtxRangeStart*, nvtxDomainRangeStartEx, until its nvtxRangeEnd on any
 * thread) -- becomes a labelled context node `<nvtx> NAME` (default
 * domain) or `<nvtx> DOMAIN::NAME` in the calling context of every GPU
 * operation the thread captures while it is open (nvtx-ranges.c).
 *
 * Placement: at the push the shim records the push site's call path (the
 * same unwind, cut and Python splice as a capture, not interned).  At a
 * capture the range goes below the longest common prefix of that path and
 * the operation's path: below the frames outside the function that pushed
 * it, above the frame of that function (its call site of the operation)
 * and everything deeper.  Nested ranges keep their order (an inner range
 * is never placed above an outer one).
 *
 * What capture.c calls (gpd_shim_capture), and what it costs:
 *  - gpd_nvtx_key(): 0 when the thread has no open range (one TLS load and
 *    a compare: the hot path when NVTX is not used); else a 64-bit key of
 *    the ranges' contents (names and push sites) that the capture mixes
 *    into its node cache key, or GPD_NVTX_KEY_SITE while the thread records
 *    a push site (then the capture uses no cached node and interns nothing).
 *  - gpd_nvtx_splice(): inserts the ranges' label keys into the merged path
 *    (return-address form: key + 1), innermost first, like the Python
 *    splice; in site mode it copies the path into the range and returns 0.
 * When the NVTX headers were not found at build time (GPD_HAVE_NVTX unset)
 * both are inline stubs.
 */
#ifndef GPUPROF_SHIM_NVTX_H
#define GPUPROF_SHIM_NVTX_H

#include <stdint.h>

/** gpd_nvtx_key() while the thread records a push site. */
#define GPD_NVTX_KEY_SITE 1ull
/** Open ranges kept per thread (deeper pushes are counted, not kept: the
 *  operations below them stay under the deepest kept range). */
#define GPD_NVTX_DEPTH 32
/** Label nodes one splice may add (= GPD_NVTX_DEPTH). */
#define GPD_NVTX_SPLICE_MAX GPD_NVTX_DEPTH

#ifdef GPD_HAVE_NVTX

/** The part of a thread's NVTX state that the capture reads (the rest is
 *  private to nvtx-ranges.c).  Written only by its own thread. */
typedef struct gpd_nvtx_thread_head_s {
  uint32_t nopen; /* ranges kept open (push and start) */
  uint32_t site;  /* 1 while recording a push site */
  uint32_t nstart; /* of them started ranges (may end on other threads) */
  uint32_t pad;
  uint64_t key;   /* content key of the open ranges (never 0 while nopen) */
} gpd_nvtx_thread_head_t;

/** The calling thread's NVTX state; NULL until its first range. */
extern __thread gpd_nvtx_thread_head_t *gpd_nvtx__self;

/** Slow path of gpd_nvtx_key: drops started ranges that another thread
 *  ended, then the key (0: none left open). */
uint64_t gpd_nvtx_key_slow(gpd_nvtx_thread_head_t *t);

/** 0: no NVTX range open on this thread (nothing to splice); else the
 *  ranges' content key, or GPD_NVTX_KEY_SITE (site mode).  Application
 *  thread; no lock, no allocation, no system call. */
static inline uint64_t gpd_nvtx_key(void) {
  gpd_nvtx_thread_head_t *t = gpd_nvtx__self;
  if (__builtin_expect(t == 0, 1) || (t->nopen | t->site) == 0)
    return 0;
  if (t->site)
    return GPD_NVTX_KEY_SITE;
  return t->nstart ? gpd_nvtx_key_slow(t) : t->key;
}

/** The path ips[0..n) (return-address form, innermost first, cut and
 *  Python-spliced) with the thread's open ranges inserted as label keys
 *  (+ 1); returns the new length (at most max) and *out (the thread's own
 *  buffer).  Site mode: copies the path as the pushing range's site and
 *  returns 0.  Only when gpd_nvtx_key() != 0, on the same thread. */
int gpd_nvtx_splice(const uintptr_t *ips, int n, int max, const uintptr_t **out);

#else

static inline uint64_t gpd_nvtx_key(void) { return 0; }
static inline int gpd_nvtx_splice(const uintptr_t *ips, int n, int max, const uintptr_t **out) {
  (void)max;
  *out = ips;
  return n;
}

#endif

#endif

/* stats.c - where the shim's time goes, per phase (GPUPROF_SHIM_STATS=1).
 *
 * Off by default: every timed phase then costs one predictable branch on a
 * read-mostly global.  On: each phase reads gpd_clock_ns() at its start and
 * end and adds (1, ns) to its counter (relaxed atomics, no lock);
 * GPUPROF_SHIM_STATS=outer times only the phases that no other timed phase
 * contains (internal.h: GPD_ST_IN_*), so that the cost per operation is
 * measured with two clock reads instead of about a dozen;
 * GPUPROF_SHIM_STATS=floor is `outer` with the call path captured only
 * at a thread's first API call and reused for all after (a wrong
 * profile: the cost of everything but the call path, to measure the
 * floor under it).  Level 1 also counts frames per capture and how many
 * of the outermost ones are unchanged since the thread's last capture
 * (what a return-address trampoline could skip at best).  At exit
 * the totals are printed to stderr, one line per phase with count, total
 * and mean ns, plus the cost of one clock read measured then (subtract
 * about two of those from each mean).  For finding the cost per GPU
 * operation on a real workload (docs/PERFORMANCE-CUDA.md), not for
 * production use.
 *
 * Also the self-cost meter (internal.h, gpd_shim__meter): always on, one
 * operation in 64 timed, for the back ends that cannot detach.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuprof/clock.h"
#include "internal.h"

int gpd_shim__stats_on;
gpd_shim_stat_t gpd_shim__stats[GPD_ST_N];

static const char *const stat_names[GPD_ST_N] = {
    [GPD_ST_CAPTURE] = "capture (whole)",
    [GPD_ST_UNWIND_HIT] = "unwind: replayed walk",
    [GPD_ST_UNWIND_MISS] = "unwind: unw_backtrace (miss)",
    [GPD_ST_UNWIND_FULL] = "unwind: full walk (recorded)",
    [GPD_ST_UNWIND_BAD] = "unwind: full walk (not replayable)",
    [GPD_ST_NODE_REUSE] = "capture: node of walk reused",
    [GPD_ST_PYWALK] = "python frame walk",
    [GPD_ST_INTERN] = "cut + splice + intern + announce",
    [GPD_ST_PUSH_INVOKE] = "push INVOKE",
    [GPD_ST_CB_API] = "CUPTI API callback (traced op)",
    [GPD_ST_CB_OTHER] = "CUPTI API callback (exit/nested)",
    [GPD_ST_BUF_DONE] = "CUPTI buffer completed",
    [GPD_ST_ACT_PUSH] = "activity translate + push",
    [GPD_ST_TS] = "CUPTI timestamp callback",
    [GPD_ST_RING_WAIT] = "ring full: waited for room",
    [GPD_ST_FR_NATIVE] = "frames: native (replayable walks)",
    [GPD_ST_FR_NATIVE_SAME] = "frames: native, outer from interp.",
    [GPD_ST_FR_PY] = "frames: python",
    [GPD_ST_FR_PY_SAME] = "frames: python, unchanged outer part",
};

gpd_shim_meter_t gpd_shim__meter[GPD_API_MAX];

int gpd_shim__meter_pick(void) {
  /* the 64th, 128th, ... of the thread: not its first, whose capture
   * pays one-time costs (the unwinder's caches, the module table) that a
   * factor of 64 would turn into a steady cost */
  static __thread uint32_t k;
  return (++k % GPD_SHIM_METER_EVERY) == 0;
}

uint64_t gpd_shim__meter_self_ns(unsigned api, uint64_t *ops) {
  *ops = 0;
  if (api >= GPD_API_MAX)
    return 0;
  uint64_t n = atomic_load_explicit(&gpd_shim__meter[api].ops, memory_order_relaxed);
  uint64_t t = atomic_load_explicit(&gpd_shim__meter[api].timed, memory_order_relaxed);
  uint64_t ns = atomic_load_explicit(&gpd_shim__meter[api].ns, memory_order_relaxed);
  *ops = n;
  return t ? (uint64_t)((double)ns / (double)t * (double)n) : 0;
}

void gpd_shim__stats_init(void) {
  const char *e = getenv("GPUPROF_SHIM_STATS");
  gpd_shim__stats_on = !e || !*e || *e == '0'                        ? 0
                       : strcmp(e, "outer") == 0 || strcmp(e, "2") == 0 ? 2
                       : strcmp(e, "floor") == 0 || strcmp(e, "3") == 0 ? 3
                                                                        : 1;
}

/** Test hook (exported): zero every counter (bench-torchloop calls it
 *  after its warm-up).  Not atomic as a whole: call it while no other
 *  thread is inside a timed phase. */
GPD_EXPORT void gpd_shim__stats_reset(void) {
  for (int i = 0; i < GPD_ST_N; i++) {
    atomic_store(&gpd_shim__stats[i].n, 0);
    atomic_store(&gpd_shim__stats[i].ns, 0);
  }
}

void gpd_shim__stats_print(void) {
  if (!gpd_shim__stats_on)
    return;
  uint64_t t0 = gpd_clock_ns(), t1;
  for (int i = 0; i < 100000; i++)
    (void)gpd_clock_ns();
  t1 = gpd_clock_ns();
  fprintf(stderr, "gpuprof-stats: clock read %.1f ns%s\n", (double)(t1 - t0) / 100000.0,
          gpd_shim__stats_on == 3   ? " (outer phases only; floor: call paths NOT captured, every API on its "
                                      "thread's first path)"
          : gpd_shim__stats_on == 2 ? " (outer phases only)"
                                    : "");
  for (int i = 0; i < GPD_ST_N; i++) {
    uint64_t n = atomic_load(&gpd_shim__stats[i].n), ns = atomic_load(&gpd_shim__stats[i].ns);
    if (n && i >= GPD_ST_FRAMES_FIRST)
      fprintf(stderr, "gpuprof-stats: %-34s n=%-10llu total=%llu frames mean=%.2f frames\n", stat_names[i],
              (unsigned long long)n, (unsigned long long)ns, (double)ns / (double)n);
    else if (n)
      fprintf(stderr, "gpuprof-stats: %-34s n=%-10llu total=%.3f ms mean=%.1f ns\n", stat_names[i],
              (unsigned long long)n, (double)ns / 1e6, (double)ns / (double)n);
  }
}

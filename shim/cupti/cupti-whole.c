/* cupti-whole.c - which counted kernel launches a tracing window traced
 * whole: the numerator of the duty-cycle estimate's launch fraction
 * (docs/CUDA.md, "The duty-cycle estimate").
 *
 * The estimate scales the kernels observed in the windows by 1 / f with
 * f = (counted launches inside windows) / (counted launches in the run)
 * (cupti-count.c counts them).  A launch counted inside a window is
 * observed only if both halves of it reach the daemon: its INVOKE (the
 * API callback) and its kernel activity record.  A launch at a window's
 * edge, or whose kernel was still running when the window's records were
 * flushed (a forced flush hands it back without times: not pushed), is
 * counted but not observed, and f counted that way is too large for the
 * observations it scales (the estimate comes out low).  So the numerator
 * is the counted launches traced whole: the runtime API callback of a
 * counted launch (cupti-api.c) notes its correlation id here, and its
 * kernel activity record, when it is pushed, finds it and counts it.
 *
 * Table: GPD_CUPTI_WHOLE_SLOTS slots keyed by the correlation id's low
 * bits, each holding {epoch, id} + 1 of a launch whose record has not
 * come yet (0 = free).  CUPTI's ids grow by one per API call, so a slot
 * is taken again only after that many calls; a launch whose slot was
 * taken first (its record that much later) is not counted (a low f for
 * the one launch, counted in `lost`).  Lock-free: the noting thread
 * stores, the record's thread (CUPTI's buffer completion) swaps the slot
 * back to free when it matches.  Counters per window: the controller
 * opens a window (gpd_cupti_whole_open) and reads what it traced whole
 * after draining its records (gpd_cupti_whole_read).
 */
#include <stdatomic.h>

#include "cupti-internal.h"

static _Atomic uint64_t g_slot[GPD_CUPTI_WHOLE_SLOTS];
/* this window's noted launches, matched records, slots taken over */
static atomic_ulong g_noted, g_matched, g_lost;

static inline uint64_t key(uint32_t epoch, uint32_t corr) { return (((uint64_t)epoch << 32) | corr) + 1; }

void gpd_cupti_whole_note(uint32_t epoch, uint32_t corr) {
  uint64_t old = atomic_exchange_explicit(&g_slot[corr % GPD_CUPTI_WHOLE_SLOTS], key(epoch, corr),
                                          memory_order_relaxed);
  if (old)
    atomic_fetch_add_explicit(&g_lost, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&g_noted, 1, memory_order_relaxed);
}

void gpd_cupti_whole_record(uint32_t epoch, uint32_t corr) {
  uint64_t want = key(epoch, corr);
  _Atomic uint64_t *s = &g_slot[corr % GPD_CUPTI_WHOLE_SLOTS];
  if (atomic_load_explicit(s, memory_order_relaxed) == want &&
      atomic_compare_exchange_strong_explicit(s, &want, 0, memory_order_relaxed, memory_order_relaxed))
    atomic_fetch_add_explicit(&g_matched, 1, memory_order_relaxed);
}

void gpd_cupti_whole_open(void) {
  for (unsigned i = 0; i < GPD_CUPTI_WHOLE_SLOTS; i++)
    atomic_store_explicit(&g_slot[i], 0, memory_order_relaxed);
  atomic_store(&g_noted, 0);
  atomic_store(&g_matched, 0);
  atomic_store(&g_lost, 0);
}

uint64_t gpd_cupti_whole_read(uint64_t *pending) {
  uint64_t n = atomic_load(&g_noted), m = atomic_load(&g_matched), l = atomic_load(&g_lost);
  if (pending)
    *pending = n > m + l ? n - m - l : 0;
  return m;
}

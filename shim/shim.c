/* shim.c - libgpuprof.so's process state: whether the shim is active
 * (and the fork child's lazy start of its connection), ids and
 * announcement words, correlation ids, the list of built back ends.  The
 * constructor, destructor and fork handlers are main.c's; the push entry
 * points of shim.h push.c's; the region's attach is attach.c's, the back
 * ends' STATUS records status.c's, GPU binaries conn.c's.
 *
 * This file is below the back ends, the connection and the per-thread
 * rings (thread.c): it calls none of them.
 * Vendor back ends are reached only through their ops tables (backends.h),
 * which main.c registers here at start (gpd_shim__backends_register); the
 * fork child's lazy connection start is the function main.c hands to
 * gpd_shim__atfork_lazy.
 */
#include <sys/mman.h>

#include "backends.h"
#include "gpuprof/clock.h"
#include "internal.h"

gpd_shim_state_t gpd_shim__g = {.epoch = 1};

/* The built back ends, registered by main.c's constructor (empty until
 * then). */
static const gpd_backend_t *const shim_nobackends[] = {NULL};
static const gpd_backend_t *const *shim_backends = shim_nobackends;

void gpd_shim__backends_register(const gpd_backend_t *const *list) { shim_backends = list; }

const gpd_backend_t *const *gpd_shim__backends(void) { return shim_backends; }

/* Fork child: 1 until the connection thread was started for it. */
static _Atomic int shim_lazy;
/* What starts it (gpd_shim__atfork_lazy): conn.c's gpd_conn_start. */
static int (*shim_lazy_start_fn)(int wait_ms);

/* Fork child's first question: start the connection (once) and wait for
 * its first attempt like the constructor does; concurrent first callers
 * all wait for that attempt, bounded. */
static __attribute__((noinline, cold)) int shim_lazy_start(void) {
  (void)shim_lazy_start_fn(GPD_SHIM_CTOR_WAIT_MS);
  atomic_store_explicit(&shim_lazy, 0, memory_order_relaxed);
  return atomic_load_explicit(&gpd_shim__g.active, memory_order_acquire);
}

GPD_EXPORT int gpd_shim_active(void) {
  int a = atomic_load_explicit(&gpd_shim__g.active, memory_order_acquire);
  if (__builtin_expect(a, 1))
    return a;
  if (__builtin_expect(atomic_load_explicit(&shim_lazy, memory_order_relaxed), 0))
    return shim_lazy_start();
  return 0;
}

int gpd_shim_may_record(void) {
  if (atomic_load_explicit(&gpd_shim__g.disabled, memory_order_relaxed))
    return 0;
  return gpd_shim_active() || !atomic_load_explicit(&gpd_shim__g.no_listener, memory_order_relaxed);
}

uint32_t gpd_shim__id_next(void) {
  uint32_t id = atomic_fetch_add_explicit(&gpd_shim__g.next_id, 1, memory_order_relaxed) + 1;
  if (gpd_shim_active()) {
    gpd_region_hdr_t *h = gpd_shim__g.region.hdr;
    uint32_t cur = atomic_load_explicit(&h->next_string, memory_order_relaxed);
    while (cur < id && !atomic_compare_exchange_weak_explicit(&h->next_string, &cur, id,
                                                              memory_order_relaxed, memory_order_relaxed))
      ;
  }
  return id;
}

int gpd_shim__ann_claim(_Atomic uint32_t *a, uint32_t epoch, uint32_t *old) {
  uint32_t v = atomic_load_explicit(a, memory_order_acquire);
  if (v == epoch)
    return 1;
  if (v == GPD_ANN_BUSY)
    return -1;
  if (!atomic_compare_exchange_strong_explicit(a, &v, GPD_ANN_BUSY, memory_order_acquire,
                                               memory_order_acquire))
    return v == epoch ? 1 : -1;
  *old = v;
  return 0;
}

void gpd_shim__ann_done(_Atomic uint32_t *a, uint32_t epoch, uint32_t old, int ok) {
  atomic_store_explicit(a, ok ? epoch : old, memory_order_release);
}

/* Correlation ids are handed to each thread in blocks, so that the hot
 * path touches no cache line shared with other threads: one fetch-add on
 * the region's counter per GPD_CORR_BLOCK calls.  A block is only used in
 * the region generation it was taken from (a new region, a fork), so ids
 * stay unique per region; the counter lives in the region and so survives
 * a daemon restart (hand-back keeps the region). */
#define GPD_CORR_BLOCK 64u
static __thread uint64_t t_corr_next, t_corr_end;
static __thread uint32_t t_corr_gen;

GPD_EXPORT uint64_t gpd_shim_corr_next(unsigned api) {
  uint32_t gen = atomic_load_explicit(&gpd_shim__g.gen, memory_order_acquire);
  if (t_corr_next == t_corr_end || t_corr_gen != gen) {
    _Atomic uint64_t *c = gpd_shim_active() ? &gpd_shim__g.region.hdr->next_corr : &gpd_shim__g.local_corr;
    t_corr_next = atomic_fetch_add_explicit(c, GPD_CORR_BLOCK, memory_order_relaxed) + 1;
    t_corr_end = t_corr_next + GPD_CORR_BLOCK;
    t_corr_gen = gen;
  }
  return GPD_CORR(api, t_corr_next++);
}

/* The fork child's process state (main.c's fork handler, after the
 * region was dropped): new ids and tables, its own start time.  A lazy
 * start inherited from a parent that was itself a fork child and never
 * asked gpd_shim_active is cleared first: the handlers after this one ask
 * it (gpd_module_atfork_child's new ids), and a start from inside the
 * handler would take conn.c's lock, still held from the prepare handler
 * (a self-deadlock: the grandchild's fork never returned).
 * gpd_shim__atfork_lazy arms it again at the end of the handler. */
void gpd_shim__atfork_child(void) {
  gpd_shim_state_t *g = &gpd_shim__g;
  atomic_store(&shim_lazy, 0);
  atomic_fetch_add(&g->gen, 1);
  uint32_t e = atomic_fetch_add(&g->epoch, 1) + 1;
  if (e == GPD_ANN_BUSY || e == 0)
    atomic_store(&g->epoch, 1);
  atomic_store(&g->local_corr, 0);
  atomic_store(&g->next_id, 0);
  if (g->intern_ok) {
    gpd_intern_free(&g->intern);
    g->intern_ok = 0;
  }
  if (g->node_ann) {
    /* Drop the pages: ids restart at 1 in the new table. */
    (void)madvise(g->node_ann, (size_t)(GPD_SHIM_INTERN_CAP + 1) * sizeof(uint32_t), MADV_DONTNEED);
  }
  g->start_ns = gpd_clock_ns();
}

void gpd_shim__atfork_lazy(int (*start)(int wait_ms)) {
  shim_lazy_start_fn = start;
  atomic_store(&shim_lazy, 1);
}

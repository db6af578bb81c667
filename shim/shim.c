/* shim.c - libgpuprof.so's process state: whether the shim is active
 * (and the fork child's lazy start of its connection), ids and
 * announcement words, correlation ids, the push entry points of shim.h,
 * the list of built back ends.  The constructor, destructor and fork
 * handlers are main.c's; the region's attach is attach.c's, the back
 * ends' STATUS records status.c's, GPU binaries conn.c's.
 *
 * This file is below the back ends and the connection: it calls neither.
 * Vendor back ends are reached only through their ops tables (backends.h),
 * which main.c registers here at start (gpd_shim__backends_register); the
 * fork child's lazy connection start is the function main.c hands to
 * gpd_shim__atfork_lazy.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "backends.h"
#include "gpuprof/clock.h"
#include "gpuprof/log.h"
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

GPD_EXPORT int gpd_shim_push_invoke(uint64_t corr, uint32_t node, unsigned api, unsigned op,
                                    uint64_t ts, unsigned flags) {
  if (!gpd_shim_active())
    return -ENOTCONN;
  if (node == 0 || corr == 0)
    return -EINVAL; /* the daemon rejects node 0: never push it */
  gpd_rec_invoke_t r;
  memset(&r, 0, sizeof r);
  r.h.type = GPD_REC_INVOKE;
  r.h.version = GPD_REC_VERSION;
  r.h.nslots = GPD_REC_NSLOTS(r);
  r.h.flags = (uint8_t)flags;
  r.api = (uint8_t)api;
  r.op = (uint8_t)op;
  r.node = node;
  r.corr = corr;
  r.ts = ts;
  return gpd_thread_push(&r, sizeof r);
}

static int activity_prepare(gpd_rec_activity_t *a) {
  if (!gpd_shim_active())
    return -ENOTCONN;
  if (!a || a->corr == 0)
    return -EINVAL;
  uint8_t flags = a->h.flags; /* back ends may set GPD_ACTIVITY_HOST_TIME */
  memset(&a->h, 0, sizeof a->h);
  a->h.type = GPD_REC_ACTIVITY;
  a->h.version = GPD_REC_VERSION;
  a->h.nslots = sizeof *a / GPD_SLOT_SIZE;
  a->h.flags = flags;
  return 0;
}

GPD_EXPORT int gpd_shim_push_activity(gpd_rec_activity_t *a) {
  int err = activity_prepare(a);
  return err ? err : gpd_thread_push(a, sizeof *a);
}

int gpd_shim_push_host_op(uint32_t node, gpd_rec_activity_t *a) {
  a->end = gpd_clock_ns();
  (void)gpd_shim_push_invoke(a->corr, node, a->api, a->op, a->start, 0);
  return gpd_shim_push_activity(a);
}

GPD_EXPORT int gpd_shim_push_activity_wait(gpd_rec_activity_t *a, uint64_t max_wait_ns) {
  return gpd_shim_push_activity_wait_stop(a, max_wait_ns, NULL);
}

GPD_EXPORT int gpd_shim_push_activity_wait_stop(gpd_rec_activity_t *a, uint64_t max_wait_ns,
                                                const atomic_int *stop) {
  int err = activity_prepare(a);
  return err ? err : gpd_thread_push_wait_stop(a, sizeof *a, max_wait_ns, stop);
}

/* Zero fixed record r (len bytes) of a type newer than the first daemons
 * and fill its header: 0, -ENOTCONN (no daemon) or -ENOTSUP (the region's
 * daemon does not accept the type). */
static int rec_begin(void *r, size_t len, unsigned type) {
  if (!gpd_shim_active())
    return -ENOTCONN;
  if (gpd_shim__g.region.hdr->rec_types <= type)
    return -ENOTSUP;
  memset(r, 0, len);
  gpd_rec_hdr_t *h = r;
  h->type = (uint8_t)type;
  h->version = GPD_REC_VERSION;
  h->nslots = (uint8_t)(len / GPD_SLOT_SIZE);
  return 0;
}

GPD_EXPORT int gpd_shim_push_tracewin(unsigned api, int duty, int final, uint64_t t0, uint64_t start,
                                      uint64_t end, uint64_t windows, uint64_t window_ns, uint64_t launches,
                                      uint64_t launches_in) {
  gpd_rec_tracewin_t r;
  int err = rec_begin(&r, sizeof r, GPD_REC_TRACEWIN);
  if (err)
    return err;
  r.h.flags = final ? GPD_TRACEWIN_F_FINAL : 0;
  r.api = (uint8_t)api;
  r.duty = duty ? 1 : 0;
  r.windows = windows > UINT32_MAX ? UINT32_MAX : (uint32_t)windows;
  r.t0 = t0;
  r.start = final ? end : start;
  r.end = end;
  r.window_ns = window_ns;
  r.launches = launches;
  r.launches_in = launches_in > launches ? launches : launches_in;
  return gpd_thread_push(&r, sizeof r);
}

GPD_EXPORT int gpd_shim_push_graphnode(uint64_t id, uint32_t node, uint64_t orig) {
  gpd_rec_graphnode_t r;
  int err = rec_begin(&r, sizeof r, GPD_REC_GRAPHNODE);
  if (err)
    return err;
  r.h.flags = orig ? GPD_GRAPHNODE_F_CLONE : 0;
  r.id = id;
  r.node = orig ? 0 : node;
  r.orig = orig;
  if (gpd_rec_validate(&r, sizeof r) != 0)
    return -EINVAL;
  return gpd_thread_push(&r, sizeof r);
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

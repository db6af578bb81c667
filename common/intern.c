/* intern.c - the shim's lock-free CCT intern table (intern.h).
 *
 * Open addressing, linear probing bounded to PROBE_MAX entries (beyond
 * that the table counts as full).  Entry life cycle:
 *   empty      key_ip == 0
 *   claimed    CAS key_ip 0 -> ip won; key_parent being written; id == 0
 *   pending    key_parent written, then id = n | PENDING (release)
 *   published  id = n (release), by gpd_intern_publish after the NODE
 *              record was pushed
 * A lookup that meets a claimed entry with its ip waits (bounded) for the
 * parent; one that meets its own key pending waits (bounded) for the
 * publication.  A bounded wait that runs out returns 0, like a full table
 * (the caller attributes to the deepest node it has): never a hang.
 * Call-site address 0 is not a valid key (0 marks empty): returns 0.
 */
#include "gpuprof/intern.h"

#include <errno.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>

#define PROBE_MAX 64u
#define SPIN_MAX (1u << 14) /* pause loops, then ... */
#define YIELD_MAX 256u      /* ... sched_yield()s to let a preempted creator run */
#define PENDING 0x80000000u
#define CAP_MAX (1ull << 31)

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

/* Step s of a bounded wait; 0 when the wait is over. */
static int wait_step(unsigned s) {
  if (s < SPIN_MAX) {
    cpu_relax();
    return 1;
  }
  if (s < SPIN_MAX + YIELD_MAX) {
    sched_yield(); /* rare: only a racer on a not-yet-published key */
    return 1;
  }
  return 0;
}

static inline uint64_t key_hash(uint32_t parent, uint64_t ip) {
  uint64_t x = ip ^ ((uint64_t)parent * 0x9e3779b97f4a7c15ull);
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

int gpd_intern_init(gpd_intern_t *t, uint64_t capacity) {
  memset(t, 0, sizeof *t);
  if (capacity < 2 || capacity > CAP_MAX || (capacity & (capacity - 1)))
    return -EINVAL;
  void *p = mmap(NULL, capacity * sizeof(gpd_intern_entry_t), PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    return -errno;
  t->tab = p;
  t->mask = capacity - 1;
  return 0;
}

void gpd_intern_free(gpd_intern_t *t) {
  if (t->tab)
    munmap(t->tab, (t->mask + 1) * sizeof(gpd_intern_entry_t));
  memset(t, 0, sizeof *t);
}

/* Wait until e->id != 0 (parent written).  Returns the id word or 0. */
static uint32_t wait_claimed(gpd_intern_entry_t *e) {
  for (unsigned s = 0;; s++) {
    uint32_t id = atomic_load_explicit(&e->id, memory_order_acquire);
    if (id)
      return id;
    if (!wait_step(s))
      break;
  }
  return 0;
}

static uint32_t wait_published(gpd_intern_entry_t *e) {
  for (unsigned s = 0;; s++) {
    uint32_t id = atomic_load_explicit(&e->id, memory_order_acquire);
    if (!(id & PENDING))
      return id;
    if (!wait_step(s))
      break;
  }
  return 0;
}

static uint32_t intern_full(gpd_intern_t *t) {
  atomic_fetch_add_explicit(&t->full_fails, 1, memory_order_relaxed);
  return 0;
}

uint32_t gpd_intern_get(gpd_intern_t *t, uint32_t parent, uint64_t ip, int *is_new) {
  uint64_t h = key_hash(parent, ip);
  unsigned probes = t->mask + 1 < PROBE_MAX ? (unsigned)(t->mask + 1) : PROBE_MAX;
  if (is_new)
    *is_new = 0;
  if (ip == 0)
    return 0;
  for (unsigned i = 0; i < probes; i++) {
    gpd_intern_entry_t *e = &t->tab[(h + i) & t->mask];
    uint64_t k = atomic_load_explicit(&e->key_ip, memory_order_acquire);
    if (k == 0) {
      if (atomic_compare_exchange_strong_explicit(&e->key_ip, &k, ip, memory_order_acq_rel,
                                                  memory_order_acquire)) {
        uint32_t id = atomic_fetch_add_explicit(&t->next_id, 1, memory_order_relaxed) + 1;
        atomic_store_explicit(&e->key_parent, parent, memory_order_relaxed);
        atomic_store_explicit(&e->id, id | PENDING, memory_order_release);
        if (is_new)
          *is_new = 1;
        return id;
      }
      /* lost the race: k now holds the winner's ip */
    }
    if (k != ip)
      continue;
    uint32_t idw = wait_claimed(e);
    if (!idw)
      return intern_full(t);
    if (atomic_load_explicit(&e->key_parent, memory_order_relaxed) != parent)
      continue;
    if (idw & PENDING)
      idw = wait_published(e);
    return idw ? idw : intern_full(t);
  }
  return intern_full(t);
}

void gpd_intern_publish(gpd_intern_t *t, uint32_t parent, uint64_t ip, uint32_t id) {
  uint64_t h = key_hash(parent, ip);
  unsigned probes = t->mask + 1 < PROBE_MAX ? (unsigned)(t->mask + 1) : PROBE_MAX;
  if (ip == 0 || id == 0)
    return;
  for (unsigned i = 0; i < probes; i++) {
    gpd_intern_entry_t *e = &t->tab[(h + i) & t->mask];
    if (atomic_load_explicit(&e->key_ip, memory_order_relaxed) == ip &&
        atomic_load_explicit(&e->id, memory_order_relaxed) == (id | PENDING)) {
      atomic_store_explicit(&e->id, id, memory_order_release);
      return;
    }
  }
}

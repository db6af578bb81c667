/* intern.c - the shim's lock-free CCT intern table (intern.h).
 *
 * Open addressing, linear probing bounded to PROBE_MAX entries (beyond
 * that the table counts as full).  Entry life cycle:
 *   empty      key_ip == 0
 *   filling    CAS key_ip 0 -> ip won; key_parent being written; id == 0
 *   complete   key_parent written, then id = n (release)
 * The filling window is a few instructions long, but the thread in it can
 * be preempted, or be interrupted by a signal handler that captures on the
 * same thread (which then waits on itself).  A lookup that meets a filling
 * entry with its ip waits for it: spins first, then sched_yield()s (to let
 * a preempted filler run), for at most t->busy_wait_ns; then it
 * passes the entry over and probes on.  Passing over is always correct:
 * if the entry was for our key we insert a second entry for it (counted
 * in busy_skips), else it was someone else's key anyway.
 * Call-site key 0 is not valid (0 marks empty).
 */
#include "gpuprof/intern.h"

#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define PROBE_MAX 64u
#define SPIN_FIRST 1024u /* pause loops before the clock is read */
#define CAP_MAX (1ull << 31)

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts); /* vDSO; async-signal-safe */
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
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
  t->busy_wait_ns = GPD_INTERN_BUSY_WAIT_NS;
  return 0;
}

void gpd_intern_free(gpd_intern_t *t) {
  if (t->tab)
    munmap(t->tab, (t->mask + 1) * sizeof(gpd_intern_entry_t));
  memset(t, 0, sizeof *t);
}

/* Wait (bounded) until a filling entry is complete.  Its id, or 0 when
 * the filler did not finish within GPD_INTERN_BUSY_WAIT_NS. */
static uint32_t wait_complete(const gpd_intern_t *t, gpd_intern_entry_t *e) {
  uint64_t deadline = 0;
  for (unsigned s = 0;; s++) {
    uint32_t id = atomic_load_explicit(&e->id, memory_order_acquire);
    if (id)
      return id;
    if (s < SPIN_FIRST) {
      cpu_relax();
      continue;
    }
    uint64_t now = now_ns();
    if (!deadline)
      deadline = now + t->busy_wait_ns;
    else if (now >= deadline)
      return 0;
    sched_yield();
  }
}

static unsigned probe_count(const gpd_intern_t *t) {
  return t->mask + 1 < PROBE_MAX ? (unsigned)(t->mask + 1) : PROBE_MAX;
}

int gpd_intern_get(gpd_intern_t *t, uint32_t parent, uint64_t ip, uint32_t *id, int *is_new) {
  uint64_t h = key_hash(parent, ip);
  unsigned probes = probe_count(t), skipped = 0;
  if (is_new)
    *is_new = 0;
  *id = 0;
  if (ip == 0)
    return -EINVAL;
  for (unsigned i = 0; i < probes; i++) {
    gpd_intern_entry_t *e = &t->tab[(h + i) & t->mask];
    uint64_t k = atomic_load_explicit(&e->key_ip, memory_order_acquire);
    if (k == 0) {
      if (atomic_compare_exchange_strong_explicit(&e->key_ip, &k, ip, memory_order_acq_rel,
                                                  memory_order_acquire)) {
        uint32_t n = atomic_fetch_add_explicit(&t->next_id, 1, memory_order_relaxed) + 1;
        atomic_store_explicit(&e->key_parent, parent, memory_order_relaxed);
        atomic_store_explicit(&e->id, n, memory_order_release);
        if (is_new)
          *is_new = 1;
        if (skipped)
          atomic_fetch_add_explicit(&t->busy_skips, 1, memory_order_relaxed);
        *id = n;
        return 0;
      }
      /* lost the race: k now holds the winner's ip */
    }
    if (k != ip)
      continue;
    uint32_t n = wait_complete(t, e);
    if (!n) {
      skipped++; /* filler stalled: pass over (see the file comment) */
      continue;
    }
    if (atomic_load_explicit(&e->key_parent, memory_order_relaxed) != parent)
      continue;
    *id = n;
    return 0;
  }
  if (skipped) {
    atomic_fetch_add_explicit(&t->busy_fails, 1, memory_order_relaxed);
    return -EBUSY;
  }
  atomic_fetch_add_explicit(&t->full_fails, 1, memory_order_relaxed);
  return -ENOSPC;
}

int gpd_intern_find(const gpd_intern_t *t, uint32_t parent, uint64_t ip, uint32_t *id) {
  uint64_t h = key_hash(parent, ip);
  unsigned probes = probe_count(t);
  *id = 0;
  if (ip == 0)
    return -EINVAL;
  for (unsigned i = 0; i < probes; i++) {
    gpd_intern_entry_t *e = &t->tab[(h + i) & t->mask];
    uint64_t k = atomic_load_explicit(&e->key_ip, memory_order_acquire);
    if (k == 0)
      return -ENOENT;
    if (k != ip)
      continue;
    uint32_t n = atomic_load_explicit(&e->id, memory_order_acquire);
    if (n && atomic_load_explicit(&e->key_parent, memory_order_relaxed) == parent) {
      *id = n;
      return 0;
    }
  }
  return -ENOENT;
}

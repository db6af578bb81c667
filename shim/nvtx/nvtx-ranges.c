/* nvtx-ranges.c - each thread's open NVTX ranges, and their splice into
 * the calling contexts it captures (nvtx.h, docs/NVTX.md).
 *
 * A thread's ranges are kept in open order (outermost first) in `ord`,
 * indices into fixed storage `r` (a range is ~2.3 KB with its push site):
 * a pop removes the innermost push of its domain, an end (from any
 * thread) removes a started range wherever it is.  The state is mapped
 * once per thread, at its first range (mmap: pages are touched as ranges
 * nest), and unmapped at thread exit (a pthread key's destructor, which
 * also frees the thread's started ranges' slots).
 *
 * Started ranges (nvtxRangeStart*) can end on another thread: their ids
 * live in a process-wide slot table (GPD_NVTX_STARTS words: the id while
 * open, 0 free).  nvtxRangeEnd clears the word with one CAS; the thread
 * that started the range sees the word change at its next capture
 * (gpd_nvtx_key_slow) or range call and drops the range.  An id is
 * (generation << 16) | (slot + 1): an id ended twice, or ended after its
 * slot was reused, matches nothing.
 *
 * Depth: GPD_NVTX_DEPTH ranges per thread are kept; pushes beyond are
 * counted (per domain) and popped first, so a deep stack loses no
 * operation (they stay under the deepest kept range) and its pops stay
 * balanced.  Once a thread is over the depth, new pushes are not kept
 * until those counted ones are popped (a kept push newer than a counted
 * one would be popped in its place).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>

#include "gpuprof/hash.h"
#include "internal.h"
#include "module.h"
#include "nvtx-internal.h"

/** Keys of a push site kept (root first): the path's outermost frames,
 *  where it meets the operations' paths. */
#define NVTX_SITE_MAX GPD_CAPTURE_MAX_DEPTH

typedef struct nvtx_range_s {
  uint8_t start;   /* 1: started (id below), 0: pushed */
  uint8_t domain;  /* domain index (pushes: the stack it belongs to) */
  uint16_t len;    /* label bytes */
  uint32_t sid;    /* label string id (0: not interned yet) */
  uint32_t sslot;  /* its string-table slot (gpd_shim__string_again) */
  uint32_t mgen;   /* gpd_module__gen when the site was recorded */
  uint32_t nsite;  /* site keys; 0: unknown (the range goes above the op) */
  uint64_t id;     /* started: the id in the slot table */
  uint64_t hash;   /* hash(label, site) */
  uint64_t cum;    /* key of the ranges up to this one (open order) */
  char label[GPD_NVTX_LABEL_MAX];
  uintptr_t site[NVTX_SITE_MAX]; /* the push site's path, root first, return-address form */
} nvtx_range_t;

typedef struct nvtx_thread_s {
  gpd_nvtx_thread_head_t h; /* first: what capture.c reads (nvtx.h) */
  uint32_t free;            /* bit i: r[i] unused */
  uint32_t over;            /* pushes not kept (any domain) */
  uint8_t ord[GPD_NVTX_DEPTH]; /* open order: indices into r */
  uint32_t level[GPD_NVTX_DOMAINS]; /* NVTX push level per domain */
  uint32_t dover[GPD_NVTX_DOMAINS]; /* of it, pushes not kept */
  nvtx_range_t *site_to;    /* site mode: the range being pushed */
  uintptr_t merged[GPD_CAPTURE_WALK_MAX + GPD_PY_MAX + GPD_NVTX_SPLICE_MAX];
  nvtx_range_t r[GPD_NVTX_DEPTH];
} nvtx_thread_t;

__thread gpd_nvtx_thread_head_t *gpd_nvtx__self;

static _Atomic uint64_t nvtx_slots[GPD_NVTX_STARTS]; /* started ranges: id, 0 free */
static _Atomic uint64_t nvtx_gen;                    /* started-range generations */
static _Atomic uint64_t nvtx_counts[GPD_NVTX_C_N];
static pthread_key_t nvtx_key;
static pthread_once_t nvtx_once = PTHREAD_ONCE_INIT;
static int nvtx_key_ok;
/* The shim's capture (gpd_shim_capture), handed over by the back end's
 * init: what records a push site (nvtx_site).  NULL before. */
static _Atomic(gpd_nvtx_capture_fn) nvtx_capture;

void gpd_nvtx__count(int which) { atomic_fetch_add_explicit(&nvtx_counts[which], 1, memory_order_relaxed); }

/** Test hook (exported): the counters, GPD_NVTX_C_* order (n at most
 *  GPD_NVTX_C_N). */
GPD_EXPORT void gpd_shim__nvtx_counts(uint64_t *out, int n) {
  for (int i = 0; i < n && i < GPD_NVTX_C_N; i++)
    out[i] = atomic_load_explicit(&nvtx_counts[i], memory_order_relaxed);
}

/* ----------------------------------------------------------- thread state */

static void nvtx_thread_free(void *p) {
  nvtx_thread_t *t = p;
  if (!t)
    return;
  gpd_nvtx__self = NULL;
  for (uint32_t k = 0; k < t->h.nopen; k++) {
    nvtx_range_t *r = &t->r[t->ord[k]];
    uint64_t id = r->id;
    if (r->start)
      atomic_compare_exchange_strong(&nvtx_slots[(id & 0xffff) - 1], &id, 0);
  }
  munmap(t, sizeof *t);
}

static void nvtx_once_init(void) { nvtx_key_ok = pthread_key_create(&nvtx_key, nvtx_thread_free) == 0; }

void gpd_nvtx_ranges_init(gpd_nvtx_capture_fn capture) {
  atomic_store_explicit(&nvtx_capture, capture, memory_order_release);
  pthread_once(&nvtx_once, nvtx_once_init);
}

/* The calling thread's state, mapped on first use; NULL when it cannot be
 * (no key, no memory). */
static nvtx_thread_t *nvtx_self(void) {
  nvtx_thread_t *t = (nvtx_thread_t *)gpd_nvtx__self;
  if (__builtin_expect(t != NULL, 1))
    return t;
  pthread_once(&nvtx_once, nvtx_once_init);
  if (!nvtx_key_ok)
    return NULL;
  void *p = mmap(NULL, sizeof *t, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    return NULL;
  t = p;
  t->free = GPD_NVTX_DEPTH == 32 ? 0xffffffffu : (1u << GPD_NVTX_DEPTH) - 1;
  if (pthread_setspecific(nvtx_key, t) != 0) {
    munmap(t, sizeof *t);
    return NULL;
  }
  gpd_nvtx__self = &t->h;
  return t;
}

/* Recompute the cumulative keys from open position k on. */
static void nvtx_rekey(nvtx_thread_t *t, uint32_t k) {
  uint64_t c = k ? t->r[t->ord[k - 1]].cum : 0x6a09e667f3bcc909ull;
  for (; k < t->h.nopen; k++) {
    nvtx_range_t *r = &t->r[t->ord[k]];
    c = (c ^ r->hash) * 0x100000001b3ull + 0x9e3779b97f4a7c15ull;
    r->cum = c;
  }
  /* never 0 (no range) nor GPD_NVTX_KEY_SITE */
  t->h.key = t->h.nopen ? (c << 2) | 2 : 0;
}

/* Remove the range at open position k. */
static void nvtx_remove(nvtx_thread_t *t, uint32_t k) {
  uint8_t i = t->ord[k];
  if (t->r[i].start)
    t->h.nstart--;
  memmove(&t->ord[k], &t->ord[k + 1], t->h.nopen - k - 1);
  t->h.nopen--;
  t->free |= 1u << i;
  nvtx_rekey(t, k);
}

/* Drop the started ranges that were ended (by any thread). */
static void nvtx_prune(nvtx_thread_t *t) {
  for (uint32_t k = t->h.nopen; k-- > 0;) {
    nvtx_range_t *r = &t->r[t->ord[k]];
    if (r->start && atomic_load_explicit(&nvtx_slots[(r->id & 0xffff) - 1], memory_order_acquire) != r->id)
      nvtx_remove(t, k);
  }
}

uint64_t gpd_nvtx_key_slow(gpd_nvtx_thread_head_t *h) {
  nvtx_prune((nvtx_thread_t *)h);
  return h->key;
}

/* ------------------------------------------------------------ open, close */

/* Record the calling thread's current path as r's push site: a capture in
 * site mode (gpd_nvtx_splice copies the path and nothing is interned). */
static void nvtx_site(nvtx_thread_t *t, nvtx_range_t *r) {
  r->nsite = 0;
  r->mgen = atomic_load_explicit(&gpd_module__gen, memory_order_acquire);
  int prev = gpd_thread_enter();
  gpd_nvtx_capture_fn capture = atomic_load_explicit(&nvtx_capture, memory_order_acquire);
  if (!prev && capture) {
    t->site_to = r;
    t->h.site = 1;
    (void)capture();
    t->h.site = 0;
    t->site_to = NULL;
  }
  gpd_thread_leave(prev);
  if (!r->nsite)
    gpd_nvtx__count(GPD_NVTX_C_NOSITE);
  uint64_t h = gpd_hash64(r->label, r->len, r->nsite);
  for (uint32_t j = 0; j < r->nsite; j++)
    h = (h ^ r->site[j]) * 0x100000001b3ull;
  r->hash = h;
}

/* A free slot for a started range: its id, or 0 when none is free. */
static uint64_t nvtx_slot_claim(void) {
  static _Atomic uint32_t hint;
  uint64_t gen = atomic_fetch_add_explicit(&nvtx_gen, 1, memory_order_relaxed) + 1;
  uint32_t s0 = atomic_fetch_add_explicit(&hint, 1, memory_order_relaxed);
  for (uint32_t k = 0; k < GPD_NVTX_STARTS; k++) {
    uint32_t s = (s0 + k) % GPD_NVTX_STARTS;
    uint64_t id = (gen << 16) | (s + 1), zero = 0;
    if (atomic_load_explicit(&nvtx_slots[s], memory_order_relaxed) == 0 &&
        atomic_compare_exchange_strong(&nvtx_slots[s], &zero, id))
      return id;
  }
  return 0;
}

int gpd_nvtx_range_open(unsigned d, int start, const char *label, size_t len, uint64_t *id) {
  if (id)
    *id = 0;
  if (d >= GPD_NVTX_DOMAINS)
    d = GPD_NVTX_DOMAINS - 1;
  nvtx_thread_t *t = nvtx_self();
  if (!t) {
    gpd_nvtx__count(GPD_NVTX_C_DEEP);
    return start ? 0 : -1;
  }
  int level = start ? 0 : (int)t->level[d]++;
  if (t->h.nstart)
    nvtx_prune(t);
  if (t->h.nopen >= GPD_NVTX_DEPTH || (!start && t->over)) {
    gpd_nvtx__count(GPD_NVTX_C_DEEP);
    if (!start) {
      t->over++;
      t->dover[d]++;
    }
    return level;
  }
  uint64_t rid = 0;
  if (start && (rid = nvtx_slot_claim()) == 0) {
    gpd_nvtx__count(GPD_NVTX_C_STARTS_FULL);
    return 0;
  }
  uint32_t i = (uint32_t)__builtin_ctz(t->free);
  nvtx_range_t *r = &t->r[i];
  r->start = (uint8_t)(start != 0);
  r->domain = (uint8_t)d;
  if (len >= GPD_NVTX_LABEL_MAX)
    len = GPD_NVTX_LABEL_MAX - 1;
  memcpy(r->label, label, len);
  r->label[len] = '\0';
  r->len = (uint16_t)len;
  r->sslot = 0;
  r->sid = gpd_shim__string_slot(r->label, GPD_STR_OTHER, &r->sslot);
  r->id = rid;
  nvtx_site(t, r);
  /* published after it is complete: the splice reads ord[0..nopen) */
  t->free &= ~(1u << i);
  t->ord[t->h.nopen] = (uint8_t)i;
  t->h.nopen++;
  t->h.nstart += r->start;
  nvtx_rekey(t, t->h.nopen - 1);
  gpd_nvtx__count(GPD_NVTX_C_PUSH);
  if (id)
    *id = rid;
  return level;
}

int gpd_nvtx_range_pop(unsigned d) {
  if (d >= GPD_NVTX_DOMAINS)
    d = GPD_NVTX_DOMAINS - 1;
  nvtx_thread_t *t = (nvtx_thread_t *)gpd_nvtx__self;
  if (!t || t->level[d] == 0) {
    gpd_nvtx__count(GPD_NVTX_C_UNBALANCED);
    return -1;
  }
  int level = (int)--t->level[d];
  if (t->dover[d]) {
    t->dover[d]--;
    t->over--;
    return level;
  }
  for (uint32_t k = t->h.nopen; k-- > 0;) {
    nvtx_range_t *r = &t->r[t->ord[k]];
    if (!r->start && r->domain == d) {
      nvtx_remove(t, k);
      break;
    }
  }
  if (t->h.nstart)
    nvtx_prune(t);
  return level;
}

void gpd_nvtx_range_end(uint64_t id) {
  if (id == 0)
    return; /* a start that was not kept (counted then) */
  uint64_t s = id & 0xffff;
  uint64_t want = id;
  if (s == 0 || s > GPD_NVTX_STARTS ||
      !atomic_compare_exchange_strong(&nvtx_slots[s - 1], &want, 0)) {
    gpd_nvtx__count(GPD_NVTX_C_END_UNKNOWN);
    return;
  }
  nvtx_thread_t *t = (nvtx_thread_t *)gpd_nvtx__self;
  if (t && t->h.nstart)
    nvtx_prune(t); /* ours: gone at once */
}

void gpd_nvtx_ranges_atfork_child(void) {
  /* the other threads are gone: their ranges' slots are freed (their
   * states stay mapped, unreachable: the child never unmaps them) */
  for (uint32_t s = 0; s < GPD_NVTX_STARTS; s++)
    atomic_store_explicit(&nvtx_slots[s], 0, memory_order_relaxed);
  nvtx_thread_t *t = (nvtx_thread_t *)gpd_nvtx__self;
  if (!t)
    return;
  for (uint32_t k = 0; k < t->h.nopen; k++) {
    nvtx_range_t *r = &t->r[t->ord[k]];
    r->sid = 0; /* the child's string table is new */
    r->sslot = 0;
    if (r->start)
      atomic_store_explicit(&nvtx_slots[(r->id & 0xffff) - 1], r->id, memory_order_relaxed);
  }
}

/* -------------------------------------------------------------- splice */

/* The label key of r (+ 1: return-address form), its string announced in
 * this epoch; 0 when it cannot be (not active, string table full). */
static uintptr_t nvtx_label_ip(nvtx_range_t *r) {
  uint32_t sid = r->sslot ? gpd_shim__string_again(r->sslot) : 0;
  if (!sid) {
    sid = gpd_shim__string_slot(r->label, GPD_STR_OTHER, &r->sslot);
    if (!sid)
      return 0;
  }
  r->sid = sid;
  return (uintptr_t)(GPD_LABEL_KEY_TAG << 48 | sid) + 1;
}

int gpd_nvtx_splice(const uintptr_t *ips, int n, int max, const uintptr_t **out) {
  nvtx_thread_t *t = (nvtx_thread_t *)gpd_nvtx__self;
  *out = ips;
  if (!t || n <= 0)
    return n;
  if (t->h.site) {
    nvtx_range_t *r = t->site_to;
    if (!r)
      return 0;
    uint32_t m = (uint32_t)n < NVTX_SITE_MAX ? (uint32_t)n : NVTX_SITE_MAX;
    for (uint32_t j = 0; j < m; j++)
      r->site[j] = ips[n - 1 - j];
    r->nsite = m;
    return 0;
  }
  uint32_t nr = t->h.nopen;
  int cap = (int)(sizeof t->merged / sizeof t->merged[0]);
  if (max > cap)
    max = cap;
  if (nr == 0 || n + (int)nr > max)
    return n;
  uint32_t mgen = atomic_load_explicit(&gpd_module__gen, memory_order_acquire);
  /* e[k]: the label of open range k goes above root-first frame e[k] (n:
   * directly above the operation); never above an outer range's */
  uint32_t e[GPD_NVTX_DEPTH];
  uintptr_t lab[GPD_NVTX_DEPTH];
  uint32_t prev = 0;
  for (uint32_t k = 0; k < nr; k++) {
    nvtx_range_t *r = &t->r[t->ord[k]];
    uint32_t L = (uint32_t)n;
    if (r->nsite && r->mgen == mgen) {
      /* the site's innermost frame is the push call itself: never shared */
      uint32_t lim = r->nsite - 1 < (uint32_t)n ? r->nsite - 1 : (uint32_t)n;
      L = 0;
      while (L < lim && r->site[L] == ips[n - 1 - L])
        L++;
    }
    e[k] = L > prev ? L : prev;
    prev = e[k];
    lab[k] = nvtx_label_ip(r);
  }
  /* root first, written from the end of merged (innermost first) */
  int total = n;
  for (uint32_t k = 0; k < nr; k++)
    total += lab[k] != 0;
  int pos = total - 1;
  uint32_t k = 0;
  for (uint32_t q = 0; q <= (uint32_t)n; q++) {
    for (; k < nr && e[k] == q; k++)
      if (lab[k])
        t->merged[pos--] = lab[k];
    if (q < (uint32_t)n)
      t->merged[pos--] = ips[n - 1 - q];
  }
  *out = t->merged;
  return total;
}

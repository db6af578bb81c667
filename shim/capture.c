/* capture.c - calling-context capture: unwind, drop shim/vendor frames,
 * intern the path root-first (memoized per thread), announce new nodes and
 * their load modules.
 *
 * Steady state (same path as the previous call on this thread, or a path
 * that differs only near the leaf): one unw_backtrace, a compare of the
 * call-site arrays, no interning and no record for the common prefix.
 *
 * Announcement: every node, module and string has a state word that holds
 * the epoch it was announced in (gpd_shim__ann_claim).  A NODE (or MODULE)
 * push that fails (ring full) leaves the word stale, and the next capture
 * that walks over the node announces it again; a hand-back bumps the epoch
 * so that a restarted daemon gets the announcements it never saw.  The
 * per-thread memo remembers how much of its path is known announced, so
 * the check costs nothing in the steady state.
 *
 * Modules: a bounded, append-only table filled from dl_iterate_phdr; it is
 * re-read (under a lock, slow path) when an instruction pointer falls
 * outside all known modules and the loader's add/sub counters moved.
 * MODULE.base is the load bias (dlpi_addr), so NODE.offset = ip - 1 - bias
 * is the ELF virtual address of the call site, what DWARF readers want.
 */
#define UNW_LOCAL_ONLY
#include <dlfcn.h>
#include <pthread.h>
#include <elf.h>
#include <errno.h>
#include <libunwind.h>
#include <limits.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpuprof/log.h"
#include "internal.h"

#define CAPTURE_MAX_MODULES 4096
#define CAPTURE_MAX_SKIP 64
#define CAPTURE_MAX_VENDORS 32
#define CAPTURE_PATH_MAX 4096

typedef struct module_s {
  uintptr_t lo, hi;  /* [lo, hi) covers the PT_LOAD segments */
  uintptr_t bias;    /* dlpi_addr */
  uint32_t id;
  _Atomic uint32_t ann;
  uint8_t build_id[20];
  uint8_t build_id_len;
  uint8_t vendor;
  char *path;
} module_t;

static module_t modules[CAPTURE_MAX_MODULES];
static _Atomic uint32_t nmodules;
static pthread_mutex_t modules_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long long dl_seen_adds, dl_seen_subs;

/* Innermost-frame skip ranges: the shim itself + vendor modules. */
typedef struct range_s {
  uintptr_t lo, hi;
} range_t;
static range_t skip[CAPTURE_MAX_SKIP];
static _Atomic uint32_t nskip;

static char vendors[CAPTURE_MAX_VENDORS][64];
static uint32_t nvendors;
static uintptr_t shim_anchor; /* an address inside libgpuprof.so */

static int capture_log_once_full;

/* ------------------------------------------------------------- modules */

static void module_build_id(struct dl_phdr_info *info, module_t *m) {
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_NOTE)
      continue;
    const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
    const uint8_t *end = p + ph->p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
      size_t namesz = (nh->n_namesz + 3u) & ~3u, descsz = (nh->n_descsz + 3u) & ~3u;
      const uint8_t *name = p + sizeof *nh, *desc = name + namesz;
      if (desc + descsz > end)
        break;
      if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && memcmp(name, "GNU", 4) == 0) {
        size_t n = nh->n_descsz < sizeof m->build_id ? nh->n_descsz : sizeof m->build_id;
        memcpy(m->build_id, desc, n);
        m->build_id_len = (uint8_t)n;
        return;
      }
      p = desc + descsz;
    }
  }
}

static int module_is_vendor(const char *path) {
  for (uint32_t i = 0; i < nvendors; i++)
    if (strstr(path, vendors[i]))
      return 1;
  return 0;
}

static void skip_add(uintptr_t lo, uintptr_t hi) {
  uint32_t n = atomic_load(&nskip);
  for (uint32_t i = 0; i < n; i++)
    if (skip[i].lo == lo && skip[i].hi == hi)
      return;
  if (n >= CAPTURE_MAX_SKIP)
    return;
  skip[n].lo = lo;
  skip[n].hi = hi;
  atomic_store_explicit(&nskip, n + 1, memory_order_release);
}

static int module_scan_cb(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  (void)arg;
  dl_seen_adds = info->dlpi_adds;
  dl_seen_subs = info->dlpi_subs;
  uintptr_t lo = UINTPTR_MAX, hi = 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD)
      continue;
    uintptr_t a = info->dlpi_addr + ph->p_vaddr, b = a + ph->p_memsz;
    if (a < lo)
      lo = a;
    if (b > hi)
      hi = b;
  }
  if (lo >= hi)
    return 0;
  char exe[CAPTURE_PATH_MAX];
  const char *path = info->dlpi_name;
  if (!path || !*path) {
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = '\0';
    path = exe;
  }
  uint32_t n = atomic_load(&nmodules);
  for (uint32_t i = 0; i < n; i++)
    if (modules[i].lo == lo && modules[i].hi == hi && modules[i].bias == info->dlpi_addr &&
        strcmp(modules[i].path, path) == 0)
      return 0;
  if (n >= CAPTURE_MAX_MODULES)
    return 1;
  module_t *m = &modules[n];
  memset(m, 0, sizeof *m);
  m->path = strdup(path);
  if (!m->path)
    return 1;
  m->lo = lo;
  m->hi = hi;
  m->bias = info->dlpi_addr;
  m->id = gpd_shim__id_next();
  module_build_id(info, m);
  m->vendor = (uint8_t)module_is_vendor(path);
  if (m->vendor || (shim_anchor >= lo && shim_anchor < hi))
    skip_add(lo, hi);
  atomic_store_explicit(&nmodules, n + 1, memory_order_release);
  return 0;
}

static void modules_refresh_locked(void) { dl_iterate_phdr(module_scan_cb, NULL); }

static int dl_counters_cb(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  unsigned long long *c = arg;
  c[0] = info->dlpi_adds;
  c[1] = info->dlpi_subs;
  return 1;
}

static module_t *module_find(uintptr_t ip) {
  uint32_t n = atomic_load_explicit(&nmodules, memory_order_acquire);
  for (uint32_t i = n; i-- > 0;)
    if (ip >= modules[i].lo && ip < modules[i].hi)
      return &modules[i];
  return NULL;
}

static module_t *module_lookup(uintptr_t ip) {
  module_t *m = module_find(ip);
  if (m)
    return m;
  unsigned long long c[2] = {0, 0};
  dl_iterate_phdr(dl_counters_cb, c);
  pthread_mutex_lock(&modules_lock);
  if (c[0] != dl_seen_adds || c[1] != dl_seen_subs)
    modules_refresh_locked();
  pthread_mutex_unlock(&modules_lock);
  return module_find(ip);
}

static int module_announce(module_t *m, uint32_t epoch) {
  uint32_t old;
  int c = gpd_shim__ann_claim(&m->ann, epoch, &old);
  if (c != 0)
    return c == 1;
  size_t len = strlen(m->path);
  if (len > CAPTURE_PATH_MAX)
    len = CAPTURE_PATH_MAX;
  _Alignas(8) uint8_t buf[sizeof(gpd_rec_module_t) + CAPTURE_PATH_MAX];
  gpd_rec_module_t *r = (gpd_rec_module_t *)buf;
  memset(r, 0, sizeof *r);
  r->h.type = GPD_REC_MODULE;
  r->h.version = GPD_REC_VERSION;
  r->h.nslots = (uint8_t)gpd_rec_slots_for(sizeof *r, len);
  r->h.len = (uint32_t)len;
  r->id = m->id;
  r->build_id_len = m->build_id_len;
  r->base = m->bias;
  r->size = m->hi - m->bias;
  memcpy(r->build_id, m->build_id, m->build_id_len);
  memcpy(r->path, m->path, len);
  int ok = gpd_thread_push(r, sizeof *r + len) == 0;
  gpd_shim__ann_done(&m->ann, epoch, old, ok);
  return ok;
}

uint32_t gpd_capture_module_of(uintptr_t ip, uint64_t *base, int *ok) {
  module_t *m = module_lookup(ip);
  *ok = 1;
  if (!m) {
    *base = 0;
    return 0;
  }
  *base = m->bias;
  *ok = module_announce(m, atomic_load(&gpd_shim__g.epoch));
  return m->id;
}

GPD_EXPORT void gpd_shim_vendor_module(const char *path_substring) {
  if (!path_substring || !*path_substring)
    return;
  pthread_mutex_lock(&modules_lock);
  int dup = 0;
  for (uint32_t i = 0; i < nvendors; i++)
    dup |= strcmp(vendors[i], path_substring) == 0;
  if (!dup && nvendors < CAPTURE_MAX_VENDORS) {
    snprintf(vendors[nvendors++], sizeof vendors[0], "%s", path_substring);
    uint32_t n = atomic_load(&nmodules);
    for (uint32_t i = 0; i < n; i++)
      if (!modules[i].vendor && module_is_vendor(modules[i].path)) {
        modules[i].vendor = 1;
        skip_add(modules[i].lo, modules[i].hi);
      }
  }
  pthread_mutex_unlock(&modules_lock);
}

void gpd_capture_init(void) {
  shim_anchor = (uintptr_t)&gpd_capture_init;
  /* libunwind's default global cache takes a lock per unwind; a per-thread
   * cache makes unw_backtrace lock-free on the application's thread. */
  unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
  pthread_mutex_lock(&modules_lock);
  modules_refresh_locked();
  pthread_mutex_unlock(&modules_lock);
}

void gpd_capture_atfork_child(void) {
  pthread_mutex_init(&modules_lock, NULL);
  /* New process: new ids (the counter restarted), nothing announced. */
  uint32_t n = atomic_load(&nmodules);
  for (uint32_t i = 0; i < n; i++) {
    modules[i].id = gpd_shim__id_next();
    atomic_store(&modules[i].ann, 0);
  }
}

/* --------------------------------------------------------------- nodes */

static inline int in_skip(uintptr_t ip) {
  uint32_t n = atomic_load_explicit(&nskip, memory_order_acquire);
  for (uint32_t i = 0; i < n; i++)
    if (ip >= skip[i].lo && ip < skip[i].hi)
      return 1;
  return 0;
}

/* Make sure node id (child of parent at ip) is announced in epoch.
 * 1 = announced (by us or earlier), 0 = not (yet). */
static int node_ensure(uint32_t id, uint32_t parent, uintptr_t ip, uint32_t epoch) {
  if (id > GPD_SHIM_INTERN_CAP)
    return 0;
  _Atomic uint32_t *a = &gpd_shim__g.node_ann[id];
  uint32_t old;
  int c = gpd_shim__ann_claim(a, epoch, &old);
  if (c != 0)
    return c == 1;
  gpd_rec_node_t r;
  memset(&r, 0, sizeof r);
  uint64_t base = 0;
  int ok;
  r.module = gpd_capture_module_of(ip, &base, &ok);
  if (ok) {
    r.h.type = GPD_REC_NODE;
    r.h.version = GPD_REC_VERSION;
    r.h.nslots = 1;
    r.id = id;
    r.parent = parent;
    r.offset = ip - base;
    ok = gpd_thread_push(&r, sizeof r) == 0;
  }
  gpd_shim__ann_done(a, epoch, old, ok);
  return ok;
}

static void node_count(uint32_t id) {
  _Atomic uint32_t *c = &gpd_shim__g.region.hdr->next_node;
  uint32_t cur = atomic_load_explicit(c, memory_order_relaxed);
  while (cur < id &&
         !atomic_compare_exchange_weak_explicit(c, &cur, id, memory_order_relaxed, memory_order_relaxed))
    ;
}

/* ------------------------------------------------------ unwinding */

/* Verified replay.  A full unwind (libunwind cursor) records, per frame,
 * the return address, the stack pointer and the frame-base register
 * (%rbp) with the stack slot it was restored from.  The next capture on
 * the thread starts from the same state if gpd_shim_capture's own frame
 * has the same (ip, sp, rbp); then frame j+1 is the recorded one exactly
 * when the stack still holds the recorded return address at sp[j+1] - 8
 * and the recorded %rbp at bploc[j+1]: the unwind rule of a frame depends
 * only on its ip, and its CFA on sp and rbp, all equal by induction, so
 * the unwinder would read the same slots.  Every frame up to the root is
 * checked (two loads and compares per frame, no DWARF lookup); stopping
 * at the first unchanged (sp, return address) pair instead would be
 * wrong: the same inner frames are reached from two callers whose frames
 * have the same size.  Reads stay inside this thread's stack, above the
 * current stack pointer.  Not covered: a frame whose CFA rule reads
 * memory other than its own frame (gcc's DRAP stack realignment computes
 * CFA = *(rbp - 8)); see docs/SHIM.md. */

static void capture_stack_bounds(gpd_capture_memo_t *m) {
  pthread_attr_t attr;
  void *addr = NULL;
  size_t size = 0;
  m->stack_state = -1;
  if (pthread_getattr_np(pthread_self(), &attr) != 0)
    return;
  if (pthread_attr_getstack(&attr, &addr, &size) == 0 && addr && size) {
    m->stack_lo = (uintptr_t)addr;
    m->stack_hi = (uintptr_t)addr + size;
    m->stack_state = 1;
  }
  pthread_attr_destroy(&attr);
}

/* Full unwind from frame 0 (state f_ip/f_sp/f_bp) into w. */
__attribute__((noinline)) static void capture_walk_full(gpd_capture_memo_t *m, gpd_capture_walk_t *w,
                                                         uintptr_t f_ip, uintptr_t f_sp, uintptr_t f_bp) {
  unw_context_t ctx;
  unw_cursor_t c;
  w->n = 0;
  w->ok = 0;
  w->node = 0;
  if (unw_getcontext(&ctx) != 0 || unw_init_local(&c, &ctx) != 0)
    return;
  /* Step up to gpd_shim_capture's frame (ours and libunwind's are below). */
  unw_word_t ip = 0, sp = 0, bp = 0;
  for (int i = 0; i < 8; i++) {
    if (unw_step(&c) <= 0)
      return;
    unw_get_reg(&c, UNW_REG_SP, &sp);
    if (sp >= f_sp)
      break;
  }
  unw_get_reg(&c, UNW_REG_IP, &ip);
  unw_get_reg(&c, UNW_X86_64_RBP, &bp);
  int ok = sp == f_sp && ip == f_ip && bp == f_bp;
  if (m->stack_state == 0)
    capture_stack_bounds(m);
  if (m->stack_state != 1 || f_sp < m->stack_lo || f_sp >= m->stack_hi)
    ok = 0;
  unw_save_loc_t loc;
  uintptr_t prev_loc = 0;
  if (unw_get_save_loc(&c, UNW_X86_64_RBP, &loc) == 0 && loc.type == UNW_SLT_MEMORY)
    prev_loc = loc.u.addr;
  uint32_t n = 0;
  w->ip[0] = ip;
  w->sp[0] = sp;
  w->bp[0] = bp;
  w->bploc[0] = 0;
  n = 1;
  while (n < GPD_CAPTURE_WALK_MAX && unw_step(&c) > 0) {
    unw_get_reg(&c, UNW_REG_IP, &ip);
    unw_get_reg(&c, UNW_REG_SP, &sp);
    unw_get_reg(&c, UNW_X86_64_RBP, &bp);
    w->ip[n] = ip;
    w->sp[n] = sp;
    w->bp[n] = bp;
    w->bploc[n] = 0;
    if (ok) {
      /* The return address must have come from sp - 8 (not a signal
       * frame), the stack grows up, and %rbp is either unchanged or
       * restored from a slot of the frame below. */
      if (sp <= w->sp[n - 1] || sp > m->stack_hi || unw_is_signal_frame(&c) > 0 ||
          unw_get_save_loc(&c, UNW_X86_64_RIP, &loc) != 0 || loc.type != UNW_SLT_MEMORY ||
          loc.u.addr != sp - 8 || unw_get_save_loc(&c, UNW_X86_64_RBP, &loc) != 0 ||
          loc.type != UNW_SLT_MEMORY) {
        ok = 0;
      } else if (loc.u.addr != prev_loc) {
        if (loc.u.addr < w->sp[0] || loc.u.addr + sizeof(uintptr_t) > sp)
          ok = 0;
        w->bploc[n] = loc.u.addr;
        prev_loc = loc.u.addr;
      } else if (bp != w->bp[n - 1]) {
        ok = 0;
      }
    }
    n++;
    if (ip == 0)
      break;
  }
  /* The outermost step may report ip 0 (end of stack): not a frame. */
  if (n > 1 && w->ip[n - 1] == 0)
    n--;
  w->n = n;
  w->ok = (uint32_t)ok;
}

/* Re-verify walk w against the current stack; 1 = identical. */
static inline int capture_walk_same(const gpd_capture_walk_t *w, uintptr_t f_ip, uintptr_t f_sp,
                                    uintptr_t f_bp) {
  if (!w->ok || w->sp[0] != f_sp || w->ip[0] != f_ip || w->bp[0] != f_bp)
    return 0;
  for (uint32_t j = 1; j < w->n; j++) {
    if (*(const uintptr_t *)(w->sp[j] - sizeof(uintptr_t)) != w->ip[j])
      return 0;
    if (w->bploc[j] && *(const uintptr_t *)w->bploc[j] != w->bp[j])
      return 0;
  }
  return 1;
}

/* This thread's current call stack as a recorded walk (replayed when the
 * stack is unchanged, else a full unwind into the next slot).  Needs a
 * frame pointer of its own: frame 0 = the caller's state at this call. */
__attribute__((noinline, optimize("no-omit-frame-pointer"))) static gpd_capture_walk_t *
capture_unwind(gpd_capture_memo_t *m) {
  void **fp = __builtin_frame_address(0);
  uintptr_t f_ip = (uintptr_t)__builtin_return_address(0);
  uintptr_t f_sp = (uintptr_t)(fp + 2), f_bp = (uintptr_t)fp[0];
  for (uint32_t i = 0; i < GPD_CAPTURE_WALKS; i++) {
    gpd_capture_walk_t *w = &m->walks[(m->walk_next + GPD_CAPTURE_WALKS - 1 - i) % GPD_CAPTURE_WALKS];
    if (capture_walk_same(w, f_ip, f_sp, f_bp))
      return w;
  }
  /* Miss: libunwind's fast path first (not replayable: ok = 0). */
  gpd_capture_walk_t *w = &m->walks[m->walk_next++ % GPD_CAPTURE_WALKS];
  int n = unw_backtrace((void **)w->ip, GPD_CAPTURE_WALK_MAX);
  w->n = n > 0 ? (uint32_t)n : 0;
  w->ok = 0;
  w->node = 0;
  uint64_t h = 0x9e3779b97f4a7c15ull ^ w->n;
  for (uint32_t j = 0; j < w->n; j++)
    h = (h ^ w->ip[j]) * 0x100000001b3ull;
  for (uint32_t i = 0; i < GPD_CAPTURE_SEEN; i++)
    if (m->seen[i] == h) {
      /* A stack that repeats: record a replayable walk of it. */
      capture_walk_full(m, w, f_ip, f_sp, f_bp);
      return w;
    }
  m->seen[m->seen_next++ % GPD_CAPTURE_SEEN] = h;
  return w;
}

GPD_EXPORT uint32_t gpd_shim_capture(void) {
  gpd_shim_state_t *g = &gpd_shim__g;
  if (!gpd_shim_active() || !g->intern_ok)
    return 0;
  gpd_capture_memo_t *m = gpd_thread_memo();
  if (!m)
    return 0;
  gpd_capture_walk_t *w = capture_unwind(m);
  uint32_t gen = atomic_load_explicit(&g->gen, memory_order_acquire);
  uint32_t epoch = atomic_load_explicit(&g->epoch, memory_order_acquire);
  if (w->node && w->gen == gen && w->epoch == epoch)
    return w->node; /* same stack as a recorded capture: same, announced node */
  const uintptr_t *buf = w->ip;
  int n = (int)w->n;
  int s = 0;
  while (s < n && in_skip(buf[s]))
    s++;
  int depth = n - s;
  if (depth > GPD_CAPTURE_MAX_DEPTH)
    depth = GPD_CAPTURE_MAX_DEPTH;
  if (depth <= 0)
    return 0;
  if (m->gen != gen) {
    m->gen = gen;
    m->n = 0;
    m->verified = 0;
  }
  if (m->epoch != epoch) {
    m->epoch = epoch;
    m->verified = 0;
  }
  /* Root first: path[j] = buf[s + depth - 1 - j], call site = ret - 1. */
  const uintptr_t *top = &buf[s + depth - 1];
  uint32_t k = 0, lim = m->n < (uint32_t)depth ? m->n : (uint32_t)depth;
  while (k < lim && m->ips[k] == top[-(long)k] - 1)
    k++;
  uint32_t v = m->verified < k ? m->verified : k;
  for (uint32_t j = v; j < k; j++) {
    if (!node_ensure(m->nodes[j], j ? m->nodes[j - 1] : 0, m->ips[j], epoch))
      break;
    v = j + 1;
  }
  uint32_t parent = k ? m->nodes[k - 1] : 0;
  uint32_t j = k;
  for (; j < (uint32_t)depth; j++) {
    uintptr_t ip = top[-(long)j] - 1;
    int is_new = 0;
    uint32_t id = gpd_intern_get(&g->intern, parent, ip, &is_new);
    if (!id) {
      GPD_LOG_ONCE(capture_log_once_full, GPD_LOG_WARN,
                   "calling-context table full; deeper contexts are cut");
      break;
    }
    int ok = node_ensure(id, parent, ip, epoch);
    if (is_new) {
      gpd_intern_publish(&g->intern, parent, ip, id);
      node_count(id);
    }
    if (ok && v == j)
      v = j + 1;
    m->ips[j] = ip;
    m->nodes[j] = id;
    parent = id;
  }
  m->n = j;
  m->verified = v;
  /* Replay the node only for a complete, fully announced path. */
  if (j == (uint32_t)depth && v == j) {
    w->node = parent;
    w->gen = gen;
    w->epoch = epoch;
  } else {
    w->node = 0;
  }
  return parent;
}

/* Frame-pointer walk: the cheapest possible unwinder, for the bench only
 * (needs -fno-omit-frame-pointer everywhere on the path). */
GPD_EXPORT int gpd_shim__fp_backtrace(void **buf, int max) {
  void **fp = __builtin_frame_address(0);
  int n = 0;
  while (n < max && fp) {
    buf[n++] = fp[1];
    void **next = fp[0];
    if (next <= fp || (uintptr_t)next - (uintptr_t)fp > (1u << 20))
      break;
    fp = next;
  }
  return n;
}

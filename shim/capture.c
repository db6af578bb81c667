/* capture.c - calling-context capture: unwind, cut the shim/vendor frames
 * (module.c), intern the path root-first (memoized per thread), announce
 * new nodes and their load modules.
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
 * Keys: a frame's intern key is its call site (return address - 1), with
 * the address tag of its module (module.h) in bits 48..63, so that a
 * library mapped where an unloaded one was gets new nodes.  The memo and
 * the recorded unwinds are dropped when gpd_module__gen moves (a dlclose).
 * NODE.offset = ip - 1 - bias is the ELF virtual address of the call site.
 *
 * Re-entry on one thread (a signal handler that captures while the thread
 * is inside a capture) and abandonment (a longjmp out of a capture): the
 * memo says the thread is busy and at which stack pointer.  A capture
 * that finds it busy from a deeper frame, or from another stack, is
 * nested: it touches neither the memo nor the ring (the interrupted
 * capture may be in the middle of either) and answers only from nodes
 * already interned and announced, else 0.  A capture that finds it busy
 * from the same or a shallower frame of the thread's stack knows the old
 * one was abandoned (its frame is gone) and drops the memo.  The memo is
 * updated so that it is consistent after every store (n shrinks before
 * entries are overwritten), so an abandoned update cannot mix two paths.
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
#include "module.h"
#include "nvtx/nvtx.h"

static int capture_log_once_full, capture_log_once_busy;
static _Atomic unsigned long capture_nested_n, capture_nested_declined;

/** Test hook (exported): called, when set, in the middle of a capture
 *  (after the unwind, while the thread's memo is being updated), so a
 *  test can raise a signal there deterministically. */
GPD_EXPORT void (*volatile gpd_shim__capture_hook)(void);

void gpd_capture_init(void) {
  /* libunwind's default global cache takes a lock per unwind; a per-thread
   * cache makes unw_backtrace lock-free on the application's thread. */
  unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
  gpd_module_init((uintptr_t)&gpd_capture_init);
}

void gpd_capture_atfork_child(void) { gpd_module_atfork_child(); }

uint32_t gpd_capture_module_of(uintptr_t ip, uint64_t *base, int *ok) {
  return gpd_module_of(ip, atomic_load(&gpd_shim__g.epoch), base, ok, 1);
}

/** Test hook (exported): nested captures seen / declined (see below). */
GPD_EXPORT void gpd_shim__capture_nested(unsigned long *seen, unsigned long *declined) {
  *seen = atomic_load(&capture_nested_n);
  *declined = atomic_load(&capture_nested_declined);
}

/* --------------------------------------------------------------- nodes */

/* Intern keys of labelled contexts (gpd_shim_label_node, NVTX ranges):
 * GPD_LABEL_KEY_TAG (internal.h) in the top 16 bits, the label's string
 * id below. */
#define CAPTURE_LABEL_KEY_TAG GPD_LABEL_KEY_TAG
static inline int capture_is_label_key(uint64_t k) { return (k >> 48) == CAPTURE_LABEL_KEY_TAG; }

/* Make sure node id (child of parent at ip) is announced in epoch.
 * 1 = announced (by us or earlier), 0 = not (yet). */
static int node_ensure(uint32_t id, uint32_t parent, uintptr_t ip, uint32_t epoch, int may_sync) {
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
  if (gpd_pyframes_is_key(ip)) {
    ok = gpd_pyframes_node(&r, ip) == 0; /* a Python frame (pyframes.c) */
  } else if (capture_is_label_key(ip)) {
    r.h.flags = GPD_NODE_F_LABEL; /* a labelled context (gpd_shim_label_node) */
    r.module = (uint32_t)ip;
    ok = 1;
  } else {
    r.module = gpd_module_of(ip, epoch, &base, &ok, may_sync);
    if (r.module == 0 && !may_sync) {
      /* the sampler cannot refresh the table: not announced now (so never
       * with the wrong module); the connection thread refreshes it */
      gpd_module_want(ip);
      ok = 0;
    }
  }
  if (ok) {
    r.h.type = GPD_REC_NODE;
    r.h.version = GPD_REC_VERSION;
    r.h.nslots = GPD_REC_NSLOTS(r);
    r.id = id;
    r.parent = parent;
    if (!r.h.flags)
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

/* Key of (recorded walk, this capture's Python frames) in the node cache:
 * the walk's fill id and every Python key with its activation.  0 = none
 * (a walk that cannot be replayed). */
static uint64_t capture_pykey(const gpd_capture_walk_t *w, const gpd_pyframes_thread_t *t) {
  if (!w->ok)
    return 0;
  uint64_t h = (w->id * 0x9e3779b97f4a7c15ull) ^ t->n ^ ((uint64_t)t->nact << 32);
  for (uint32_t i = 0; i < t->n; i++)
    h = (h ^ t->key[i] ^ ((uint64_t)t->act[i] << 40)) * 0x100000001b3ull;
  return h | 1;
}

/* Intern key of call site ip: the module's address tag in bits 48..63. */
static inline uint64_t capture_key(uintptr_t ip, int may_sync) {
  if (gpd_pyframes_is_key(ip) || capture_is_label_key(ip))
    return ip;
  return (uint64_t)ip | ((uint64_t)gpd_module_tag(ip, may_sync) << 48);
}

/* A capture on a thread that is inside another one (a signal handler):
 * nothing is written (memo, walks, ring, locks); the path's leaf node if
 * every node on it is already interned and announced in this epoch, else 0.
 * At most NESTED_MAX frames (a signal stack may be small); deeper: 0. */
#define NESTED_MAX 128
/* Leaf node of the path ips[0..n) (return addresses, innermost first)
 * after the cut, from interned and announced nodes only (no writes, no
 * waits: async-signal-safe); 0 if a node is missing. */
static uint32_t capture_find_path(gpd_shim_state_t *g, const uintptr_t *ips, int n) {
  uint32_t epoch = atomic_load_explicit(&g->epoch, memory_order_acquire);
  int s = gpd_module_cut(ips, n, 0);
  int depth = n - s;
  if (depth <= 0 || depth > GPD_CAPTURE_MAX_DEPTH)
    return 0;
  uint32_t parent = 0;
  for (int j = depth - 1; j >= 0; j--) {
    uintptr_t ip = ips[s + j] - 1;
    uint32_t id;
    if (gpd_intern_find(&g->intern, parent, capture_key(ip, 0), &id) != 0 || id > GPD_SHIM_INTERN_CAP ||
        atomic_load_explicit(&g->node_ann[id], memory_order_acquire) != epoch)
      return 0;
    parent = id;
  }
  return parent;
}

static uint32_t capture_nested(gpd_shim_state_t *g, int unwinding) {
  atomic_fetch_add_explicit(&capture_nested_n, 1, memory_order_relaxed);
  uintptr_t ips[NESTED_MAX];
  /* An interrupted unw_backtrace owns libunwind's per-thread cache. */
  int n = 0;
  if (!unwinding && gpd_capture_unwind_enter(0)) {
    n = unw_backtrace((void **)ips, NESTED_MAX);
    gpd_capture_unwind_leave();
  }
  uint32_t leaf = n > 0 && n < NESTED_MAX ? capture_find_path(g, ips, n) : 0;
  if (!leaf)
    atomic_fetch_add_explicit(&capture_nested_declined, 1, memory_order_relaxed);
  return leaf;
}

/* Is this thread inside a capture that is still running?  busy is set
 * with that capture's frame address and the address and value of a cookie
 * in its frame.  Ours on another stack (sigaltstack): nested.  Ours
 * deeper on the thread's stack with the cookie intact: nested (a signal
 * handler).  Otherwise that capture's frame is gone (a longjmp left it):
 * abandoned; drop what it may have left half done and go on normally. */
/* The cookie of a capture that may have been abandoned: its address lies
 * in this thread's stack above the current frame's top or inside frames
 * that reused the space (always mapped), so the read is deliberate and
 * kept out of AddressSanitizer's view (it would see a redzone of the
 * frame now there). */
__attribute__((noinline, no_sanitize_address)) static uint64_t capture_cookie_read(uintptr_t at) {
  return *(const volatile uint64_t *)at;
}

static int capture_reentered(gpd_capture_memo_t *m, uintptr_t sp) {
  if (m->stack_state == 1 && (sp < m->stack_lo || sp >= m->stack_hi))
    return 1;
  /* a live interrupted capture is an ancestor of this frame: its cookie
   * lies above this frame's frame address, never inside this frame (a
   * longjmp'd one's old cookie may: the bytes there may still hold it) */
  if (sp < m->busy_sp && m->busy_cookie_at > sp && capture_cookie_read(m->busy_cookie_at) == m->busy_cookie)
    return 1;
  m->busy = 0;
  m->path.n = 0;
  m->path.verified = 0;
  for (uint32_t i = 0; i < GPD_CAPTURE_WALKS; i++)
    m->walks[i].node = 0;
  m->scratch.node = 0;
  for (uint32_t i = 0; i < GPD_CAPTURE_PYNODES; i++)
    m->pynode[i].key = 0;
  m->abandoned++;
  return 0;
}

/* Bring path p up to the current region generation, announcement epoch
 * and module generation (dropping what no longer holds). */
static void path_sync(gpd_capture_path_t *p, uint32_t gen, uint32_t epoch, uint32_t mgen, int may_sync) {
  if (p->mgen != mgen) {
    /* A library was unloaded: addresses in the memo may belong to another
     * one now.  Refresh the module table before cutting and keying (the
     * sampler cannot: its frames in unknown modules are declined until
     * the connection thread refreshes, node_ensure). */
    if (may_sync)
      gpd_module_sync();
    p->n = 0;
    p->verified = 0;
    p->mgen = mgen;
  }
  if (p->gen != gen) {
    p->gen = gen;
    p->n = 0;
    p->verified = 0;
  }
  if (p->epoch != epoch) {
    p->epoch = epoch;
    p->verified = 0;
  }
}

/* Intern the path whose root-first call sites are top[0] - 1, top[-1] - 1,
 * ... top[-(depth-1)] - 1 against the thread's previous path p: only the
 * suffix that differs is interned, nodes are announced as needed.  Returns
 * the deepest node reached (0: none); *complete = every node interned and
 * announced.  p is consistent after every store (n shrinks before entries
 * are overwritten).  may_sync = 0 (the sampler's signal handler): no table
 * refresh, no logging. */
static uint32_t path_intern(gpd_shim_state_t *g, gpd_capture_path_t *p, const uintptr_t *top, uint32_t depth,
                            uint32_t epoch, int may_sync, int *complete) {
  uint32_t k = 0, lim = p->n < depth ? p->n : depth;
  while (k < lim && p->ips[k] == top[-(long)k] - 1)
    k++;
  if (gpd_shim__capture_hook && may_sync)
    gpd_shim__capture_hook(); /* API captures only (tests raise signals in it) */
  /* From here the memo holds k entries of the old path that this one
   * shares; entries beyond are replaced one by one, n first. */
  uint32_t v = p->verified < k ? p->verified : k;
  p->verified = v;
  p->n = k;
  atomic_signal_fence(memory_order_seq_cst);
  for (uint32_t j = v; j < k; j++) {
    if (!node_ensure(p->nodes[j], j ? p->nodes[j - 1] : 0, p->ips[j], epoch, may_sync))
      break;
    v = j + 1;
  }
  uint32_t parent = k ? p->nodes[k - 1] : 0;
  uint32_t j = k;
  for (; j < depth; j++) {
    uintptr_t ip = top[-(long)j] - 1;
    int is_new = 0;
    uint32_t id = 0;
    int rc = gpd_intern_get(&g->intern, parent, capture_key(ip, may_sync), &id, &is_new);
    if (rc == -EBUSY) {
      if (may_sync)
        GPD_LOG_ONCE(capture_log_once_busy, GPD_LOG_WARN,
                     "calling-context table: no free entry but some still being filled; deeper contexts are cut");
      break;
    }
    if (rc) {
      if (may_sync)
        GPD_LOG_ONCE(capture_log_once_full, GPD_LOG_WARN,
                     "calling-context table full; deeper contexts are cut");
      break;
    }
    int ok = node_ensure(id, parent, ip, epoch, may_sync);
    if (is_new)
      node_count(id);
    if (ok && v == j)
      v = j + 1;
    p->ips[j] = ip;
    p->nodes[j] = id;
    atomic_signal_fence(memory_order_seq_cst);
    p->n = j + 1;
    parent = id;
  }
  p->verified = v;
  *complete = j == depth && v == j;
  return parent;
}

/* GPUPROF_SHIM_STATS=1: frames per capture, and how many of the
 * outermost a return-address trampoline (Froyd, Mellor-Crummey and
 * Fowler, "Low-overhead call path profiling of unmodified, optimized
 * code", ICS 2005, section 3) could at best leave unread because they
 * were not returned through since the thread's last capture.  Which were
 * is not observable without the trampoline, so the counts are bounds:
 * native, the frames from the innermost _PyEval_EvalFrameDefault outward
 * (a GPU operation called from Python returns to the interpreter before
 * the next: everything below it is new; 0 on threads without Python);
 * Python, the outermost frames whose keys (code, line) are the same at
 * the same distance from the outermost as at the last capture (the
 * innermost frame's line moves on).  Native frames of replayable walks
 * only: the steady state (a missed walk is a first step's, or a stack
 * that never repeats). */
__attribute__((noinline, cold)) static void capture_stat_frames(gpd_capture_memo_t *m, const gpd_capture_walk_t *w,
                                                                const gpd_pyframes_thread_t *py, int npy) {
  if (w->ok) {
    int e = npy > 0 ? gpd_pyframes_eval_frame(w->ip, (int)w->n) : -1;
    gpd_shim__stat_add_n(GPD_ST_FR_NATIVE, w->n);
    gpd_shim__stat_add_n(GPD_ST_FR_NATIVE_SAME, e >= 0 ? w->n - (uint32_t)e : 0);
  }
  uint32_t np = npy > 0 ? (uint32_t)npy : 0, same = 0;
  if (np > GPD_PY_MAX)
    np = GPD_PY_MAX;
  while (same < np && same < m->stat_npy && m->stat_py[same] == py->key[np - 1 - same])
    same++;
  for (uint32_t i = 0; i < np; i++)
    m->stat_py[i] = py->key[np - 1 - i];
  m->stat_npy = np;
  if (np) {
    gpd_shim__stat_add_n(GPD_ST_FR_PY, np);
    gpd_shim__stat_add_n(GPD_ST_FR_PY_SAME, same);
  }
}

/* Mark the thread busy in a capture whose frame address is sp, with a
 * cookie in the caller's frame (capture_reentered). */
#define CAPTURE_BEGIN(m, sp, cookie)                                                                       \
  do {                                                                                                     \
    (cookie) = (++(m)->seq * 0x9e3779b97f4a7c15ull) | 1;                                                   \
    (m)->busy_cookie = (cookie);                                                                           \
    (m)->busy_cookie_at = (uintptr_t) & (cookie);                                                          \
    (m)->busy_sp = (sp);                                                                                   \
    (m)->busy = GPD_CAPTURE_BUSY_UNWIND;                                                                   \
    atomic_signal_fence(memory_order_seq_cst);                                                             \
  } while (0)

uint32_t gpd_shim_label_node(uint32_t parent, const char *label) {
  gpd_shim_state_t *g = &gpd_shim__g;
  if (parent == 0 || !gpd_shim_active() || !g->intern_ok)
    return 0;
  uint32_t sid = gpd_shim_string(label, GPD_STR_OTHER);
  if (sid == 0)
    return 0;
  uint64_t key = CAPTURE_LABEL_KEY_TAG << 48 | sid;
  uint32_t id = 0;
  int is_new = 0;
  if (gpd_intern_get(&g->intern, parent, key, &id, &is_new) != 0)
    return 0;
  int ok = node_ensure(id, parent, key, atomic_load_explicit(&g->epoch, memory_order_acquire), 1);
  if (is_new)
    node_count(id);
  return ok ? id : 0;
}

__attribute__((noinline)) GPD_EXPORT uint32_t gpd_shim_capture(void) {
  gpd_shim_state_t *g = &gpd_shim__g;
  if (!gpd_shim_active() || !g->intern_ok)
    return 0;
  gpd_capture_memo_t *m = gpd_thread_memo();
  if (!m)
    return 0;
  /* GPUPROF_SHIM_STATS=floor (a measuring mode): the thread's first node
   * for every later API call, without unwinding */
  if (__builtin_expect(gpd_shim__stats_on == 3, 0) && m->stat_floor_node)
    return m->stat_floor_node;
  uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
  if (m->busy && capture_reentered(m, sp))
    return capture_nested(g, m->busy == GPD_CAPTURE_BUSY_UNWIND);
  if (__builtin_expect(m->stack_state == 0, 0))
    gpd_capture_unwind_bounds(m);
  /* Cold lines first: a loop's next operation finds the shim's lines
   * evicted by the application's own work since the last one.  The
   * INVOKE that follows, the Python frames (their walk is a chain of
   * dependent loads): their misses overlap the native replay. */
  gpd_thread_push_prefetch();
  gpd_pyframes_prefetch(&m->py);
  uint64_t st_t0 = GPD_ST_IN_T0(), st_t1;
  volatile uint64_t cookie;
  CAPTURE_BEGIN(m, sp, cookie);
  gpd_capture_walk_t *w = gpd_capture_unwind(m);
  atomic_signal_fence(memory_order_seq_cst);
  m->busy = GPD_CAPTURE_BUSY_MEMO;
  atomic_signal_fence(memory_order_seq_cst);
  uint32_t gen = atomic_load_explicit(&g->gen, memory_order_acquire);
  uint32_t epoch = atomic_load_explicit(&g->epoch, memory_order_acquire);
  uint32_t mgen = atomic_load_explicit(&gpd_module__gen, memory_order_acquire);
  uint32_t parent = 0;
  /* Python frames of this thread: the same native stack may run other
   * Python code, so a recorded walk's node is not reused then. */
  st_t1 = GPD_ST_IN_T0();
  int py = gpd_pyframes_walk(&m->py);
  if (py) /* PyTorch: the autograd node this operation made goes with these frames */
    gpd_pyframes_fwd_record(&m->py);
  else /* a framework's worker: the Python frames of its forward operation, or of the thread that handed the work over */
    py = gpd_pyframes_handoff(&m->py, w->ip, (int)w->n);
  GPD_ST_IN_ADD(GPD_ST_PYWALK, st_t1);
  if (__builtin_expect(gpd_shim__stats_on == 1, 0))
    capture_stat_frames(m, w, &m->py, py);
  /* Open NVTX ranges of this thread (nvtx/nvtx.h): part of the path, so
   * part of the node cache key; none in site mode (a push site). */
  uint64_t nv = gpd_nvtx_key();
  st_t1 = GPD_ST_IN_T0();
  if (!py && !nv && w->node && w->gen == gen && w->epoch == epoch && w->mgen == mgen) {
    parent = w->node; /* same stack as a recorded capture: same, announced node */
    GPD_ST_IN_ADD(GPD_ST_NODE_REUSE, st_t1);
    goto out;
  }
  /* Same native stack and same Python frames as a recorded capture.  The
   * key is a 64-bit hash of the walk's fill id and the Python keys: two
   * different Python paths of one walk collide with probability 2^-64. */
  uint64_t pk = py ? capture_pykey(w, &m->py) : 0;
  if (nv) {
    if (!py && w->ok)
      pk = (w->id * 0x9e3779b97f4a7c15ull) | 1;
    pk = nv == GPD_NVTX_KEY_SITE || !pk ? 0 : ((pk ^ nv) * 0x100000001b3ull) | 1;
  }
  uint32_t pslot = (uint32_t)(pk ^ (pk >> 29)) & (GPD_CAPTURE_PYNODES - 4); /* 4-way set */
  uint32_t pway = 0;
  for (; pk && pway < 4; pway++, pslot++)
    if (m->pynode[pslot].key == pk) {
      if (m->pynode[pslot].gen == gen && m->pynode[pslot].epoch == epoch && m->pynode[pslot].mgen == mgen &&
          m->pynode[pslot].node) {
        parent = m->pynode[pslot].node;
        GPD_ST_IN_ADD(GPD_ST_NODE_REUSE, st_t1);
        goto out;
      }
      break; /* stale: refilled below */
    }
  if (pk && pway == 4) { /* not in its set: an empty way, else any */
    pslot -= 4;
    uint32_t e = 0;
    while (e < 4 && m->pynode[pslot + e].key)
      e++;
    pslot += e < 4 ? e : (uint32_t)(m->seq % 4);
  }
  st_t1 = GPD_ST_IN_T0();
  path_sync(&m->path, gen, epoch, mgen, 1);
  const uintptr_t *buf = w->ip;
  int n = (int)w->n;
  int s = gpd_module_cut(buf, n, 1);
  int depth = n - s;
  if (py && depth > 0) {
    depth = gpd_pyframes_splice(&m->py, &buf[s], depth, GPD_CAPTURE_WALK_MAX + GPD_PY_MAX, &buf);
    s = 0;
  }
  if (nv && depth > 0) {
    depth = gpd_nvtx_splice(&buf[s], depth, GPD_CAPTURE_WALK_MAX + GPD_PY_MAX + GPD_NVTX_SPLICE_MAX, &buf);
    s = 0;
  }
  if (depth > GPD_CAPTURE_MAX_DEPTH)
    depth = GPD_CAPTURE_MAX_DEPTH;
  if (depth <= 0)
    goto out;
  /* Root first: path[j] = buf[s + depth - 1 - j], call site = ret - 1. */
  int complete;
  parent = path_intern(g, &m->path, &buf[s + depth - 1], (uint32_t)depth, epoch, 1, &complete);
  /* Replay the node only for a complete, fully announced path. */
  if (complete && !py && !nv) {
    w->gen = gen;
    w->epoch = epoch;
    w->mgen = mgen;
    w->node = parent;
  } else if (complete && pk) {
    /* written key last: an abandoned update leaves the entry empty */
    m->pynode[pslot].key = 0;
    atomic_signal_fence(memory_order_seq_cst);
    m->pynode[pslot].node = parent;
    m->pynode[pslot].gen = gen;
    m->pynode[pslot].epoch = epoch;
    m->pynode[pslot].mgen = mgen;
    atomic_signal_fence(memory_order_seq_cst);
    m->pynode[pslot].key = pk;
  } else {
    w->node = 0;
  }
  GPD_ST_IN_ADD(GPD_ST_INTERN, st_t1);
out:
  atomic_signal_fence(memory_order_seq_cst);
  m->busy = 0;
  GPD_ST_IN_ADD(GPD_ST_CAPTURE, st_t0);
  if (__builtin_expect(gpd_shim__stats_on == 3, 0))
    m->stat_floor_node = parent;
  return parent;
}

/* ------------------------------------------------------ CPU samples */

/* Where the interrupted frame is in a backtrace taken inside the signal
 * handler: the first entry equal to the interrupted pc (libunwind reports
 * a signal frame's exact pc, not a return address); -1 if absent. */
static int sample_frame(const uintptr_t *ips, int n, uintptr_t pc) {
  for (int i = 0; i < n && i < 16; i++)
    if (ips[i] == pc)
      return i;
  return -1;
}

uint32_t gpd_capture_sample(uintptr_t pc, unsigned *why) {
  gpd_shim_state_t *g = &gpd_shim__g;
  *why = GPD_SAMPLE_NO_STATE;
  gpd_capture_memo_t *m = gpd_thread_memo_peek();
  if (!g->intern_ok || !m || pc == 0)
    return 0;
  uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
  if (m->busy && capture_reentered(m, sp)) {
    /* inside a capture of this thread: known nodes only (capture_nested) */
    *why = GPD_SAMPLE_NESTED;
    if (m->busy == GPD_CAPTURE_BUSY_UNWIND)
      return 0; /* libunwind's per-thread cache is the interrupted one's */
    uintptr_t ips[NESTED_MAX];
    if (!gpd_capture_unwind_enter(0))
      return 0; /* a fork is being prepared */
    int n = unw_backtrace((void **)ips, NESTED_MAX);
    gpd_capture_unwind_leave();
    int i = n > 0 && n < NESTED_MAX ? sample_frame(ips, n, pc) : -1;
    if (i < 0)
      return 0;
    ips[i] = pc + 1; /* the leaf is the pc itself: keyed as pc + 1 - 1 */
    return capture_find_path(g, &ips[i], n - i);
  }
  if (!gpd_capture_unwind_enter(0))
    return 0; /* a fork is being prepared */
  volatile uint64_t cookie;
  CAPTURE_BEGIN(m, sp, cookie);
  int n = unw_backtrace((void **)m->samp_raw, GPD_CAPTURE_WALK_MAX);
  gpd_capture_unwind_leave();
  atomic_signal_fence(memory_order_seq_cst);
  m->busy = GPD_CAPTURE_BUSY_MEMO;
  atomic_signal_fence(memory_order_seq_cst);
  uint32_t leaf = 0;
  *why = GPD_SAMPLE_NO_FRAME;
  int i = n > 0 ? sample_frame(m->samp_raw, n, pc) : -1;
  if (i >= 0) {
    m->samp_raw[i] = pc + 1;
    const uintptr_t *buf = &m->samp_raw[i];
    n -= i;
    uint32_t gen = atomic_load_explicit(&g->gen, memory_order_acquire);
    uint32_t epoch = atomic_load_explicit(&g->epoch, memory_order_acquire);
    uint32_t mgen = atomic_load_explicit(&gpd_module__gen, memory_order_acquire);
    path_sync(&m->samp, gen, epoch, mgen, 0);
    int s = gpd_module_cut(buf, n, 0);
    int depth = n - s;
    /* Python frames, as a capture splices them (the interpreter's frames
     * for the native frames of _PyEval_EvalFrameDefault, the leaf too:
     * a thread running bytecode is sampled inside it), from the
     * handler-safe walk on the sample's own state */
    if (depth > 0 && gpd_pyframes_walk_signal(&m->spy) > 0) {
      depth = gpd_pyframes_splice(&m->spy, &buf[s], depth, GPD_CAPTURE_WALK_MAX + GPD_PY_MAX, &buf);
      s = 0;
    }
    if (depth > GPD_CAPTURE_MAX_DEPTH)
      depth = GPD_CAPTURE_MAX_DEPTH;
    if (depth > 0) {
      int complete;
      uint32_t node = path_intern(g, &m->samp, &buf[s + depth - 1], (uint32_t)depth, epoch, 0, &complete);
      *why = GPD_SAMPLE_INCOMPLETE;
      if (complete) {
        leaf = node;
        *why = 0;
      }
    }
  }
  atomic_signal_fence(memory_order_seq_cst);
  m->busy = 0;
  return leaf;
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

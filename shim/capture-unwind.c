/* capture-unwind.c - the unwind of a capture (capture.c): this thread's
 * call stack as a recorded walk, replayed while the stack is unchanged
 * ("verified replay", below), else unwound with libunwind.
 *
 * Runs on the capturing thread only, on its own memo (gpd_capture_memo_t,
 * internal.h); no lock, no allocation.  A capture nested in another one
 * (signal handler) never calls it (capture.c, capture_nested).
 */
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "internal.h"

/* Verified replay.  A full unwind (libunwind cursor) records, per frame,
 * the return address, the stack pointer and the frame-base register
 * (%rbp) with the stack slot it was restored from.  The next capture on
 * the thread starts from the same state if gpd_shim_capture's own frame
 * has the same (ip, sp, rbp); then frame j+1 is the recorded one exactly
 * when the stack still holds the recorded return address at sp[j+1] - 8
 * and the recorded %rbp at its slot (gpd_capture_walk_t: chk[]):
 * the unwind rule of a frame depends
 * only on its ip, and its CFA on sp and rbp, all equal by induction, so
 * the unwinder would read the same slots.  Every frame up to the root is
 * checked (two loads and compares per frame, no DWARF lookup); stopping
 * at the first unchanged (sp, return address) pair instead would be
 * wrong: the same inner frames are reached from two callers whose frames
 * have the same size.  Reads stay inside this thread's stack, above the
 * current stack pointer.  Not covered: a frame whose CFA rule reads
 * memory other than its own frame (gcc's DRAP stack realignment computes
 * CFA = *(rbp - 8)); see docs/SHIM.md. */

/* Fork gate.  libunwind's own mutexes (one is taken inside unw_step)
 * are not reset in a fork child, so a child forked while another thread
 * held one blocked forever at its first unwind.
 * Every libunwind call of the shim runs between gpd_capture_unwind_enter
 * and gpd_capture_unwind_leave; the fork prepare handler lets none start
 * and waits for the running ones.  unwind_busy: threads between enter and
 * leave; unwind_forking: a fork is being prepared.  Both sequentially
 * consistent: an enter and a prepare that race see each other's store. */
static _Atomic int unwind_busy, unwind_forking;

int gpd_capture_unwind_enter(int wait) {
  for (;;) {
    atomic_fetch_add(&unwind_busy, 1);
    if (!atomic_load(&unwind_forking))
      return 1;
    atomic_fetch_sub(&unwind_busy, 1);
    if (!wait)
      return 0;
    while (atomic_load(&unwind_forking))
      sched_yield();
  }
}

void gpd_capture_unwind_leave(void) { atomic_fetch_sub(&unwind_busy, 1); }

void gpd_capture_unwind_atfork_prepare(void) {
  atomic_store(&unwind_forking, 1);
  struct timespec ts = {0, 100000}; /* 100 us */
  for (int i = 0; i < GPD_CAPTURE_FORK_WAIT_MS * 10 && atomic_load(&unwind_busy) > 0; i++)
    nanosleep(&ts, NULL);
}

void gpd_capture_unwind_atfork_parent(void) { atomic_store(&unwind_forking, 0); }

void gpd_capture_unwind_atfork_child(void) {
  atomic_store(&unwind_busy, 0); /* the threads that were in it are gone */
  atomic_store(&unwind_forking, 0);
}

void gpd_capture_unwind_bounds(gpd_capture_memo_t *m) {
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

/* Full unwind from frame 0 (state f_ip/f_sp/f_bp) into w.  While
 * walking, m->fullw holds frame j's stack pointer and (slot %rbp was
 * restored from or 0, %rbp); at the end the words the replay must check
 * are written to w->chk, ascending by address. */
__attribute__((noinline)) static void capture_walk_full(gpd_capture_memo_t *m, gpd_capture_walk_t *w,
                                                         uintptr_t f_ip, uintptr_t f_sp, uintptr_t f_bp) {
  unw_context_t ctx;
  unw_cursor_t c;
  gpd_capture_fullwalk_t *fw = &m->fullw;
  w->n = 0;
  w->ok = 0;
  w->node = 0;
  w->nchk = 0;
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
    gpd_capture_unwind_bounds(m);
  if (m->stack_state != 1 || f_sp < m->stack_lo || f_sp >= m->stack_hi)
    ok = 0;
  unw_save_loc_t loc;
  uintptr_t prev_loc = 0;
  if (unw_get_save_loc(&c, UNW_X86_64_RBP, &loc) == 0 && loc.type == UNW_SLT_MEMORY)
    prev_loc = loc.u.addr;
  uint32_t n = 0;
  w->ip[0] = ip;
  w->ip0 = ip;
  w->sp0 = sp;
  w->bp0 = bp;
  fw->sp[0] = sp;
  fw->bp[0].at = 0;
  fw->bp[0].val = bp;
  n = 1;
  while (n < GPD_CAPTURE_WALK_MAX && unw_step(&c) > 0) {
    unw_get_reg(&c, UNW_REG_IP, &ip);
    unw_get_reg(&c, UNW_REG_SP, &sp);
    unw_get_reg(&c, UNW_X86_64_RBP, &bp);
    w->ip[n] = ip;
    fw->sp[n] = sp;
    fw->bp[n].val = bp;
    fw->bp[n].at = 0;
    if (ok) {
      /* The return address must have come from sp - 8 (not a signal
       * frame), the stack grows up, and %rbp is either unchanged or
       * restored from a slot of the frame below. */
      if (sp <= fw->sp[n - 1] || sp > m->stack_hi || unw_is_signal_frame(&c) > 0 ||
          unw_get_save_loc(&c, UNW_X86_64_RIP, &loc) != 0 || loc.type != UNW_SLT_MEMORY ||
          loc.u.addr != sp - 8 || unw_get_save_loc(&c, UNW_X86_64_RBP, &loc) != 0 ||
          loc.type != UNW_SLT_MEMORY) {
        ok = 0;
      } else if (loc.u.addr != prev_loc) {
        if (loc.u.addr < fw->sp[0] || loc.u.addr + sizeof(uintptr_t) > sp)
          ok = 0;
        fw->bp[n].at = loc.u.addr;
        prev_loc = loc.u.addr;
      } else if (bp != fw->bp[n - 1].val) {
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
  if (ok) {
    /* Only a frame whose CFA is %rbp-based (CFA = rbp + 16, the standard
     * frame: its caller's sp is its rbp + 16) needs its rbp to be the
     * recorded one; code built without frame pointers uses %rbp as a
     * general register whose saved value (a tensor's address ...) changes
     * at every call, and checking it made those stacks miss every time
     * (a full walk each; docs/PERFORMANCE.md, "Measurements behind the
     * shim core's code").  Keep the
     * check of the slot that last restored %rbp below each such frame,
     * drop the others (frame 0's rbp stays in the replay key).  Every
     * frame's return address is checked (sp - 8).  A restored slot lies
     * in the frame below its frame's return address, so the checks come
     * out in address order. */
    uint8_t need[GPD_CAPTURE_WALK_MAX];
    memset(need, 0, n);
    uint32_t src = 0;
    for (uint32_t j = 0; j < n; j++) {
      if (j && fw->bp[j].at)
        src = j;
      if (j + 1 < n && fw->sp[j + 1] == fw->bp[j].val + 16)
        need[src] = 1;
    }
    uint32_t k = 0;
    for (uint32_t j = 1; j < n; j++) {
      if (need[j] && fw->bp[j].at)
        w->chk[k++] = fw->bp[j];
      w->chk[k].at = fw->sp[j] - sizeof(uintptr_t);
      w->chk[k++].val = w->ip[j];
    }
    w->nchk = k;
  }
  w->n = n;
  w->ok = (uint16_t)ok;
}

/* Lines of w that a replay reads: its header and chk[0 .. nchk). */
static inline uint16_t capture_walk_lines(const gpd_capture_walk_t *w) {
  return (uint16_t)(1 + (w->nchk * sizeof(gpd_capture_check_t) + 63) / 64);
}

/* Walk slot x came after walk w: w's successor (prefetched next time). */
static inline void capture_walk_follows(gpd_capture_walk_t *w, const gpd_capture_memo_t *m, uint32_t x) {
  w->succ = x + 1;
  w->succ_lines = capture_walk_lines(&m->walks[x]);
}

/* Re-verify walk w against the current stack; 1 = identical.  Every
 * stack word of w->chk is compared, one list for the return addresses
 * and the %rbp slots (the words lie above the current stack pointer in
 * this thread's stack, checked when the walk was recorded).  Unrolled:
 * a compare and a branch per word and few loop instructions (measured
 * faster than the xor/or of several words per branch: docs/PERFORMANCE.md,
 * "Measurements behind the shim core's code"). */
static inline int capture_walk_same(const gpd_capture_walk_t *w, uintptr_t f_ip, uintptr_t f_sp,
                                    uintptr_t f_bp) {
  if (!w->ok || w->sp0 != f_sp || w->ip0 != f_ip || w->bp0 != f_bp)
    return 0;
  const gpd_capture_check_t *c = w->chk;
  uint32_t n = w->nchk;
#pragma GCC unroll 8
  for (uint32_t k = 0; k < n; k++)
    if (*(const uintptr_t *)c[k].at != c[k].val)
      return 0;
  return 1;
}

/* The way of 4-way set `set` to fill: an empty one (0), else one chosen
 * by r (random replacement: a loop whose stacks outnumber a set's ways
 * still keeps most of them). */
static inline uint32_t capture_way(const uint64_t *set, uint64_t r) {
  for (uint32_t i = 0; i < 4; i++)
    if (!set[i])
      return i;
  return (uint32_t)(r % 4);
}

/* Frame-0 key of a walk: which recorded walks are worth verifying. */
static inline uint64_t capture_wkey(uintptr_t f_ip, uintptr_t f_sp, uintptr_t f_bp) {
  return ((f_sp * 0x9e3779b97f4a7c15ull) ^ (f_bp * 0xc2b2ae3d27d4eb4full) ^ f_ip) | 1;
}

/* This thread's current call stack as a recorded walk (replayed when the
 * stack is unchanged, else a full unwind into the next slot).  Needs a
 * frame pointer of its own: frame 0 = the caller's state at this call.
 *
 * Lookup: a loop cycles through its stacks in the same order, so the walk
 * that followed the last hit's walk last time is verified first; then
 * every slot whose frame-0 key matches, newest first (a mismatch fails
 * within the first frames that differ, the leaf-most, usually a dozen).
 * Only a full walk (replayable) takes a slot; a miss's unw_backtrace goes
 * to the scratch walk, so stacks that never repeat evict nothing. */
__attribute__((noinline, optimize("no-omit-frame-pointer"))) gpd_capture_walk_t *
gpd_capture_unwind(gpd_capture_memo_t *m) {
  void **fp = __builtin_frame_address(0);
  uintptr_t f_ip = (uintptr_t)__builtin_return_address(0);
  uintptr_t f_sp = (uintptr_t)(fp + 2), f_bp = (uintptr_t)fp[0];
  uint64_t t0 = GPD_ST_IN_T0();
  uint64_t key = capture_wkey(f_ip, f_sp, f_bp);
  uint32_t last = m->walk_last, tried = 0;
  if (last && last <= GPD_CAPTURE_WALKS) {
    const gpd_capture_walk_t *lw = &m->walks[last - 1];
    uint32_t p = lw->succ;
    if (p && p <= GPD_CAPTURE_WALKS) {
      /* The walk of a loop's next operation was last touched a whole
       * step ago: its lines are cold.  Ask for all that its replay reads
       * at once (the header read would otherwise come first, then the
       * checks one miss after another); how many, the last walk says
       * from the line just read.  Every other line: the adjacent-line
       * prefetcher brings its pair (as fast cold as every line, and
       * faster warm: bench-torchloop --evict, docs/PERFORMANCE.md). */
      const char *v = (const char *)&m->walks[p - 1];
      uint32_t nl = lw->succ_lines < 24 ? lw->succ_lines : 24;
      for (uint32_t l = 0; l < nl; l += 2)
        __builtin_prefetch(v + 64 * l, 0, 3);
    }
    if (p && p <= GPD_CAPTURE_WALKS && m->wkey[p - 1] == key &&
        capture_walk_same(&m->walks[p - 1], f_ip, f_sp, f_bp)) {
      m->walk_last = p;
      GPD_ST_IN_ADD(GPD_ST_UNWIND_HIT, t0);
      return &m->walks[p - 1];
    }
    tried = p;
  }
  for (uint32_t i = 0; i < GPD_CAPTURE_WALKS; i++) {
    uint32_t x = (m->walk_next + GPD_CAPTURE_WALKS - 1 - i) % GPD_CAPTURE_WALKS;
    if (m->wkey[x] != key || x + 1 == tried || !capture_walk_same(&m->walks[x], f_ip, f_sp, f_bp))
      continue;
    if (last && last <= GPD_CAPTURE_WALKS)
      capture_walk_follows(&m->walks[last - 1], m, x);
    m->walk_last = x + 1;
    GPD_ST_IN_ADD(GPD_ST_UNWIND_HIT, t0);
    return &m->walks[x];
  }
  /* Miss: libunwind's fast path first (not replayable: ok = 0), into the
   * scratch walk.  A walk is invalidated before it is refilled (an
   * abandoned capture must not leave a half-written walk that verifies). */
  gpd_capture_walk_t *w = &m->scratch;
  w->ok = 0;
  w->node = 0;
  w->n = 0;
  atomic_signal_fence(memory_order_seq_cst);
  gpd_capture_unwind_enter(1);
  int n = unw_backtrace((void **)w->ip, GPD_CAPTURE_WALK_MAX);
  gpd_capture_unwind_leave();
  w->n = n > 0 ? (uint32_t)n : 0;
  uint64_t h = 0x9e3779b97f4a7c15ull ^ w->n;
  for (uint32_t j = 0; j < w->n; j++)
    h = (h ^ w->ip[j]) * 0x100000001b3ull;
  h |= 1;
  /* seen[] and bad[]: 4-way sets (a direct-mapped table let two stacks
   * of one loop evict each other at every step: neither was ever seen) */
  uint32_t hs = (uint32_t)(h ^ (h >> 32)) & (GPD_CAPTURE_SEEN - 4), hw = 0;
  while (hw < 4 && m->seen[hs + hw] != h)
    hw++;
  int bad = 0;
  for (uint32_t i = 0; i < 4; i++)
    bad |= m->bad[hs + i] == h;
  if (hw == 4 || bad) {
    if (hw == 4)
      m->seen[hs + capture_way(m->seen + hs, m->seq)] = h;
    m->walk_last = 0;
    GPD_ST_IN_ADD(GPD_ST_UNWIND_MISS, t0);
    return w;
  }
  /* A stack that repeats: record a replayable walk of it in the next slot. */
  uint32_t x = m->walk_next++ % GPD_CAPTURE_WALKS;
  w = &m->walks[x];
  m->wkey[x] = 0;
  w->ok = 0;
  w->node = 0;
  w->succ = 0;
  w->id = ++m->walk_ids;
  atomic_signal_fence(memory_order_seq_cst);
  gpd_capture_unwind_enter(1);
  capture_walk_full(m, w, f_ip, f_sp, f_bp);
  gpd_capture_unwind_leave();
  if (w->ok) {
    m->wkey[x] = key;
    if (last && last <= GPD_CAPTURE_WALKS)
      capture_walk_follows(&m->walks[last - 1], m, x);
    m->walk_last = x + 1;
  } else {
    m->bad[hs + capture_way(m->bad + hs, m->seq)] = h; /* never again: a full walk each time */
    m->walk_last = 0;
  }
  GPD_ST_IN_ADD(w->ok ? GPD_ST_UNWIND_FULL : GPD_ST_UNWIND_BAD, t0);
  return w;
}

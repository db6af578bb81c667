/* thread.c - per-thread ring producer, capture memo and reentrancy guard.
 *
 * The first push on a thread claims a ring (gpd_producer_claim: one CAS);
 * a pthread key destructor retires it when the thread exits, so the daemon
 * can drain it and hand it to another thread.  State is tagged with the
 * region generation: after a fork (new region) stale state is dropped
 * without touching the old mapping.
 */
#include <errno.h>
#include <signal.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

/* Retry a failed claim (no free ring) once per this many records. */
#define THREAD_RECLAIM_EVERY 256u

typedef struct thread_state_s {
  gpd_producer_t p;
  uint32_t gen;      /* region generation p belongs to */
  int state;         /* 0 none, 1 owned, -1 no ring free */
  uint32_t noring;   /* records dropped since the last claim attempt */
  uint32_t tid;
  int in_shim;       /* reentrancy guard */
  uintptr_t in_shim_sp; /* frame address of the gpd_thread_enter that set it */
  int key_set;
  volatile sig_atomic_t pushing; /* a push (or ring claim) is under way */
  volatile sig_atomic_t nowait;  /* a signal handler runs: never wait for room */
  int stalled;       /* record mode: a wait for room timed out, no success since */
  gpd_capture_memo_t *memo;
} thread_state_t;

static __thread thread_state_t tls;
static pthread_key_t thread_key;
static int thread_key_ok;
/* the CPU sampler's per-thread timer start and stop (main.c registers
 * cpu-sampler.c's); NULL: none */
static void (*_Atomic thread_timer_start)(void);
static void (*_Atomic thread_timer_stop)(void);

static void thread_destroy(void *arg) {
  thread_state_t *t = arg;
  void (*stop)(void) = atomic_load_explicit(&thread_timer_stop, memory_order_acquire);
  if (stop)
    stop(); /* no sample after this (signal blocked) */
  if (t->state == 1 && t->gen == atomic_load(&gpd_shim__g.gen) && gpd_shim_active())
    gpd_producer_retire(&t->p);
  t->state = 0;
  gpd_capture_memo_t *m = t->memo;
  t->memo = NULL;
  atomic_signal_fence(memory_order_seq_cst);
  if (m)
    munmap(m, sizeof *m);
  t->key_set = 0;
}

void gpd_thread_timer_hooks(void (*start)(void), void (*stop)(void)) {
  atomic_store_explicit(&thread_timer_start, start, memory_order_release);
  atomic_store_explicit(&thread_timer_stop, stop, memory_order_release);
}

void gpd_thread_init(void) {
  if (!thread_key_ok && pthread_key_create(&thread_key, thread_destroy) == 0)
    thread_key_ok = 1;
}

uint32_t gpd_thread_tid(void) {
  if (!tls.tid)
    tls.tid = (uint32_t)syscall(SYS_gettid);
  return tls.tid;
}

static void thread_register(void) {
  if (!tls.key_set && thread_key_ok) {
    pthread_setspecific(thread_key, &tls);
    tls.key_set = 1;
  }
}

gpd_producer_t *gpd_thread_producer(void) {
  uint32_t gen = atomic_load_explicit(&gpd_shim__g.gen, memory_order_acquire);
  if (__builtin_expect(tls.state == 1 && tls.gen == gen, 1))
    return &tls.p;
  if (!gpd_shim_active())
    return NULL;
  if (tls.gen != gen) { /* new region (or fork child): forget the old ring */
    memset(&tls.p, 0, sizeof tls.p);
    tls.state = 0;
    tls.noring = 0;
    tls.tid = 0;
    tls.gen = gen;
  }
  if (tls.state == -1 && ++tls.noring % THREAD_RECLAIM_EVERY != 0) {
    atomic_fetch_add_explicit(&gpd_shim__g.region.hdr->no_ring_drops, 1, memory_order_relaxed);
    return NULL;
  }
  if (gpd_producer_claim(&gpd_shim__g.region, &tls.p, gpd_thread_tid()) < 0) {
    tls.state = -1;
    atomic_fetch_add_explicit(&gpd_shim__g.region.hdr->no_ring_drops, 1, memory_order_relaxed);
    return NULL;
  }
  tls.state = 1;
  thread_register();
  return &tls.p;
}

void gpd_thread_push_prefetch(void) {
  if (__builtin_expect(tls.state == 1, 1) && tls.gen == atomic_load_explicit(&gpd_shim__g.gen, memory_order_relaxed)) {
    __builtin_prefetch(gpd_producer_slot(&tls.p, tls.p.head), 1, 3);
    __builtin_prefetch((const void *)&tls.p.ctl->head, 1, 3);
  }
}

static int thread_push_wait(const void *rec, size_t len, uint64_t max_wait_ns, const atomic_int *stop);

/* Record mode (GPUPROF_RECORD=1: `gpuprof record`, whose private daemon
 * sees only this application): a full ring makes the pushing thread wait
 * up to record_wait_ns for the consumer to make room, instead of dropping
 * the record at once.  The record is dropped (and counted) only when that
 * time passes without room; the thread then takes the consumer for
 * stalled (a dead or stopped daemon) and drops at once, as outside record
 * mode, until a push finds room again, so a dead daemon costs each thread
 * one wait.  Signal handlers (CPU samples) never wait (tls.nowait).  Set
 * once by the constructor, before any push. */
static uint64_t record_wait_ns;

void gpd_thread_record_wait(uint64_t ns) { record_wait_ns = ns; }

int gpd_thread_nowait(int on) {
  int prev = tls.nowait;
  tls.nowait = on;
  return prev;
}

static int push_room(gpd_producer_t *p, const void *rec, size_t len) {
  int rc = gpd_producer_try_push(p, rec, len);
  if (rc != -ENOSPC) {
    if (rc == 0)
      tls.stalled = 0;
    return rc;
  }
  if (!tls.stalled) {
    uint64_t t0 = gpd_clock_ns(), end = t0 + record_wait_ns;
    do {
      struct timespec ts = {0, 50000}; /* the monitor polls every 0.2-2 ms */
      nanosleep(&ts, NULL);
      rc = gpd_producer_try_push(p, rec, len);
    } while (rc == -ENOSPC && gpd_clock_ns() < end);
    GPD_ST_ADD(GPD_ST_RING_WAIT, t0);
    if (rc == 0)
      return 0;
    tls.stalled = rc == -ENOSPC;
  }
  if (rc == -ENOSPC)
    gpd_producer_count_drop(p);
  return rc;
}

/* A ring has one producer: a signal handler that pushes while its thread
 * is inside a push (or claiming its ring) would interleave two records in
 * one slot sequence.  Such a nested push is dropped and counted instead. */
static int push_begin(void) {
  if (tls.pushing) {
    if (tls.state == 1 && tls.gen == atomic_load_explicit(&gpd_shim__g.gen, memory_order_acquire))
      gpd_producer_count_drop(&tls.p);
    return -EBUSY;
  }
  tls.pushing = 1;
  atomic_signal_fence(memory_order_seq_cst);
  return 0;
}

static void push_end(void) {
  atomic_signal_fence(memory_order_seq_cst);
  tls.pushing = 0;
}

int gpd_thread_push(const void *rec, size_t len) {
  if (push_begin() < 0)
    return -EBUSY;
  gpd_producer_t *p = gpd_thread_producer();
  int rc;
  if (!p)
    rc = gpd_shim_active() ? -ENOSPC : -ENOTCONN;
  else if (record_wait_ns && !tls.nowait)
    rc = push_room(p, rec, len);
  else
    rc = gpd_producer_push(p, rec, len);
  push_end();
  return rc;
}

int gpd_thread_push_wait(const void *rec, size_t len, uint64_t max_wait_ns) {
  return gpd_thread_push_wait_stop(rec, len, max_wait_ns, NULL);
}

int gpd_thread_push_wait_stop(const void *rec, size_t len, uint64_t max_wait_ns, const atomic_int *stop) {
  if (push_begin() < 0)
    return -EBUSY;
  int rc = thread_push_wait(rec, len, max_wait_ns, stop);
  push_end();
  return rc;
}

static int thread_push_wait(const void *rec, size_t len, uint64_t max_wait_ns, const atomic_int *stop) {
  gpd_producer_t *p = gpd_thread_producer();
  if (!p)
    return gpd_shim_active() ? -ENOSPC : -ENOTCONN;
  int rc;
  for (uint64_t waited = 0; (rc = gpd_producer_try_push(p, rec, len)) == -ENOSPC; waited += 100000) {
    if (waited >= max_wait_ns || (stop && atomic_load_explicit(stop, memory_order_relaxed))) {
      gpd_producer_count_drop(p);
      break;
    }
    struct timespec ts = {0, 100000};
    nanosleep(&ts, NULL);
  }
  return rc;
}

gpd_capture_memo_t *gpd_thread_memo(void) {
  if (__builtin_expect(tls.memo != NULL, 1))
    return tls.memo;
  /* Once per thread (the slow path).  Its own mapping, not calloc: the
   * memo is ~0.7 MB of which a thread touches a few pages; after glibc
   * freed one such block its mmap threshold rises above the size and
   * calloc then zeroes 0.7 MB of heap per thread (its cost per thread
   * start: docs/PERFORMANCE.md, "Measurements behind the shim core's
   * code"). */
  gpd_capture_memo_t *m =
      mmap(NULL, sizeof *m, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED)
    m = NULL;
  if (m) {
    thread_register();
    tls.memo = m;
    void (*start)(void) = atomic_load_explicit(&thread_timer_start, memory_order_acquire);
    if (start)
      start();
  }
  return m;
}

gpd_capture_memo_t *gpd_thread_memo_peek(void) { return tls.memo; }

int gpd_thread_pushing(void) { return tls.pushing; }

/* A wrapper left by longjmp never calls gpd_thread_leave: a guard set
 * by an enter whose frame address is at or below ours (the stack grows
 * down: that call ran at our depth or deeper, so its frame is gone) is
 * dropped; a genuinely nested call (the
 * vendor calling an interposed symbol inside our wrapper, a signal
 * handler) enters from a deeper frame.  (A handler on a sigaltstack above
 * the thread's stack is taken for a new call: profiled.) */
__attribute__((noinline)) int gpd_thread_enter(void) {
  uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
  if (tls.in_shim && sp >= tls.in_shim_sp)
    tls.in_shim = 0;
  int prev = tls.in_shim;
  if (!prev)
    tls.in_shim_sp = sp;
  tls.in_shim = 1;
  return prev;
}

void gpd_thread_leave(int prev) { tls.in_shim = prev; }

void gpd_thread_exit_current(void) {
  if (tls.state == 1 && tls.gen == atomic_load(&gpd_shim__g.gen) && gpd_shim_active())
    gpd_producer_retire(&tls.p);
  tls.state = 0;
}

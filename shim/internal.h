/* internal.h - state and helpers shared by the shim core files (shim.c,
 * conn.c, attach.c, status.c, fdid.c, thread.c, capture.c, strings.c,
 * job-env.c ...) and the vendor back ends.
 * Not installed; names gpd_shim__* / gpd_<noun>_* with hidden visibility.
 * Test hooks (gpd_shim__attach_region, ...) are exported for tests only.
 */
#ifndef GPUPROF_SHIM_INTERNAL_H
#define GPUPROF_SHIM_INTERNAL_H

#include <pthread.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#include "gpuprof/clock.h"
#include "gpuprof/intern.h"
#include "gpuprof/region.h"
#include "pyframes.h"
#include "shim.h"

#define GPD_EXPORT __attribute__((visibility("default")))

/** Max call depth kept per capture (innermost frames win). */
#define GPD_CAPTURE_MAX_DEPTH 256
/** CCT intern table capacity (entries, power of two). */
#define GPD_SHIM_INTERN_CAP (1u << 20)
/** Connection timings (ms). */
#define GPD_SHIM_CTOR_WAIT_MS 200
/* Record mode (GPUPROF_RECORD=1): how long a push waits for ring room by
 * default (GPUPROF_RECORD_WAIT_MS overrides it, 0..GPD_RECORD_WAIT_MAX_MS;
 * thread.c).  The monitor of `gpuprof record`'s daemon releases slots as
 * it consumes them (every 0.2-2 ms): a full ring that stays full this long
 * means a starved or dead consumer. */
#define GPD_RECORD_WAIT_MS 500
#define GPD_RECORD_WAIT_MAX_MS 10000
#define GPD_SHIM_RETRY_NODAEMON_MS 1000
#define GPD_SHIM_RETRY_HANDBACK_MS 500

/** ACTIVITY h.flags bit set by the shim: start/end are host times taken
 *  by the shim (vendor profiling query failed), not device times. */
#define GPD_ACTIVITY_HOST_TIME 0x01u

/** Bits 48..63 of the intern key of a labelled context (capture.c:
 *  gpd_shim_label_node, NVTX ranges), the label's string id below: no
 *  user-space return address has them; Python keys use GPD_PY_KEY_TAG. */
#define GPD_LABEL_KEY_TAG 0xfffeull

/** Announcement state word value meaning "being announced by a thread". */
#define GPD_ANN_BUSY 0xffffffffu

/** Process-wide shim state (one instance, gpd_shim__g). */
typedef struct gpd_shim_state_s {
  _Atomic int active;        /* region mapped (records can be pushed) */
  _Atomic uint32_t gen;      /* bumps when a region is attached (or fork) */
  _Atomic uint32_t epoch;    /* announcement epoch: bumps on hand-back/fork */
  _Atomic int disabled;      /* GPUPROF_DISABLE=1 or fatal init failure */
  gpd_region_t region;       /* valid while active */
  _Atomic uint64_t local_corr;  /* correlation counter before a region */
  _Atomic uint32_t next_id;     /* string + module ids (process-local) */
  gpd_intern_t intern;          /* CCT table (valid when intern_ok) */
  int intern_ok;
  _Atomic uint32_t *node_ann;   /* per node id: epoch it was announced in */
  uint64_t start_ns;            /* constructor time (gpuprof clock) */
  char socket_path[108];
  /* 1 while no daemon has registered this process and the last connection
   * attempt found nothing listening at the socket (ENOENT, ECONNREFUSED);
   * 0 otherwise (connected, never tried, or a daemon that is slow to
   * answer).  Written by the connection thread (conn.c), read lock-free
   * by gpd_shim_may_record. */
  _Atomic int no_listener;
} gpd_shim_state_t;

extern gpd_shim_state_t gpd_shim__g;

/* -------------------------------------------------------------- stats.c */
/** Per-phase cost counters of the shim (GPUPROF_SHIM_STATS=1; stats.c). */
enum {
  GPD_ST_CAPTURE, GPD_ST_UNWIND_HIT, GPD_ST_UNWIND_MISS, GPD_ST_UNWIND_FULL, GPD_ST_UNWIND_BAD, GPD_ST_NODE_REUSE,
  GPD_ST_PYWALK, GPD_ST_INTERN, GPD_ST_PUSH_INVOKE, GPD_ST_CB_API, GPD_ST_CB_OTHER, GPD_ST_BUF_DONE,
  GPD_ST_ACT_PUSH, GPD_ST_TS, GPD_ST_RING_WAIT,
  /* frame counts, not times (level 1; capture.c, capture_stat_frames):
   * n = captures, ns = frames summed */
  GPD_ST_FR_NATIVE, GPD_ST_FR_NATIVE_SAME, GPD_ST_FR_PY, GPD_ST_FR_PY_SAME, GPD_ST_N
};
/** First of the frame-count entries (printed as frames, not ns). */
#define GPD_ST_FRAMES_FIRST GPD_ST_FR_NATIVE
/** One phase: times entered and total ns (relaxed atomics). */
typedef struct gpd_shim_stat_s {
  _Atomic uint64_t n, ns;
} gpd_shim_stat_t;
extern int gpd_shim__stats_on; /* 0 off, 1 every phase, 2 outer phases only,
                                  3 = 2 with call paths not captured (floor) */
extern gpd_shim_stat_t gpd_shim__stats[GPD_ST_N];
/** Read GPUPROF_SHIM_STATS (shim constructor). */
void gpd_shim__stats_init(void);
/** Print the totals to stderr if on (exit). */
void gpd_shim__stats_print(void);
/** Test hook (exported): zero the counters (bench-torchloop, after warm-up). */
GPD_EXPORT void gpd_shim__stats_reset(void);
/** Inner phases (inside another timed phase: capture and its parts, the
 *  INVOKE push, an activity's translation) are timed only at level 1
 *  (GPUPROF_SHIM_STATS=1); at level 2 (GPUPROF_SHIM_STATS=outer) only the
 *  outermost ones (API callback, buffer completed, timestamp callback,
 *  ring wait): the whole cost per operation with two clock reads, where
 *  level 1 adds two per inner phase (about 12 per traced call). */
#define GPD_ST_IN_T0() (__builtin_expect(gpd_shim__stats_on == 1, 0) ? gpd_clock_ns() : 0)
#define GPD_ST_IN_ADD(i, t0)                                                                  \
  do {                                                                                        \
    if (__builtin_expect(gpd_shim__stats_on == 1, 0))                                         \
      gpd_shim__stat_add(i, t0);                                                              \
  } while (0)
/** Start of a timed phase: a clock read when stats are on, else 0. */
#define GPD_ST_T0() (__builtin_expect(gpd_shim__stats_on, 0) ? gpd_clock_ns() : 0)
/** End of phase `i` started at t0 (no-op when stats are off). */
#define GPD_ST_ADD(i, t0)                                                                     \
  do {                                                                                        \
    if (__builtin_expect(gpd_shim__stats_on, 0))                                              \
      gpd_shim__stat_add(i, t0);                                                              \
  } while (0)
/** Add one event carrying v (frames) to entry i (the frame counts). */
static inline void gpd_shim__stat_add_n(int i, uint64_t v) {
  atomic_fetch_add_explicit(&gpd_shim__stats[i].n, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&gpd_shim__stats[i].ns, v, memory_order_relaxed);
}
static inline void gpd_shim__stat_add(int i, uint64_t t0) {
  atomic_fetch_add_explicit(&gpd_shim__stats[i].n, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&gpd_shim__stats[i].ns, gpd_clock_ns() - t0, memory_order_relaxed);
}

/** The self-cost meter (stats.c), always on, for the back ends that trace
 *  every operation and cannot detach (OpenCL, Level Zero): per api, the
 *  operations recorded and, for 1 in GPD_SHIM_METER_EVERY of them (per
 *  thread: its 64th, 128th, ... operation), the shim's own time in the call (capture, correlation, INVOKE
 *  and activity bookkeeping; the vendor call itself excluded).  Its
 *  estimate ops * ns / timed is what `ps` reports as the cost
 *  (CollectReport.self_ns).  Relaxed atomics, no lock; a timed operation
 *  costs three clock reads, the others a thread-local increment. */
#define GPD_SHIM_METER_EVERY 64u
typedef struct gpd_shim_meter_s {
  _Atomic uint64_t ops, timed, ns;
} gpd_shim_meter_t;
extern gpd_shim_meter_t gpd_shim__meter[GPD_API_MAX];
/** 1 when the calling thread's next operation is one to time. */
int gpd_shim__meter_pick(void);
/** Count one operation of api; ns > 0: a timed one's own time. */
static inline void gpd_shim__meter_add(unsigned api, uint64_t ns, int timed) {
  if (api >= GPD_API_MAX)
    return;
  atomic_fetch_add_explicit(&gpd_shim__meter[api].ops, 1, memory_order_relaxed);
  if (timed) {
    atomic_fetch_add_explicit(&gpd_shim__meter[api].timed, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&gpd_shim__meter[api].ns, ns, memory_order_relaxed);
  }
}
/** The estimate for api: *ops recorded, returns their estimated shim time
 *  (ns; 0 when none was timed). */
uint64_t gpd_shim__meter_self_ns(unsigned api, uint64_t *ops);

/* ----------------------------------------------------------------- shim.c */
/** Claim the announcement of an object whose state word is *a:
 *  1 = already announced in `epoch`, 0 = caller claimed it (must call
 *  gpd_shim__ann_done), -1 = another thread is announcing it. */
int gpd_shim__ann_claim(_Atomic uint32_t *a, uint32_t epoch, uint32_t *old);
void gpd_shim__ann_done(_Atomic uint32_t *a, uint32_t epoch, uint32_t old, int ok);
/** Id for a string or module (process-local counter, mirrored to the
 *  region header's next_string). */
uint32_t gpd_shim__id_next(void);
/** Fork child (main.c's handler, after gpd_shim__attach_forget): a lazy
 *  connection start inherited from the parent cleared (no start inside
 *  the fork handler, until gpd_shim__atfork_lazy), new region generation
 *  and announcement epoch, ids and the CCT table reset, the child's start
 *  time. */
void gpd_shim__atfork_child(void);
/** Fork child, last step: the first gpd_shim_active() starts the
 *  connection by calling start (main.c passes gpd_conn_start; lazily, as
 *  the constructor does) and waits for it. */
void gpd_shim__atfork_lazy(int (*start)(int wait_ms));

/* ----------------------------------------------------------------- fdid.c */
/** Identity of a descriptor the shim opened (socket, region memfd): the
 *  application may close the number and reuse it for its own file. */
typedef struct gpd_fdid_s {
  int fd;            /* -1 = none */
  uint64_t dev, ino; /* fstat at gpd_fdid_take */
} gpd_fdid_t;
/** Record fd's identity: 0 or -errno (id->fd = -1 then). */
int gpd_fdid_take(gpd_fdid_t *id, int fd);
/** 1 when id->fd is still the file recorded (same st_dev and st_ino). */
int gpd_fdid_owned(const gpd_fdid_t *id);

/* --------------------------------------------------------------- attach.c */
/** Attach a mapped region (takes r by value); makes the shim active.
 *  Called by the connection thread or the test hook.  0 or -errno. */
int gpd_shim__attach(gpd_region_t *r);
/** The region's memfd if it is still the one attached, else -1 (then
 *  forgotten, never closed: the number may be the application's now). */
int gpd_shim__attach_fd(void);
/** Test hook (exported): attach a region fd (ownership taken) without a
 *  daemon. */
GPD_EXPORT int gpd_shim__attach_region(int fd);
/** Fork handlers: prepare / parent / child take and release the attach
 *  lock; forget (child, after the back ends' handlers): drop the parent's
 *  region (unmapped; its memfd closed if the number is still it). */
void gpd_shim__attach_atfork_prepare(void);
void gpd_shim__attach_atfork_parent(void);
void gpd_shim__attach_atfork_child(void);
void gpd_shim__attach_forget(void);

/* --------------------------------------------------------------- status.c */
/** Re-send the kept back-end STATUS records (after attach / hand-back). */
void gpd_shim__status_resend(void);
/** Fork handlers: take / release the status lock. */
void gpd_shim__status_atfork_prepare(void);
void gpd_shim__status_atfork_parent(void);
void gpd_shim__status_atfork_child(void);

/* ----------------------------------------------------------------- conn.c */
/** Start the connection thread once per process image (later calls only
 *  wait); wait up to wait_ms for its first attempt to finish (registered
 *  or failed).  Returns at once on the connection thread.  0 or -errno. */
int gpd_conn_start(int wait_ms);
/** pthread_atfork prepare / parent: take / release the connection lock. */
void gpd_conn_atfork_prepare(void);
void gpd_conn_atfork_parent(void);
/** Stop at exit (no join: never block the host). */
void gpd_conn_stop(void);
/** In the fork child: forget the parent's connection (close its fd if it
 *  is still ours), release the lock taken in prepare, reset state.  The
 *  child's gpd_conn_start() (lazily, shim.c) registers it anew. */
void gpd_conn_atfork_child(void);
/** Queue a GPU binary chunk set for the connection thread (behind
 *  gpd_shim_gpubin, shim.h; also in conn.c). */
int gpd_conn_gpubin(const void *data, size_t len, const char *kind);

/* -------------------------------------------------------------- control.c */
struct gpd_backend_s;
struct gpd_control_s;
/** The answer to one Control (proto ControlAck). */
typedef struct gpd_control_ack_s {
  uint64_t id;
  unsigned kind;
  int code;         /* 0 applied, -ENOTSUP no back end serves it, -errno */
  uint32_t targets; /* summed over the back ends that applied it */
  int ended;        /* a window closed by gpd_shim__control_due */
  char message[160];
} gpd_control_ack_t;
/** The built back ends, NULL-terminated (shim.c; main.c registers the
 *  list at start, before any other thread, and walks it; control.c and
 *  policy.c dispatch through it).  Empty before the registration. */
const struct gpd_backend_s *const *gpd_shim__backends(void);
/** main.c's constructor, first step: list (GPD_BACKENDS, backends.h,
 *  NULL-terminated, static) becomes gpd_shim__backends(). */
void gpd_shim__backends_register(const struct gpd_backend_s *const *list);
/** Dispatch one Control to the back ends and open/close its kind's
 *  window; fills ack.  Connection thread only. */
void gpd_shim__control_apply(const struct gpd_control_s *c, gpd_control_ack_t *ack);
struct Gpuprof__Control;
/** A Control message from the daemon: decoded, a POLICY's policy kept
 *  (gpd_shim__policy_set; none: -EINVAL), applied (gpd_shim__control_apply);
 *  *ack filled.  Connection thread only. */
void gpd_shim__control_msg(const struct Gpuprof__Control *mc, gpd_control_ack_t *ack);
/** Close one window whose end is <= now_ns (back ends get enable = 0):
 *  1 with ack filled (ended = 1), 0 when none is due.  Connection thread. */
int gpd_shim__control_due(uint64_t now_ns, gpd_control_ack_t *ack);
/** Fork child: no window is open (the parent's back-end state is gone). */
void gpd_shim__control_atfork_child(void);

/* --------------------------------------------------------------- thread.c */
/** This thread's producer for the current region, claiming a ring on first
 *  use; NULL when not active or no ring is free (counted). */
gpd_producer_t *gpd_thread_producer(void);
/** Push one record from this thread's ring: 0, -ENOTCONN, -ENOSPC.  In
 *  record mode (gpd_thread_record_wait) a full ring first waits for room,
 *  bounded; never inside gpd_thread_nowait(1). */
int gpd_thread_push(const void *rec, size_t len);
/** Record mode: a full ring makes gpd_thread_push wait up to ns (0: never)
 *  for room before it drops the record (thread.c).  Constructor only. */
void gpd_thread_record_wait(uint64_t ns);
/** This thread's pushes never wait while on (a signal handler sets it
 *  around its pushes); returns the previous value.  Async-signal-safe. */
int gpd_thread_nowait(int on);
/** Push that may wait for ring space (see gpd_shim_push_activity_wait). */
int gpd_thread_push_wait(const void *rec, size_t len, uint64_t max_wait_ns);
/** The same; the wait also ends (the record counted as dropped) once
 *  *stop is non-zero (stop may be NULL). */
int gpd_thread_push_wait_stop(const void *rec, size_t len, uint64_t max_wait_ns, const atomic_int *stop);
/** Prefetch (for writing) the ring slot and head of this thread's next
 *  push, so that their cache misses overlap the work before it (a capture
 *  of ~0.3-1 us).  Never faults, never claims a ring. */
void gpd_thread_push_prefetch(void);
/** Cached gettid(). */
uint32_t gpd_thread_tid(void);
/** Per-thread capture memo (allocated on first capture; NULL on OOM).
 *  Its allocation also starts the thread's CPU sampling timer. */
struct gpd_capture_memo_s;
struct gpd_capture_memo_s *gpd_thread_memo(void);
/** The memo if this thread has one (never allocates: signal handlers). */
struct gpd_capture_memo_s *gpd_thread_memo_peek(void);
/** 1 while this thread is inside a push (a handler must not push). */
int gpd_thread_pushing(void);
/** Reentrancy guard: returns previous value. */
int gpd_thread_enter(void);
void gpd_thread_leave(int prev);
void gpd_thread_init(void);
/** Register the CPU sampler's per-thread timer hooks (main.c, before
 *  gpd_cpu_sampler_init): `start` runs once per thread when its memo is
 *  allocated (gpd_thread_memo), `stop` when the thread exits (its key
 *  destructor).  Passed in rather than called by name so that thread.c,
 *  below the sampler, does not call up into it.  Either may be NULL (no
 *  call).  Constructor only; read with acquire loads on any thread. */
void gpd_thread_timer_hooks(void (*start)(void), void (*stop)(void));
/** At process exit: retire the calling thread's ring. */
void gpd_thread_exit_current(void);

/* -------------------------------------------------------------- capture.c */
/* The load-module table, frame classes and mapping generations: module.h. */
/** Frames one unwind records (the shim/vendor frames + the kept ones). */
#define GPD_CAPTURE_WALK_MAX (GPD_CAPTURE_MAX_DEPTH + 32)
/* The longest a fork's prepare handler waits for unwinds in other
 * threads to end (ms); past it the fork goes on. */
#define GPD_CAPTURE_FORK_WAIT_MS 1000
/** Hashes of missed stacks remembered per thread (power of two, 4-way). */
#define GPD_CAPTURE_SEEN 1024u
/** (walk, Python frames) -> node entries per thread (power of two). */
#define GPD_CAPTURE_PYNODES 512u
/** Recorded unwinds kept per thread for the verified-replay fast path: a
 *  training loop cycles through one distinct native stack per GPU
 *  operation of its step (about 65 for tests/cuda/torch_train.py's CNN),
 *  so fewer slots than that made every capture a miss.  Memory: a slot
 *  is 11.5 KB of address space, of which a walk of n frames with b %rbp
 *  checks touches ~16 (n + b) + 8 n bytes; pages never filled are never
 *  touched. */
#define GPD_CAPTURE_WALKS 64

/** One check of a recorded unwind's replay: the stack word at `at` must
 *  still hold `val` (a frame's return address, or a saved %rbp that a
 *  %rbp-based frame's CFA depends on; capture-unwind.c). */
typedef struct gpd_capture_check_s {
  uintptr_t at, val;
} gpd_capture_check_t;

/** Most checks of one walk: a return address per frame above frame 0 and
 *  at most one saved %rbp per frame. */
#define GPD_CAPTURE_CHECKS (2 * GPD_CAPTURE_WALK_MAX)

/** One recorded unwind (capture-unwind.c): frame j has return address ip[j] and
 *  frame 0 (gpd_shim_capture at its unwind call) ip0, stack pointer sp0
 *  and %rbp bp0, keyed by them in the memo's wkey.  chk[0 ..
 *  nchk) are every stack word the replay compares, ascending by address
 *  (leaf-most first: a changed stack fails in its first checks).  `ok`:
 *  every frame can be re-verified from memory.  Laid out for a cold cache
 *  (the replay touches each walk once per step of a loop): the header is
 *  one line, the replay reads it and chk[0 .. nchk) (4 per line, one
 *  contiguous run), never ip[] (read only when a path is interned). */
typedef struct gpd_capture_walk_s {
  _Alignas(64) uint32_t n;   /* frames in ip[] */
  uint16_t ok;
  uint16_t succ_lines;       /* lines the successor's replay reads (prefetch) */
  uint32_t node;             /* leaf node of this path, 0 = not interned yet */
  uint32_t succ;             /* slot + 1 of the walk that came next last time */
  uint64_t id;               /* unique per fill of the slot (node cache key) */
  uint32_t gen, epoch, mgen; /* node is valid and announced for these */
  uint32_t nchk;             /* entries of chk */
  uintptr_t ip0, sp0, bp0;   /* frame 0's ip (= ip[0]), stack pointer, %rbp */
  gpd_capture_check_t chk[GPD_CAPTURE_CHECKS];
  uintptr_t ip[GPD_CAPTURE_WALK_MAX];
} gpd_capture_walk_t;

_Static_assert(offsetof(gpd_capture_walk_t, chk) == 64, "a walk's header is one line");

/** What a full unwind gathers per frame before its checks are chosen
 *  (capture-unwind.c, capture_walk_full): frame j's stack pointer and the slot
 *  its %rbp was restored from (0: unchanged) with the value. */
typedef struct gpd_capture_fullwalk_s {
  uintptr_t sp[GPD_CAPTURE_WALK_MAX];
  gpd_capture_check_t bp[GPD_CAPTURE_WALK_MAX];
} gpd_capture_fullwalk_t;

/** gpd_capture_memo_t.busy: what the thread's capture is doing now. */
#define GPD_CAPTURE_BUSY_UNWIND 1u /* in libunwind (its per-thread cache in use) */
#define GPD_CAPTURE_BUSY_MEMO 2u   /* updating the memo, interning, pushing */

/** Per-thread capture state (capture.c), written only by captures on its
 *  own thread; a capture nested in one (signal handler) only reads it.
 *  Invariant after every store: ips/nodes[0..n) is one consistent path. */
/** A thread's previous path, root first (call sites and their node ids),
 *  so that the next capture interns only the suffix that changed. */
typedef struct gpd_capture_path_s {
  uint32_t gen, epoch;
  uint32_t mgen;     /* gpd_module__gen the path was built in */
  uint32_t n;        /* frames in the previous path */
  uint32_t verified; /* nodes[0..verified) known announced in epoch */
  uintptr_t ips[GPD_CAPTURE_MAX_DEPTH];
  uint32_t nodes[GPD_CAPTURE_MAX_DEPTH];
} gpd_capture_path_t;

typedef struct gpd_capture_memo_s {
  gpd_capture_path_t path; /* GPU API captures (gpd_shim_capture) */
  gpd_capture_path_t samp; /* CPU samples (gpd_capture_sample): their own,
                              so that samples never evict the API paths */
  uintptr_t samp_raw[GPD_CAPTURE_WALK_MAX]; /* a sample's backtrace */
  uint32_t busy;     /* 0 or GPD_CAPTURE_BUSY_*: a capture is running */
  uintptr_t busy_sp; /* its frame address (abandoned if ours is not deeper) */
  uintptr_t busy_cookie_at; /* a local of its frame holding busy_cookie */
  uint64_t busy_cookie, seq;
  uint32_t abandoned; /* captures left by longjmp (statistics) */
  /* Verified replay (capture-unwind.c): recorded unwinds, round robin; wkey[i]
   * = frame-0 key of slot i (0 = empty or not replayable), scanned
   * before any walk is verified; walk_last = slot + 1 of the last hit. */
  uint32_t walk_next, walk_last;
  uint64_t walk_ids;
  int stack_state;             /* 0 unknown, 1 bounds known, -1 unusable */
  uintptr_t stack_lo, stack_hi; /* this thread's stack [lo, hi) */
  uint64_t wkey[GPD_CAPTURE_WALKS];
  gpd_capture_walk_t walks[GPD_CAPTURE_WALKS];
  gpd_capture_fullwalk_t fullw; /* a full unwind's per-frame scratch */
  gpd_capture_walk_t scratch; /* a miss's unw_backtrace (not replayable) */
  /* On a miss the stack is unwound with unw_backtrace (fast); only a
   * stack whose return addresses were seen before (hash in the 4-way
   * sets of seen[]) pays the full unw_step walk that makes replay
   * possible, and one whose full walk could not be made replayable
   * (bad[]) never pays it again.  A thread whose stacks rarely repeat
   * (an interpreter) so never pays it. */
  uint64_t seen[GPD_CAPTURE_SEEN];
  uint64_t bad[GPD_CAPTURE_SEEN];
  /* Leaf nodes of (recorded walk, Python frames) pairs: the same native
   * stack runs many Python paths (3.11+ evaluates Python calls without
   * native frames), so a walk alone cannot name the node when Python
   * frames are spliced in.  4-way sets by key. */
  struct {
    uint64_t key;                 /* hash(walk id, Python frames); 0 = empty */
    uint32_t node, gen, epoch, mgen;
  } pynode[GPD_CAPTURE_PYNODES];
  gpd_pyframes_thread_t py; /* this thread's Python frames (pyframes.c) */
  gpd_pyframes_thread_t spy; /* the same for CPU samples (their handler's own) */
  /* GPUPROF_SHIM_STATS=1 only (capture.c, capture_stat_frames): the last
   * capture's Python keys, outermost first */
  uint32_t stat_npy;
  uint64_t stat_py[GPD_PY_MAX];
  uint32_t stat_floor_node; /* GPUPROF_SHIM_STATS=floor: the first node */
} gpd_capture_memo_t;


/** Init: libunwind caching policy, first module scan. */
void gpd_capture_init(void);
/** Announce module of ip (if known), returns module id (0 = unknown) and
 *  the module bias in *base; ok=0 if the MODULE push failed. */
uint32_t gpd_capture_module_of(uintptr_t ip, uint64_t *base, int *ok);
/** Fork child: reset announcement-related state. */
void gpd_capture_atfork_child(void);
/** Why gpd_capture_sample gave no node (the sampler counts each). */
enum {
  GPD_SAMPLE_NO_STATE = 1,  /* no table or no memo on this thread yet */
  GPD_SAMPLE_NESTED = 2,    /* inside a capture: its path not all known */
  GPD_SAMPLE_NO_FRAME = 3,  /* the interrupted frame not found by the unwind */
  GPD_SAMPLE_INCOMPLETE = 4 /* a node not interned or announced (table full,
                               ring full, module not in the table yet) */
};
/** The calling context of the code a signal interrupted at `pc` (the
 *  sampler's handler, cpu-sampler.c): unwinds from the handler, keeps the
 *  frames from the interrupted one outwards (its pc is the leaf's call
 *  site), cuts shim/vendor frames like a capture, interns the path (own
 *  per-thread memo) and announces new nodes.  Async-signal-safe: no
 *  allocation, no lock, no table refresh, no logging.  Returns the leaf
 *  node, or 0 with *why set (GPD_SAMPLE_*).  Inside an interrupted capture
 *  of the same thread it answers from known nodes only. */
uint32_t gpd_capture_sample(uintptr_t pc, unsigned *why);
/* ------------------------------------------------------- capture-unwind.c */
/** This thread's call stack as a walk of m: a recorded walk replayed when
 *  the stack still holds what it recorded, else a fresh unwind (a
 *  replayable one into the next slot for a stack seen before, else the
 *  scratch walk).  Frame 0 is the caller's state at this call: only
 *  gpd_shim_capture calls it, directly.  The capturing thread, its memo;
 *  no lock, no allocation. */
gpd_capture_walk_t *gpd_capture_unwind(gpd_capture_memo_t *m);
/** Fork gate around every libunwind call of the shim (its internal locks
 *  are not fork-safe): enter returns 1 when the caller may unwind (then it
 *  must call leave), 0 while a fork is being prepared and wait is 0 (a
 *  signal handler: skip the unwind); with wait 1 it waits (yielding) for
 *  the fork to finish.  Any thread, async-signal-safe (wait 0); no lock. */
int gpd_capture_unwind_enter(int wait);
void gpd_capture_unwind_leave(void);
/** Fork handlers (main.c; prepare first of all): prepare stops new
 *  unwinds and waits up to GPD_CAPTURE_FORK_WAIT_MS for the running ones;
 *  parent and child reopen the gate. */
void gpd_capture_unwind_atfork_prepare(void);
void gpd_capture_unwind_atfork_parent(void);
void gpd_capture_unwind_atfork_child(void);
/** Learn this thread's stack bounds into m (stack_state 1, or -1 when
 *  unknown). */
void gpd_capture_unwind_bounds(gpd_capture_memo_t *m);
/** Pure frame-pointer walk (bench baseline). */
GPD_EXPORT int gpd_shim__fp_backtrace(void **buf, int max);

/* ---------------------------------------------------------- cpu-sampler.c */
/** Read GPUPROF_CPU_SAMPLING* and install the signal handler (the
 *  constructor); starts the calling (main) thread's timer. */
void gpd_cpu_sampler_init(void);
/** The CPU sampling rate running (Hz; 0 off) and whether
 *  GPUPROF_CPU_SAMPLING chose it (*from_env = 1) or the daemon's policy. */
uint32_t gpd_cpu_sampler_rate(int *from_env);
/** Start the calling thread's CPU-time timer if sampling is on and it has
 *  none (thread.c's start hook: once per thread when its memo is
 *  allocated). */
void gpd_cpu_sampler_thread_start(void);
/** The sampling signal while sampling is on (configured, not backed off
 *  or stopped), else 0 (pthread-wrappers.c asks before wrapping). */
int gpd_cpu_sampler_wanted(void);
/** A new thread's first step (pthread-wrappers.c): its memo and timer when
 *  sampling is on; without them (OOM, no timer) it runs unsampled. */
void gpd_cpu_sampler_thread_begin(void);
/** Test hook: CPU-time timers held now (one per live sampled thread). */
GPD_EXPORT int gpd_shim__cpusample_timers(void);
/** Test hook: CPU time (ns) the calling thread's timer signals carried
 *  (out[0]) and its pushed samples carry (out[1]). */
GPD_EXPORT void gpd_shim__cpusample_thread_ns(uint64_t out[2]);
/** Delete the calling thread's timer (thread exit, thread.c's stop hook;
 *  blocks the signal). */
void gpd_cpu_sampler_thread_stop(void);
/** Stop sampling in this process (destructor): no more samples pushed. */
void gpd_cpu_sampler_stop(void);
/** Fork child: the child has no timers; start one for this thread. */
void gpd_cpu_sampler_atfork_child(void);

/* policy.c: the daemon's collection policy; collect.c: the CollectReports. */
struct Gpuprof__CollectPolicy;
struct gpd_shim_policy_s;
struct gpd_shim_collect_s;
/** Keep the policy of a HelloReply (hello = 1: also kept as the text the
 *  shim reports as received in Hello) or of a CONTROL_POLICY (m NULL or
 *  without a mode: ignored, 0); 1 and *out (may be NULL) filled.
 *  Connection thread. */
int gpd_shim__policy_set(const struct Gpuprof__CollectPolicy *m, int hello, struct gpd_shim_policy_s *out);
/** The policy's CPU sampling rate (0: none or off). */
uint32_t gpd_shim__policy_cpu_hz(void);
/** Fork child: the lock is made fresh (the policy is kept). */
void gpd_shim__policy_atfork_child(void);
/** Policy p's mode as text into out (n bytes): "duty 10 ms / 3000 ms",
 *  else the mode's name. */
void gpd_shim__policy_mode_text(const struct gpd_shim_policy_s *p, char *out, size_t n);
/** What the latest HelloReply's policy said, as text, into out (n bytes;
 *  "" before one).  Takes the policy's lock. */
void gpd_shim__policy_hello(char *out, size_t n);
/** Fill up to max reports (the core's, api 0, then each back end's);
 *  api[i] is report i's GPD_API_*.  Returns the count.  Connection thread
 *  (collect.c). */
size_t gpd_shim__collect_reports(struct gpd_shim_collect_s *out, unsigned *api, size_t max);
/** Test hook of control.c: one more back end (tests/integration/ctl-app.c). */
extern const struct gpd_backend_s *volatile gpd_shim__control_backend;
/** Connection thread, every loop: the module refresh the handler asked
 *  for (gpd_module_service), Python's service, and a check that the
 *  application has not taken the sampling signal. */
void gpd_cpu_sampler_service(void);

/* -------------------------------------------------------------- strings.c */
void gpd_strings_init(void);
/** gpd_shim_string for a permanent text[0..len) (never freed or changed:
 *  Python site texts): kept by pointer, no allocation, no logging, so
 *  async-signal-safe (the CPU sampler announces Python nodes).  0 when not
 *  active or the table is full. */
uint32_t gpd_shim__string_static(const char *text, size_t len, unsigned kind);
/** gpd_shim_string that also gives the entry's place in the table
 *  (*slot, when slot is not NULL: index + 1, 0 when none) for
 *  gpd_shim__string_again: a caller
 *  that keeps the id of a text it will name again (the OpenCL kernel-name
 *  cache) asks by slot instead of hashing the text each time.  Any
 *  thread; lock-free. */
uint32_t gpd_shim__string_slot(const char *text, unsigned kind, uint32_t *slot);
/** The id of the entry at `slot` (from gpd_shim__string_slot), its STRING
 *  record pushed again on this thread's ring if a daemon restart started
 *  a new announcement epoch since; 0 when the slot is empty (the table
 *  was wiped in a fork child) or not active: ask by text then. */
uint32_t gpd_shim__string_again(uint32_t slot);
void gpd_strings_atfork_child(void);

/* -------------------------------------------------------------- job-env.c */
typedef struct gpd_shim_job_env_s {
  char job_id[128];
  char step_id[64];
  int rank;       /* -1 unknown */
  int local_rank; /* -1 unknown */
} gpd_shim_job_env_t;
/** Read the job tags from the environment (see docs/SHIM.md). */
void gpd_shim_job_env_read(gpd_shim_job_env_t *j);
/** Test hook: same, exported. */
GPD_EXPORT void gpd_shim__job_read(gpd_shim_job_env_t *j);

/* ----------------------------------------------------------- back ends */
#ifdef GPD_HAVE_OPENCL
void gpd_ocl_atfork_child(void);
/** Callbacks registered and not yet completed (tests wait for 0). */
GPD_EXPORT long gpd_shim__ocl_pending(void);
#else
static inline void gpd_ocl_atfork_child(void) {}
#endif

#endif

/* backends.h - the shim's vendor back ends behind one ops table, so that the
 * shim core (shim.c) never calls vendor code by name.
 *
 * Each back end that is built defines one `const gpd_backend_t` next to its
 * code (shim/opencl/opencl-api.c: gpd_backend_opencl; shim/cupti/cupti-api.c:
 * gpd_backend_cupti; a Level Zero back end would add gpd_backend_level0 in
 * shim/level0/ and GPD_HAVE_LEVEL0).  GPD_BACKENDS expands to the list of
 * those that are built, so call sites carry no #ifdef:
 *
 *     static const gpd_backend_t *const all[] = {GPD_BACKENDS NULL};
 *
 * Rules for every hook (any may be NULL = nothing to do):
 *  - init: called once from the shim constructor, after the first
 *    connection attempt (connected or not).  A back end that fails disables
 *    itself, reports gpd_shim_backend_status(api, 0, code, why) and returns
 *    a negative code; it never harms the application.
 *  - fork_prepare / fork_parent / fork_child: pthread_atfork handlers, run
 *    in table order (prepare) around a fork(2) of the application.  prepare
 *    takes every lock of the back end (no back-end lock is ever held while
 *    taking a shim lock or another back end's, so any order is safe);
 *    parent releases them; child releases them and resets state that
 *    belonged to the parent (in-flight commands, threads that are gone).
 *    None may block on anything but the back end's own short critical
 *    sections, nor start threads (the shim restarts its own lazily).
 *  - shutdown: from the shim destructor (process exit), reverse order;
 *    bounded time (flush what is buffered, no waits on the device).
 *  - status: 1 running, 0 disabled (why filled, NUL-terminated, may be
 *    truncated to n), -1 not started (yet); any thread, lock-free.
 *  - collect: see the field (CollectReport to the daemon).
 *  - control: a Control the daemon sent (proto/gpuprof.proto; the shim
 *    core's shim/control.c dispatches it to every back end and keeps the
 *    window: when c->duration_ms ends it calls control again with
 *    enable = 0).  Runs on the shim's connection thread, never on an
 *    application thread, and must not block beyond the back end's own
 *    short critical sections: work that must run on an application thread
 *    (a vendor call that needs the thread's current context) is flagged
 *    with an atomic for that thread's next API call.  Returns -ENOTSUP for
 *    a kind the back end does not serve (or cannot now: no such vendor in
 *    the process), 0 when applied (*targets: what it applied to, e.g.
 *    CUDA contexts; msg optional), another negative code on failure with
 *    msg saying why (NUL-terminated, truncated to n).
 */
#ifndef GPUPROF_SHIM_BACKENDS_H
#define GPUPROF_SHIM_BACKENDS_H

#include <stddef.h>
#include <stdint.h>

/** The daemon's collection policy for this process (proto CollectPolicy;
 *  docs/SERVICE.md "Collection policy"): what the back ends run when no
 *  GPUPROF_* variable of theirs says otherwise. */
typedef struct gpd_shim_policy_s {
  char mode[16];        /* "full", "detached", "duty" */
  uint32_t window_ms;   /* duty: window */
  uint32_t period_ms;   /* duty: window start to window start */
  uint32_t pc_window_ms, pc_period_s; /* rotating PC-sampling windows (0: none) */
  uint32_t cpu_hz;      /* CPU sampling (0: off) */
  uint32_t budget_bp;   /* overhead budget, 1/100 % */
  char rule[256];       /* the config sections that set it */
} gpd_shim_policy_t;

/** The policy the daemon sent (HelloReply or the latest CONTROL_POLICY):
 *  1 and *out filled, or 0 when there is none (no daemon yet, an older
 *  daemon).  Any thread (shim/policy.c; a short lock). */
int gpd_shim_policy(gpd_shim_policy_t *out);

/** What one back end runs and what collection measurably costs it (proto
 *  CollectReport; the daemon's governor sizes the duty period from it). */
typedef struct gpd_shim_collect_s {
  char source[16];      /* "env", "daemon", "default" */
  char mode[48];        /* effective, GPUPROF_CUDA_TRACE syntax */
  char note[160];       /* why (e.g. the environment wins), or "" */
  int can_detach;       /* 0: every operation is traced, always */
  uint64_t elapsed_ns, window_ns, windows, launches, launches_in, switch_ns, pc_window_ns, pc_launches;
  uint64_t self_ns;     /* cannot detach: the shim's estimated own time in its operations */
  /* duty: the timed kernel launches between windows (1 in 64) and inside
   * them (all), counts and summed wall time (ns); the governor's
   * per-launch cost of tracing is the difference of their means */
  uint64_t timed_out, timed_out_ns, timed_in, timed_in_ns;
  uint64_t busy_windows; /* windows skipped: another tool held CUPTI or the profiling hardware */
  char busy[160];       /* "busy: held by another tool (...), N windows skipped, retrying" while
                           the last attempt was busy, else "" */
} gpd_shim_collect_t;

/** A Control as the back ends see it (proto Control; kind and flags are
 *  GPUPROF__CONTROL_KIND__* / GPUPROF__CONTROL_FLAG__* values). */
typedef struct gpd_control_s {
  uint64_t id;          /* the daemon's id, for logs */
  unsigned kind;        /* GPD_CONTROL_* (= proto ControlKind) */
  int enable;           /* 0: stop now (also at the end of a window) */
  uint32_t duration_ms; /* the window (enable only; 0 = until stopped) */
  uint32_t period;      /* kind-specific; PC sampling: log2 cycles, 0 default */
  uint32_t flags;       /* kind-specific; PC sampling: GPD_CONTROL_F_COUNTS */
  const gpd_shim_policy_t *policy; /* GPD_CONTROL_POLICY: the new policy */
} gpd_control_t;

/* Mirrors of proto/gpuprof.proto's ControlKind / ControlFlag (back ends do
 * not include the generated header). */
#define GPD_CONTROL_PC_SAMPLING 1u
#define GPD_CONTROL_TRACE 2u
#define GPD_CONTROL_POLICY 3u /* a new collection policy (no window) */
#define GPD_CONTROL_KINDS 32u /* kinds 0..31 have a window; others: -ENOTSUP */
#define GPD_CONTROL_F_COUNTS 1u

/** One vendor back end of the shim (see the rules above). */
typedef struct gpd_backend_s {
  const char *name; /* "opencl", "cuda", "level0": for logs */
  unsigned api;     /* GPD_API_* of gpuprof/record.h */
  int (*init)(void);
  void (*fork_prepare)(void);
  void (*fork_parent)(void);
  void (*fork_child)(void);
  void (*shutdown)(void);
  int (*status)(char *why, size_t n);
  int (*control)(const gpd_control_t *c, uint32_t *targets, char *msg, size_t n);
  /* collect: fill *out with what the back end runs and costs (connection
   *  thread, about once a second; short critical sections only): 1 filled,
   *  0 nothing to say.  NULL: a running back end is reported as one that
   *  cannot detach (shim/policy.c). */
  int (*collect)(gpd_shim_collect_t *out);
} gpd_backend_t;

#ifdef GPD_HAVE_OPENCL
extern const gpd_backend_t gpd_backend_opencl;
#define GPD_BACKEND_OPENCL &gpd_backend_opencl,
#else
#define GPD_BACKEND_OPENCL
#endif

#ifdef GPD_HAVE_CUPTI
extern const gpd_backend_t gpd_backend_cupti;
#define GPD_BACKEND_CUPTI &gpd_backend_cupti,
/* Also called by name by tests/cupti-stub-shim.c (a stand-in shim core). */
int gpd_cupti_init(void);
void gpd_cupti_fini(void);
#else
#define GPD_BACKEND_CUPTI
static inline int gpd_cupti_init(void) { return 0; }
static inline void gpd_cupti_fini(void) {}
#endif

#ifdef GPD_HAVE_LEVEL0
extern const gpd_backend_t gpd_backend_level0;
#define GPD_BACKEND_LEVEL0 &gpd_backend_level0,
#else
#define GPD_BACKEND_LEVEL0
#endif

#ifdef GPD_HAVE_OMPT
extern const gpd_backend_t gpd_backend_ompt;
#define GPD_BACKEND_OMPT &gpd_backend_ompt,
/** Counting an OpenMP offload operation once (shim/ompt/ompt-target.c):
 *  a vendor back end about to record an API call of kind `op` (gpd_op_t)
 *  on this thread asks first.  Inside an OMPT operation's begin..end
 *  (a target region's submit, a map's transfer) it returns the
 *  construct's `<omp target>` context, to be used as the INVOKE's node
 *  instead of a capture, and when `op` is the operation's own kind OMPT
 *  then pushes nothing for it (the vendor's ACTIVITY counts it); inside
 *  a construct but outside an operation it returns the construct's
 *  context (a synchronization of the region); else 0 (capture as usual).
 *  The calling thread only; no lock, no allocation. */
uint32_t gpd_ompt_claim(unsigned op);
#else
#define GPD_BACKEND_OMPT
static inline uint32_t gpd_ompt_claim(unsigned op) {
  (void)op;
  return 0;
}
#endif

/* NVTX ranges (shim/nvtx/): not a vendor API (api GPD_API_NONE, no
 * status); its init makes NVTX load the shim as its injection. */
#ifdef GPD_HAVE_NVTX
extern const gpd_backend_t gpd_backend_nvtx;
#define GPD_BACKEND_NVTX &gpd_backend_nvtx,
#else
#define GPD_BACKEND_NVTX
#endif

/** The back ends that are built, each followed by a comma. */
#define GPD_BACKENDS GPD_BACKEND_OPENCL GPD_BACKEND_CUPTI GPD_BACKEND_LEVEL0 GPD_BACKEND_OMPT GPD_BACKEND_NVTX

#endif

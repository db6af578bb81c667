/* opencl-pending.c - enqueued commands whose ACTIVITY is not pushed yet:
 * one bounded list per command queue, harvested on the application's own
 * threads instead of an event callback per command.
 *
 * Why: on PoCL a CL_COMPLETE callback per command (clSetEventCallback,
 * its dispatch on a runtime thread, the ACTIVITY pushed from that thread's
 * ring) cost ~0.3 us per launch of a 2.2 us launch, pinned to one core
 * (docs/PERFORMANCE.md "Reading the OpenCL row").  A list entry costs one
 * uncontended lock and a 64-byte copy; the harvest reads the profiling
 * times of a whole batch at once, on the thread that waited.
 *
 * An entry holds one reference to the command's event (our own event, or
 * the application's, retained) and the command's fields.  It is taken
 * out, translated to an ACTIVITY (opencl-translate.c), pushed and its
 * reference released:
 *   - clFinish(q): every entry of q added before the call (seq below the
 *     snapshot taken before it): complete, no status query;
 *   - clWaitForEvents, a blocking read/write: from the oldest entry on,
 *     those whose event reports CL_COMPLETE (or an error), up to the first
 *     that does not; every list / that queue's list;
 *   - a full list (OCL_PEND_MAX): the same; if none completed, the new
 *     command gets the CL_COMPLETE callback instead (gpd_ocl_watch);
 *   - clReleaseCommandQueue(q): completed entries pushed, the others
 *     handed to callbacks, so a released queue leaves nothing behind and a
 *     new queue at the same handle starts empty;
 *   - process exit (atexit, registered at the first list, so it runs
 *     before the runtime's destructors): like a queue release, every list.
 * So every command yields exactly one ACTIVITY, from a list or from a
 * callback, and the application's events and callbacks are untouched
 * (their reference count returns to what the application holds).  Until a
 * harvest the ACTIVITY is late: a program that enqueues and never waits
 * shows its kernels at the next bound, release or exit.
 *
 * Lists are made on a queue's first deferred command (8 KiB each, one per
 * queue-table slot, at most OCL_MAX_QUEUES) and never freed but in a fork
 * child.  Each has a spin lock: the owner threads append and harvest; the
 * critical sections are a copy in or a batch of status queries.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "gpuprof/log.h"
#include "opencl.h"

#define OCL_PEND_MAX 128u /* commands per queue list */

typedef struct ocl_pend_s {
  cl_event e;
  uint64_t seq;
  gpd_ocl_ctx_t c; /* the command's fields (next/self unused) */
} ocl_pend_t;

struct gpd_ocl_pend_s {
  atomic_int lock;
  _Atomic uint32_t n;
  uint64_t seq; /* the next entry's sequence number */
  ocl_pend_t v[OCL_PEND_MAX];
};

static gpd_ocl_pend_t *ocl_lists[GPD_OCL_MAX_QUEUES];
static _Atomic uint32_t ocl_nlists;
static pthread_once_t ocl_exit_once = PTHREAD_ONCE_INIT;
static int ocl_log_fallback;

static void pend_lock(gpd_ocl_pend_t *l) {
  for (int spin = 0; atomic_exchange_explicit(&l->lock, 1, memory_order_acquire); spin++)
    if (spin > 64)
      sched_yield(); /* the holder may be descheduled (one core) */
}

static void pend_unlock(gpd_ocl_pend_t *l) { atomic_store_explicit(&l->lock, 0, memory_order_release); }

static void ocl_pend_atexit(void);
static void ocl_pend_register_exit(void) { atexit(ocl_pend_atexit); }

gpd_ocl_pend_t *gpd_ocl_pend_new(void) {
  pthread_once(&ocl_exit_once, ocl_pend_register_exit);
  gpd_ocl_pend_t *l = calloc(1, sizeof *l);
  if (!l)
    return NULL;
  uint32_t i = atomic_fetch_add(&ocl_nlists, 1);
  if (i >= GPD_OCL_MAX_QUEUES) { /* cannot happen: one list per queue slot */
    atomic_fetch_sub(&ocl_nlists, 1);
    free(l);
    return NULL;
  }
  __atomic_store_n(&ocl_lists[i], l, __ATOMIC_RELEASE);
  return l;
}

/* Take `n` entries out (already removed from their list) and push them. */
static void pend_push(const ocl_pend_t *out, const cl_int *status, uint32_t n) {
  const gpd_ocl_api_t *api = gpd_ocl_api();
  for (uint32_t i = 0; i < n; i++) {
    gpd_rec_activity_t a;
    gpd_ocl_translate(&out[i].c, out[i].e, status ? status[i] : CL_COMPLETE, &a);
    (void)gpd_shim_push_activity(&a);
    api->clReleaseEvent(out[i].e);
  }
}

/* Remove from `l` the entries with seq < upto (complete by the caller's
 * knowledge) and, when `query`, those whose event has left the queue
 * (CL_COMPLETE or an error status); push them outside the lock.  With
 * `rest_to_cb`, every other entry goes to a callback.  Without it the
 * status queries stop at the first command still in the queue: on an
 * in-order queue none after it has completed, so a harvest costs one query
 * more than it harvests (an out-of-order queue's later completed commands
 * wait for the next harvest). */
static void pend_harvest(gpd_ocl_pend_t *l, uint64_t upto, int query, int rest_to_cb) {
  /* the harvested entries from the front, those for callbacks from the
   * back (8 KiB of the calling thread's stack) */
  ocl_pend_t out[OCL_PEND_MAX];
  cl_int st[OCL_PEND_MAX];
  uint32_t nout = 0, ncb = 0;
  int prev = gpd_thread_enter(); /* our own OpenCL calls are not recorded */
  const gpd_ocl_api_t *api = gpd_ocl_api();
  pend_lock(l);
  uint32_t n = atomic_load_explicit(&l->n, memory_order_relaxed), keep = 0;
  for (uint32_t i = 0; i < n; i++) {
    ocl_pend_t *p = &l->v[i];
    cl_int s = CL_COMPLETE;
    int done = p->seq < upto;
    if (!done && query && api->clGetEventInfo &&
        api->clGetEventInfo(p->e, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof s, &s, NULL) == CL_SUCCESS)
      done = s <= CL_COMPLETE;
    if (!done && !rest_to_cb)
      query = 0; /* the rest stays */
    if (done) {
      st[nout] = s;
      out[nout++] = *p;
    } else if (rest_to_cb) {
      out[OCL_PEND_MAX - 1 - ncb++] = *p;
    } else {
      if (keep != i)
        l->v[keep] = *p;
      keep++;
    }
  }
  atomic_store_explicit(&l->n, keep, memory_order_relaxed);
  pend_unlock(l);
  pend_push(out, st, nout);
  int lost = 0;
  for (uint32_t i = 0; i < ncb; i++)
    lost |= gpd_ocl_watch(out[OCL_PEND_MAX - 1 - i].e, &out[OCL_PEND_MAX - 1 - i].c) != 0;
  if (lost)
    GPD_LOG_ONCE(ocl_log_fallback, GPD_LOG_WARN, "OpenCL: too many commands in flight; some are not profiled");
  gpd_thread_leave(prev);
}

int gpd_ocl_pend_add(gpd_ocl_pend_t *l, cl_event e, const gpd_ocl_ctx_t *c) {
  for (int pass = 0;; pass++) {
    pend_lock(l);
    uint32_t n = atomic_load_explicit(&l->n, memory_order_relaxed);
    if (n < OCL_PEND_MAX) {
      ocl_pend_t *p = &l->v[n];
      p->e = e;
      p->seq = l->seq++;
      p->c = *c;
      atomic_store_explicit(&l->n, n + 1, memory_order_relaxed);
      pend_unlock(l);
      return 0;
    }
    pend_unlock(l);
    if (pass)
      return -1; /* still full: nothing completed */
    pend_harvest(l, 0, 1, 0);
  }
}

uint64_t gpd_ocl_pend_seq(gpd_ocl_pend_t *l) {
  pend_lock(l);
  uint64_t s = l->seq;
  pend_unlock(l);
  return s;
}

void gpd_ocl_pend_finish(gpd_ocl_pend_t *l, uint64_t upto) {
  if (atomic_load_explicit(&l->n, memory_order_relaxed))
    pend_harvest(l, upto, 0, 0);
}

void gpd_ocl_pend_completed(gpd_ocl_pend_t *l) {
  if (atomic_load_explicit(&l->n, memory_order_relaxed))
    pend_harvest(l, 0, 1, 0);
}

void gpd_ocl_pend_release(gpd_ocl_pend_t *l) {
  if (atomic_load_explicit(&l->n, memory_order_relaxed))
    pend_harvest(l, 0, 1, 1);
}

/* The i-th list, or NULL (past the end, or not published yet). */
static gpd_ocl_pend_t *pend_list(uint32_t i) {
  if (i >= atomic_load(&ocl_nlists) || i >= GPD_OCL_MAX_QUEUES)
    return NULL;
  return __atomic_load_n(&ocl_lists[i], __ATOMIC_ACQUIRE);
}

void gpd_ocl_pend_completed_all(void) {
  gpd_ocl_pend_t *l;
  for (uint32_t i = 0, n = atomic_load(&ocl_nlists); i < n; i++)
    if ((l = pend_list(i)) != NULL)
      gpd_ocl_pend_completed(l);
}

long gpd_ocl_pend_count(void) {
  long sum = 0;
  gpd_ocl_pend_t *l;
  for (uint32_t i = 0, n = atomic_load(&ocl_nlists); i < n; i++)
    if ((l = pend_list(i)) != NULL)
      sum += atomic_load_explicit(&l->n, memory_order_relaxed);
  return sum;
}

/* exit(): before the runtime's destructors (atexit handlers run before
 * the ELF destructors; this one was registered after the runtime made its
 * first queue). */
static void ocl_pend_atexit(void) {
  gpd_ocl_pend_t *l;
  for (uint32_t i = 0, n = atomic_load(&ocl_nlists); i < n; i++)
    if ((l = pend_list(i)) != NULL)
      gpd_ocl_pend_release(l);
}

void gpd_ocl_pend_fork_child(void) {
  /* The parent's commands do not exist here: drop the lists (the queue
   * table that pointed at them is cleared by the caller). */
  uint32_t n = atomic_load(&ocl_nlists);
  for (uint32_t i = 0; i < n && i < GPD_OCL_MAX_QUEUES; i++) {
    free(ocl_lists[i]);
    ocl_lists[i] = NULL;
  }
  atomic_store(&ocl_nlists, 0);
}

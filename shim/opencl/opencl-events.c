/* opencl-events.c - the slab of callback contexts and the CL_COMPLETE
 * event callback that pushes a command's ACTIVITY (gpd_ocl_watch).  Below
 * opencl-api.c and opencl-pending.c (which hand it the commands they do
 * not harvest themselves); it calls only opencl-translate.c and
 * opencl-loader.c.
 *
 * Callback contexts: fixed-size slabs of OCL_SLAB entries, at most
 * OCL_MAX_SLABS (so at most OCL_SLAB * OCL_MAX_SLABS commands in flight
 * are profiled; more are counted and let through unprofiled).  Free list:
 * a Treiber stack of indices with an ABA tag; a slab is malloc'd (slow
 * path) only when the list is empty; slabs are never freed.
 */
#include <stdlib.h>

#include "gpuprof/log.h"
#include "opencl.h"

#define OCL_SLAB 4096u
#define OCL_MAX_SLABS 64u

static int ocl_log_slab, ocl_log_cb;

_Atomic long gpd_ocl_pending_n;

static gpd_ocl_ctx_t *ocl_slabs[OCL_MAX_SLABS];
static _Atomic uint32_t ocl_nslabs;
static _Atomic uint64_t ocl_free; /* tag << 32 | (index + 1) */
static pthread_mutex_t ocl_slab_lock = PTHREAD_MUTEX_INITIALIZER;

static inline gpd_ocl_ctx_t *ocl_ctx_at(uint32_t idx) { return &ocl_slabs[idx / OCL_SLAB][idx % OCL_SLAB]; }

void gpd_ocl_ctx_put(gpd_ocl_ctx_t *c) {
  uint64_t h = atomic_load_explicit(&ocl_free, memory_order_relaxed), nh;
  do {
    atomic_store_explicit(&c->next, (uint32_t)h, memory_order_relaxed);
    nh = ((h >> 32) + 1) << 32 | (uint64_t)(c->self + 1);
  } while (!atomic_compare_exchange_weak_explicit(&ocl_free, &h, nh, memory_order_release, memory_order_relaxed));
}

gpd_ocl_ctx_t *gpd_ocl_ctx_get(void) {
  for (;;) {
    uint64_t h = atomic_load_explicit(&ocl_free, memory_order_acquire);
    while ((uint32_t)h) {
      gpd_ocl_ctx_t *c = ocl_ctx_at((uint32_t)h - 1);
      uint64_t nh = ((h >> 32) + 1) << 32 | atomic_load_explicit(&c->next, memory_order_relaxed);
      if (atomic_compare_exchange_weak_explicit(&ocl_free, &h, nh, memory_order_acquire, memory_order_acquire))
        return c;
    }
    /* Empty: add a slab (slow path, under a lock). */
    pthread_mutex_lock(&ocl_slab_lock);
    uint32_t n = atomic_load(&ocl_nslabs);
    int grown = 0;
    if ((uint32_t)atomic_load(&ocl_free) == 0 && n < OCL_MAX_SLABS) {
      gpd_ocl_ctx_t *s = calloc(OCL_SLAB, sizeof *s);
      if (s) {
        ocl_slabs[n] = s;
        atomic_store(&ocl_nslabs, n + 1);
        for (uint32_t i = 0; i < OCL_SLAB; i++) {
          s[i].self = n * OCL_SLAB + i;
          gpd_ocl_ctx_put(&s[i]);
        }
        grown = 1;
      }
    } else if ((uint32_t)atomic_load(&ocl_free) != 0) {
      grown = 1; /* someone refilled it */
    }
    pthread_mutex_unlock(&ocl_slab_lock);
    if (!grown) {
      GPD_LOG_ONCE(ocl_log_slab, GPD_LOG_WARN, "OpenCL: too many commands in flight; some are not profiled");
      return NULL;
    }
  }
}

/* Runs on a runtime worker thread (PoCL) or, for a command that already
 * completed, on the thread that called clSetEventCallback. */
static void CL_CALLBACK ocl_event_cb(cl_event e, cl_int status, void *arg) {
  gpd_ocl_ctx_t *c = arg;
  int prev = gpd_thread_enter();
  gpd_rec_activity_t a;
  gpd_ocl_translate(c, e, status, &a);
  (void)gpd_shim_push_activity(&a);
  gpd_ocl_api()->clReleaseEvent(e); /* our retain, or our own event */
  gpd_ocl_ctx_put(c);
  atomic_fetch_sub_explicit(&gpd_ocl_pending_n, 1, memory_order_release);
  gpd_thread_leave(prev);
}

int gpd_ocl_watch(cl_event e, const gpd_ocl_ctx_t *f) {
  const gpd_ocl_api_t *api = gpd_ocl_api();
  gpd_ocl_ctx_t *c = gpd_ocl_ctx_get();
  if (!c) {
    api->clReleaseEvent(e);
    return -1;
  }
  uint32_t self = c->self;
  *c = *f;
  c->self = self;
  atomic_fetch_add_explicit(&gpd_ocl_pending_n, 1, memory_order_relaxed);
  cl_int rc = api->clSetEventCallback(e, CL_COMPLETE, ocl_event_cb, c);
  if (rc != CL_SUCCESS) {
    /* Failed: the callback will never run (spec), undo. */
    atomic_fetch_sub(&gpd_ocl_pending_n, 1);
    api->clReleaseEvent(e);
    gpd_ocl_ctx_put(c);
    GPD_LOG_ONCE(ocl_log_cb, GPD_LOG_WARN, "OpenCL: clSetEventCallback failed (%d); activity lost", rc);
    return -1;
  }
  return 0;
}

void gpd_ocl_ctx_lock(void) { pthread_mutex_lock(&ocl_slab_lock); }

void gpd_ocl_ctx_unlock(void) { pthread_mutex_unlock(&ocl_slab_lock); }

void gpd_ocl_ctx_reset(void) {
  /* The parent's commands never complete here: every context is free. */
  pthread_mutex_init(&ocl_slab_lock, NULL);
  atomic_store(&ocl_free, 0);
  uint32_t n = atomic_load(&ocl_nslabs);
  for (uint32_t s = 0; s < n; s++)
    for (uint32_t i = 0; i < OCL_SLAB; i++)
      gpd_ocl_ctx_put(&ocl_slabs[s][i]);
  atomic_store(&gpd_ocl_pending_n, 0);
}

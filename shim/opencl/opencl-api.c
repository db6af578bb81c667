/* opencl-api.c - the OpenCL back end's plumbing: the next definitions of
 * the cl* calls (dlsym(RTLD_NEXT), falling back to dlopen of the ICD
 * loader), the table the back end's own calls use (the layer's next table
 * once a loader installed the layer), the queue and device tables, the
 * slab of callback contexts and the CL_COMPLETE event callback.
 *
 * Callback contexts: fixed-size slabs of OCL_SLAB entries, at most
 * OCL_MAX_SLABS (so at most OCL_SLAB * OCL_MAX_SLABS commands in flight
 * are profiled; more are counted and let through unprofiled).  Free list:
 * a Treiber stack of indices with an ABA tag; a slab is malloc'd (slow
 * path) only when the list is empty; slabs are never freed.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuprof/clock.h"
#include "gpuprof/error.h"
#include "gpuprof/log.h"
#include "opencl.h"

#define OCL_SLAB 4096u
#define OCL_MAX_SLABS 64u
#define OCL_MAX_QUEUES GPD_OCL_MAX_QUEUES
#define OCL_MAX_DEVICES 64u

static gpd_ocl_api_t ocl_next;
static uintptr_t ocl_next_base; /* module of the next definitions */
static pthread_once_t ocl_once = PTHREAD_ONCE_INIT;
static int ocl_log_sym, ocl_log_slab, ocl_log_cb;
static atomic_int ocl_ready; /* 1: the event API was found (OpenCL in use) */

_Atomic long gpd_ocl_pending_n;

/* Commands whose ACTIVITY is not pushed yet: waiting for a callback or in
 * a pending list. */
GPD_EXPORT long gpd_shim__ocl_pending(void) { return atomic_load(&gpd_ocl_pending_n) + gpd_ocl_pend_count(); }

static void ocl_resolve(void) {
  void *h = NULL;
#define GPD_OCL_FN(ret, name, args)                                                                     \
  ocl_next.name = (ret(CL_API_CALL *) args)dlsym(RTLD_NEXT, #name);                                     \
  if (!ocl_next.name) {                                                                                 \
    if (!h)                                                                                             \
      h = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);                                              \
    if (h)                                                                                              \
      ocl_next.name = (ret(CL_API_CALL *) args)dlsym(h, #name);                                         \
    if (!ocl_next.name)                                                                                 \
      GPD_LOG_ONCE(ocl_log_sym, GPD_LOG_WARN, "OpenCL: %s not found; some calls are not profiled", #name); \
  }
#include "opencl-fns.h"
#undef GPD_OCL_FN
  Dl_info info;
  if (ocl_next.clFinish && dladdr((void *)ocl_next.clFinish, &info))
    ocl_next_base = (uintptr_t)info.dli_fbase;
  gpd_shim_vendor_module("libOpenCL.so");
  gpd_shim_vendor_module("libpocl");
  const gpd_ocl_api_t *a = gpd_ocl_layer_api();
  if (!a)
    a = &ocl_next;
  int ok = a->clSetEventCallback && a->clGetEventProfilingInfo && a->clReleaseEvent && a->clRetainEvent;
  gpd_shim_backend_status(GPD_API_OPENCL, ok, ok ? 0 : GPD_ENOVENDOR,
                          ok ? NULL : "OpenCL event API not found");
  atomic_store(&ocl_ready, ok);
}

const gpd_ocl_api_t *gpd_ocl_next(void) {
  pthread_once(&ocl_once, ocl_resolve);
  return &ocl_next;
}

uintptr_t gpd_ocl_next_base(void) { return ocl_next_base; }

const gpd_ocl_api_t *gpd_ocl_api(void) {
  pthread_once(&ocl_once, ocl_resolve);
  const gpd_ocl_api_t *l = gpd_ocl_layer_api();
  return l ? l : &ocl_next;
}

/* ------------------------------------------------------ callback contexts */

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

/* ------------------------------------------------------ queues, devices */

typedef struct queue_entry_s {
  _Atomic uintptr_t key;
  _Atomic uint32_t id;
  _Atomic uint32_t device;
  _Atomic(gpd_ocl_pend_t *) pend; /* made on the first deferred command; kept for a reused handle */
  _Atomic uint32_t prof;          /* CL_QUEUE_PROFILING_ENABLE is set */
} queue_entry_t;

static queue_entry_t ocl_queues[OCL_MAX_QUEUES];
static _Atomic uint32_t ocl_next_queue;
static _Atomic uintptr_t ocl_devices[OCL_MAX_DEVICES];

static uint32_t ocl_device_index(cl_device_id d) {
  for (uint32_t i = 0; i < OCL_MAX_DEVICES; i++) {
    uintptr_t v = atomic_load(&ocl_devices[i]);
    if (v == (uintptr_t)d)
      return i;
    if (v == 0) {
      uintptr_t z = 0;
      if (atomic_compare_exchange_strong(&ocl_devices[i], &z, (uintptr_t)d) || z == (uintptr_t)d)
        return i;
    }
  }
  return 0;
}

/* The queue's slot; a new one is claimed (*fresh = 1) unless fresh is
 * NULL (then NULL for an unknown queue). */
static queue_entry_t *ocl_queue_slot(cl_command_queue q, int *fresh) {
  uintptr_t key = (uintptr_t)q;
  uint64_t h = (key >> 4) * 0x9e3779b97f4a7c15ull;
  if (fresh)
    *fresh = 0;
  for (uint32_t i = 0; i < OCL_MAX_QUEUES; i++) {
    queue_entry_t *e = &ocl_queues[(h + i) & (OCL_MAX_QUEUES - 1)];
    uintptr_t k = atomic_load_explicit(&e->key, memory_order_acquire);
    if (k == key)
      return e;
    if (k == 0) {
      if (!fresh)
        return NULL;
      if (atomic_compare_exchange_strong(&e->key, &k, key)) {
        *fresh = 1;
        return e;
      }
      if (k == key)
        return e;
    }
  }
  return NULL;
}

gpd_ocl_pend_t *gpd_ocl_queue_pend(cl_command_queue q) {
  queue_entry_t *e = q ? ocl_queue_slot(q, NULL) : NULL;
  return e ? atomic_load_explicit(&e->pend, memory_order_acquire) : NULL;
}

/* Whether the queue was made with profiling (device times). */
static uint32_t ocl_queue_profiled(cl_command_queue q) {
  cl_command_queue_properties p = 0;
  const gpd_ocl_api_t *api = gpd_ocl_api();
  return api->clGetCommandQueueInfo &&
         api->clGetCommandQueueInfo(q, CL_QUEUE_PROPERTIES, sizeof p, &p, NULL) == CL_SUCCESS &&
         (p & CL_QUEUE_PROFILING_ENABLE);
}

void gpd_ocl_queue_new(cl_command_queue q, cl_device_id dev) {
  int fresh;
  queue_entry_t *e = ocl_queue_slot(q, &fresh);
  if (!e)
    return;
  atomic_store(&e->device, ocl_device_index(dev));
  atomic_store(&e->prof, ocl_queue_profiled(q));
  /* A reused handle is a new queue: new stream id. */
  atomic_store_explicit(&e->id, atomic_fetch_add(&ocl_next_queue, 1) + 1, memory_order_release);
}

uint32_t gpd_ocl_queue_id(cl_command_queue q, uint32_t *device) { return gpd_ocl_queue_get(q, device, NULL); }

uint32_t gpd_ocl_queue_get(cl_command_queue q, uint32_t *device, gpd_ocl_pend_t **pend) {
  int fresh;
  queue_entry_t *e = ocl_queue_slot(q, &fresh);
  *device = 0;
  if (pend)
    *pend = NULL;
  if (!e)
    return 0;
  if (fresh) { /* a queue we did not see created */
    cl_device_id d = NULL;
    const gpd_ocl_api_t *api = gpd_ocl_api();
    if (api->clGetCommandQueueInfo)
      api->clGetCommandQueueInfo(q, CL_QUEUE_DEVICE, sizeof d, &d, NULL);
    atomic_store(&e->device, ocl_device_index(d));
    atomic_store(&e->prof, ocl_queue_profiled(q));
    atomic_store_explicit(&e->id, atomic_fetch_add(&ocl_next_queue, 1) + 1, memory_order_release);
  }
  uint32_t id;
  int spin = 0;
  while ((id = atomic_load_explicit(&e->id, memory_order_acquire)) == 0 && spin++ < 100000)
    ;
  *device = atomic_load(&e->device);
  /* A list only for a queue with device times: the others' commands take
   * the callback, whose host times end at completion, not at a harvest. */
  if (pend && atomic_load(&e->prof) && (*pend = atomic_load_explicit(&e->pend, memory_order_acquire)) == NULL) {
    gpd_ocl_pend_t *l = gpd_ocl_pend_new(), *none = NULL;
    if (l && !atomic_compare_exchange_strong(&e->pend, &none, l))
      l = none; /* another thread's list (ours stays registered, empty) */
    *pend = l;
  }
  return id;
}

/* ------------------------------------------------------ kernel names */

/* Kernel handle -> its name's place in the string table, so that a launch
 * asks the runtime for the name (clGetKernelInfo) and hashes it only the
 * first time a kernel is launched (callgrind, ocl-loop: 356 of the 1 733
 * instructions per launch the shim added above PoCL's own profiling;
 * docs/PERFORMANCE.md, docs/SHIM.md "Kernel names").  A handle is only ever reused
 * for a new kernel after clReleaseKernel, which the shim intercepts
 * (gpd_ocl_kname_forget): entries never outlive their kernel.  Fixed
 * table of OCL_KN_BUCKETS buckets, one cache line each (4 entries); a
 * full bucket caches nothing more (the lookup then asks the runtime, as
 * before).  Lock-free: an entry is claimed by a CAS of its key from 0 to
 * OCL_KN_BUSY, filled, then published by a release store of the key. */
#define OCL_KN_BUCKETS 1024u
#define OCL_KN_WAYS 4u
#define OCL_KN_BUSY ((uintptr_t)1)

typedef struct ocl_kn_s {
  _Atomic uintptr_t key; /* cl_kernel; 0 empty; OCL_KN_BUSY being filled */
  _Atomic uint32_t slot; /* gpd_shim__string_slot's */
  uint32_t pad;
} ocl_kn_t;

static _Alignas(64) ocl_kn_t ocl_kn[OCL_KN_BUCKETS][OCL_KN_WAYS];

static ocl_kn_t *ocl_kn_bucket(cl_kernel k) {
  uintptr_t h = (uintptr_t)k;
  h ^= h >> 17;
  h *= 0x9e3779b97f4a7c15ull;
  return ocl_kn[(h >> 40) & (OCL_KN_BUCKETS - 1)];
}

static uint32_t ocl_kn_lookup(cl_kernel k) {
  ocl_kn_t *b = ocl_kn_bucket(k);
  for (unsigned i = 0; i < OCL_KN_WAYS; i++)
    if (atomic_load_explicit(&b[i].key, memory_order_acquire) == (uintptr_t)k) {
      uint32_t slot = atomic_load_explicit(&b[i].slot, memory_order_relaxed);
      /* the key again: the entry was not forgotten and refilled meanwhile */
      if (atomic_load_explicit(&b[i].key, memory_order_acquire) == (uintptr_t)k)
        return slot;
    }
  return 0;
}

static void ocl_kn_insert(cl_kernel k, uint32_t slot) {
  ocl_kn_t *b = ocl_kn_bucket(k);
  for (unsigned i = 0; i < OCL_KN_WAYS; i++) {
    uintptr_t want = 0;
    if (atomic_compare_exchange_strong(&b[i].key, &want, OCL_KN_BUSY)) {
      atomic_store_explicit(&b[i].slot, slot, memory_order_relaxed);
      atomic_store_explicit(&b[i].key, (uintptr_t)k, memory_order_release);
      return;
    }
  }
}

void gpd_ocl_kname_forget(cl_kernel k) {
  if (!k)
    return;
  ocl_kn_t *b = ocl_kn_bucket(k);
  for (unsigned i = 0; i < OCL_KN_WAYS; i++) {
    uintptr_t want = (uintptr_t)k;
    (void)atomic_compare_exchange_strong(&b[i].key, &want, 0);
  }
}

uint32_t gpd_ocl_kernel_name(cl_kernel k) {
  if (!k)
    return 0;
  uint32_t slot = ocl_kn_lookup(k), id;
  if (slot && (id = gpd_shim__string_again(slot)) != 0)
    return id;
  char name[512];
  size_t n = 0;
  const gpd_ocl_api_t *api = gpd_ocl_api();
  if (!api->clGetKernelInfo || api->clGetKernelInfo(k, CL_KERNEL_FUNCTION_NAME, sizeof name, name, &n) != CL_SUCCESS)
    return 0;
  name[sizeof name - 1] = '\0';
  id = gpd_shim__string_slot(name, GPD_STR_KERNEL, &slot);
  if (id && slot) {
    gpd_ocl_kname_forget(k); /* one entry per handle: another thread's first launch of k may have put one */
    ocl_kn_insert(k, slot);
  }
  return id;
}

/* ------------------------------------------------------------- callback */

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

void gpd_ocl_atfork_child(void) {
  /* The parent's commands never complete here: every context is free. */
  pthread_mutex_init(&ocl_slab_lock, NULL);
  atomic_store(&ocl_free, 0);
  uint32_t n = atomic_load(&ocl_nslabs);
  for (uint32_t s = 0; s < n; s++)
    for (uint32_t i = 0; i < OCL_SLAB; i++)
      gpd_ocl_ctx_put(&ocl_slabs[s][i]);
  atomic_store(&gpd_ocl_pending_n, 0);
  memset(ocl_queues, 0, sizeof ocl_queues);
  memset(ocl_kn, 0, sizeof ocl_kn); /* the string table was wiped too */
  gpd_ocl_pend_fork_child();
  atomic_store(&ocl_next_queue, 0);
}

/* ------------------------------------------------------------ ops table */

#include "../backends.h"

static void ocl_fork_prepare(void) { pthread_mutex_lock(&ocl_slab_lock); }
static void ocl_fork_parent(void) { pthread_mutex_unlock(&ocl_slab_lock); }
static void ocl_fork_child(void) {
  pthread_mutex_unlock(&ocl_slab_lock); /* taken in prepare by this thread */
  gpd_ocl_atfork_child();
}

/* Control from the daemon (shim/control.c, connection thread).  OpenCL
 * is always traced (every command's profiling event), so TRACE (`gpuprof
 * trace --pid N --duration D`) is a no-op ack once the program uses
 * OpenCL; -ENOTSUP before that and for every other kind. */
static int ocl_control(const gpd_control_t *c, uint32_t *targets, char *msg, size_t n) {
  (void)targets;
  if (c->kind != GPD_CONTROL_TRACE || !atomic_load(&ocl_ready))
    return -ENOTSUP;
  snprintf(msg, n, "always traced");
  return 0;
}

/** The OpenCL back end for the shim core (backends.h).  No init hook: the
 *  loader layer is requested by opencl-layer.c's own constructor, which
 *  must run before shim_ctor starts the connection thread (setenv), and
 *  the next definitions are resolved on first use (gpd_ocl_next/api). */
/* Running once the process made an OpenCL call the shim recorded (the
 * library is interposed from the start; an application that never calls
 * it has nothing to report): 1, else -1 (not started). */
static int ocl_status(char *why, size_t n) {
  (void)why, (void)n;
  uint64_t ops;
  (void)gpd_shim__meter_self_ns(GPD_API_OPENCL, &ops);
  return ops ? 1 : -1;
}

const gpd_backend_t gpd_backend_opencl = {
    .name = "opencl",
    .api = GPD_API_OPENCL,
    .status = ocl_status,
    .fork_prepare = ocl_fork_prepare,
    .fork_parent = ocl_fork_parent,
    .fork_child = ocl_fork_child,
    .control = ocl_control,
};

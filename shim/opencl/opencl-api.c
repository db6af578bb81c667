/* opencl-api.c - the OpenCL back end's tables and its place in the shim:
 * the queue and device tables (a queue's stream id, device index and
 * pending list), the kernel-name cache, the fork hooks and the ops table
 * (backends.h).  Above opencl-events.c, opencl-pending.c and
 * opencl-loader.c.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "opencl.h"

#define OCL_MAX_QUEUES GPD_OCL_MAX_QUEUES
#define OCL_MAX_DEVICES 64u

/* Commands whose ACTIVITY is not pushed yet: waiting for a callback or in
 * a pending list. */
GPD_EXPORT long gpd_shim__ocl_pending(void) { return atomic_load(&gpd_ocl_pending_n) + gpd_ocl_pend_count(); }

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

void gpd_ocl_atfork_child(void) {
  gpd_ocl_ctx_reset();
  memset(ocl_queues, 0, sizeof ocl_queues);
  memset(ocl_kn, 0, sizeof ocl_kn); /* the string table was wiped too */
  gpd_ocl_pend_fork_child();
  atomic_store(&ocl_next_queue, 0);
}

/* ------------------------------------------------------------ ops table */

#include "../backends.h"

static void ocl_fork_prepare(void) { gpd_ocl_ctx_lock(); }
static void ocl_fork_parent(void) { gpd_ocl_ctx_unlock(); }
static void ocl_fork_child(void) {
  gpd_ocl_ctx_unlock(); /* taken in prepare by this thread */
  gpd_ocl_atfork_child();
}

/* Control from the daemon (shim/control.c, connection thread).  OpenCL
 * is always traced (every command's profiling event), so TRACE (`gpuprof
 * trace --pid N --duration D`) is a no-op ack once the program uses
 * OpenCL; -ENOTSUP before that and for every other kind. */
static int ocl_control(const gpd_control_t *c, uint32_t *targets, char *msg, size_t n) {
  (void)targets;
  if (c->kind != GPD_CONTROL_TRACE || !gpd_ocl_ready())
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

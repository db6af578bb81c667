/* level0-tracer.c - the Level Zero tracer's callbacks (the loader's
 * tracing layer calls them around every traced API call, on the calling
 * thread).
 *
 * Recorded (seed names of the HPCToolkit manual's GPU metric tables):
 *   zeCommandListAppendLaunch{,Cooperative}Kernel{,Indirect}  GKER
 *   zeCommandListAppendMemoryCopy{,Region}                   GXCOPY:<kind>
 *   zeCommandListAppendMemoryFill                            GMSET
 *   zeCommandListAppendBarrier                               GSYNC:STRE
 *   zeMemAlloc{Device,Host,Shared}, zeMemFree               GMEM (host times)
 *   zeCommandQueueSynchronize, zeFenceHostSynchronize        GSYNC:STR
 *   zeEventHostSynchronize                                   GSYNC:EVT
 *   zeModuleCreate: the module's native binary -> gpd_shim_gpubin("zebin")
 * Device commands: the prologue captures the calling context and, when the
 * application passed no signal event, puts one of ours in its place (the
 * layer passes the parameters by reference, so the driver sees it); the
 * epilogue pushes the INVOKE and hands the command to the collector
 * (level0-commands.c).  Event pools are created with
 * ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP added (not with IPC, which excludes
 * it), so the application's own events carry timestamps too.  Failed calls
 * produce no records; results and the application's handles are
 * unchanged.
 *
 * Per-call state lives in a thread-local (the layer never nests traced
 * calls on a thread); its address is the per-instance user data, so an
 * epilogue whose prologue did not record does nothing.
 */
#include <stdlib.h>
#include <string.h>

#include "gpuprof/clock.h"
#include "gpuprof/log.h"
#include "level0.h"

#define L0_MAP_CAP 8192u /* power of two */
#define L0_TOMB ((uintptr_t)1)
#define L0_MAX_NATIVE_BINARY (256u << 20)

/* ------------------------------------------------------- handle tables */

/* Open addressing, lock-free lookups; a deleted key becomes a tombstone. */
typedef struct l0_entry_s {
  _Atomic uintptr_t key;
  _Atomic uint64_t a, b;
} l0_entry_t;

static l0_entry_t l0_lists[L0_MAP_CAP];   /* list -> a: ctx, b: dev idx | stream << 8 | imm << 63 */
static l0_entry_t l0_listdev[L0_MAP_CAP]; /* list -> a: device handle */
static l0_entry_t l0_kernels[L0_MAP_CAP]; /* kernel -> a: name id, b: group size x*y*z */
static _Atomic uint32_t l0_next_stream;
static int l0_log_map;

static l0_entry_t *l0_map_find(l0_entry_t *m, uintptr_t key) {
  uint64_t h = (key >> 4) * 0x9e3779b97f4a7c15ull;
  for (uint32_t i = 0; i < L0_MAP_CAP; i++) {
    l0_entry_t *e = &m[(h + i) & (L0_MAP_CAP - 1)];
    uintptr_t k = atomic_load_explicit(&e->key, memory_order_acquire);
    if (k == key)
      return e;
    if (k == 0)
      return NULL;
  }
  return NULL;
}

static l0_entry_t *l0_map_put(l0_entry_t *m, uintptr_t key) {
  l0_entry_t *e = l0_map_find(m, key);
  if (e)
    return e;
  uint64_t h = (key >> 4) * 0x9e3779b97f4a7c15ull;
  for (uint32_t i = 0; i < L0_MAP_CAP; i++) {
    e = &m[(h + i) & (L0_MAP_CAP - 1)];
    uintptr_t k = atomic_load(&e->key);
    if ((k == 0 || k == L0_TOMB) && atomic_compare_exchange_strong(&e->key, &k, key))
      return e;
    if (k == key)
      return e;
  }
  GPD_LOG_ONCE(l0_log_map, GPD_LOG_WARN, "Level Zero: handle table full; some commands are not profiled");
  return NULL;
}

static void l0_map_del(l0_entry_t *m, uintptr_t key) {
  l0_entry_t *e = l0_map_find(m, key);
  if (e)
    atomic_store(&e->key, L0_TOMB);
}

/* ------------------------------------------------------- per-call state */

typedef struct l0_call_s {
  int live;
  uint32_t node;
  uint64_t corr, ts;
  ze_event_handle_t mine; /* our event put in the application's place */
  uint64_t bytes;         /* zeMemFree: size read before the free */
  uint8_t subkind;
  int timed;              /* one of the self-cost meter's timed operations */
  uint64_t self, post0;   /* timed: the prologue's shim time; the epilogue's start */
  ze_event_pool_desc_t pool_desc;
} l0_call_t;

static __thread l0_call_t t_call;

/* Start recording this call: context, correlation id, host time. */
static l0_call_t *l0_begin(void **inst) {
  *inst = NULL;
  if (!gpd_l0_recording())
    return NULL;
  int prev = gpd_thread_enter();
  if (prev || !gpd_shim_active()) {
    gpd_thread_leave(prev);
    return NULL;
  }
  l0_call_t *c = &t_call;
  memset(c, 0, offsetof(l0_call_t, pool_desc));
  c->ts = gpd_clock_ns();
  c->node = gpd_shim_capture();
  c->corr = gpd_shim_corr_next(GPD_API_LEVEL0);
  c->live = 1;
  if ((c->timed = gpd_shim__meter_pick()) != 0)
    c->self = gpd_clock_ns() - c->ts;
  gpd_thread_leave(prev);
  *inst = c;
  return c;
}

/* The epilogue's state, or NULL when its prologue did not record. */
static l0_call_t *l0_end(void **inst) {
  l0_call_t *c = *inst;
  if (c != &t_call || !c->live)
    return NULL;
  c->live = 0;
  if (c->timed)
    c->post0 = gpd_clock_ns();
  return c;
}

/* The end of an epilogue that l0_end returned c to: the operation goes to
 * the self-cost meter (internal.h) with its prologue's and epilogue's
 * shim time (the driver's call between them not counted). */
static void l0_done(l0_call_t *c) {
  gpd_shim__meter_add(GPD_API_LEVEL0, c->timed ? c->self + (gpd_clock_ns() - c->post0) : 0, c->timed);
}

/* Host-measured operation: INVOKE + ACTIVITY now (application thread). */
static void l0_hosted(l0_call_t *c, unsigned op, unsigned subkind, uint64_t bytes) {
  gpd_rec_activity_t a;
  memset(&a, 0, sizeof a);
  a.api = GPD_API_LEVEL0;
  a.op = (uint8_t)op;
  a.subkind = (uint8_t)subkind;
  a.corr = c->corr;
  a.start = c->ts;
  a.bytes = bytes;
  (void)gpd_shim_push_host_op(c->node, &a);
}

/* ------------------------------------------------------- device commands */

/* Prologue of an append: record, and give the command an event of ours
 * when the application passed none. */
static void l0_append_pro(ze_command_list_handle_t list, ze_event_handle_t *ev, void **inst) {
  l0_call_t *c = l0_begin(inst);
  if (!c || *ev)
    return;
  l0_entry_t *e = l0_map_find(l0_lists, (uintptr_t)list);
  l0_entry_t *d = l0_map_find(l0_listdev, (uintptr_t)list);
  if (!e)
    return; /* a list we did not see created: INVOKE only */
  int prev = gpd_thread_enter();
  c->mine = gpd_l0_event_get((ze_context_handle_t)atomic_load(&e->a),
                             d ? (ze_device_handle_t)atomic_load(&d->a) : NULL);
  gpd_thread_leave(prev);
  if (c->mine)
    *ev = c->mine;
}

static unsigned l0_mem_side(ze_context_handle_t ctx, const void *p) {
  ze_memory_allocation_properties_t m;
  memset(&m, 0, sizeof m);
  m.stype = ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES;
  if (!gpd_l0.zeMemGetAllocProperties || gpd_l0.zeMemGetAllocProperties(ctx, p, &m, NULL) != ZE_RESULT_SUCCESS)
    return 'H';
  return (m.type == ZE_MEMORY_TYPE_DEVICE || m.type == ZE_MEMORY_TYPE_SHARED) ? 'D' : 'H';
}

static unsigned l0_copy_kind(ze_context_handle_t ctx, const void *dst, const void *src) {
  unsigned s = l0_mem_side(ctx, src), d = l0_mem_side(ctx, dst);
  if (s == 'H')
    return d == 'H' ? GPD_COPY_H2H : GPD_COPY_H2D;
  return d == 'H' ? GPD_COPY_D2H : GPD_COPY_D2D;
}

/* Epilogue of an append: INVOKE, then the command goes to the collector. */
static void l0_append_epi(ze_command_list_handle_t list, ze_event_handle_t *ev, ze_result_t res, void **inst,
                          unsigned op, unsigned subkind, uint64_t bytes, ze_kernel_handle_t k,
                          const ze_group_count_t *groups) {
  l0_call_t *c = l0_end(inst);
  if (!c)
    return;
  int prev = gpd_thread_enter();
  l0_entry_t *e = l0_map_find(l0_lists, (uintptr_t)list);
  ze_context_handle_t ctx = e ? (ze_context_handle_t)atomic_load(&e->a) : NULL;
  uint64_t info = e ? atomic_load(&e->b) : 0;
  if (res != ZE_RESULT_SUCCESS) {
    if (c->mine)
      gpd_l0_event_put(ctx, c->mine);
    goto out;
  }
  int immediate = (int)(info >> 63);
  (void)gpd_shim_push_invoke(c->corr, c->node, GPD_API_LEVEL0, op, c->ts, immediate ? 0 : GPD_INVOKE_MULTI);
  ze_event_handle_t event = c->mine ? c->mine : *ev;
  if (!event || !e)
    goto out;
  if (!c->mine)
    gpd_l0_cmd_event_gone(event); /* an earlier command on the same event */
  gpd_l0_cmd_t *x = gpd_l0_cmd_get();
  if (!x) {
    /* Our event stays signalled and unused: it is simply not recycled. */
    goto out;
  }
  x->corr = c->corr;
  x->ts = c->ts;
  x->bytes = bytes;
  x->event = event;
  x->owned = c->mine != NULL;
  x->list = list;
  x->ctx = ctx;
  x->device = (uint32_t)(info & 0xff);
  x->stream = (uint32_t)((info >> 8) & 0xffffffffu);
  x->immediate = (uint8_t)immediate;
  x->op = (uint8_t)op;
  x->subkind = (uint8_t)subkind;
  if (k) {
    l0_entry_t *ke = l0_map_find(l0_kernels, (uintptr_t)k);
    if (ke) {
      x->name = (uint32_t)atomic_load(&ke->a);
      x->block_threads = (uint32_t)atomic_load(&ke->b);
    }
    if (groups)
      x->blocks = groups->groupCountX * groups->groupCountY * groups->groupCountZ;
  }
  gpd_l0_cmd_publish(x);
out:
  l0_done(c);
  gpd_thread_leave(prev);
}

/* The copy kind needs the list's context: computed in the prologue. */
static void l0_copy_pro(ze_command_list_handle_t list, void *dst, const void *src, ze_event_handle_t *ev,
                        void **inst) {
  l0_append_pro(list, ev, inst);
  l0_call_t *c = *inst;
  if (!c)
    return;
  l0_entry_t *e = l0_map_find(l0_lists, (uintptr_t)list);
  c->subkind = (uint8_t)l0_copy_kind(e ? (ze_context_handle_t)atomic_load(&e->a) : NULL, dst, src);
}

#define L0_CB(name, params_t) static void ZE_APICALL name(params_t *p, ze_result_t res, void *user, void **inst)

L0_CB(l0_launch_pro, ze_command_list_append_launch_kernel_params_t) {
  (void)res, (void)user;
  l0_append_pro(*p->phCommandList, p->phSignalEvent, inst);
}
L0_CB(l0_launch_epi, ze_command_list_append_launch_kernel_params_t) {
  (void)user;
  l0_append_epi(*p->phCommandList, p->phSignalEvent, res, inst, GPD_OP_KERNEL, 0, 0, *p->phKernel,
                *p->ppLaunchFuncArgs);
}
L0_CB(l0_coop_pro, ze_command_list_append_launch_cooperative_kernel_params_t) {
  (void)res, (void)user;
  l0_append_pro(*p->phCommandList, p->phSignalEvent, inst);
}
L0_CB(l0_coop_epi, ze_command_list_append_launch_cooperative_kernel_params_t) {
  (void)user;
  l0_append_epi(*p->phCommandList, p->phSignalEvent, res, inst, GPD_OP_KERNEL, 0, 0, *p->phKernel,
                *p->ppLaunchFuncArgs);
}
L0_CB(l0_indirect_pro, ze_command_list_append_launch_kernel_indirect_params_t) {
  (void)res, (void)user;
  l0_append_pro(*p->phCommandList, p->phSignalEvent, inst);
}
L0_CB(l0_indirect_epi, ze_command_list_append_launch_kernel_indirect_params_t) {
  (void)user; /* the group counts live in device memory: not read */
  l0_append_epi(*p->phCommandList, p->phSignalEvent, res, inst, GPD_OP_KERNEL, 0, 0, *p->phKernel, NULL);
}
L0_CB(l0_copy_pro_cb, ze_command_list_append_memory_copy_params_t) {
  (void)res, (void)user;
  l0_copy_pro(*p->phCommandList, *p->pdstptr, *p->psrcptr, p->phSignalEvent, inst);
}
L0_CB(l0_copy_epi, ze_command_list_append_memory_copy_params_t) {
  (void)user;
  l0_call_t *c = *inst;
  unsigned kind = c == &t_call ? c->subkind : GPD_COPY_UNK;
  l0_append_epi(*p->phCommandList, p->phSignalEvent, res, inst, GPD_OP_COPY, kind, *p->psize, NULL, NULL);
}
static uint64_t l0_region_bytes(const ze_copy_region_t *r) {
  return r ? (uint64_t)r->width * (r->height ? r->height : 1) * (r->depth ? r->depth : 1) : 0;
}
L0_CB(l0_copyreg_pro, ze_command_list_append_memory_copy_region_params_t) {
  (void)res, (void)user;
  l0_copy_pro(*p->phCommandList, *p->pdstptr, *p->psrcptr, p->phSignalEvent, inst);
}
L0_CB(l0_copyreg_epi, ze_command_list_append_memory_copy_region_params_t) {
  (void)user;
  l0_call_t *c = *inst;
  unsigned kind = c == &t_call ? c->subkind : GPD_COPY_UNK;
  l0_append_epi(*p->phCommandList, p->phSignalEvent, res, inst, GPD_OP_COPY, kind,
                l0_region_bytes(*p->psrcRegion), NULL, NULL);
}
L0_CB(l0_fill_pro, ze_command_list_append_memory_fill_params_t) {
  (void)res, (void)user;
  l0_append_pro(*p->phCommandList, p->phSignalEvent, inst);
}
L0_CB(l0_fill_epi, ze_command_list_append_memory_fill_params_t) {
  (void)user;
  l0_append_epi(*p->phCommandList, p->phSignalEvent, res, inst, GPD_OP_MEMSET, GPD_MEM_DEV, *p->psize, NULL,
                NULL);
}
L0_CB(l0_barrier_pro, ze_command_list_append_barrier_params_t) {
  (void)res, (void)user;
  l0_append_pro(*p->phCommandList, p->phSignalEvent, inst);
}
L0_CB(l0_barrier_epi, ze_command_list_append_barrier_params_t) {
  (void)user;
  l0_append_epi(*p->phCommandList, p->phSignalEvent, res, inst, GPD_OP_SYNC, GPD_SYNC_STRE, 0, NULL, NULL);
}

/* ------------------------------------------------------- lists, queues */

static void l0_list_new(ze_command_list_handle_t list, ze_context_handle_t ctx, ze_device_handle_t dev,
                        int immediate) {
  l0_entry_t *e = l0_map_put(l0_lists, (uintptr_t)list);
  l0_entry_t *d = l0_map_put(l0_listdev, (uintptr_t)list);
  if (!e || !d)
    return;
  uint64_t stream = atomic_fetch_add(&l0_next_stream, 1) + 1;
  atomic_store(&e->a, (uint64_t)(uintptr_t)ctx);
  atomic_store(&d->a, (uint64_t)(uintptr_t)dev);
  atomic_store(&e->b, (uint64_t)gpd_l0_device_index(dev) | (stream & 0xffffffffu) << 8 |
                          (uint64_t)(immediate != 0) << 63);
}

L0_CB(l0_list_create_epi, ze_command_list_create_params_t) {
  (void)user, (void)inst;
  if (res == ZE_RESULT_SUCCESS && gpd_l0_recording() && *p->pphCommandList)
    l0_list_new(**p->pphCommandList, *p->phContext, *p->phDevice, 0);
}
L0_CB(l0_list_imm_epi, ze_command_list_create_immediate_params_t) {
  (void)user, (void)inst;
  if (res == ZE_RESULT_SUCCESS && gpd_l0_recording() && *p->pphCommandList)
    l0_list_new(**p->pphCommandList, *p->phContext, *p->phDevice, 1);
}
L0_CB(l0_list_reset_pro, ze_command_list_reset_params_t) {
  (void)res, (void)user, (void)inst;
  int prev = gpd_thread_enter();
  if (!prev)
    gpd_l0_cmd_list_gone(*p->phCommandList);
  gpd_thread_leave(prev);
}
L0_CB(l0_list_destroy_pro, ze_command_list_destroy_params_t) {
  (void)res, (void)user, (void)inst;
  int prev = gpd_thread_enter();
  if (!prev) {
    gpd_l0_cmd_list_gone(*p->phCommandList);
    l0_map_del(l0_lists, (uintptr_t)*p->phCommandList);
    l0_map_del(l0_listdev, (uintptr_t)*p->phCommandList);
  }
  gpd_thread_leave(prev);
}
L0_CB(l0_exec_pro, ze_command_queue_execute_command_lists_params_t) {
  (void)res, (void)user;
  *inst = NULL;
  int prev = gpd_thread_enter();
  if (!prev && gpd_l0_recording()) {
    gpd_l0_cmd_execute(*p->pphCommandLists, *p->pnumCommandLists, 0);
    *inst = &t_call;
  }
  gpd_thread_leave(prev);
}
L0_CB(l0_exec_epi, ze_command_queue_execute_command_lists_params_t) {
  (void)user;
  if (*inst != &t_call || res != ZE_RESULT_SUCCESS)
    return;
  int prev = gpd_thread_enter();
  gpd_l0_cmd_execute(*p->pphCommandLists, *p->pnumCommandLists, 1);
  gpd_thread_leave(prev);
}

/* ------------------------------------------------------- host syncs */

static void l0_sync_pro(void **inst) { (void)l0_begin(inst); }
static void l0_sync_epi(void **inst, ze_result_t res, unsigned kind) {
  l0_call_t *c = l0_end(inst);
  if (!c)
    return;
  if (res != ZE_RESULT_SUCCESS) {
    l0_done(c);
    return; /* a poll that timed out is not a synchronization */
  }
  int prev = gpd_thread_enter();
  l0_hosted(c, GPD_OP_SYNC, kind, 0);
  gpd_l0_cmd_kick();
  l0_done(c);
  gpd_thread_leave(prev);
}
L0_CB(l0_qsync_pro, ze_command_queue_synchronize_params_t) { (void)p, (void)res, (void)user; l0_sync_pro(inst); }
L0_CB(l0_qsync_epi, ze_command_queue_synchronize_params_t) { (void)p, (void)user; l0_sync_epi(inst, res, GPD_SYNC_STR); }
L0_CB(l0_fsync_pro, ze_fence_host_synchronize_params_t) { (void)p, (void)res, (void)user; l0_sync_pro(inst); }
L0_CB(l0_fsync_epi, ze_fence_host_synchronize_params_t) { (void)p, (void)user; l0_sync_epi(inst, res, GPD_SYNC_STR); }
L0_CB(l0_esync_pro, ze_event_host_synchronize_params_t) { (void)p, (void)res, (void)user; l0_sync_pro(inst); }
L0_CB(l0_esync_epi, ze_event_host_synchronize_params_t) { (void)p, (void)user; l0_sync_epi(inst, res, GPD_SYNC_EVT); }

/* ------------------------------------------------------- events */

L0_CB(l0_pool_pro, ze_event_pool_create_params_t) {
  (void)res, (void)user, (void)inst;
  const ze_event_pool_desc_t *d = *p->pdesc;
  if (!gpd_l0_recording() || !d || (d->flags & (ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP | ZE_EVENT_POOL_FLAG_IPC)))
    return;
  int prev = gpd_thread_enter();
  if (!prev) {
    /* The driver sees a copy with the flag; the application's descriptor
     * is not written. */
    t_call.pool_desc = *d;
    t_call.pool_desc.flags |= ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP;
    *p->pdesc = &t_call.pool_desc;
  }
  gpd_thread_leave(prev);
}
L0_CB(l0_ev_reset_pro, ze_event_host_reset_params_t) {
  (void)res, (void)user, (void)inst;
  int prev = gpd_thread_enter();
  if (!prev && gpd_l0_recording())
    gpd_l0_cmd_event_gone(*p->phEvent);
  gpd_thread_leave(prev);
}
L0_CB(l0_ev_destroy_pro, ze_event_destroy_params_t) {
  (void)res, (void)user, (void)inst;
  int prev = gpd_thread_enter();
  if (!prev && gpd_l0_recording())
    gpd_l0_cmd_event_gone(*p->phEvent);
  gpd_thread_leave(prev);
}

/* ------------------------------------------------------- memory */

L0_CB(l0_alloc_dev_pro, ze_mem_alloc_device_params_t) { (void)p, (void)res, (void)user; (void)l0_begin(inst); }
L0_CB(l0_alloc_dev_epi, ze_mem_alloc_device_params_t) {
  (void)user;
  l0_call_t *c = l0_end(inst);
  if (c && res == ZE_RESULT_SUCCESS)
    l0_hosted(c, GPD_OP_ALLOC, GPD_MEM_DEV, *p->psize);
  if (c)
    l0_done(c);
}
L0_CB(l0_alloc_host_pro, ze_mem_alloc_host_params_t) { (void)p, (void)res, (void)user; (void)l0_begin(inst); }
L0_CB(l0_alloc_host_epi, ze_mem_alloc_host_params_t) {
  (void)user;
  l0_call_t *c = l0_end(inst);
  if (c && res == ZE_RESULT_SUCCESS)
    l0_hosted(c, GPD_OP_ALLOC, GPD_MEM_PIN, *p->psize);
  if (c)
    l0_done(c);
}
L0_CB(l0_alloc_shared_pro, ze_mem_alloc_shared_params_t) { (void)p, (void)res, (void)user; (void)l0_begin(inst); }
L0_CB(l0_alloc_shared_epi, ze_mem_alloc_shared_params_t) {
  (void)user;
  l0_call_t *c = l0_end(inst);
  if (c && res == ZE_RESULT_SUCCESS)
    l0_hosted(c, GPD_OP_ALLOC, GPD_MEM_MAN, *p->psize);
  if (c)
    l0_done(c);
}
L0_CB(l0_free_pro, ze_mem_free_params_t) {
  (void)res, (void)user;
  l0_call_t *c = l0_begin(inst);
  if (!c)
    return;
  /* Size and kind are read before the memory is gone. */
  int prev = gpd_thread_enter();
  void *base = NULL;
  size_t size = 0;
  if (gpd_l0.zeMemGetAddressRange &&
      gpd_l0.zeMemGetAddressRange(*p->phContext, *p->pptr, &base, &size) == ZE_RESULT_SUCCESS)
    c->bytes = size;
  ze_memory_allocation_properties_t m;
  memset(&m, 0, sizeof m);
  m.stype = ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES;
  c->subkind = GPD_MEM_UNK;
  if (gpd_l0.zeMemGetAllocProperties &&
      gpd_l0.zeMemGetAllocProperties(*p->phContext, *p->pptr, &m, NULL) == ZE_RESULT_SUCCESS)
    c->subkind = m.type == ZE_MEMORY_TYPE_DEVICE ? GPD_MEM_DEV
                 : m.type == ZE_MEMORY_TYPE_HOST ? GPD_MEM_PIN
                 : m.type == ZE_MEMORY_TYPE_SHARED ? GPD_MEM_MAN
                                                   : GPD_MEM_UNK;
  gpd_thread_leave(prev);
}
L0_CB(l0_free_epi, ze_mem_free_params_t) {
  (void)p, (void)user;
  l0_call_t *c = l0_end(inst);
  if (c && res == ZE_RESULT_SUCCESS)
    l0_hosted(c, GPD_OP_FREE, c->subkind, c->bytes);
  if (c)
    l0_done(c);
}

/* ------------------------------------------------------- modules, kernels */

L0_CB(l0_module_epi, ze_module_create_params_t) {
  (void)user, (void)inst;
  if (res != ZE_RESULT_SUCCESS || !gpd_l0_recording() || !*p->pphModule || !gpd_l0.zeModuleGetNativeBinary)
    return;
  int prev = gpd_thread_enter();
  if (prev)
    goto out;
  ze_module_handle_t m = **p->pphModule;
  size_t n = 0;
  if (gpd_l0.zeModuleGetNativeBinary(m, &n, NULL) != ZE_RESULT_SUCCESS || n == 0 || n > L0_MAX_NATIVE_BINARY)
    goto out;
  uint8_t *buf = malloc(n);
  if (buf && gpd_l0.zeModuleGetNativeBinary(m, &n, buf) == ZE_RESULT_SUCCESS)
    (void)gpd_shim_gpubin(buf, n, "zebin");
  free(buf);
out:
  gpd_thread_leave(prev);
}
L0_CB(l0_kernel_epi, ze_kernel_create_params_t) {
  (void)user, (void)inst;
  if (res != ZE_RESULT_SUCCESS || !*p->pphKernel || !*p->pdesc || !gpd_l0_recording())
    return;
  const char *name = (*p->pdesc)->pKernelName;
  l0_entry_t *e = l0_map_put(l0_kernels, (uintptr_t)**p->pphKernel);
  if (!e)
    return;
  int prev = gpd_thread_enter();
  atomic_store(&e->a, name ? gpd_shim_string(name, GPD_STR_KERNEL) : 0);
  atomic_store(&e->b, 0);
  gpd_thread_leave(prev);
}
L0_CB(l0_groupsize_epi, ze_kernel_set_group_size_params_t) {
  (void)user, (void)inst;
  if (res != ZE_RESULT_SUCCESS)
    return;
  l0_entry_t *e = l0_map_find(l0_kernels, (uintptr_t)*p->phKernel);
  if (e)
    atomic_store(&e->b, (uint64_t)*p->pgroupSizeX * *p->pgroupSizeY * *p->pgroupSizeZ);
}

void gpd_l0_tracer_callbacks(zel_core_callbacks_t *pro, zel_core_callbacks_t *epi) {
  memset(pro, 0, sizeof *pro);
  memset(epi, 0, sizeof *epi);
  pro->CommandList.pfnAppendLaunchKernelCb = l0_launch_pro;
  epi->CommandList.pfnAppendLaunchKernelCb = l0_launch_epi;
  pro->CommandList.pfnAppendLaunchCooperativeKernelCb = l0_coop_pro;
  epi->CommandList.pfnAppendLaunchCooperativeKernelCb = l0_coop_epi;
  pro->CommandList.pfnAppendLaunchKernelIndirectCb = l0_indirect_pro;
  epi->CommandList.pfnAppendLaunchKernelIndirectCb = l0_indirect_epi;
  pro->CommandList.pfnAppendMemoryCopyCb = l0_copy_pro_cb;
  epi->CommandList.pfnAppendMemoryCopyCb = l0_copy_epi;
  pro->CommandList.pfnAppendMemoryCopyRegionCb = l0_copyreg_pro;
  epi->CommandList.pfnAppendMemoryCopyRegionCb = l0_copyreg_epi;
  pro->CommandList.pfnAppendMemoryFillCb = l0_fill_pro;
  epi->CommandList.pfnAppendMemoryFillCb = l0_fill_epi;
  pro->CommandList.pfnAppendBarrierCb = l0_barrier_pro;
  epi->CommandList.pfnAppendBarrierCb = l0_barrier_epi;
  epi->CommandList.pfnCreateCb = l0_list_create_epi;
  epi->CommandList.pfnCreateImmediateCb = l0_list_imm_epi;
  pro->CommandList.pfnResetCb = l0_list_reset_pro;
  pro->CommandList.pfnDestroyCb = l0_list_destroy_pro;
  pro->CommandQueue.pfnExecuteCommandListsCb = l0_exec_pro;
  epi->CommandQueue.pfnExecuteCommandListsCb = l0_exec_epi;
  pro->CommandQueue.pfnSynchronizeCb = l0_qsync_pro;
  epi->CommandQueue.pfnSynchronizeCb = l0_qsync_epi;
  pro->Fence.pfnHostSynchronizeCb = l0_fsync_pro;
  epi->Fence.pfnHostSynchronizeCb = l0_fsync_epi;
  pro->Event.pfnHostSynchronizeCb = l0_esync_pro;
  epi->Event.pfnHostSynchronizeCb = l0_esync_epi;
  pro->EventPool.pfnCreateCb = l0_pool_pro;
  pro->Event.pfnHostResetCb = l0_ev_reset_pro;
  pro->Event.pfnDestroyCb = l0_ev_destroy_pro;
  pro->Mem.pfnAllocDeviceCb = l0_alloc_dev_pro;
  epi->Mem.pfnAllocDeviceCb = l0_alloc_dev_epi;
  pro->Mem.pfnAllocHostCb = l0_alloc_host_pro;
  epi->Mem.pfnAllocHostCb = l0_alloc_host_epi;
  pro->Mem.pfnAllocSharedCb = l0_alloc_shared_pro;
  epi->Mem.pfnAllocSharedCb = l0_alloc_shared_epi;
  pro->Mem.pfnFreeCb = l0_free_pro;
  epi->Mem.pfnFreeCb = l0_free_epi;
  epi->Module.pfnCreateCb = l0_module_epi;
  epi->Kernel.pfnCreateCb = l0_kernel_epi;
  epi->Kernel.pfnSetGroupSizeCb = l0_groupsize_epi;
}

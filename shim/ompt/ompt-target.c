/* ompt-target.c - the target callbacks (OpenMP 5.1 EMI forms): each
 * device operation of a target construct becomes an INVOKE at the
 * construct's context and an ACTIVITY with its bytes and times.
 *
 * Contexts.  At the construct's begin (ompt_callback_target_emi, on the
 * host thread that encounters it, synchronously) the thread's calling
 * context is captured with the shim's usual path (the runtime's frames
 * are vendor frames, cut like libcuda's), and a labelled child
 * "<omp target>" (or "<omp target update>", ...) is interned below it:
 * every operation of the construct -- allocations, transfers, the kernel
 * submit, deletions -- is INVOKEd at that node, so the daemon puts the
 * `<gpu kernel>` / `<gpu copy>` / ... placeholders below `<omp target>`,
 * below the function that holds the construct.  A data operation outside
 * any construct (omp_target_alloc, omp_target_memcpy) gets its own
 * capture and the label "<omp target api>".
 *
 * Times.  An operation's interval is [its begin callback, its end
 * callback] on the host thread (GPD_ACTIVITY_HOST_TIME): with the host
 * offload plugin the submit's interval is the region's execution; with a
 * GPU plugin it is the launch only, and the device time comes from the
 * vendor back end (below).
 *
 * Counting once.  Between an operation's begin and end callbacks the
 * thread holds a bracket {op, node}.  A vendor back end that records an
 * API call on the same thread (CUPTI's callback for the plugin's
 * cuLaunchKernel / cuMemcpyHtoDAsync) asks gpd_ompt_claim(op) first: it
 * gets the construct's node as its INVOKE's context, and when its op is
 * the bracket's op the bracket is marked claimed; at the end callback a
 * claimed operation pushes nothing of its own (the vendor's ACTIVITY
 * carries the device time, bytes and kernel name, under OMPT's context).
 *
 * Callbacks of a chained tool (OMP_TOOL_LIBRARIES, ompt-api.c) for the
 * same events are called after ours with the same arguments; the runtime's
 * ompt_data_t slots and host_op_id are left to it (our state is
 * thread-local).
 *
 * Thread rules: all state is the calling thread's (_Thread_local, initial
 * exec); the callbacks never lock or allocate beyond what capture does.
 */
#include <string.h>

#include "gpuprof/clock.h"
#include "gpuprof/log.h"
#include "backends.h"
#include "ompt.h"

typedef struct tgt_thread_s {
  const char *psource;   /* the launch's source location (wrapper), one use */
  uint32_t node;         /* context of the construct in progress, 0 none */
  uint32_t name;         /* its kernel name string id (target regions) */
  int device;            /* its device number */
  uint32_t op_node;      /* context of the operation in progress */
  uint64_t t0;           /* its begin, ns */
  uint8_t op;            /* its gpd_op_t, 0 = no bracket */
  uint8_t subkind;
  uint8_t claimed;       /* a vendor back end recorded it */
  uint8_t in_target;     /* inside a construct's begin..end */
  /* the last construct context: a loop's construct reuses it (same
   * captured path, same label, no re-announcement since) */
  uint32_t memo_leaf, memo_node, memo_epoch;
  const char *memo_label;
} tgt_thread_t;

static _Thread_local tgt_thread_t tgt_self;

/* A chained tool's callbacks for the events we register (ompt-api.c). */
static ompt_callback_t tgt_chained[64];

/* Kernel name ids by codeptr_ra: a small direct-mapped cache (the name
 * formats a string and hashes it into the string table once per site).
 * A seqlock per slot: ra 1 while its one writer (who won the CAS) fills
 * it; a reader takes id only when ra reads the same before and after. */
#define TGT_NAMES 256u
#define TGT_NAME_BUSY ((uintptr_t)1)
static struct {
  _Atomic uintptr_t ra;
  _Atomic uint32_t id;
} tgt_names[TGT_NAMES];

void gpd_ompt_launch_note(const char *psource) { tgt_self.psource = psource; }

void gpd_ompt_target_chain(ompt_callbacks_t event, ompt_callback_t cb) {
  if ((unsigned)event < 64)
    tgt_chained[event] = cb;
}

void gpd_ompt_target_unchain(ompt_set_callback_t set) {
  for (int e = 0; e < 64; e++)
    if (tgt_chained[e]) {
      (void)set((ompt_callbacks_t)e, tgt_chained[e]);
      tgt_chained[e] = NULL;
    }
}

uint32_t gpd_ompt_claim(unsigned op) {
  tgt_thread_t *t = &tgt_self;
  if (!t->op)
    return t->in_target ? t->node : 0;
  if (op == t->op)
    t->claimed = 1;
  return t->op_node;
}

/** Test hook (exported): gpd_ompt_claim, for tests/ompt/omp-vendor.c. */
GPD_EXPORT uint32_t gpd_shim__ompt_claim(unsigned op) { return gpd_ompt_claim(op); }

static uint32_t tgt_name(const void *ra, const char *psource) {
  uint32_t h = (uint32_t)(((uintptr_t)ra >> 2) * 2654435761u) % TGT_NAMES;
  _Atomic uintptr_t *sra = &tgt_names[h].ra;
  uintptr_t r1 = atomic_load_explicit(sra, memory_order_acquire);
  if (ra && r1 == (uintptr_t)ra) {
    uint32_t id = atomic_load_explicit(&tgt_names[h].id, memory_order_relaxed);
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(sra, memory_order_relaxed) == r1)
      return id;
  }
  char buf[256];
  gpd_ompt_kernel_name(psource, ra, buf, sizeof buf);
  uint32_t id = gpd_shim_string(buf, GPD_STR_KERNEL);
  uintptr_t cur = atomic_load_explicit(sra, memory_order_relaxed);
  if (id && (uintptr_t)ra > TGT_NAME_BUSY && cur != TGT_NAME_BUSY &&
      atomic_compare_exchange_strong_explicit(sra, &cur, TGT_NAME_BUSY, memory_order_acq_rel, memory_order_relaxed)) {
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&tgt_names[h].id, id, memory_order_relaxed);
    atomic_store_explicit(sra, (uintptr_t)ra, memory_order_release);
  }
  return id;
}

/* The context of the current thread with `label` (a static string) below
 * it; 0 unavailable. */
static uint32_t tgt_context(tgt_thread_t *t, const char *label) {
  int prev = gpd_thread_enter();
  uint32_t node = 0;
  if (!prev && gpd_shim_active()) {
    uint32_t leaf = gpd_shim_capture();
    uint32_t epoch = atomic_load_explicit(&gpd_shim__g.epoch, memory_order_acquire);
    if (leaf && leaf == t->memo_leaf && label == t->memo_label && epoch == t->memo_epoch) {
      node = t->memo_node;
    } else {
      node = gpd_shim_label_node(leaf, label);
      t->memo_leaf = node ? leaf : 0;
      t->memo_node = node;
      t->memo_label = label;
      t->memo_epoch = epoch;
    }
  }
  gpd_thread_leave(prev);
  return node;
}

static void on_target(ompt_target_t kind, ompt_scope_endpoint_t endpoint, int device_num, ompt_data_t *task_data,
                      ompt_data_t *target_task_data, ompt_data_t *target_data, const void *codeptr_ra) {
  tgt_thread_t *t = &tgt_self;
  if (endpoint == ompt_scope_begin) {
    t->in_target = 1;
    t->device = device_num;
    t->node = tgt_context(t, gpd_ompt_label(kind));
    t->name = 0;
    if (t->node && (kind == ompt_target || kind == ompt_target_nowait))
      t->name = tgt_name(codeptr_ra, t->psource);
    t->psource = NULL;
  } else if (endpoint == ompt_scope_end) {
    t->in_target = 0;
    t->node = 0;
  }
  ompt_callback_t c = tgt_chained[ompt_callback_target_emi];
  if (c)
    ((ompt_callback_target_emi_t)c)(kind, endpoint, device_num, task_data, target_task_data, target_data,
                                    codeptr_ra);
}

/* Begin of an operation: open the bracket. */
static void tgt_op_begin(tgt_thread_t *t, unsigned op, unsigned subkind) {
  t->op = (uint8_t)op;
  t->subkind = (uint8_t)subkind;
  t->claimed = 0;
  t->op_node = t->in_target ? t->node : (op ? tgt_context(t, "<omp target api>") : 0);
  t->t0 = gpd_clock_ns();
}

/* End of an operation: push it unless a vendor back end claimed it. */
static void tgt_op_end(tgt_thread_t *t, uint64_t bytes, int device, uint32_t name, uint32_t teams) {
  unsigned op = t->op;
  t->op = 0;
  if (!op || t->claimed || !t->op_node || !gpd_shim_active())
    return;
  gpd_rec_activity_t a;
  memset(&a, 0, sizeof a);
  a.h.flags = GPD_ACTIVITY_HOST_TIME;
  a.api = GPD_API_OMPT;
  a.op = (uint8_t)op;
  a.subkind = t->subkind;
  a.corr = gpd_shim_corr_next(GPD_API_OMPT);
  a.start = t->t0;
  a.bytes = bytes;
  a.device = device < 0 ? 0 : (uint32_t)device;
  a.stream = a.device + 1;
  a.name = name;
  a.blocks = teams;
  (void)gpd_shim_push_host_op(t->op_node, &a);
}

static void on_data_op(ompt_scope_endpoint_t endpoint, ompt_data_t *target_task_data, ompt_data_t *target_data,
                       ompt_id_t *host_op_id, ompt_target_data_op_t optype, void *src_addr, int src_device_num,
                       void *dest_addr, int dest_device_num, size_t bytes, const void *codeptr_ra) {
  tgt_thread_t *t = &tgt_self;
  unsigned subkind = 0, op = gpd_ompt_data_op(optype, &subkind);
  if (endpoint == ompt_scope_begin) {
    tgt_op_begin(t, op, subkind);
  } else if (endpoint == ompt_scope_end && op && op == t->op) {
    /* the device side: the destination of an H2D or an allocation, the
     * source of a D2H or a deletion */
    int dev = op == GPD_OP_FREE || subkind == GPD_COPY_D2H ? src_device_num : dest_device_num;
    tgt_op_end(t, op == GPD_OP_FREE ? 0 : bytes, dev, 0, 0);
  }
  ompt_callback_t c = tgt_chained[ompt_callback_target_data_op_emi];
  if (c)
    ((ompt_callback_target_data_op_emi_t)c)(endpoint, target_task_data, target_data, host_op_id, optype,
                                            src_addr, src_device_num, dest_addr, dest_device_num, bytes,
                                            codeptr_ra);
}

static void on_submit(ompt_scope_endpoint_t endpoint, ompt_data_t *target_data, ompt_id_t *host_op_id,
                      unsigned int requested_num_teams) {
  tgt_thread_t *t = &tgt_self;
  if (endpoint == ompt_scope_begin)
    tgt_op_begin(t, GPD_OP_KERNEL, 0);
  else if (endpoint == ompt_scope_end && t->op == GPD_OP_KERNEL)
    tgt_op_end(t, 0, t->device, t->name, requested_num_teams);
  ompt_callback_t c = tgt_chained[ompt_callback_target_submit_emi];
  if (c)
    ((ompt_callback_target_submit_emi_t)c)(endpoint, target_data, host_op_id, requested_num_teams);
}

/* Registered so that libomptarget connects to the tool at all (LLVM's
 * libomp hands its callbacks to libomptarget only when a tool registered
 * ompt_callback_device_initialize); forwarded only. */
static void on_device_init(int device_num, const char *type, ompt_device_t *device, ompt_function_lookup_t lookup,
                           const char *documentation) {
  ompt_callback_t c = tgt_chained[ompt_callback_device_initialize];
  if (c)
    ((ompt_callback_device_initialize_t)c)(device_num, type, device, lookup, documentation);
}

int gpd_ompt_target_register(ompt_set_callback_t set) {
  int n = 0;
  n += set(ompt_callback_device_initialize, (ompt_callback_t)on_device_init) >= ompt_set_sometimes;
  n += set(ompt_callback_target_emi, (ompt_callback_t)on_target) >= ompt_set_sometimes;
  n += set(ompt_callback_target_data_op_emi, (ompt_callback_t)on_data_op) >= ompt_set_sometimes;
  n += set(ompt_callback_target_submit_emi, (ompt_callback_t)on_submit) >= ompt_set_sometimes;
  return n;
}

int gpd_ompt_target_owns(ompt_callbacks_t event) {
  return event == ompt_callback_device_initialize || event == ompt_callback_target_emi ||
         event == ompt_callback_target_data_op_emi || event == ompt_callback_target_submit_emi;
}

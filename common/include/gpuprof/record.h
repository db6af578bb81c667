/* record.h - fixed-size ring records shared by shim and daemon.
 *
 * Every record starts with gpd_rec_hdr_t and occupies `nslots` consecutive
 * 32-byte slots of one ring (GPD_SLOT_SIZE).  A fixed record spans exactly
 * sizeof(its struct) / GPD_SLOT_SIZE slots (GPD_REC_NSLOTS): NODE, INVOKE,
 * STATUS and GRAPHNODE one, PCSAMPLE, PCSTATS, CUBIN, CPUSAMPLE and TRACEWIN two,
 * ACTIVITY three; variable records (strings, module paths) carry their
 * payload after the fixed part and span as many slots as needed, up to
 * GPD_REC_MAX_SLOTS.  The INVOKE, the record of every GPU API call, fills
 * one slot: a ring moves half the bytes per call that a 64-byte slot did
 * (issue 13: the consumer's cost per slot line bounded the ring's rate).
 * Version 2 of the format (GPD_REC_VERSION); version 1 had 64-byte slots
 * and a `tid` in INVOKE (now the ring's owner, gpd_ring_ctl_t.tid).
 * A slot sequence may wrap around the end of the ring; the consumer copies
 * the slots out before it looks at them (the region is untrusted input).
 *
 * Identifiers are process-local and never 0 (0 means "none"):
 *   - node ids   : CCT nodes interned by the shim (gpd_intern_t)
 *   - string ids : kernel names, reasons, ... (STRING records)
 *   - module ids : load modules (MODULE records)
 *   - correlation ids: one per GPU API invocation, unique in the process;
 *     the top 8 bits hold the gpd_api_t so CUPTI's own ids never collide
 *     with the shim's (GPD_CORR()).
 * A record that refers to an id is pushed only after the record that
 * announces the id (NODE / STRING / MODULE) was pushed, possibly on another
 * thread's ring: the daemon must tolerate references that resolve later.
 *
 * All times are ns on the gpuprof clock (clock.h: CLOCK_MONOTONIC_RAW).
 */
#ifndef GPUPROF_RECORD_H
#define GPUPROF_RECORD_H

#include <stddef.h>
#include <stdint.h>

#define GPD_SLOT_SIZE 32u
#define GPD_REC_VERSION 2u
#define GPD_REC_MAX_SLOTS 255u
#define GPD_REC_MAX_BYTES (GPD_REC_MAX_SLOTS * GPD_SLOT_SIZE)

/** Record types.  Values are part of the shared-memory ABI. */
typedef enum gpd_rec_type_e {
  GPD_REC_NONE = 0,     /* never valid in a ring */
  GPD_REC_NODE = 1,     /* CCT node announcement              (1 slot)  */
  GPD_REC_STRING = 2,   /* interned string                     (n slots) */
  GPD_REC_MODULE = 3,   /* load module                         (n slots) */
  GPD_REC_INVOKE = 4,   /* GPU API invocation at a CPU context (1 slot)  */
  GPD_REC_ACTIVITY = 5, /* completed GPU / GPU-API activity    (3 slots) */
  GPD_REC_STATUS = 6,   /* vendor back-end state change        (1 slot)  */
  GPD_REC_PCSAMPLE = 7, /* aggregated GPU PC samples           (2 slots) */
  GPD_REC_PCSTATS = 8,  /* GPU PC sampling totals of a device  (2 slots) */
  GPD_REC_CUBIN = 9,    /* vendor cubin id -> gpubin hash      (2 slots) */
  GPD_REC_CPUSAMPLE = 10, /* CPU-time sample of a thread       (2 slots) */
  GPD_REC_TRACEWIN = 11,  /* a closed tracing window           (2 slots) */
  GPD_REC_GRAPHNODE = 12, /* CUDA graph node -> its creator's context (1 slot) */
  GPD_REC_TYPE_MAX = 13
} gpd_rec_type_t;

/** GPU programming interfaces. */
typedef enum gpd_api_e {
  GPD_API_NONE = 0,
  GPD_API_OPENCL = 1,
  GPD_API_CUDA = 2,
  GPD_API_LEVEL0 = 3,
  GPD_API_OMPT = 4, /* OpenMP target offload through OMPT (shim/ompt/) */
  GPD_API_MAX = 5
} gpd_api_t;

/** GPU operation kinds, the placeholder classes of seed 003 Table 8.1. */
typedef enum gpd_op_e {
  GPD_OP_NONE = 0,
  GPD_OP_KERNEL = 1, /* <gpu kernel>  GKER   */
  GPD_OP_COPY = 2,   /* <gpu copy>    GXCOPY */
  GPD_OP_MEMSET = 3, /* <gpu memset>  GMSET  */
  GPD_OP_ALLOC = 4,  /* <gpu alloc>   GMEM   */
  GPD_OP_FREE = 5,   /* <gpu free>    GMEM   */
  GPD_OP_SYNC = 6,   /* <gpu sync>    GSYNC  */
  GPD_OP_MAX = 7
} gpd_op_t;

/** Copy kinds (ACTIVITY.subkind for GPD_OP_COPY), seed 003 Table 8.4. */
typedef enum gpd_copy_e {
  GPD_COPY_UNK = 0, GPD_COPY_H2D, GPD_COPY_D2H, GPD_COPY_H2A, GPD_COPY_A2H,
  GPD_COPY_A2A, GPD_COPY_A2D, GPD_COPY_D2A, GPD_COPY_D2D, GPD_COPY_H2H,
  GPD_COPY_P2P, GPD_COPY_MAX
} gpd_copy_t;

/** Memory kinds (subkind for ALLOC/FREE/MEMSET), seed 003 Tables 8.2/8.3. */
typedef enum gpd_mem_e {
  GPD_MEM_UNK = 0, GPD_MEM_PAG, GPD_MEM_PIN, GPD_MEM_DEV, GPD_MEM_ARY,
  GPD_MEM_MAN, GPD_MEM_DST, GPD_MEM_MST, GPD_MEM_MAX
} gpd_mem_t;

/** Synchronization kinds (subkind for SYNC), seed 003 Table 8.5. */
typedef enum gpd_sync_e {
  GPD_SYNC_UNK = 0, GPD_SYNC_EVT, GPD_SYNC_STRE, GPD_SYNC_STR, GPD_SYNC_CTX,
  GPD_SYNC_MAX
} gpd_sync_t;

/** String kinds (STRING.kind). */
typedef enum gpd_str_e {
  GPD_STR_OTHER = 0,
  GPD_STR_KERNEL = 1, /* kernel name as the vendor gives it (mangled) */
  GPD_STR_REASON = 2, /* human-readable reason text (STATUS records)  */
  GPD_STR_PYCODE = 3, /* Python code object: "qualname\tfilename"     */
  GPD_STR_STALL = 4,  /* vendor stall-reason name (PCSAMPLE records)  */
} gpd_str_t;

#define GPD_CORR(api, n) (((uint64_t)(api) << 56) | ((uint64_t)(n) & 0x00ffffffffffffffull))
#define GPD_CORR_API(c) ((unsigned)((c) >> 56))

/** Common header of every record (8 bytes). */
typedef struct gpd_rec_hdr_s {
  uint8_t type;    /* gpd_rec_type_t */
  uint8_t version; /* GPD_REC_VERSION */
  uint8_t nslots;  /* slots this record spans, >= 1 */
  uint8_t flags;   /* type-specific, 0 unless said otherwise */
  uint32_t len;    /* payload bytes of a variable record, else 0 */
} gpd_rec_hdr_t;

/** NODE: CCT node `id` = child of `parent` (0 = root) at call-site
 *  `offset` bytes into load module `module` (0 = unknown module, then
 *  `offset` is the absolute instruction pointer).  The shim sends the
 *  return address minus one, so that offset lands inside the call.
 *  h.flags & GPD_NODE_F_PYTHON: a Python frame; `module` is then the id of a
 *  GPD_STR_PYCODE string ("qualname\tfilename") and `offset` the line.
 *  At most one of the GPD_NODE_F_* flags is set. */
#define GPD_NODE_F_PYTHON 0x01u
/** h.flags & GPD_NODE_F_LABEL: a labelled context node, not a frame (the
 *  `<omp target>` of an OpenMP target construct, shim/ompt/): `module` is
 *  the id of a string (GPD_STR_OTHER) holding the label, `offset` 0.  The
 *  daemon makes it a PLACEHOLDER context with that label and no op. */
#define GPD_NODE_F_LABEL 0x02u
typedef struct gpd_rec_node_s {
  gpd_rec_hdr_t h;
  uint32_t id;
  uint32_t parent;
  uint32_t module;
  uint32_t reserved;
  uint64_t offset;
} gpd_rec_node_t;

/** STRING: `h.len` bytes of text (no NUL) follow the fixed part. */
typedef struct gpd_rec_string_s {
  gpd_rec_hdr_t h;
  uint32_t id;
  uint32_t kind; /* gpd_str_t */
  char text[];   /* h.len bytes, may span the following slots */
} gpd_rec_string_t;

/** MODULE: load module `id` mapped at [base, base+size); build-id (may be
 *  empty) and the path (h.len bytes, no NUL) follow. */
typedef struct gpd_rec_module_s {
  gpd_rec_hdr_t h;
  uint32_t id;
  uint8_t build_id_len; /* 0..20 */
  uint8_t pad[3];
  uint64_t base;
  uint64_t size;
  uint8_t build_id[20];
  uint8_t pad2[4];
  char path[]; /* h.len bytes */
} gpd_rec_module_t;

/** INVOKE: GPU API call `corr` of kind `op` made in CCT context `node`, at
 *  host time `ts` ns, by the thread that owns the ring it is on (the shim
 *  pushes it on the calling thread's own ring, so the consumer takes the
 *  thread id from the ring: gpd_ring_ctl_t.tid, gpd_ring_consume_pf's
 *  `owner`).  One 32-byte slot.  flags & GPD_INVOKE_MULTI: the call may
 *  produce many activities (graph launch); keep it after a match. */
#define GPD_INVOKE_MULTI 0x01u
typedef struct gpd_rec_invoke_s {
  gpd_rec_hdr_t h;
  uint8_t api; /* gpd_api_t */
  uint8_t op;  /* gpd_op_t */
  uint16_t reserved;
  uint32_t node;
  uint64_t corr;
  uint64_t ts;
} gpd_rec_invoke_t;

/** ACTIVITY: the completed operation of invocation `corr`.
 *  [start, end) ns on the gpuprof clock (device time for GPU work, host
 *  time for host-measured work such as SYNC and ALLOC).  `bytes` for copy,
 *  memset, alloc and free.  Kernel characteristics are 0 when unknown
 *  (OpenCL gives none); `occ_permille` is the theoretical occupancy in
 *  1/1000 (GKER:OCC_THR), computed by the shim from device properties.
 *  `graph_node`: the CUDA graph node that ran the operation (CUPTI's
 *  graphNodeId: a node of the executable graph), 0 when it was not
 *  launched by a graph; a GRAPHNODE record names the context that created
 *  it (8 bytes that were padding: 0 from older shims). */
typedef struct gpd_rec_activity_s {
  gpd_rec_hdr_t h;
  uint8_t api;     /* gpd_api_t */
  uint8_t op;      /* gpd_op_t */
  uint8_t subkind; /* gpd_copy_t / gpd_mem_t / gpd_sync_t */
  uint8_t reserved;
  uint32_t device;
  uint64_t corr;
  uint64_t start;
  uint64_t end;
  uint64_t bytes;
  uint32_t stream; /* queue / stream id, process-local */
  uint32_t name;   /* string id of the kernel name, 0 = none */
  uint32_t context;
  /* kernel characteristics, seed 003 Table 8.6 */
  uint32_t blocks;          /* GKER:BLK     grid size in blocks     */
  uint32_t block_threads;   /* GKER:BLK_THR threads per block       */
  uint32_t regs_per_thread; /* GKER:THR_REG                         */
  uint32_t static_smem;     /* GKER:STMEM   bytes per block         */
  uint32_t dynamic_smem;    /* GKER:DYMEM   bytes per block         */
  uint32_t local_mem;       /* GKER:LMEM    bytes per thread        */
  uint32_t occ_permille;    /* GKER:OCC_THR 0..1000                 */
  uint64_t graph_node;      /* CUDA graph node id, 0 = not a graph's */
} gpd_rec_activity_t;

/** STATUS: back end `api` is now enabled (state 1) or disabled (state 0)
 *  with vendor error `code` and reason text string `reason` (0 = none). */
typedef struct gpd_rec_status_s {
  gpd_rec_hdr_t h;
  uint8_t api;
  uint8_t state;
  uint16_t reserved;
  int32_t code;
  uint32_t reason;
  uint8_t pad[12];
} gpd_rec_status_t;

/** PCSAMPLE: `samples` GPU PC samples (of which `latency` were latency
 *  samples, 0 when the vendor does not say) since the last record for the
 *  same key, at byte `pc` of function `func` (string id, GPD_STR_KERNEL:
 *  the name as the vendor gives it) of the GPU binary the vendor calls
 *  `cubin_id` (CUPTI's cubinCrc; a CUBIN record maps it to the stored
 *  gpubin), stall reason `stall` (string id, GPD_STR_STALL).  Deltas: the
 *  daemon adds them up.  Not tied to one launch (continuous sampling). */
typedef struct gpd_rec_pcsample_s {
  gpd_rec_hdr_t h;
  uint32_t func;
  uint32_t stall;
  uint64_t cubin_id;
  uint64_t pc;
  uint32_t samples;
  uint32_t latency;
  uint32_t device;
  uint8_t pad[20];
} gpd_rec_pcsample_t;

/** PCSTATS: sampling totals of `device` since the last PCSTATS (deltas):
 *  all samples the hardware took (GSAMP:TOT counts them), dropped ones
 *  (GSAMP:DRP), and the configuration: period 2^period_log2 cycles
 *  (GSAMP:PER), SMs and clock in kHz (for GSAMP:EXP). */
typedef struct gpd_rec_pcstats_s {
  gpd_rec_hdr_t h;
  uint32_t device;
  uint32_t period_log2;
  uint64_t total;
  uint64_t dropped;
  uint64_t non_user; /* samples in vendor kernels, no PC records */
  uint32_t sm_count;
  uint32_t clock_khz;
  uint8_t pad[16];
} gpd_rec_pcstats_t;

/** CUBIN: the GPU binary with content hash `hash` (32 lowercase hex
 *  digits, as gpubin.c names it) is what the vendor calls `cubin_id`. */
typedef struct gpd_rec_cubin_s {
  gpd_rec_hdr_t h;
  uint64_t cubin_id;
  char hash[32]; /* not NUL-terminated */
  uint8_t pad[16];
} gpd_rec_cubin_t;

/** CPUSAMPLE: thread `tid` was found in CCT context `node` by the CPU-time
 *  sampler (shim/cpu-sampler.c) at host time `ts` ns; `weight` ns of that
 *  thread's CPU time are attributed to it (the timer period times the
 *  expirations this sample stands for: 1 + the timer's overrun count,
 *  `expirations`).  Only pushed when the region's daemon accepts the type
 *  (gpd_region_hdr_t.rec_types > GPD_REC_CPUSAMPLE). */
typedef struct gpd_rec_cpusample_s {
  gpd_rec_hdr_t h;
  uint32_t node;
  uint32_t tid;
  uint64_t ts;
  uint64_t weight;      /* ns of CPU time, > 0 */
  uint32_t expirations; /* >= 1 */
  uint8_t pad[28];
} gpd_rec_cpusample_t;

/** Most CPU time one CPUSAMPLE may carry (ns): 1 s.  The sampler's period
 *  is at most 1 s and a timer's overrun is capped by the shim so that a
 *  corrupt or hostile record cannot add years of CPU time to a context. */
#define GPD_CPUSAMPLE_MAX_WEIGHT 1000000000ull

/** TRACEWIN: back end `api` (one that traces in windows: CUDA detached or
 *  duty-cycled, shim/cupti) closed the tracing window [start, end) ns;
 *  with h.flags & GPD_TRACEWIN_F_FINAL instead the run's end (start = end
 *  = the exit time, no window).  `duty`: 1 when the windows are the
 *  duty cycle's (a sample of the run: docs/CUDA.md, the duty-cycle
 *  estimate), 0 on-demand windows only.  Cumulative, so the latest record
 *  says it all: `t0` the back end's start (the schedule's origin),
 *  `windows` / `window_ns` the count and total length of the windows
 *  closed so far, this one included.  Valid: t0 <= start <= end,
 *  window_ns <= end - t0.  `launches` / `launches_in`: the kernel launches
 *  the back end counted (shim/cupti/cupti-count.c: libcudart's launch
 *  calls) from t0 to `end` and inside the windows, cumulative too
 *  (launches_in <= launches; both 0 from a back end that does not count,
 *  or an older one: the report then uses the time fraction).  Only
 *  pushed when the region's daemon accepts the type
 *  (gpd_region_hdr_t.rec_types > GPD_REC_TRACEWIN). */
typedef struct gpd_rec_tracewin_s {
  gpd_rec_hdr_t h;
  uint8_t api;
  uint8_t duty;
  uint16_t reserved;
  uint32_t windows;
  uint64_t t0;
  uint64_t start;
  uint64_t end;
  uint64_t window_ns;
  uint64_t launches;    /* kernel launches counted since t0 (0 = not counted) */
  uint64_t launches_in; /* of which inside windows (<= launches) */
} gpd_rec_tracewin_t;
#define GPD_TRACEWIN_F_FINAL 0x01u

/** GRAPHNODE: CUDA graph node `id` (CUPTI's graph node id, the
 *  `graph_node` of the ACTIVITY records of the work it runs) was created
 *  in CCT context `node` (a cudaGraphAdd*Node call, or a launch, copy or
 *  memset captured from a stream); `orig` 0.  With h.flags &
 *  GPD_GRAPHNODE_F_CLONE it is instead a clone of node `orig`
 *  (cudaGraphInstantiate, cudaGraphClone, a child graph's nodes): it runs
 *  what `orig` was created for, whose context it inherits; `node` 0.
 *  Valid: id != 0, both ids below GPD_GRAPHNODE_ID_LIMIT, a clone's orig
 *  != id.  Pushed on the ring of the thread that created (cloned) the
 *  node, only when the region's daemon accepts the type
 *  (gpd_region_hdr_t.rec_types > GPD_REC_GRAPHNODE). */
#define GPD_GRAPHNODE_F_CLONE 0x01u
#define GPD_GRAPHNODE_ID_LIMIT (1ull << 62)
typedef struct gpd_rec_graphnode_s {
  gpd_rec_hdr_t h;
  uint32_t node;
  uint32_t reserved;
  uint64_t id;
  uint64_t orig;
} gpd_rec_graphnode_t;

/** Slots a fixed record spans: `x` is its struct type or an object of it. */
#define GPD_REC_NSLOTS(x) ((uint8_t)(sizeof(x) / GPD_SLOT_SIZE))

_Static_assert(sizeof(gpd_rec_hdr_t) == 8, "hdr");
_Static_assert(sizeof(gpd_rec_node_t) == 32, "node");
_Static_assert(sizeof(gpd_rec_invoke_t) == 32, "invoke");
_Static_assert(sizeof(gpd_rec_status_t) == 32, "status");
_Static_assert(sizeof(gpd_rec_graphnode_t) == 32, "graphnode");
_Static_assert(sizeof(gpd_rec_activity_t) == 96, "activity");
_Static_assert(sizeof(gpd_rec_tracewin_t) == 64, "tracewin");
_Static_assert(sizeof(gpd_rec_cpusample_t) == 64, "cpusample");
_Static_assert(sizeof(gpd_rec_pcsample_t) == 64, "pcsample");
_Static_assert(sizeof(gpd_rec_pcstats_t) == 64, "pcstats");
_Static_assert(sizeof(gpd_rec_cubin_t) == 64, "cubin");
_Static_assert(sizeof(gpd_rec_string_t) == 16, "string");
_Static_assert(sizeof(gpd_rec_module_t) == 56, "module");
_Static_assert(GPD_SLOT_SIZE % 8 == 0 && 64 % GPD_SLOT_SIZE == 0, "slot size");

/** Slots needed by a variable record with a `fixed`-byte head and `len`
 *  payload bytes. */
static inline unsigned gpd_rec_slots_for(size_t fixed, size_t len) {
  return (unsigned)((fixed + len + GPD_SLOT_SIZE - 1) / GPD_SLOT_SIZE);
}

/** Largest fixed record (ACTIVITY), bytes. */
#define GPD_REC_FIXED_MAX sizeof(gpd_rec_activity_t)

/** gpd_rec_validate's rules for an INVOKE (`v` a private copy of one
 *  slot whose h.type is GPD_REC_INVOKE): 1 if valid.  Inline so that the
 *  ring's consumer checks the most frequent record without a call. */
static inline int gpd_rec_invoke_ok(const gpd_rec_invoke_t *v) {
  return v->h.version == GPD_REC_VERSION && v->h.nslots == GPD_REC_NSLOTS(*v) && v->h.len == 0 &&
         v->api < GPD_API_MAX && v->op > GPD_OP_NONE && v->op < GPD_OP_MAX && v->node != 0 && v->corr != 0;
}

/** Validate a record copied out of a ring into `buf` (`nbytes` =
 *  nslots * GPD_SLOT_SIZE).  Checks type, version, nslots against the
 *  type's fixed size, len against nslots, enum ranges, and that ids that
 *  must be non-zero are.  Returns 0 or a negative GPD_E* code (error.h).
 *  Pure function, any thread. */
int gpd_rec_validate(const void *buf, size_t nbytes);

/** Name of a record type, op, copy kind, ... for logs and reports. */
const char *gpd_rec_type_name(unsigned type);
const char *gpd_api_name(unsigned api);
const char *gpd_op_name(unsigned op);          /* "kernel", "copy", ... */
const char *gpd_op_placeholder(unsigned op);   /* "<gpu kernel>", ... */
const char *gpd_copy_name(unsigned kind);      /* "H2D", ... */
const char *gpd_mem_name(unsigned kind);       /* "DEV", ... */
const char *gpd_sync_name(unsigned kind);      /* "STR", ... */

#endif

/* profile.h - one process's calling context tree and correlation state
 * (profile.c and its parts profile-*.c; profile-internal.h lists them).
 *
 * Lock: every function here needs the daemon lock held (gpd_daemon_t.lock)
 * for a profile that belongs to the registry; tests own profiles outright. */
#ifndef GPD_DAEMON_PROFILE_H
#define GPD_DAEMON_PROFILE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "gpuprof/cct.h"
#include "gpuprof/metric.h"
#include "gpuprof/record.h"
#include "gpuprof/region.h"

#include "map.h"
#include "tracewin.h"

#define GPD_NONE 0xffffffffu


/** A calling-context node of one process's CCT: 40 bytes, no pointers.
 *  Labels live in the profile's label pool (gpd_profile_label), metrics in
 *  its metric pool (gpd_profile_node_metric*): a node without metrics costs nothing
 *  there.  The parent's Merkle id is nodes[parent].id. */
typedef struct gpd_node_s {
  uint64_t id;        /* Merkle context id (hash.h) */
  uint64_t offset;    /* call-site offset into module */
  uint32_t parent;    /* index in gpd_profile_t.nodes, GPD_NONE for root */
  uint32_t module;    /* FRAME: local module id (0 = unknown, offset = ip); KERNEL: string
                         id of its name (attribution cache key, 0 unknown) */
  uint32_t label;     /* placeholder / demangled kernel / restored label (label pool, 0 none) */
  uint32_t raw;       /* mangled kernel name (label pool, 0 none) */
  uint32_t mb;        /* metric block in gpd_profile_t.mw (0 = no metrics) */
  uint8_t kind;       /* GPD_NODE_* */
  uint8_t op;         /* placeholder's gpd_op_t */
  uint8_t saved;      /* context row written (writer) */
  uint8_t dirty;      /* metrics changed since the writer's last copy */
} gpd_node_t;

/** One word of a profile's metric pool: a block is {mask of the metric ids
 *  present, then one double per set bit in increasing id order}. */
typedef union gpd_mword_u {
  uint64_t mask;
  double v;
} gpd_mword_t;

/** Open-addressing index of uint32 values (slot = value + 1, 0 empty)
 *  whose keys are derived from the values (profile-index.c); 4 bytes a
 *  slot. */
typedef struct gpd_ix_s {
  uint32_t *slot;
  uint32_t cap, n;
} gpd_ix_t;

typedef struct gpd_pstring_s {
  uint32_t id, kind;
  char *text;
} gpd_pstring_t;

typedef struct gpd_pmodule_s {
  uint32_t id;
  uint8_t build_id_len;
  uint8_t build_id[20];
  uint64_t base, size;
  char *path;
} gpd_pmodule_t;

/** Shim node id -> node index, in insertion order (cct_local rows). */
typedef struct gpd_plocal_s {
  uint32_t local;
  uint32_t node;
} gpd_plocal_t;

/** What a process's last STATUS record said about one of its APIs' back
 *  ends (gpd_profile_t.backends[api]); the shim's own back-end table is
 *  shim/backends.h's gpd_backend_t. */
typedef struct gpd_api_status_s {
  int seen, enabled, code;
  uint32_t reason; /* string id */
} gpd_api_status_t;

/* Bounds that keep a hostile process from exhausting the daemon. */
#define GPD_PROFILE_MAX_NODES (4u << 20)
#define GPD_PROFILE_MAX_PENDING (1u << 20)
#define GPD_PROFILE_MAX_STRBYTES (64u << 20)
/* Correlation map: at most this many invocations wait for activities, and
 * none longer than this many records of its process (a graph launch's
 * activities, or an orphaned invocation's that never come).  The oldest
 * are evicted (corr_evicted); an activity that arrives later for one goes
 * to <unknown context> like any unmatched activity. */
#define GPD_PROFILE_MAX_CORR (1u << 20)
#define GPD_PROFILE_MAX_CORR_AGE (1ull << 26)

/** An invocation in insertion order: correlation id and the process's
 *  record count when it arrived. */
typedef struct gpd_corr_age_s {
  uint64_t corr, seq;
} gpd_corr_age_t;

/** A pending activity; chained per correlation id (pend_corr). */
typedef struct gpd_pact_s {
  gpd_rec_activity_t a; /* a.h.type == GPD_REC_NONE: tombstone */
  uint64_t next;        /* logical id (pbase + index) of the next pending
                           activity with the same corr, UINT64_MAX none */
  uint64_t seq;         /* its `pending` row (GPD_PEND_SEQ), | GPD_PEND_STORED */
} gpd_pact_t;

/* `pending` row ids (docs/FORMATS.md): class in bits 61-62 keeps the
 * re-feed order NODE (0) < INVOKE (1) < ACTIVITY (2); NODE and ACTIVITY
 * rows number the records as they went pending, an INVOKE's row is its
 * correlation id.  GPD_PEND_STORED (in memory only): the row is in the
 * store as of the last snapshot. */
#define GPD_PEND_SEQ(cls, n) (((uint64_t)(cls) << 61) | ((uint64_t)(n) & ((1ull << 61) - 1)))
#define GPD_PEND_STORED (1ull << 63)
/* Correlation-map value bit: the INVOKE's row is stored. */
#define GPD_CORR_STORED (1ull << 41)

/** Change logs of the live queries, one per reader: GPD_QLOG_TREE is read
 *  by merge.c (the node view, which Top reads too).  Once a reader
 *  arms its log (gpd_profile_qlog_take), every node whose metrics change
 *  is appended to it once (qbit dedups) until the reader takes the log
 *  again; past GPD_QLOG_MAX(p) distinct nodes, or out of memory, `over`
 *  is set instead and the reader re-reads every node.  Memory: 1 byte per
 *  node and at most 4 bytes per GPD_QLOG_MAX node per armed log. */
#define GPD_QLOG_TREE 0
#define GPD_QLOG_N 1 /* at most 8 (a bit each in gpd_profile_t.qbit) */
typedef struct gpd_qlog_s {
  uint32_t *v;  /* node indices, each at most once */
  uint32_t n, cap;
  int over;     /* a change was not logged: the reader must read every node */
} gpd_qlog_t;

/** Per-process profile: the CCT rebuilt from NODE records, strings and
 *  modules, the correlation map and the pending lists.  Single-threaded:
 *  the caller holds the daemon lock (or owns it exclusively, tests). */
typedef struct gpd_profile_s {
  uint64_t profile_id;
  uid_t uid; /* owner of the process (symbolization runs with its rights) */
  gid_t gid;
  gpd_node_t *nodes; /* nodes[0] is the root; parents precede children */
  uint32_t nnodes, capnodes;
  gpd_ix_t by_ctx;    /* Merkle id -> node index */
  gpd_ix_t by_local;  /* shim node id -> index into locals */
  gpd_mword_t *mw;    /* metric pool (word 0 unused: block 0 = none) */
  uint32_t nmw, capmw;
  uint32_t mfree[GPD_M__COUNT + 2]; /* free blocks by size in words */
  uint64_t mmask;     /* metric ids any node holds */
  uint64_t tree_gen;  /* bumped by every new node and metric change (merge.c's view cache) */
  uint32_t *mnodes;   /* nodes holding metrics, in the order they got their first */
  uint32_t nmnodes, capmnodes;
  /* change logs of the live queries (gpd_qlog_t): bit c of qbit[i] = node
   * i is in qlog[c]; qarmed: bit c = log c is kept (taken, not over) */
  gpd_qlog_t qlog[GPD_QLOG_N];
  uint8_t *qbit;
  uint32_t capqbit;
  uint8_t qarmed;
  char *lp;           /* label pool: NUL-terminated strings, id = offset + 1 */
  uint32_t nlp, caplp;
  gpd_ix_t lp_ix;     /* label text -> id (dedup) */
  uint32_t *dirtyv;   /* nodes whose dirty went 0 -> 1 since the writer's copy */
  uint32_t ndirtyv, capdirtyv;
  uint32_t nodes_clean; /* nodes [0, nodes_clean) are saved (writer) */
  gpd_map_t corr;     /* corr -> packed {node, op, multi} (GPD_CORR_PACK) */
  gpd_corr_age_t *corr_fifo; /* ring of corr keys, oldest at corr_head; keys
                                matched since are skipped (compacted when
                                twice the map) */
  uint32_t corr_head, corr_nfifo, corr_capfifo; /* capacity: 0 or a power of two */
  uint32_t max_corr;       /* bound on corr.n (GPD_PROFILE_MAX_CORR; tests lower it) */
  uint64_t max_corr_age;   /* in records (GPD_PROFILE_MAX_CORR_AGE) */
  uint64_t corr_evicted;   /* invocations evicted by the bounds */
  gpd_pstring_t *strs;
  uint32_t nstrs, capstrs;
  gpd_map_t str_by_id;
  size_t str_bytes;
  gpd_pmodule_t *mods;
  uint32_t nmods, capmods;
  gpd_map_t mod_by_id;
  gpd_rec_node_t *pnodes; /* NODE records waiting for parent/module */
  uint64_t *pnode_seq;     /* their `pending` rows (| GPD_PEND_STORED), capacity cappnodes */
  uint32_t npnodes, cappnodes;
  struct gpd_pact_s *pacts; /* ACTIVITY waiting for invoke/node/name, in arrival
                              order; [0, pact0) matched and popped off the front */
  uint32_t npacts, cappacts, pact0;
  uint64_t pbase;          /* logical id of pacts[0] (chains and pend_corr hold
                              logical ids: popping the front moves nothing) */
  uint32_t ndead;          /* tombstones in pacts[pact0, npacts) (matched by an INVOKE) */
  gpd_map_t pend_corr;     /* corr -> logical id of its newest pending activity */
  int pend_dirty;          /* a node/string arrived: rescan pending */
  uint32_t pact_blocked;   /* pending activities whose invocation is known but
                              not its node or kernel name (upper bound) */
  gpd_ix_t targets;        /* (node, kernel name, op) -> attribution node (cache) */
  gpd_plocal_t *locals; /* local id -> ctx, in insertion order (cct_local) */
  uint32_t nlocals, caplocals;
  /* writer watermarks */
  uint32_t nstrs_saved, nmods_saved, nlocals_saved;
  gpd_api_status_t backends[GPD_API_MAX];
  uint64_t records;    /* records ingested */
  uint64_t activities; /* activities attributed */
  uint64_t unknown;    /* activities attributed to <unknown context> */
  uint64_t dropped_nodes; /* NODE records never resolved */
  int full;            /* a bound was hit (see error) */
  /* unmatched state (pnodes, corr, pacts) changes: bumped by ingest/retry;
   * the writer persists the pending table when it differs from _saved */
  uint64_t pend_gen, pend_gen_saved;
  struct gpd_pcsample_s *pcs; /* GPU PC samples (pcsample.c), NULL until one */
  struct gpd_cpusample_s *cps; /* CPU-time samples (cpusample.c), NULL until one */
  struct gpd_graph_s *graph;   /* CUDA graph nodes (graph.c), NULL until one */
  gpd_tracewin_t tw;           /* tracing windows (tracewin.c) */
  /* pending-table delta (gpd_profile_pending_delta): rows numbered up to
   * pend_seq_saved were handled by the last snapshot; corr_old fifo entries
   * (from corr_head) were there at that snapshot; pdel: stored rows gone
   * since; pend_full: rewrite every row (new profile, failed write) */
  uint64_t pend_seq, pend_seq_saved;
  uint32_t corr_old;
  uint64_t *pdel;
  uint32_t npdel, cappdel;
  int pend_full;
  /* tracing (trace.c): the daemon's tracing threads (NULL: not traced; the
   * monitor sets it), stream key -> tracing thread, rows handed over, and
   * events dropped (queue full) / refused (bound) */
  struct gpd_trace_s *trace;
  gpd_map_t trace_streams;
  uint64_t trace_n, trace_dropped, trace_refused;
  int trace_stat_dirty;
  /* thread id of the ring being ingested (gpd_profile_consume: the ring's
   * owner, gpd_ring_consume_pf): the thread of its INVOKE records */
  uint32_t ring_tid;
} gpd_profile_t;

/** One unmatched record as raw record bytes (NODE / INVOKE: 32 bytes,
 *  ACTIVITY: 96 bytes), for the store's `pending` table. */
typedef struct gpd_prec_s {
  _Alignas(64) uint8_t b[GPD_REC_FIXED_MAX];
  uint32_t len; /* bytes used: a multiple of GPD_SLOT_SIZE */
  uint64_t seq; /* its row id (GPD_PEND_SEQ) */
} gpd_prec_t;

/** Pack a correlation-map value. */
#define GPD_CORR_PACK(node, op, multi) \
  ((uint64_t)(node) | ((uint64_t)(op) << 32) | ((uint64_t)((multi) ? 1 : 0) << 40))

int gpd_profile_init(gpd_profile_t *p, uint64_t profile_id);
void gpd_profile_free(gpd_profile_t *p);
/** Ingest one validated record (gpd_ring_fn signature, arg = profile).
 *  Never fails: a record the profile cannot place is kept pending. */
void gpd_profile_ingest(void *arg, const void *rec, size_t nbytes);
/** Prefetch hook for gpd_ring_consume_pf (arg = profile): starts loading
 *  the correlation-map slots a raw, unvalidated INVOKE/ACTIVITY slot will
 *  look up when it is ingested.  Reads nothing else. */
void gpd_profile_prefetch(void *arg, const void *slot);
/** Ingest up to max records of ring `ring` of r from *cursor
 *  (gpd_ring_consume_pf with gpd_profile_ingest and gpd_profile_prefetch):
 *  the monitor's path.  Returns as gpd_ring_consume_at. */
int gpd_profile_consume(gpd_profile_t *p, gpd_region_t *r, uint32_t ring, uint64_t *cursor,
                        unsigned max);
/** Retry pending NODE and ACTIVITY records (after each drain pass). */
void gpd_profile_retry(gpd_profile_t *p);
/** Final flush: resolve what can be resolved, attribute every remaining
 *  activity under root -> <unknown context>, so nothing is lost. */
void gpd_profile_finish(gpd_profile_t *p);
/** What changed in the unmatched correlation state (pending NODEs, INVOKEs
 *  in the correlation map rebuilt from {corr, node, op, multi} with tid/ts
 *  0, pending ACTIVITYs) since the last call, as `pending` rows: *add
 *  (malloc'd, NULL when *nadd == 0) are rows to insert or replace, *del
 *  (malloc'd) row ids to delete; *full: delete every row of the profile
 *  first (*add is then everything, in re-feed order).  The work is
 *  proportional to the rows that changed, not to all pending records:
 *  rows are marked stored here, deletions of stored rows are logged as they
 *  happen.  The caller writes the delta or, if that fails, sets
 *  p->pend_full.  0 or -ENOMEM (p->pend_full set, nothing allocated). */
int gpd_profile_pending_delta(gpd_profile_t *p, gpd_prec_t **add, uint32_t *nadd, uint64_t **del,
                              uint32_t *ndel, int *full);
/** gpd_profile_pending_delta in steps, for a caller that drops the
 *  daemon lock between them while nothing else changes the profile (the
 *  writer, its process frozen): begin takes the ranges, *del, *full and
 *  moves the marks (0 or -ENOMEM as gpd_profile_pending_delta); step
 *  copies at most `budget` entries (returns those visited); end hands the
 *  rows over (*add NULL when none).  Lock held for each call. */
typedef struct gpd_pdelta_s {
  gpd_prec_t *v;           /* the rows (room for every entry of the ranges) */
  uint32_t k;              /* rows filled */
  int full;                /* rows of every entry (after pend_full) */
  uint32_t n, n_end;       /* pending NODEs */
  size_t c, c_end;         /* correlation fifo positions, or map slots when full */
  uint32_t a, a_end;       /* pending ACTIVITYs */
} gpd_pdelta_t;
int gpd_profile_pending_begin(gpd_profile_t *p, gpd_pdelta_t *dl, uint64_t **del, uint32_t *ndel, int *full);
uint32_t gpd_profile_pending_step(gpd_profile_t *p, gpd_pdelta_t *dl, uint32_t budget);
int gpd_profile_pending_left(const gpd_pdelta_t *dl);
void gpd_profile_pending_end(gpd_pdelta_t *dl, gpd_prec_t **add, uint32_t *nadd);
/** Re-feed one record of gpd_profile_pending_delta (hand-back
 *  reload): validated, ingested, not counted in `records` again.  0 or
 *  GPD_EBADRECORD (ignored). */
int gpd_profile_restore_pending(gpd_profile_t *p, const void *rec, size_t nbytes);
/** Index of the node with Merkle id, or GPD_NONE. */
uint32_t gpd_profile_find(const gpd_profile_t *p, uint64_t ctx);
/** Index of the node announced by the shim as `local`, or GPD_NONE. */
uint32_t gpd_profile_local(const gpd_profile_t *p, uint32_t local);
/** Module key bytes of local module id (build-id if any, else path);
 *  NULL/0 for module 0 or unknown. */
const void *gpd_profile_module_key(const gpd_profile_t *p, uint32_t module, size_t *len);
const gpd_pmodule_t *gpd_profile_module(const gpd_profile_t *p, uint32_t module);
const char *gpd_profile_string(const gpd_profile_t *p, uint32_t id);
/** Add or fetch a child of node `parent` with Merkle id derived from key
 *  (synthetic node); returns the index or GPD_NONE (bound hit). */
uint32_t gpd_profile_child(gpd_profile_t *p, uint32_t parent, uint8_t kind,
                           const char *key, const char *label, const char *raw);
/** Insert a node restored from the store (parent must exist).  Returns the
 *  index or GPD_NONE. */
uint32_t gpd_profile_restore_node(gpd_profile_t *p, uint64_t id, uint64_t parent_id,
                                  uint8_t kind, uint32_t module, uint64_t offset,
                                  const char *label, const char *raw);
int gpd_profile_add_local(gpd_profile_t *p, uint32_t local, uint32_t idx);
int gpd_profile_add_string(gpd_profile_t *p, uint32_t id, uint32_t kind, const char *text, size_t len);
int gpd_profile_add_module(gpd_profile_t *p, uint32_t id, const uint8_t *bid, unsigned bid_len,
                           uint64_t base, uint64_t size, const char *path, size_t len);
/** Exclusive value of metric at context ctx (0 if absent). */
double gpd_profile_excl(const gpd_profile_t *p, uint64_t ctx, unsigned metric);
/** Inclusive value (sum over the subtree rooted at ctx). */
double gpd_profile_incl(const gpd_profile_t *p, uint64_t ctx, unsigned metric);

/** Text of label-pool id l (NULL for 0). */
static inline const char *gpd_profile_label(const gpd_profile_t *p, uint32_t l) {
  return l ? p->lp + (l - 1) : NULL;
}
/** Merkle id of node i's parent (0 for the root). */
static inline uint64_t gpd_profile_parent_id(const gpd_profile_t *p, uint32_t i) {
  uint32_t par = p->nodes[i].parent;
  return par == GPD_NONE ? 0 : p->nodes[par].id;
}
/** Mask of the metric ids node n holds (bit id), 0 without metrics. */
static inline uint64_t gpd_node_mask(const gpd_profile_t *p, const gpd_node_t *n) {
  return n->mb ? p->mw[n->mb].mask : 0;
}
/** The values of node n, one per set bit of gpd_node_mask in increasing id
 *  order (NULL without metrics).  Valid until the profile changes. */
static inline const gpd_mword_t *gpd_node_vals(const gpd_profile_t *p, const gpd_node_t *n) {
  return n->mb ? &p->mw[n->mb + 1] : NULL;
}
/** Node n's metrics as sparse values into out[GPD_M__COUNT]; returns how many. */
unsigned gpd_profile_node_metrics(const gpd_profile_t *p, const gpd_node_t *n, gpd_mval_t *out);
/** Value of metric id at node n (0 if absent). */
double gpd_profile_node_metric(const gpd_profile_t *p, const gpd_node_t *n, unsigned id);
/** Add the non-zero entries of v[GPD_M__COUNT] to node i's exclusive
 *  metrics and mark it dirty for the writer.  0 or -ENOMEM (unchanged). */
int gpd_profile_metrics_add(gpd_profile_t *p, uint32_t i, const double *v);
/** Add v to metric id (< GPD_M__COUNT) of node i.  0, -EINVAL, -ENOMEM. */
int gpd_profile_metric_add(gpd_profile_t *p, uint32_t i, unsigned id, double v);
/** The nodes whose metrics changed since the last call for log c
 *  (GPD_QLOG_*), and arm it: *v and *n (owned by p, valid until p changes or
 *  the next take), *over = 1 when the log is incomplete (the first take,
 *  a bound or ENOMEM hit): then the caller must treat every node as
 *  changed.  Empties the log.  Daemon lock. */
void gpd_profile_qlog_take(gpd_profile_t *p, unsigned c, const uint32_t **v, uint32_t *n, int *over);
/** Heap bytes the profile holds (arrays, pools, indexes, strings). */
size_t gpd_profile_bytes(const gpd_profile_t *p);

#endif

/* profile.h - one process's calling context tree and correlation state.
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

#define GPD_NONE 0xffffffffu


/** Add v to metric id in a sparse array (grows it).  0 or -ENOMEM. */
int gpd_mval_add(gpd_mval_t **a, uint32_t *n, uint32_t *cap, uint32_t id, double v);
/** Value of metric id in a sparse array (0 when absent). */
double gpd_mval_get(const gpd_mval_t *a, uint32_t n, uint32_t id);

/** A calling-context node of one process's CCT. */
typedef struct gpd_node_s {
  uint64_t id;        /* Merkle context id (hash.h) */
  uint64_t parent_id; /* 0 for the root */
  uint32_t parent;    /* index in gpd_profile_t.nodes, GPD_NONE for root */
  uint8_t kind;       /* GPD_NODE_* */
  uint8_t op;         /* placeholder's gpd_op_t */
  uint8_t saved;      /* context row written (writer) */
  uint8_t dirty;      /* metrics changed since the writer's last copy */
  uint32_t module;    /* local module id of a FRAME (0 = unknown, offset = ip) */
  uint64_t offset;    /* call-site offset into module */
  char *label;        /* placeholder / demangled kernel / restored label (owned) */
  char *raw_name;     /* mangled kernel name (owned) */
  gpd_mval_t *m;      /* sparse exclusive metrics */
  uint32_t nm, capm;
} gpd_node_t;

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

typedef struct gpd_plocal_s {
  uint32_t local;
  uint64_t ctx;
} gpd_plocal_t;

typedef struct gpd_backend_s {
  int seen, enabled, code;
  uint32_t reason; /* string id */
} gpd_backend_t;

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
  uint32_t next;        /* next pending index with the same corr, GPD_NONE */
} gpd_pact_t;

/** Per-process profile: the CCT rebuilt from NODE records, strings and
 *  modules, the correlation map and the pending lists.  Single-threaded:
 *  the caller holds the daemon lock (or owns it exclusively, tests). */
typedef struct gpd_profile_s {
  uint64_t profile_id;
  uid_t uid; /* owner of the process (symbolization runs with its rights) */
  gid_t gid;
  gpd_node_t *nodes; /* nodes[0] is the root; parents precede children */
  uint32_t nnodes, capnodes;
  gpd_map_t by_ctx;   /* Merkle id -> node index */
  gpd_map_t by_local; /* shim node id -> node index */
  gpd_map_t corr;     /* corr -> packed {node, op, multi} (GPD_CORR_PACK) */
  gpd_corr_age_t *corr_fifo; /* ring of corr keys, oldest at corr_head; keys
                                matched since are skipped (compacted when
                                twice the map) */
  uint32_t corr_head, corr_nfifo, corr_capfifo;
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
  uint32_t npnodes, cappnodes;
  struct gpd_pact_s *pacts; /* ACTIVITY waiting for invoke/node/name */
  uint32_t npacts, cappacts;
  uint32_t ndead;          /* tombstones in pacts (matched by an INVOKE) */
  gpd_map_t pend_corr;     /* corr -> head index of its pending chain */
  int pend_dirty;          /* a node/string arrived: rescan pending */
  gpd_map_t targets;       /* (node, kernel name, op) -> attribution node (cache) */
  gpd_plocal_t *locals; /* local id -> ctx, in insertion order (cct_local) */
  uint32_t nlocals, caplocals;
  /* writer watermarks */
  uint32_t nstrs_saved, nmods_saved, nlocals_saved;
  gpd_backend_t backends[GPD_API_MAX];
  uint64_t records;    /* records ingested */
  uint64_t activities; /* activities attributed */
  uint64_t unknown;    /* activities attributed to <unknown context> */
  uint64_t dropped_nodes; /* NODE records never resolved */
  int full;            /* a bound was hit (see error) */
  /* unmatched state (pnodes, corr, pacts) changes: bumped by ingest/retry;
   * the writer persists the pending table when it differs from _saved */
  uint64_t pend_gen, pend_gen_saved;
  struct gpd_pcsample_s *pcs; /* GPU PC samples (pcsample.c), NULL until one */
} gpd_profile_t;

/** One unmatched record as raw record bytes (NODE / INVOKE: 64 bytes,
 *  ACTIVITY: 128 bytes), for the store's `pending` table. */
typedef struct gpd_prec_s {
  _Alignas(64) uint8_t b[2 * GPD_SLOT_SIZE];
  uint32_t len; /* bytes used: a multiple of GPD_SLOT_SIZE */
} gpd_prec_t;

/** Pack a correlation-map value. */
#define GPD_CORR_PACK(node, op, multi) \
  ((uint64_t)(node) | ((uint64_t)(op) << 32) | ((uint64_t)((multi) ? 1 : 0) << 40))

int gpd_profile_init(gpd_profile_t *p, uint64_t profile_id);
void gpd_profile_free(gpd_profile_t *p);
/** Ingest one validated record (gpd_ring_fn signature, arg = profile).
 *  Never fails: a record the profile cannot place is kept pending. */
void gpd_profile_ingest(void *arg, const void *rec, size_t nbytes);
/** Retry pending NODE and ACTIVITY records (after each drain pass). */
void gpd_profile_retry(gpd_profile_t *p);
/** Final flush: resolve what can be resolved, attribute every remaining
 *  activity under root -> <unknown context>, so nothing is lost. */
void gpd_profile_finish(gpd_profile_t *p);
/** The unmatched correlation state as raw records, in re-feed order:
 *  pending NODEs, then INVOKEs still in the correlation map (rebuilt from
 *  {corr, node, op, multi}; tid/ts 0), then pending ACTIVITYs.  *out is
 *  malloc'd (NULL when *n == 0).  0 or -ENOMEM (nothing allocated). */
int gpd_profile_pending_export(const gpd_profile_t *p, gpd_prec_t **out, uint32_t *n);
/** Re-feed one record exported by gpd_profile_pending_export (hand-back
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

#endif

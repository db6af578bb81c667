/* daemon.h - gpuprofd internals shared by the daemon's files (private).
 *
 * Threads (docs/DAEMON.md):
 *   main     libuv loop: listening socket, clients, queries, signals, timers
 *   monitor  drains every registered region's rings, attributes records
 *   writer   persists dirty profiles to SQLite every flush_ms
 * All shared state below (the registry and every profile in it) is guarded
 * by gpd_daemon_t.lock.  The monitor holds it per process per pass; queries
 * and the writer take it briefly (the writer copies, then writes outside).
 */
#ifndef GPD_DAEMON_DAEMON_H
#define GPD_DAEMON_DAEMON_H

#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "gpuprof/metric.h"
#include "gpuprof/record.h"
#include "gpuprof/region.h"

#include "access.h"
#include "config.h"

#define GPD_PROTO_VERSION 1u
#define GPD_NONE 0xffffffffu

/* Node kinds: the values of gpuprof.NodeKind (proto). */
enum { GPD_NODE_ROOT = 0, GPD_NODE_FRAME = 1, GPD_NODE_PLACEHOLDER = 2,
       GPD_NODE_KERNEL = 3, GPD_NODE_UNKNOWN = 4 };

#define GPD_UNKNOWN_LABEL "<unknown context>"

/* ------------------------------------------------------------------ map */

/** Open-addressing hash map uint64 -> uint64 (linear probing, backward-shift
 *  delete).  Key 0 is reserved (empty); callers never store key 0. */
typedef struct gpd_map_s {
  uint64_t *keys;
  uint64_t *vals;
  size_t cap; /* power of two, 0 when empty */
  size_t n;
} gpd_map_t;

void gpd_map_free(gpd_map_t *m);
/** 1 and *val if key present, else 0. */
int gpd_map_get(const gpd_map_t *m, uint64_t key, uint64_t *val);
/** Insert or overwrite.  0, -EINVAL (key 0) or -ENOMEM. */
int gpd_map_put(gpd_map_t *m, uint64_t key, uint64_t val);
/** Remove; 1 if it was present. */
int gpd_map_del(gpd_map_t *m, uint64_t key);

/* ------------------------------------------------------ sparse metrics */

/** One sparse metric value: metric id (gpd_metric_t) and value in the
 *  metric's unit (ns, bytes, count). */
typedef struct gpd_mval_s {
  uint32_t id;
  double v;
} gpd_mval_t;

/** Add v to metric id in a sparse array (grows it).  0 or -ENOMEM. */
int gpd_mval_add(gpd_mval_t **a, uint32_t *n, uint32_t *cap, uint32_t id, double v);
/** Value of metric id in a sparse array (0 when absent). */
double gpd_mval_get(const gpd_mval_t *a, uint32_t n, uint32_t id);

/* -------------------------------------------------------------- profile */

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
  gpd_node_t *nodes; /* nodes[0] is the root; parents precede children */
  uint32_t nnodes, capnodes;
  gpd_map_t by_ctx;   /* Merkle id -> node index */
  gpd_map_t by_local; /* shim node id -> node index */
  gpd_map_t corr;     /* corr -> packed {node, op, multi} (GPD_CORR_PACK) */
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

/* ---------------------------------------------------------------- demangle */

/** Demangled C++ name (malloc'd) or a strdup of `name` if not mangled. */
char *gpd_demangle(const char *name);

/* ---------------------------------------------------------------- symbols */

typedef struct gpd_sframe_s {
  char *function;
  char *file;
  uint32_t line;
  int inlined;
} gpd_sframe_t;

/** Source frames of (module path, offset into module): outermost first,
 *  inlined frames included.  Cached per (path, offset); the returned
 *  array stays valid until gpd_symbols_shutdown.  No debug info: one
 *  frame with the ELF symtab function and file "??".  Thread-safe (own
 *  mutex); never call it on the monitor thread. */
int gpd_symbols_resolve(const char *path, uint64_t offset, const gpd_sframe_t **frames,
                        unsigned *n);
void gpd_symbols_shutdown(void);

/* -------------------------------------------------------------- registry */

enum { GPD_PROC_RUNNING = 0, GPD_PROC_ENDING = 1, GPD_PROC_EXITED = 2, GPD_PROC_LOST = 3 };

struct gpd_client_s;

/** One registered process. */
typedef struct gpd_proc_s {
  struct gpd_proc_s *next;
  uint64_t profile_id;
  pid_t pid, ppid;
  uid_t uid;
  gid_t gid;
  char *exe, *job_id, *step_id, *hostname, *argv_json;
  char **argv;
  size_t argc;
  int32_t rank, local_rank;
  uint64_t start_ns, end_ns;
  int state;            /* GPD_PROC_* */
  int has_region;
  gpd_region_t region;
  /* Per ring (region.nrings entries, with the region): the monitor's
   * private read position (gpd_ring_consume_at), and the position last
   * committed to the store (ring_cursor table).  The shared tail is
   * released to a committed position only (writer, after COMMIT), so a
   * restarted daemon re-reads exactly what was not stored. */
  uint64_t *cursor;
  uint64_t *cursor_saved;
  int bad;              /* stopped trusting its region */
  char error[256];
  gpd_profile_t prof;
  uint32_t rings_in_use; /* monitor's last count of non-FREE rings */
  uint64_t drops;       /* ring-full + no-ring drops (shim counters) */
  int meta_dirty;       /* profile row needs an upsert */
  int flushed;          /* EXITED and written by the writer */
  struct gpd_client_s *client; /* NULL after EOF */
} gpd_proc_t;

typedef struct gpd_store_s gpd_store_t;

/** The daemon. */
typedef struct gpd_daemon_s {
  gpd_config_t cfg;
  char config_path[4096];
  int config_explicit;
  char db_path[PATH_MAX + 300];
  int exit_when_idle;
  int foreground;
  pthread_mutex_t lock;
  pthread_cond_t writer_cv;
  gpd_proc_t *procs;    /* registry list, newest first */
  uint32_t nprocs;
  uint64_t next_profile_id;
  int stop;             /* threads: stop after a last pass */
  int had_client;       /* exit-when-idle: a process registered once */
  int flush_now;        /* wake the writer: a process ended, or a ring is
                           more than half full of unreleased slots */
  uint64_t early_flushes; /* flushes asked for by ring back-pressure */
  int writer_stop;      /* writer: last flush, then exit */
  int shutting_down;    /* main: closing connections does not end processes */
  pthread_t monitor_tid, writer_tid;
  int monitor_started, writer_started;
  gpd_store_t *store;
  struct uv_loop_s *loop;
} gpd_daemon_t;

/** Registry (caller holds d->lock unless noted). */
gpd_proc_t *gpd_registry_add(gpd_daemon_t *d);
gpd_proc_t *gpd_registry_find(gpd_daemon_t *d, uint64_t profile_id);
gpd_proc_t *gpd_registry_find_pid(gpd_daemon_t *d, pid_t pid);
void gpd_registry_free_proc(gpd_proc_t *p);
/** Forget exited, flushed processes beyond `keep` (memory bound). */
void gpd_registry_trim(gpd_daemon_t *d, unsigned keep);
/** Count of processes not yet EXITED+flushed. */
unsigned gpd_registry_live(gpd_daemon_t *d);
/** Records dropped (ring full + no ring), rings in use, consumed. */
void gpd_registry_counters(const gpd_proc_t *p, uint32_t *rings, uint64_t *records, uint64_t *drops);

/** Handle a Hello from client `c` (main thread).  `fd` is an attached fd
 *  (-1 none; ownership taken).  Fills the reply fields; *reply_fd is the
 *  region fd to attach (borrowed) or -1.  Returns 0 or a negative code with
 *  errmsg set (refused). */
struct Gpuprof__Hello;
int gpd_registry_hello(gpd_daemon_t *d, struct gpd_client_s *c, const struct Gpuprof__Hello *h,
                       int fd, uint64_t *profile_id, int *reply_fd, char *errmsg, size_t errlen);
/** EOF on a process's connection: request the final drain. */
void gpd_registry_eof(gpd_daemon_t *d, gpd_proc_t *p);
/** Allocate p->cursor / p->cursor_saved for p->region, both at each
 *  ring's shared tail (a new or adopted region).  0 or -ENOMEM. */
int gpd_registry_cursors(gpd_proc_t *p);
/** The process's rings were released to the committed positions and it
 *  has EXITED: unmap the region, drop the cursors (lock held). */
void gpd_registry_close_region(gpd_proc_t *p);

/* --------------------------------------------------------------- monitor */

int gpd_monitor_start(gpd_daemon_t *d);
void gpd_monitor_stop(gpd_daemon_t *d);
/** One pass over all processes (monitor thread or tests); takes the lock
 *  per process.  Returns records consumed. */
uint64_t gpd_monitor_pass(gpd_daemon_t *d);
/** Drain one process completely and finish it if ENDING (lock held). */
uint64_t gpd_monitor_drain(gpd_daemon_t *d, gpd_proc_t *p, unsigned max_per_ring);

/* ----------------------------------------------------------------- store */

/** Open (create) the database at path: schema, WAL, metric_desc, marks
 *  profiles left 'running' by a dead daemon as 'lost'.  0 or GPD_ESTORE. */
int gpd_store_open(gpd_store_t **out, const char *path);
void gpd_store_close(gpd_store_t *s);
/** Largest profile id in the store (0 if none). */
uint64_t gpd_store_max_profile_id(gpd_store_t *s);
/** Writer thread: start / stop (stop does a last flush of everything). */
int gpd_store_writer_start(gpd_daemon_t *d);
void gpd_store_writer_stop(gpd_daemon_t *d);
/** Copy dirty data under d->lock and write it in one transaction.  Any
 *  thread but only one at a time (the writer, or main after it stopped).
 *  Returns 0 or GPD_ESTORE. */
int gpd_store_flush(gpd_daemon_t *d);
/** Hand-back: reload profile_id's CCT, strings, modules and metrics into
 *  p->prof if the stored profile has uid `uid`, re-feed its persisted
 *  unmatched records (table pending) and move p->cursor of each ring to
 *  its committed position (table ring_cursor) where that is ahead of the
 *  shared tail (a daemon killed between COMMIT and release), releasing
 *  it.  p->region and p->cursor must be set up (gpd_registry_cursors).
 *  1 loaded, 0 not found or other uid, <0 error.  Main thread, own
 *  connection. */
int gpd_store_load(gpd_store_t *s, gpd_proc_t *p, uid_t uid);
/** Retention pass (writer thread, after a flush). */
int gpd_store_retain(gpd_daemon_t *d);
/** At start: the newest `keep` stored profiles back into the live view
 *  (EXITED, or LOST while their process may still hand back).  Returns
 *  how many, or a negative code.  Main thread, before the threads start. */
int gpd_store_restore(gpd_daemon_t *d, unsigned keep);

/** GPU binary upload in progress on one connection. */
typedef struct gpd_gpubin_s {
  char hash[33];
  char kind[32];
  uint64_t total, received;
  int fd;
  char tmp[PATH_MAX + 64];
} gpd_gpubin_t;

#define GPD_GPUBIN_MAX_BYTES (512ull << 20)
struct Gpuprof__GpuBinary;
/** Store one chunk (main thread).  0, or a negative code with errmsg. */
int gpd_store_gpubin(gpd_daemon_t *d, gpd_gpubin_t *g, uint64_t profile_id,
                     const struct Gpuprof__GpuBinary *m, char *errmsg, size_t errlen);
void gpd_gpubin_abort(gpd_gpubin_t *g);

/* ----------------------------------------------------------- merge/query */

/** A node of the merged (node-wide) view. */
typedef struct gpd_mnode_s {
  uint64_t id, parent_id;
  uint32_t parent; /* index, GPD_NONE for root */
  uint8_t kind;
  const gpd_profile_t *prof; /* first profile that had it (labels) */
  uint32_t pidx;             /* its index in that profile */
  gpd_mval_t *excl, *incl;
  uint32_t nex, capex, nin, capin;
  uint32_t depth;
} gpd_mnode_t;

typedef struct gpd_merge_s {
  gpd_mnode_t *nodes; /* parents precede children */
  uint32_t n, cap;
  gpd_map_t by_id;
} gpd_merge_t;

/** Merge profile p into m (sum exclusive metrics by Merkle id). */
int gpd_merge_add(gpd_merge_t *m, const gpd_profile_t *p);
/** Compute inclusive metrics (after all adds). */
int gpd_merge_finish(gpd_merge_t *m);
void gpd_merge_free(gpd_merge_t *m);
uint32_t gpd_merge_find(const gpd_merge_t *m, uint64_t id);

struct Gpuprof__Msg;
/** Answer a query message into *reply (allocated; free with
 *  gpd_query_free_reply).  Main thread, takes d->lock. */
int gpd_query_answer(gpd_daemon_t *d, const gpd_peer_t *peer, const struct Gpuprof__Msg *req,
                     struct Gpuprof__Msg **reply);
void gpd_query_free_reply(struct Gpuprof__Msg *reply);
/** Label of node i of profile p (symbolizes FRAME nodes lazily). */
const char *gpd_query_label(const gpd_profile_t *p, uint32_t i, const char **module);

/* ------------------------------------------------------- server/client */

int gpd_server_start(gpd_daemon_t *d, int *activated);
void gpd_server_stop(gpd_daemon_t *d);
void gpd_client_close_all(gpd_daemon_t *d);
/** Take over an accepted connection fd (non-blocking). */
int gpd_client_accept(gpd_daemon_t *d, int fd);
/** Peer credentials of a connection (SO_PEERCRED at accept). */
const gpd_peer_t *gpd_client_peer(const struct gpd_client_s *c);
/** Bind a registered process to its connection (EOF ends it). */
void gpd_client_set_proc(struct gpd_client_s *c, gpd_proc_t *p);

#endif

/* query-internal.h - what the query files share: query.c (dispatch,
 * symbolization, encoding), query-tree.c (Ps, Tree, selection, node view),
 * query-top.c (the Top answer and its index), query-gpu.c, query-trace.c,
 * query-encode.c; the reply arena is query-arena.h.  Layered: query.c
 * calls the answers, the answers call query-tree.c and the arena, never
 * back.  Main thread only,
 * inside gpd_query_start; the functions that read profiles need d->lock
 * (said per function).  Not for other files: replies are built in the
 * arena of the query being answered (query.c). */
#ifndef GPD_DAEMON_QUERY_INTERNAL_H
#define GPD_DAEMON_QUERY_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "gpuprof.pb-c.h"

#include "access.h"
#include "profile.h"
#include "query-arena.h"

typedef struct gpd_daemon_s gpd_daemon_t;
typedef struct gpd_proc_s gpd_proc_t;

/** Is p selected by (pid, job) and visible to peer?  pid 0 = any.  d->lock. */
int gpd__query_selected(const gpd_proc_t *p, const gpd_peer_t *peer, int32_t pid, const char *job);
/** Error reply for an explicit pid the peer may not see or that is not
 *  profiled; NULL when pid is 0 or fine.  d->lock. */
Gpuprof__Msg *gpd__query_check_pid(gpd_daemon_t *d, const gpd_peer_t *peer, int32_t pid);
/** Node message of node pidx of profile p (no metrics); a FRAME node is
 *  put on the query's list for gpd_query_run to symbolize.  d->lock. */
Gpuprof__Node *gpd__query_node_msg(const gpd_profile_t *p, uint32_t pidx);
/** The Ps / Tree answers (query-tree.c).  d->lock. */
Gpuprof__Msg *gpd__query_ps_answer(gpd_daemon_t *d, const gpd_peer_t *peer, const Gpuprof__PsRequest *r);
Gpuprof__Msg *gpd__query_tree_answer(gpd_daemon_t *d, const gpd_peer_t *peer,
                                     const Gpuprof__TreeRequest *r);
/** The Top answer (query-top.c).  d->lock. */
Gpuprof__Msg *gpd__query_top_answer(gpd_daemon_t *d, const gpd_peer_t *peer, const Gpuprof__TopRequest *r);

/* What a tree reply's nodes carry (gpd__query_tree_reply's `metrics`). */
#define GPD__QTREE_METRICS 1u /* exclusive and inclusive metrics, PC samples */
#define GPD__QTREE_PACKED 2u  /* as Node.excl_ids/excl_values/... (TreeRequest.packed_metrics) */
#define GPD__QTREE_NO_INCL 4u /* no inclusive metrics (TreeRequest.no_incl, max_depth 0) */

/** Tree reply (procs + nodes) of the processes selected by (pid, job)
 *  that peer may see, nodes to max_depth (0 all), metrics as the
 *  GPD__QTREE_* bits say (0: none); in the arena.  NULL on ENOMEM.
 *  d->lock. */
Gpuprof__TreeReply *gpd__query_tree_reply(gpd_daemon_t *d, const gpd_peer_t *peer, int32_t pid,
                                          const char *job, uint32_t max_depth, unsigned metrics);

struct gpd_merge_s;
/** The node view (merge.h) of the processes selected by (pid, job) that
 *  peer may see, oldest first, summed; kept between queries (tree and
 *  top share it).  procs: NULL, or gets their Process messages (arena).
 *  0 or -ENOMEM.  d->lock, main thread. */
int gpd__query_merge(gpd_daemon_t *d, const gpd_peer_t *peer, int32_t pid, const char *job,
                     struct gpd_merge_s **out, Gpuprof__Process ***procs, size_t *nprocs);

/* ---- query-encode.c ---- (any thread, no lock: reads only the reply) */

/** Wire size in bytes of Node o without its own tag and length, exactly
 *  gpuprof__node__get_packed_size(o). */
size_t gpd__query_node_size(const Gpuprof__Node *o);
/** Writes Node o's fields at p (gpd__query_node_size(o) bytes, the bytes
 *  gpuprof__node__pack writes); returns the end. */
uint8_t *gpd__query_node_put(const Gpuprof__Node *o, uint8_t *p);
/** Packed size of Msg m whose body is a TreeReply (m->tree), exactly
 *  gpuprof__msg__get_packed_size(m); fills sizes[i] (one per m->tree->nodes
 *  entry) and *body_len (the TreeReply's size) for the pack.  SIZE_MAX if a
 *  node is over 4 GiB. */
size_t gpd__query_tree_msg_size(const Gpuprof__Msg *m, uint32_t *sizes, size_t *body_len);
/** Writes Msg m (the size taken above) at out: the bytes gpuprof__msg__pack
 *  writes; returns the length. */
size_t gpd__query_tree_msg_pack(const Gpuprof__Msg *m, const uint32_t *sizes, size_t body_len,
                                uint8_t *out);

/* ---- query-gpu.c ---- */
struct gpd_merge_s;
/** GPU PC samples of the kernel nodes of merge view m that reply t holds
 *  (depth <= max_depth, 0 all) into t->gpu_samples: per node the stall
 *  reasons (vendor names) and their samples, each process's samples of a
 *  function shared over its kernel nodes of that name by GKER time.
 *  0 or -ENOMEM.  d->lock. */
int gpd__query_tree_gpu(const struct gpd_merge_s *m, uint32_t max_depth, Gpuprof__TreeReply *t);
/** PC samples of the kernel with mangled name raw in the given (selected,
 *  visible) profiles into e->stalls.  0 or -ENOMEM.  d->lock. */
int gpd__query_top_gpu(const gpd_profile_t *const *profs, size_t nprofs, const char *raw,
                       Gpuprof__TopEntry *e);

/* ---- query-trace.c ---- */
/** The store read of a trace query, done off the loop. */
typedef struct gpd__qtrace_s gpd__qtrace_t;
/** The Trace answer: access check, processes and their contexts from live
 *  memory; *tr gets what gpd__query_trace_run reads later (NULL for an
 *  error reply).  d->lock. */
Gpuprof__Msg *gpd__query_trace_answer(gpd_daemon_t *d, const gpd_peer_t *peer,
                                      const Gpuprof__TraceRequest *r, gpd__qtrace_t **tr);
/** Read the events of the window into the reply (query arena); frees tr's
 *  own memory.  Any thread, no lock. */
void gpd__query_trace_run(gpd__qtrace_t *tr, Gpuprof__Msg *reply);
/** Free tr when the query is dropped before gpd__query_trace_run. */
void gpd__query_trace_free(gpd__qtrace_t *tr);

#endif

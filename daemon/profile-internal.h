/* profile-internal.h - what the profile*.c files share: the array growth
 * macro, the uint32 index (profile-index.c), and the functions one part of
 * the live profile calls in another.  Not for other files: they use
 * profile.h.  Every function here needs what profile.h's do (the daemon
 * lock for a registered profile).
 *
 * The parts, lowest first (each calls only those above it):
 *   profile-index.c    open-addressing index of uint32 values
 *   profile-qlog.c     change logs of the live queries
 *   profile-metrics.c  metric pool: each node's exclusive metrics
 *   profile-nodes.c    nodes, label pool, strings, modules, shim ids
 *   profile-delta.c    the `pending` table's delta for the writer
 *   profile-corr.c     correlation-map bounds (age fifo, eviction)
 *   profile-attrib.c   attribution of an activity under its invocation
 *   profile-pending.c  pending NODE / ACTIVITY lists, retried
 *   profile-ingest.c   record dispatch, the monitor's entry points
 *   profile.c          init, free, size
 * cpusample.c and trace.c sit between the nodes and the ingest layer:
 * they call profile-nodes.c / profile-metrics.c, and profile-ingest.c
 * / profile-attrib.c call them. */
#ifndef GPD_DAEMON_PROFILE_INTERNAL_H
#define GPD_DAEMON_PROFILE_INTERNAL_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "gpuprof/record.h"

#include "profile.h"

/* Make room for one more element of arr (n used, cap allocated, first
 * capacity init, then doubling).  Evaluates to 0 or -ENOMEM (arr and cap
 * unchanged). */
#define GPD_GROW(arr, n, cap, init)                                        \
  ({                                                                       \
    int _e = 0;                                                            \
    if ((n) == (cap)) {                                                    \
      size_t _nc = (cap) ? (size_t)(cap) * 2 : (init);                     \
      void *_na = realloc((arr), _nc * sizeof *(arr));                     \
      if (_na == NULL)                                                     \
        _e = -ENOMEM;                                                      \
      else {                                                               \
        (arr) = _na;                                                       \
        (cap) = (uint32_t)_nc;                                             \
      }                                                                    \
    }                                                                      \
    _e;                                                                    \
  })

/* ------------------------------------------------ profile-index.c
 *
 * by_ctx, by_local, the label pool's dedup index and the attribution cache
 * store 4-byte values (a node, a locals entry, a label offset) whose keys
 * are derived from the value (the node's Merkle id, the shim's local id,
 * the label's hash): a node costs 4 bytes of index at load <= 3/4, against
 * 16 at <= 1/2 for a key -> value map.  Entries are never deleted. */

/** The key of value v in profile p. */
typedef uint64_t (*gpd__profile_index_key_fn)(const gpd_profile_t *p, uint32_t v);

/** Home slot of key in a table of mask + 1 slots. */
static inline uint32_t gpd__profile_index_home(uint64_t key, uint32_t mask) {
  key ^= key >> 31;
  key *= 0x9e3779b97f4a7c15ull;
  return (uint32_t)(key >> 32) & mask;
}

/** The value whose key (kf) is key, or GPD_NONE.  Inlined: kf is then a
 *  constant and its body inlined too (the attribution path). */
static inline __attribute__((always_inline)) uint32_t
gpd__profile_index_get(const gpd_ix_t *ix, const gpd_profile_t *p, uint64_t key, gpd__profile_index_key_fn kf) {
  if (ix->cap == 0)
    return GPD_NONE;
  uint32_t mask = ix->cap - 1;
  for (uint32_t i = gpd__profile_index_home(key, mask);; i = (i + 1) & mask) {
    uint32_t s = ix->slot[i];
    if (s == 0)
      return GPD_NONE;
    if (kf(p, s - 1) == key)
      return s - 1;
  }
}

/** Insert value v under key (not present; kf rehashes on growth).  0 or
 *  -ENOMEM (the index unchanged). */
int gpd__profile_index_put(gpd_ix_t *ix, const gpd_profile_t *p, uint64_t key, uint32_t v,
                           gpd__profile_index_key_fn kf);
/** Free the table and zero ix. */
void gpd__profile_index_free(gpd_ix_t *ix);

/** by_ctx's key: node v's Merkle id. */
static inline uint64_t gpd__profile_key_ctx(const gpd_profile_t *p, uint32_t v) { return p->nodes[v].id; }
/** by_local's key: locals entry v's shim node id. */
static inline uint64_t gpd__profile_key_local(const gpd_profile_t *p, uint32_t v) { return p->locals[v].local; }

/* ------------------------------------------------- profile-qlog.c */

/** Node i's metrics changed: append it to each armed log it is not in yet
 *  (gpd__profile_qlog_note's slow path). */
void gpd__profile_qlog_slow(gpd_profile_t *p, uint32_t i);

/** Node i's metrics change: log it for the armed query change logs. */
static inline void gpd__profile_qlog_note(gpd_profile_t *p, uint32_t i) {
  if (p->qarmed && (i >= p->capqbit || (p->qbit[i] & p->qarmed) != p->qarmed))
    gpd__profile_qlog_slow(p, i);
}

/* ---------------------------------------------- profile-metrics.c */

/** gpd_profile_metrics_add where only the ids in cand can be non-zero.
 *  Returns the ids of v that are non-zero (added, or lost when *err is set
 *  to -ENOMEM; *err is left alone otherwise). */
uint64_t gpd__profile_metrics_add_mask(gpd_profile_t *p, uint32_t i, const double *v, uint64_t cand,
                                       int *err);

/* ------------------------------------------------ profile-nodes.c */

/** Append a node (id not present) below parent: its index, or GPD_NONE
 *  (node bound hit: p->full set; or out of memory). */
uint32_t gpd__profile_nodes_add(gpd_profile_t *p, uint64_t id, uint32_t parent, uint8_t kind);
/** Place a NODE record: 1 placed (or a duplicate, or dropped at the node
 *  bound), 0 not yet (its parent or module is unknown). */
int gpd__profile_nodes_place(gpd_profile_t *p, const gpd_rec_node_t *r);

/** gpd_profile_local, inlined into the attribution path (one call per
 *  activity was a visible share of its CPU time). */
static inline __attribute__((always_inline)) uint32_t gpd__profile_nodes_local(const gpd_profile_t *p,
                                                                              uint32_t local) {
  if (local == 0)
    return 0; /* "none": the root */
  uint32_t k = gpd__profile_index_get(&p->by_local, p, local, gpd__profile_key_local);
  return k == GPD_NONE ? GPD_NONE : p->locals[k].node;
}

/* ------------------------------------------------ profile-delta.c */

/** A `pending` row seq (| GPD_PEND_STORED when it is in the store) is gone
 *  (matched, placed, evicted): a stored one is deleted at the next
 *  snapshot.  Out of memory: every row is rewritten then (pend_full). */
void gpd__profile_delta_gone(gpd_profile_t *p, uint64_t seq);

/* ------------------------------------------------- profile-corr.c */

/** Remove corr (value val) from the correlation map; its row goes if it
 *  was stored. */
void gpd__profile_corr_del(gpd_profile_t *p, uint64_t corr, uint64_t val);
/** An invocation entered the map: remember its age, then evict the oldest
 *  while a bound (max_corr, max_corr_age) is exceeded.  O(1) amortized. */
void gpd__profile_corr_track(gpd_profile_t *p, uint64_t corr);

/** corr left the map: if it is the fifo's newest entry (an activity that
 *  follows its invocation, the common order), drop that entry now, so
 *  gpd__profile_corr_track need not look it up in the map when it reaches
 *  the fifo's head.  An entry from before the last snapshot leaves
 *  corr_old's count with it. */
static inline void gpd__profile_corr_unlast(gpd_profile_t *p, uint64_t corr) {
  if (p->corr_nfifo == 0)
    return;
  uint32_t last = (p->corr_head + p->corr_nfifo - 1) & (p->corr_capfifo - 1);
  if (p->corr_fifo[last].corr != corr)
    return;
  p->corr_nfifo--;
  if (p->corr_old > p->corr_nfifo)
    p->corr_old = p->corr_nfifo;
}

/* ----------------------------------------------- profile-attrib.c */

/** What an attribution attempt did. */
enum {
  GPD__ACT_WAIT = 0,    /* no invocation with its correlation id yet */
  GPD__ACT_DONE = 1,    /* attributed */
  GPD__ACT_BLOCKED = 2, /* invocation known, its node or the kernel's name not yet */
};

/** Once per process, before the first attribution (gpd_profile_init). */
void gpd__profile_attrib_init(void);
/** Attribute a under the invocation packed in v (GPD_CORR_PACK); the
 *  caller removes a single-activity invocation.  force: as
 *  gpd__profile_attrib_try.  GPD__ACT_DONE or GPD__ACT_BLOCKED. */
int gpd__profile_attrib_at(gpd_profile_t *p, const gpd_rec_activity_t *a, uint64_t v, int force);
/** Attribute activity a if its invocation, node and kernel name are known
 *  (a single-activity invocation then leaves the correlation map):
 *  GPD__ACT_*.  force: attribute whatever is missing to <unknown context>
 *  / an unknown kernel name (always GPD__ACT_DONE). */
int gpd__profile_attrib_try(gpd_profile_t *p, const gpd_rec_activity_t *a, int force);

/* ---------------------------------------------- profile-pending.c */

/** A NODE record that could not be placed waits (bounded: else it is
 *  dropped, dropped_nodes and full set). */
void gpd__profile_pending_node(gpd_profile_t *p, const gpd_rec_node_t *r);
/** An ACTIVITY that could not be attributed waits (bounded: else it goes
 *  to <unknown context> at once). */
void gpd__profile_pending_activity(gpd_profile_t *p, const gpd_rec_activity_t *a);
/** An INVOKE arrived (val: its GPD_CORR_PACK, in the correlation map):
 *  match the activities that waited for its corr.  Returns 0 if that
 *  consumed the invocation (removed from the map), 1 if it stays. */
int gpd__profile_pending_match(gpd_profile_t *p, uint64_t corr, uint64_t val);
/** Retry the pending NODEs (to a fixpoint) and, when something new could
 *  complete them, the pending ACTIVITYs; force: as gpd__profile_attrib_try. */
void gpd__profile_pending_retry(gpd_profile_t *p, int force);

#endif

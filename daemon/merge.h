/* merge.h - node-wide merge of process profiles by Merkle context id.
 *
 * A gpd_merge_t is a persistent merged index (every profile ever added:
 * one node per (Merkle id, owner uid), the root shared, each profile's
 * node -> merged node map extended as its tree grows) plus one view: the
 * merge of the profiles added since the last gpd_merge_begin.  A view
 * costs a pass over the selected profiles' node arrays (no hashing, no
 * allocation per node); the index is kept between views.
 *
 * When the same profiles are viewed again and some changed, the sums are
 * updated from the profiles' change logs (GPD_QLOG_TREE, profile.h): only
 * the merged nodes whose profile nodes changed or are new are summed again
 * and the inclusive sums of their ancestors, in the same order of additions
 * as a full sum, so the numbers are bit for bit those of a full re-merge.
 * One gpd_merge_t per profile reads their tree change log (set nolog in
 * any other).
 *
 * Lock: gpd_merge_add and gpd_merge_finish read profiles (and take their
 * change logs), and the view borrows their labels: hold
 * gpd_daemon_t.lock from begin to the last use of the view.  One thread
 * at a time per gpd_merge_t. */
#ifndef GPD_DAEMON_MERGE_H
#define GPD_DAEMON_MERGE_H

#include <stdint.h>
#include <sys/types.h>

#include "gpuprof/cct.h"
#include "gpuprof/metric.h"

#include "map.h"
#include "profile.h"

/** A node of the merged index. */
typedef struct gpd_mnode_s {
  uint64_t id;     /* Merkle id */
  uint32_t parent; /* merged index, GPD_NONE for the root */
  uint32_t depth;  /* root 0 */
  uid_t uid;       /* owner: only profiles of this uid merge here */
  uint8_t kind;
  uint8_t shared;  /* another owner has a node with the same Merkle id */
  uint32_t kid;    /* first child (the highest index), GPD_NONE */
  uint32_t sib;    /* next sibling (a lower index), GPD_NONE */
} gpd_mnode_t;

/** Per merged node, the current view's part. */
typedef struct gpd_mview_s {
  uint64_t gen;               /* == gpd_merge_t.gen: in the view */
  uint64_t out;               /* id in the reply (Merkle id, or gpd_merge_key) */
  const gpd_profile_t *prof;  /* first selected profile holding it (labels) */
  uint32_t pidx;              /* its node index there */
  uint32_t dstamp, astamp;    /* == gpd_merge_t.dgen: on the dirty / ancestor list */
} gpd_mview_t;

typedef struct gpd_mprof_s gpd_mprof_t;

typedef struct gpd_merge_s {
  gpd_mnode_t *nodes; /* parents precede children */
  gpd_mview_t *view;  /* capacity cap, like nodes */
  uint32_t n, cap;
  gpd_map_t by_key;   /* Merkle id (first owner) or gpd_merge_key(id, uid) -> index */
  gpd_mprof_t *profs;
  uint32_t nprofs, capprofs;
  gpd_map_t prof_by_ptr; /* (uintptr_t)profile -> index + 1 */
  int reset;          /* too many nodes of gone profiles: rebuild at begin */
  int reshare;        /* a node became shared by owners in this view's adds */
  /* the view */
  uint64_t gen;
  const gpd_profile_t **vprofs; /* selected, in add order */
  uint32_t nvprofs, capvprofs;
  uint32_t nview;     /* merged nodes in the view */
  gpd_map_t owner;    /* shared Merkle id -> uid that owns its plain id (view) */
  uint64_t umask;     /* metric ids present in the view */
  uint8_t slot[64];   /* metric id -> column of excl/incl */
  uint32_t nslot;
  double *excl, *incl; /* [index * nslot + slot], valid after finish */
  size_t capsums;
  /* the last computed view, reused while its profiles are unchanged */
  uint64_t prev_gen;
  struct gpd_msig_s *sig; /* per view profile: identity and tree_gen */
  uint32_t nsig, capsig;
  int sig_ok;           /* sig describes the view of gen sig_gen, sums valid */
  uint64_t sig_gen;
  uint32_t sig_nview;
  /* incremental sums (gpd_merge_finish): merged nodes whose exclusive sums
   * are taken again (dirty) and their ancestors (anc), stamped with dgen */
  uint32_t dgen;
  uint32_t *dirty, ndirty, capdirty;
  uint32_t *anc, nanc, capanc;
  const uint32_t **vat; /* per view profile: its node -> merged node map */
  uint32_t capvat;
  int nolog;            /* never read the profiles' change logs: full sums
                           every time (a second merge of the same profiles,
                           tests' reference) */
  uint64_t nfull, ninc; /* views summed in full / incrementally */
  /* for readers of the sums (query-top.c): epoch changes when merged
   * indices are renumbered (the index rebuilt); sums_gen counts the
   * views whose sums were taken (not the reused ones); when last_inc, the
   * last one changed only dirty[0, ndirty) and their ancestors */
  uint64_t epoch, sums_gen;
  int last_inc;
} gpd_merge_t;

/** Merged-view key of Merkle id `id` for a node of user `uid` when another
 *  user owns the node with that id (never 0). */
uint64_t gpd_merge_key(uint64_t id, uid_t uid);
/** Start a new view (gpd_merge_t zeroed before first use).  A view whose
 *  profiles (same ones, same order) did not change since the last one
 *  (gpd_profile_t.tree_gen) is not computed again: finish reuses it. */
void gpd_merge_begin(gpd_merge_t *m);
/** Profile p is still registered (not selected): its index is kept.  Call
 *  for every registered profile that is not added, before finish. */
void gpd_merge_live(gpd_merge_t *m, const gpd_profile_t *p);
/** Add profile p to the view (its exclusive metrics are summed by Merkle id; a
 *  node of another uid than its owner's is merged into its own node,
 *  gpd_merge_key).  Profiles are added oldest first: labels come from the
 *  first one holding a node.  0 or -ENOMEM. */
int gpd_merge_add(gpd_merge_t *m, const gpd_profile_t *p);
/** Sum exclusive and inclusive metrics of the view (after all adds);
 *  forgets profiles neither added nor live.  0 or -ENOMEM. */
int gpd_merge_finish(gpd_merge_t *m);
void gpd_merge_free(gpd_merge_t *m);
/** Merged index of the node with reply id `id` in the view, or GPD_NONE. */
uint32_t gpd_merge_find(const gpd_merge_t *m, uint64_t id);
/** Merged index of node i of profile p (added to this view), or GPD_NONE. */
uint32_t gpd_merge_index(const gpd_merge_t *m, const gpd_profile_t *p, uint32_t i);
/** Is merged node j in the view? */
static inline int gpd_merge_in_view(const gpd_merge_t *m, uint32_t j) {
  return m->view[j].gen == m->gen;
}
/** Exclusive (incl = 0) or inclusive metrics of view node j into
 *  out[GPD_M__COUNT], non-zero only; returns how many. */
unsigned gpd_merge_metrics(const gpd_merge_t *m, uint32_t j, int incl, gpd_mval_t *out);
/** One metric of view node j (exclusive or inclusive). */
double gpd_merge_value(const gpd_merge_t *m, uint32_t j, int incl, unsigned id);

#endif

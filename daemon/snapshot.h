/* snapshot.h - one process's snapshot for the store's writer
 * (checkpoint.c): what changed in its profile since the last commit,
 * copied under gpd_daemon_t.lock at one instant, the bulk of it in chunks
 * while the process is frozen (gpd_proc_t.snap_frozen).
 *
 * Lock: every function that takes a gpd_proc_t runs with d->lock held;
 * gpd_snapshot_alloc and gpd_snapshot_free touch only the snapshot (no
 * lock). */
#ifndef GPD_DAEMON_SNAPSHOT_H
#define GPD_DAEMON_SNAPSHOT_H

#include <stdint.h>

#include "daemon.h"
#include "cpusample.h"
#include "pcsample.h"
#include "symbols.h"

typedef struct gpd_snapshot_ctx_s {
  uint64_t id, parent;
  int kind;
  char *module, *build_id, *label, *raw;
  uint64_t offset;
  const gpd_sframe_t *fr; /* FRAME: source frames (symbols.c cache), before BEGIN */
  unsigned nfr;
} gpd_snapshot_ctx_t;

typedef struct gpd_snapshot_local_s {
  uint32_t local;
  uint64_t ctx;
} gpd_snapshot_local_t;

typedef struct gpd_snapshot_met_s {
  uint64_t ctx;
  uint32_t off, n; /* its values: gpd_snapshot_t.mval[off, off + n) */
} gpd_snapshot_met_t;

/** One process's snapshot: the copied rows (owned, freed by
 *  gpd_snapshot_free) and where the chunked copy stands. */
typedef struct gpd_snapshot_s {
  gpd_proc_t *proc; /* identity only: compared, never dereferenced unlocked */
  uint64_t id;
  int64_t pid, ppid, uid, gid, rank, local_rank;
  char *exe, *argv, *hostname, *job, *step, *error;
  uint64_t start_ns, end_ns, records, drops, proc_start;
  const char *state;
  int exited;
  uint32_t ends; /* p->ends at the snapshot */
  struct { const char *api; int enabled, code; char *reason; } be[GPD_API_MAX];
  int nbe;
  gpd_pmodule_t *mods;
  uint32_t nmods;
  gpd_pstring_t *strs;
  uint32_t nstrs;
  gpd_snapshot_ctx_t *ctxs;
  uint32_t nctxs;
  /* what the chunked copy (gpd_snapshot_chunk) still reads from the live
   * profile, which its monitor leaves alone until then (snap_frozen):
   * modules, strings, nodes and locals past the watermarks at the
   * snapshot (the watermarks moved already), and the dirty nodes'
   * metrics (entries met_next .. met_to of the dirty list, or of every
   * node when met_all) */
  uint32_t mod_from, mod_to, str_from, str_to, node_from, node_to, node_next, loc_from, loc_to;
  uint32_t met_next, met_to, ndirty;
  int met_all;
  int frozen; /* its process is frozen until gpd_snapshot_chunk completes it */
  int taken;  /* gpd_snapshot_take ran */
  gpd_snapshot_local_t *locals;
  uint32_t nlocals;
  gpd_snapshot_met_t *mets;
  uint32_t nmets;
  gpd_mval_t *mval; /* every copied metric value, in mets order */
  size_t nmval, capmval;
  int incomplete;        /* an allocation failed: write nothing, redo all */
  uint64_t *cursor;      /* all rings' monitor cursors (ncursor), or NULL */
  uint64_t *cursor_prev; /* the committed ones at snapshot time */
  uint32_t ncursor;
  int pend_write;        /* write the pending delta */
  int pend_full;         /* delete every pending row first */
  gpd_prec_t *pend;      /* rows to insert or replace */
  uint32_t npend;
  gpd_pdelta_t pdl;      /* their copy in progress (pdl_on) */
  int pdl_on;
  gpd_pcs_snap_t pcs; /* GPU PC sample deltas (pcsample.c) */
  gpd_cps_snap_t cps; /* CPU sample trace rows and totals (cpusample.c) */
  gpd_tw_snap_t tw;   /* tracing windows (tracewin.c) */
  uint64_t *pdel;        /* row ids to delete */
  uint32_t npdel;
  gpd_jcut_t jcut;       /* journal segments this snapshot covers */
  int jdone;             /* committed: delete them */
} gpd_snapshot_t;

/** Copy what changed in p at one instant: the profile row, cursors,
 *  journal cut (gpd_journal_cut), pending delta, samples and windows.  Of
 *  the modules, strings, contexts, locals and dirty metrics only the
 *  ranges are taken (the watermarks move); while any is left to copy,
 *  p->snap_frozen and s->frozen are set.  Allocation failures set
 *  s->incomplete (nothing of s is written then). */
void gpd_snapshot_take(gpd_daemon_t *d, gpd_proc_t *p, gpd_snapshot_t *s);
/** The arrays gpd_snapshot_chunk fills, sized from the ranges (no lock:
 *  the process is frozen, the sizes fixed). */
void gpd_snapshot_alloc(gpd_snapshot_t *s);
/** Copy at most `budget` of the items s still needs from p (its process);
 *  unfreezes p when nothing is left (or s->incomplete).  Returns the
 *  items visited. */
uint32_t gpd_snapshot_chunk(gpd_proc_t *p, gpd_snapshot_t *s, uint32_t budget);
/** Free what s owns (not s). */
void gpd_snapshot_free(gpd_snapshot_t *s);
/** After a failed or skipped write: everything of p is written next
 *  time (watermarks reset, every node dirty, pending rows in full). */
void gpd_snapshot_redo(gpd_proc_t *p);

#endif

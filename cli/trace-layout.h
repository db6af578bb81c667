/* trace-layout.h - where and in which order the events of a trace
 * (trace.h) are drawn, shared by the trace writers (trace-write*.c; the
 * bench's baseline writer): the launch of each GPU operation (by
 * correlation id), the lane of each operation on its stream, the tracks,
 * and the items (slice begins and ends, launches, CPU samples, idle
 * intervals) merged into time order without a whole-trace item array.
 * CLI thread only.
 */
#ifndef GPD_CLI_TRACE_LAYOUT_H
#define GPD_CLI_TRACE_LAYOUT_H

#include "trace.h"
#include "xcorrix.h"

/** 1 for operations timed on the host (sync, alloc, free): drawn on the
 *  CPU thread that ran them when their launch is known. */
int gpd__xtrace_host_op(unsigned op);

/** A track: a CPU thread (key = tid, lane 0) or a GPU stream lane (key =
 *  device << 32 | stream). */
typedef struct gpd_xtrk_s {
  uint64_t profile, key;
  unsigned lane;
} gpd_xtrk_t;

/** One item to draw: kind GPD_XIT_*, time ts (ns), index i into x->ev,
 *  x->la, x->cs or the gaps. */
enum { GPD_XIT_EV_B, GPD_XIT_EV_E, GPD_XIT_LAUNCH, GPD_XIT_SAMPLE, GPD_XIT_GAP_B, GPD_XIT_GAP_E };
typedef struct gpd_xitem_s {
  uint64_t ts;
  uint8_t kind;
  size_t i;
} gpd_xitem_t;

/** The layout of a trace. */
typedef struct gpd_xlayout_s {
  const gpd_xtrace_t *x;
  gpd_xcorrix_t ix;
  uint8_t *lane;      /* per event: its lane on its stream (< 16) */
  gpd_xgap_t *gaps;   /* idle intervals (idle.c), by start */
  size_t ngaps;
  gpd_xtrk_t *th, *st; /* threads, stream lanes */
  size_t nth, nst;
  /* the merge: next row of each sorted array, and a min-heap of the ends
   * of open slices (bounded by the slices open at one time) */
  size_t iev, ila, ics, igap;
  gpd_xitem_t *heap;
  size_t nheap, capheap;
} gpd_xlayout_t;

/** Lay x out (its idleness blame included).  0 or -ENOMEM;
 *  gpd__xlayout_free in both cases. */
int gpd__xlayout_init(gpd_xlayout_t *l, const gpd_xtrace_t *x);
void gpd__xlayout_free(gpd_xlayout_t *l);
/** The next item in time order (ends before begins at equal times).
 *  1 and *it set, 0 at the end, -ENOMEM. */
int gpd__xlayout_next(gpd_xlayout_t *l, gpd_xitem_t *it);
/** Index in l->st of the stream lane event i is drawn on (i not drawn on
 *  a thread: gpd__xlayout_on_thread 0).  *hint: the index found last
 *  (start with 0), tried first since consecutive events mostly share a
 *  lane; else a scan of l->st. */
size_t gpd__xlayout_stream(const gpd_xlayout_t *l, size_t i, size_t *hint);
/** 1 when profile has an idle interval. */
int gpd__xlayout_has_gap(const gpd_xlayout_t *l, uint64_t profile);
/** Launch index of event i (-1 when not known). */
long gpd__xlayout_launch(const gpd_xlayout_t *l, size_t i);
/** 1 when event i is drawn on its launching thread (a host-timed
 *  operation whose launch is known), 0 on its stream lane. */
int gpd__xlayout_on_thread(const gpd_xlayout_t *l, size_t i);
/** pid of profile in x (the profile id when unknown). */
int gpd__xtrace_pid(const gpd_xtrace_t *x, uint64_t profile);

#endif

/* xlayout.h - where and in which order the events of a trace
 * (trace.h) are drawn, shared by the trace writers (xwrite*.c): the
 * launch of each GPU operation (by correlation id), the lane of each
 * operation on its stream, the tracks, and the items (slice begins and
 * ends, launches, CPU samples, idle intervals) merged into time order
 * without a whole-trace item array, over a trace in memory or one walked
 * page by page (a live window: memory bounded by a page, docs/TRACE.md
 * "Streaming write").  CLI thread only.
 */
#ifndef GPD_CLI_XLAYOUT_H
#define GPD_CLI_XLAYOUT_H

#include "trace.h"

/** 1 for operations timed on the host (sync, alloc, free): drawn on the
 *  CPU thread that ran them when their launch is known. */
int gpd__xlayout_host_op(unsigned op);

/** A track: a CPU thread (key = tid, lane 0) or a GPU stream lane (key =
 *  device << 32 | stream). */
typedef struct gpd_xtrk_s {
  uint64_t profile, key;
  unsigned lane;
} gpd_xtrk_t;

/** One item to draw: kind GPD_XIT_*, time ts (ns).  Begins (EV_B,
 *  LAUNCH, SAMPLE, GAP_B) refer by i to the current page's rows
 *  (l->pg.ev, l->pg.la, l->pg.cs, l->gaps), valid until the next page;
 *  ends carry what drawing them needs.  ord: the row's ordinal in the
 *  whole trace (events, gaps), which orders ends of equal times. */
enum { GPD_XIT_EV_B, GPD_XIT_EV_E, GPD_XIT_LAUNCH, GPD_XIT_SAMPLE, GPD_XIT_GAP_B, GPD_XIT_GAP_E };
typedef struct gpd_xitem_s {
  uint64_t ts;
  uint8_t kind;
  uint8_t thread;   /* EV_B/EV_E: drawn on its launching thread (l->th[trk]), else l->st[trk] */
  size_t i;         /* begins: index into the page's rows or l->gaps */
  uint64_t ord;
  size_t trk;       /* EV_B/EV_E: track index */
  uint64_t profile; /* EV_B/EV_E, GAP_B/GAP_E */
  long la;          /* EV_B: its launch's index in the trace (-1 none); LAUNCH: its index */
  uint64_t lnode;   /* EV_B: its launch's call-site context id (0: no launch or none known) */
} gpd_xitem_t;

/** A launch as the layout keeps it across pages (the correlation map). */
typedef struct gpd_xlref_s {
  gpd_xlaunch_t la;
  long idx;      /* index among the trace's launches; -1: outside the window */
  uint32_t seen; /* the page (1..) of its last activity; 0: none yet */
  uint8_t used;  /* a slot of the map in use */
} gpd_xlref_t;

/** Pages of a trace in time order: each page holds the rows (events by
 *  start, launches and CPU samples by ts) of one time slice, sorted, and
 *  every later page's rows start after *hi.  next: the next page in
 *  *page (owned by the source, valid until the next call; the layout may
 *  filter it in place), 1, 0 at the end, or -errno; rewind: back to the
 *  first page, 0 or -errno (-EAGAIN: the rows changed since the pass
 *  before, a new pass is needed). */
typedef struct gpd_xpages_s gpd_xpages_t;
struct gpd_xpages_s {
  int (*next)(gpd_xpages_t *p, gpd_xtrace_t **page, uint64_t *hi);
  int (*rewind)(gpd_xpages_t *p);
};

/** The layout of a trace walked page by page (docs/TRACE.md "Streaming
 *  write"): a scan over every page first (gpd__xlayout_scan: the tracks,
 *  the window's launches without activity, the first time), then a walk
 *  that draws each page's items merged into time order
 *  (gpd__xlayout_walk).  Kept across pages: the tracks, each stream's
 *  lane ends, the slices still open and the launches whose activities may
 *  still come (a launch is dropped two pages after its last activity); a
 *  page's rows and layout only while it is drawn.  The idle intervals
 *  and their blame (idle.c) are those of the whole trace: with one page,
 *  computed over it and drawn in time order; with more, found as the
 *  pages come (xidle.c) and drawn once their blame is known, after
 *  the page that completes them (in time order on their own track). */
typedef struct gpd_xidle_s gpd_xidle_t;

/** An idle interval of a walk of more than one page (xidle.c),
 *  from when its start is known until it is drawn. */
typedef struct gpd_xgapq_s {
  gpd_xgap_t g;
  uint64_t id, ord;       /* its id; its place among the intervals drawn */
  uint8_t known, blamed;  /* its end found; its blame known (g.node, g.cpu) */
  uint8_t begun, endq, ended; /* begin reached; end in the heap; end reached */
} gpd_xgapq_t;

/** A place in the output kept for the begin or end of an interval whose
 *  blame is not known yet: what is drawn after it goes to seg (a
 *  temporary file) until the blame is known. */
typedef struct gpd_xmark_s {
  uint64_t id;
  uint8_t end;
  FILE *seg;
} gpd_xmark_t;

typedef struct gpd_xlayout_s {
  const gpd_xtrace_t *x; /* the trace's tree and process table */
  uint64_t from, to;     /* window of the launches kept (to 0: all rows kept) */
  /* tracks (found by the scan) */
  gpd_xtrk_t *th, *st;   /* threads, stream lanes */
  size_t nth, nst, cth, cst;
  gpd_xtrk_t *ths;       /* scan: threads of CPU samples only */
  size_t nths, cths;
  uint64_t *gapped;      /* profiles with an idle interval */
  size_t ngapped, cgapped;
  int writing, grew;     /* walk (tracks must be known), a track appeared in it */
  /* what the scan found */
  uint64_t t0;           /* earliest time of a kept row (0: none) */
  size_t nev, nla, ncs;  /* kept rows */
  long missing;          /* launches in the window with no activity */
  size_t npages;         /* pages the scan walked */
  gpd_xlaunch_t *thf, *thl; /* per launching thread (l->th): its first and last launch */
  size_t nthf, cthf, cthl;
  gpd_xidle_t *idle;     /* idleness blame across pages (xidle.c) */
  size_t max_rows, max_pending; /* most rows of one page, most launches + open slices kept */
  size_t max_idle;       /* most rows kept for idle intervals' blame */
  gpd_xgapq_t *gq;       /* intervals found, not drawn yet (more than one page) */
  size_t ngq, cgq, gqb;  /* gqb: intervals begun (a prefix of gq) */
  uint64_t gqid;
  gpd_xmark_t *mk;       /* places kept in the output, in output order */
  size_t nmk, cmk;
  FILE **fp, *real;      /* the writer's stream, and the file */
  int (*draw)(void *arg, struct gpd_xlayout_s *l, const struct gpd_xitem_s *it); /* the walk's */
  void *arg;
  gpd_xgap_t gapnow;     /* the interval drawn by an item of i SIZE_MAX */
  /* carried across pages */
  gpd_xlref_t *map;      /* open addressing by (profile, corr) */
  size_t mapn, mapcap;
  gpd_xtrk_t *ss;        /* distinct streams, with per stream lane ends */
  uint64_t (*end)[16];
  size_t (*sti)[16];     /* per stream, per lane: its index in st */
  unsigned *nl;
  size_t ns, css, cend, csti, cnl, lss;
  long nkept, la0;       /* launches kept so far / before the page */
  uint64_t evord, gapord;
  uint32_t page;
  gpd_xitem_t *heap;     /* ends of open slices */
  size_t nheap, capheap;
  /* the page being drawn */
  gpd_xtrace_t pg;       /* its kept rows (arrays of the source's page; tree: x's, not owned) */
  uint64_t hi;
  uint8_t *lane;         /* per event of the page: lane on its stream */
  size_t *trk;           /* per event: track index */
  const gpd_xlref_t **ref; /* per event: its launch (NULL: none known) */
  size_t cap, lth;
  gpd_xgap_t *gaps;      /* idle intervals of the page, by start */
  size_t ngaps;
  size_t iev, ila, ics, igap;
} gpd_xlayout_t;

/** Set up l for the trace whose tree and processes are x's (x outlives
 *  l); with to != 0, only the window [from, to] (ns) is kept: its
 *  launches, the activities of those launches, and activities of no known
 *  launch that start in it.  No allocation. */
void gpd__xlayout_open(gpd_xlayout_t *l, const gpd_xtrace_t *x, uint64_t from, uint64_t to);
void gpd__xlayout_free(gpd_xlayout_t *l);
/** Pass 1 over every page of src: tracks, first time, kept counts,
 *  launches without activity.  0 or -errno. */
int gpd__xlayout_scan(gpd_xlayout_t *l, gpd_xpages_t *src);
/** Pass 2 (after gpd__xlayout_scan): each item of each page of src in
 *  time order (ends before begins at equal times) to draw(arg, l, it),
 *  which returns 0 or -errno (the walk stops) and writes to *fp.  With
 *  more than one page, an idle interval reached before its blame is known
 *  keeps its place: *fp is a temporary file meanwhile, whose bytes follow
 *  the interval's once drawn (the file is in time order as when written
 *  whole).  -EAGAIN when a page
 *  holds a track the scan did not find (the rows changed between the
 *  passes: scan again).  0 or -errno. */
int gpd__xlayout_walk(gpd_xlayout_t *l, gpd_xpages_t *src,
                      int (*draw)(void *arg, gpd_xlayout_t *l, const gpd_xitem_t *it), void *arg, FILE **fp);
/** The interval of a GAP_B / GAP_E item. */
const gpd_xgap_t *gpd__xlayout_gap(const gpd_xlayout_t *l, const gpd_xitem_t *it);
/** A source of one page: the whole trace x (already sorted). */
typedef struct gpd_xpages_one_s {
  gpd_xpages_t src;
  gpd_xtrace_t *x;
  int done;
} gpd_xpages_one_t;
void gpd__xlayout_pages_one(gpd_xpages_one_t *p, gpd_xtrace_t *x);
/** xidle.c: the scan's part of page l->pg (each process's busy
 *  union: which have idle intervals, l->gapped; each thread's first and
 *  last launch).  0 or -errno. */
int gpd__xidle_scan(gpd_xlayout_t *l);
/** The walk's part of page l->pg before its items are drawn: its rows
 *  kept for the blame, the intervals it ends (l->gq: found, or the end
 *  of one begun), the intervals begun in it that end after it (l->gq,
 *  end not known).  0 or -errno. */
int gpd__xidle_begin(gpd_xlayout_t *l);
/** After the page's items (last: after the last page): the blame of
 *  the intervals of l->gq now complete, in the order found, and the rows
 *  no interval can read any more dropped.  0 or -errno. */
int gpd__xidle_end(gpd_xlayout_t *l, int last);
/** The blame of interval q (its end known) now, from the rows at hand
 *  (a launch after it that has not come yet is not read).  0 or -errno. */
int gpd__xidle_force(gpd_xlayout_t *l, gpd_xgapq_t *q);
/** Back to before the first page; gpd__xidle_free frees all. */
void gpd__xidle_rewind(gpd_xlayout_t *l);
void gpd__xidle_free(gpd_xlayout_t *l);
/** l opened on the whole trace x (no window) as one page, and scanned:
 *  for the writers of a trace in memory.  0 or -errno; gpd__xlayout_free
 *  in both cases. */
int gpd__xlayout_whole(gpd_xlayout_t *l, gpd_xpages_one_t *one, const gpd_xtrace_t *x);
/** 1 when profile has an idle interval (found by the scan). */
int gpd__xlayout_has_gap(const gpd_xlayout_t *l, uint64_t profile);
/** pid of profile in x (the profile id when unknown). */
int gpd__xlayout_pid(const gpd_xtrace_t *x, uint64_t profile);

#endif

/* xwrite.h - what the trace writers share (xwrite.c): the
 * names of events, functions and call paths, interned once per trace
 * with ids 1, 2, ..., each node's CPU call site, and a bit set of ids
 * already written.  The writers: Perfetto protobuf
 * (xwrite-perfetto.c) and Chrome JSON (xwrite-chrome.c).  CLI
 * thread only.
 */
#ifndef GPD_CLI_XWRITE_H
#define GPD_CLI_XWRITE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "trace.h"
#include "xlayout.h"

/** Innermost frames kept in one call stack (deeper paths lose their
 *  outermost frames). */
#define GPD_XWRITE_MAXF 512

/** The last component of path s ("" for NULL). */
const char *gpd__xwrite_base(const char *s);

/** A bit set, grown on demand.  Zero-initialized = empty; free(w). */
typedef struct gpd_xwrite_bits_s {
  uint64_t *w;
  size_t nw;
} gpd_xwrite_bits_t;

/** 1 when bit i was set already; else sets it and returns 0 (-ENOMEM). */
int gpd__xwrite_bits_testset(gpd_xwrite_bits_t *b, size_t i);

/** Distinct strings, each with an id 1, 2, ... in the order first seen.
 *  Strings are copied into blocks that are never moved or freed before
 *  the table is, so a pointer returned for an id stays valid while later
 *  strings are added (the Perfetto writer holds several in one packet). */
typedef struct gpd_xwrite_strtab_s {
  char **blk;           /* blocks of string bytes */
  size_t nblk, capblk;
  size_t used, blkcap;  /* bytes used of / size of blk[nblk - 1] */
  char **str;           /* by id - 1: the string, inside a block */
  size_t n, capstr;
  uint32_t *slot; /* open addressing: id */
  size_t nslot;   /* power of two */
} gpd_xwrite_strtab_t;

/** What both writers know of the tree: per node, its CPU call site (the
 *  node itself, or the nearest ancestor that is not a placeholder or a
 *  kernel) and the id of its rendered name. */
typedef struct gpd_xwrite_s {
  const gpd_xtrace_t *x;
  gpd_xwrite_strtab_t names; /* event names, then function names: one table */
  long *cpu;       /* per node: its CPU call site's index + 1, 0 none; -1 unknown */
  uint32_t *fn;    /* per node: name id (0: not yet) */
  uint32_t *ename; /* per kernel node: event name id; per CPU node: "cpu sample: " name id */
  int err;         /* -ENOMEM once an intern failed (its id was 0) */
} gpd_xwrite_t;

/** Set up c for trace x.  0 or -ENOMEM; gpd__xwrite_free in both cases. */
int gpd__xwrite_init(gpd_xwrite_t *c, const gpd_xtrace_t *x);
void gpd__xwrite_free(gpd_xwrite_t *c);
/** Id of string s (added when new); 0 and c->err set when out of memory. */
uint64_t gpd__xwrite_intern(gpd_xwrite_t *c, const char *s);
/** The string of id (1..). */
const char *gpd__xwrite_str(const gpd_xwrite_t *c, uint64_t id);
/** Index + 1 of context id node's CPU call site (0: none known). */
size_t gpd__xwrite_cpu(gpd_xwrite_t *c, uint64_t node);
/** Name id of node index j (gpd_render_node_name). */
uint64_t gpd__xwrite_fn(gpd_xwrite_t *c, size_t j);
/** The CPU frames of call site cs (index + 1) outermost first, into
 *  f[GPD_XWRITE_MAXF] (node indices); their count. */
size_t gpd__xwrite_frames(const gpd_xwrite_t *c, size_t cs, size_t *f);
/** Event name id of GPU operation e (gpd_xtrace_ev_name). */
uint64_t gpd__xwrite_ev_name(gpd_xwrite_t *c, const gpd_xev_t *e);
/** Short name id of kernel node index k (gpd_render_short_name). */
uint64_t gpd__xwrite_short_name(gpd_xwrite_t *c, size_t k);
/** Event name id of a CPU sample at call site cs (index + 1):
 *  "cpu sample: NAME", "cpu sample: ?" when cs is 0. */
uint64_t gpd__xwrite_sample_name(gpd_xwrite_t *c, size_t cs);

/** Perfetto protobuf / Chrome JSON (launches: with each launch as a
 *  slice and a flow to its GPU slices) of the pages of src laid out by l
 *  (gpd__xlayout_scan done), written as they are walked: memory grows
 *  with one page, the distinct names and call paths and the tracks, not
 *  with the trace.  0 or -errno / -ENOMEM; -EAGAIN when the rows changed
 *  since the scan (scan again, write again). */
int gpd__xwrite_perfetto_pages(FILE *f, gpd_xlayout_t *l, gpd_xpages_t *src);
int gpd__xwrite_chrome_pages(FILE *f, gpd_xlayout_t *l, gpd_xpages_t *src, int launches);

/** A stream that writes what it is given gzip-compressed (zlib, level 1,
 *  gzip header) to dst, for a trace OUT.gz that viewers decompress as
 *  they load it (Perfetto UI, chrome://tracing, speedscope).  fclose it
 *  to finish the gzip stream (it returns EOF when a write to dst failed;
 *  dst stays open).  NULL on ENOMEM. */
FILE *gpd__xwrite_gzip(FILE *dst);

#endif

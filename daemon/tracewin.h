/* tracewin.h - the tracing windows of one process (TRACEWIN records of a
 * back end that traces in windows: CUDA detached or duty-cycled,
 * shim/cupti/cupti-api.c): the cumulative summary (store table
 * trace_duty) and the windows themselves (trace_window) that `gpuprof
 * report`'s duty-cycle estimate reads (docs/CUDA.md, cli/report-duty.c).
 * Lock: the daemon lock, like profile.h.
 */
#ifndef GPD_DAEMON_TRACEWIN_H
#define GPD_DAEMON_TRACEWIN_H

#include <stdint.h>

#include "store-rows.h"

#include "gpuprof/record.h"

/** Most windows kept per process (16 bytes each: 512 KiB); past it only
 *  the summary moves on (the report then falls back to the estimator
 *  that needs no windows). */
#define GPD_TRACEWIN_MAX 32768u

/* Tables: GPD_TRACEWIN_SCHEMA (store/store-schema.h; also written by
 * `gpuprof merge`). */

/* A window (gpd_tw_win_t) and the snapshot (gpd_tw_snap_t): store-rows.h. */

/** Windows of one process (embedded in gpd_profile_t; zeroed = none). */
typedef struct gpd_tracewin_s {
  int seen;                 /* a TRACEWIN came: write the summary */
  uint8_t api, duty, final; /* final: the back end said the run ended */
  uint64_t t0, end;         /* back end's start; latest end seen (ns) */
  uint64_t windows, window_ns; /* cumulative, from the latest record */
  uint64_t launches, launches_in; /* counted kernel launches: all, inside windows (latest) */
  gpd_tw_win_t *win;        /* windows in arrival order (bounded) */
  uint32_t nwin, capwin;
  uint32_t nwin_saved;      /* writer watermark: [0, nwin_saved) are stored */
  uint64_t dropped;         /* windows past GPD_TRACEWIN_MAX (or out of memory) */
} gpd_tracewin_t;

/** Take a validated TRACEWIN record (gpd_rec_validate): the summary from
 *  the record with the most windows (then the most window time), the
 *  launch counts from the record with the most launches (the latest), the
 *  window appended (a window with
 *  the start of the last one kept replaces it: the same window reported
 *  twice at exit).  Never fails: past the bound a window is counted. */
void gpd_tracewin_ingest(gpd_tracewin_t *tw, const gpd_rec_tracewin_t *r);
/** Copy the summary and the windows not yet stored into *out and move the
 *  watermark.  0 or -ENOMEM (then nothing moved). */
int gpd_tracewin_snap(gpd_tracewin_t *tw, gpd_tw_snap_t *out);
void gpd_tracewin_snap_free(gpd_tw_snap_t *s);
/** Bytes held (for the profile's memory account). */
size_t gpd_tracewin_bytes(const gpd_tracewin_t *tw);
void gpd_tracewin_free(gpd_tracewin_t *tw);

#endif

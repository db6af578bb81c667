/* tracewin.c - the tracing windows of one process (tracewin.h).
 *
 * A back end that traces only in windows (CUDA detached: on-demand
 * windows; duty:W/P: a window of W ms every P s, docs/CUDA.md) pushes a
 * TRACEWIN record when it closes a window, and a final one at exit.  The
 * records are cumulative (count and total length of the windows so far,
 * the schedule's origin t0), so the summary is the latest record's and a
 * lost or reordered record (the records come from two threads' rings: the
 * controller thread and the exiting one) costs nothing but its window's
 * row.  The window fraction f = window_ns / (end - t0), or with launch
 * counts f = launches_in / launches (table trace_duty_launch), is
 * computed by the reader (cli/report-duty.c), from the stored summary.
 *
 * Windows are kept in memory up to GPD_TRACEWIN_MAX per process and
 * written by the writer's transaction (checkpoint.c) past a watermark;
 * rows are keyed (profile_id, start_ns) and inserted OR IGNORE, so a
 * rewrite after a failed transaction (the watermark reset) and a
 * restarted daemon's rows merge with what is stored.  The summary row is
 * replaced each flush (INSERT OR REPLACE): it is cumulative.  A hostile
 * process can only fake its own estimate; memory is bounded per process.
 */
#include "tracewin.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>


void gpd_tracewin_ingest(gpd_tracewin_t *tw, const gpd_rec_tracewin_t *r) {
  int final = (r->h.flags & GPD_TRACEWIN_F_FINAL) != 0;
  /* the furthest record: most windows, then most window time (the same
   * last window is reported by the exiting thread and the controller) */
  if (!tw->seen || r->windows > tw->windows || (r->windows == tw->windows && r->window_ns >= tw->window_ns)) {
    tw->api = r->api;
    tw->duty = r->duty;
    tw->t0 = r->t0;
    tw->windows = r->windows;
    tw->window_ns = r->window_ns;
  }
  if (r->launches >= tw->launches) { /* counted up to the latest record's end */
    tw->launches = r->launches;
    tw->launches_in = r->launches_in;
  }
  tw->seen = 1;
  if (r->end > tw->end)
    tw->end = r->end;
  if (final) {
    tw->final = 1;
    return;
  }
  if (tw->nwin > tw->nwin_saved && tw->win[tw->nwin - 1].start == r->start) {
    if (r->end > tw->win[tw->nwin - 1].end)
      tw->win[tw->nwin - 1].end = r->end; /* the same window again (exit) */
    return;
  }
  if (tw->nwin >= GPD_TRACEWIN_MAX) {
    tw->dropped++;
    return;
  }
  if (tw->nwin == tw->capwin) {
    uint32_t nc = tw->capwin ? tw->capwin * 2 : 64;
    gpd_tw_win_t *nw = realloc(tw->win, (size_t)nc * sizeof *nw);
    if (nw == NULL) {
      tw->dropped++;
      return;
    }
    tw->win = nw;
    tw->capwin = nc;
  }
  tw->win[tw->nwin++] = (gpd_tw_win_t){r->start, r->end};
}

int gpd_tracewin_snap(gpd_tracewin_t *tw, gpd_tw_snap_t *out) {
  memset(out, 0, sizeof *out);
  if (!tw->seen)
    return 0;
  uint32_t n = tw->nwin - tw->nwin_saved;
  if (n) {
    out->win = malloc((size_t)n * sizeof *out->win);
    if (out->win == NULL)
      return -ENOMEM;
    memcpy(out->win, tw->win + tw->nwin_saved, (size_t)n * sizeof *out->win);
    out->nwin = n;
  }
  out->have = 1;
  out->api = tw->api;
  out->duty = tw->duty;
  out->final = tw->final;
  out->t0 = tw->t0;
  out->end = tw->end;
  out->windows = tw->windows;
  out->window_ns = tw->window_ns;
  out->launches = tw->launches;
  out->launches_in = tw->launches_in;
  tw->nwin_saved = tw->nwin;
  return 0;
}

void gpd_tracewin_snap_free(gpd_tw_snap_t *s) {
  free(s->win);
  memset(s, 0, sizeof *s);
}

size_t gpd_tracewin_bytes(const gpd_tracewin_t *tw) { return (size_t)tw->capwin * sizeof *tw->win; }

void gpd_tracewin_free(gpd_tracewin_t *tw) {
  free(tw->win);
  memset(tw, 0, sizeof *tw);
}

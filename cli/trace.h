/* trace.h - the CLI's in-memory trace (docs/TRACE.md): GPU events, the
 * CPU side of each launch, CPU samples, and the contexts they refer to;
 * loaded from a saved profile or a live TraceReply (xtrace.c), written as
 * Perfetto protobuf or Chrome JSON (xwrite*.c), and read by the
 * idleness blame (idle.c).  Times are ns on the gpuprof clock
 * (CLOCK_MONOTONIC_RAW).  CLI thread only.
 */
#ifndef GPD_CLI_TRACE_H
#define GPD_CLI_TRACE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cli.h"
#include "gpuprof/trace-row.h"

/** One GPU activity (trace_event row; the store's decoder is shared with
 *  the daemon's Trace query: store/trace-row-read.h). */
typedef gpd_trace_row_t gpd_xev_t;

/** A GPU API call's CPU side (trace_launch row). */
typedef gpd_trace_lrow_t gpd_xlaunch_t;

/** A CPU sample (trace_cpu_sample row, when the shim samples CPU time). */
typedef struct gpd_xsample_s {
  uint64_t profile, ts, node;
  uint32_t tid;
} gpd_xsample_t;

/** A trace: rows sorted by time (start / ts), tree = contexts + processes. */
typedef struct gpd_xtrace_s {
  gpd_tree_t tree;
  gpd_xev_t *ev;
  size_t nev, capev;
  gpd_xlaunch_t *la;
  size_t nla, capla;
  gpd_xsample_t *cs;
  size_t ncs, capcs;
  uint64_t dropped, refused; /* at hand-off / by the per-profile bound or the uid's store allowance */
  int truncated;             /* the daemon left later events out */
} gpd_xtrace_t;

/** Room for one more element in array *a of n elements of sz bytes
 *  (capacity *cap, doubled from 256 when full).  0 or -ENOMEM (*a kept). */
int gpd_xtrace_grow(void **a, size_t n, size_t *cap, size_t sz);

void gpd_xtrace_init(gpd_xtrace_t *x);
void gpd_xtrace_free(gpd_xtrace_t *x);
/** Load the traces of the profiles in file path (pid > 0: that process's
 *  only).  0, or < 0 with err set. */
int gpd_xtrace_load(gpd_xtrace_t *x, const char *path, int pid, char *err, size_t errn);
/** Fill x from a live TraceReply.  0 or -ENOMEM. */
int gpd_xtrace_from_reply(gpd_xtrace_t *x, const Gpuprof__TraceReply *r);
/** Append the rows of live reply r to x and take r's tree in place of
 *  x's (the live tree only grows: the latest reply's is the most
 *  complete); sorts the rows when `sort`.  For trace.c's paged window,
 *  which empties x before each page (one page held at a time).  0 or
 *  -ENOMEM. */
int gpd__xtrace_add_reply(gpd_xtrace_t *x, const Gpuprof__TraceReply *r, int sort);
/** Sort x's events, launches and CPU samples by time. */
void gpd__xtrace_sort(gpd_xtrace_t *x);
/** Keep only rows starting in [from, to] (ns; to 0 = no upper bound). */
void gpd_xtrace_window(gpd_xtrace_t *x, uint64_t from, uint64_t to);
/** Earliest timestamp of any row (0 when empty). */
uint64_t gpd_xtrace_t0(const gpd_xtrace_t *x);

/** Call path of context id as "outer > ... > inner" (tree labels,
 *  gpd_render_node_name); cpu_only stops at the CPU call site (drops
 *  placeholders and kernels).  Writes "" for an unknown id. */
void gpd_xtrace_path(const gpd_xtrace_t *x, uint64_t node, int cpu_only, char *buf, size_t n);
/** Display name of a GPU event: the kernel's name, or its placeholder with
 *  the copy / memory / sync kind ("<gpu copy> H2D"). */
void gpd_xtrace_ev_name(const gpd_xtrace_t *x, const gpd_xev_t *e, char *buf, size_t n);

/** Perfetto protobuf trace (perfetto_trace.proto) / Chrome trace-event
 *  JSON of x to f.  0 or -errno / -ENOMEM. */
int gpd_xwrite_perfetto(FILE *f, const gpd_xtrace_t *x);
int gpd_xwrite_chrome(FILE *f, const gpd_xtrace_t *x);
/** Chrome trace-event JSON with each device operation's launch as a slice
 *  on its CPU thread and a flow ("bind_id") from it to the GPU slice(s)
 *  of the same launch (xwrite-chrome.c).  0 or -errno / -ENOMEM. */
int gpd_xwrite_chrome_launches(FILE *f, const gpd_xtrace_t *x);

/* ---- idle.c: idleness blame ---- */

/** What a blamed CPU context says of the thread (gpd_xblame_t.cpu):
 *  RUNNING there (its CPU samples), WAITING in a host-timed
 *  synchronization called there, or UNKNOWN: no CPU sample in the
 *  interval; the context is then the GPU API call that ended the span (a
 *  hint of what ran before it, not where the thread was), or 0 when no
 *  thread was known active. */
enum { GPD_XCPU_RUNNING, GPD_XCPU_WAITING, GPD_XCPU_UNKNOWN };
/** "running", "waiting" or "unknown". */
const char *gpd_idle_cpu_name(int cpu);

/** An idle interval of one process's GPUs and the contexts it is blamed on. */
typedef struct gpd_xgap_s {
  uint64_t profile, start, end;
  uint64_t node; /* its largest blame: CPU context id (0 none known) */
  double ns;     /* that blame's ns */
  int cpu;       /* that blame's GPD_XCPU_* */
} gpd_xgap_t;

/** Blame of one CPU context: GPU idle ns of its process put on it. */
typedef struct gpd_xblame_s {
  uint64_t profile, node; /* node: a CPU context id (0: no CPU context known) */
  double ns;
  int cpu;                /* GPD_XCPU_* */
} gpd_xblame_t;

/** Idleness blame of every process of x (HPCToolkit GPU paper, section 7
 *  "GPU Idleness Blame": when no GPU operation of the process is active
 *  and a CPU thread is, the idle time is partitioned among the CPU
 *  contexts the active threads are in).  gaps/ngaps: the idle intervals
 *  (malloc'd, may be NULL); blame/nblame: per (profile, context, sync)
 *  ns, largest first (malloc'd); *idle_ns / *span_ns: total idle time and
 *  the span from each process's first GPU start to its last GPU end.
 *  0 or -ENOMEM. */
int gpd_idle_xtrace(const gpd_xtrace_t *x, gpd_xgap_t **gaps, size_t *ngaps, gpd_xblame_t **blame,
                    size_t *nblame, double *idle_ns, double *span_ns);
/** `report` section: GPU idleness blame of the profiles in path (nothing
 *  when they have no trace); call paths innermost first, cut to fit lines
 *  of `width` characters (gpd_cli_path_fit; 0: whole).  0, or < 0 with err set. */
int gpd_idle_report(FILE *f, const char *path, int pid, unsigned width, char *err, size_t errn);
/** `report --json` part: one JSON object per process of path that has a
 *  trace (profile_id, pid, GIDLE, GIDLE:RUN, GIDLE:SYNC and span in s,
 *  intervals, contexts largest first: docs/CLI.md), each preceded by a
 *  comma unless *first (then cleared).  0, or < 0 with err set. */
int gpd_idle_report_json(FILE *f, const char *path, int pid, int *first, char *err, size_t errn);

/* ---- report-duty.c: duty-cycled estimates ---- */

/** `report` section: kernel launches and GKER per calling context of the
 *  processes of path that traced in duty-cycle windows, scaled by 1/f
 *  with their standard errors (cli/report-duty.c gives the estimators; nothing
 *  when there are none); call paths innermost first, cut to fit lines of
 *  `width` characters (gpd_cli_path_fit; 0: whole).  0, or < 0 with err
 *  set. */
int gpd_report_duty(FILE *f, const char *path, int pid, unsigned width, char *err, size_t errn);
/** `report --json` part: one object per duty process of path (docs/CLI.md
 *  "duty_estimates"), each preceded by a comma unless *first (then
 *  cleared).  0, or < 0 with err set. */
int gpd_report_duty_json(FILE *f, const char *path, int pid, int *first, char *err, size_t errn);

/** `gpuprof trace` (trace.c). */
int gpd_cmd_trace(int argc, char **argv);

#endif

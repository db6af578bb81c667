/* governor.c - duty period from measured collection cost (governor.h).
 *
 * Model.  A duty-cycled process runs windows of length W every period P.
 * Inside a window tracing slows the process by the relative amount
 * c_window; switching into and out of a window (attach, detach, the
 * forced flush, cuptiFinalize and the next subscription) costs t_switch
 * per window; between windows the launch counters cost c_between.  Over
 * one period the time lost is W c_window + t_switch + (P - W) c_between,
 * so the relative slowdown is
 *
 *     s(P) = (W c_window + t_switch) / P + (1 - W/P) c_between
 *          <= f c_window + t_switch / P + c_between,      f = W / P,
 *
 * the s = f c_window + c_between with the switching term, which
 * dominates short windows (its measured size: docs/PERFORMANCE-CUDA.md
 * "detach by cuptiFinalize" and "5 processes per mode").  The governor
 * uses the upper bound (it drops the -W/P c_between credit).  Holding s <= B:
 *
 *     P >= P* = (W c_window + t_switch) / (B - c_between),   B > c_between,
 *
 * and P = min(max(ceil(P*), P_min), P_max).  When c_between >= B no
 * period holds the budget: P = P_max (the smallest duty) and `over`.
 *
 * Measurements (all from the process's own counters, CollectReport):
 *   c_window   per launch, when enough launches were timed on both sides
 *              (every launch inside windows and 1 in 64 between them
 *              is timed by the launch counters, tracing's callbacks
 *              included): tracing adds
 *                  d = max(0, mean_in - mean_out)
 *              ns of wall time to each launch on the launching thread,
 *              so a window that saw n_in counted launches in T_in lost
 *                  c_window = d n_in / T_in.
 *              This holds whatever the process did between its launches
 *              (waits, data loading, idle phases: they dilute the launch
 *              rates below but not d), and for a GPU-bound loop it is an
 *              upper bound (the added launch time may hide behind the
 *              GPU's).  The "per-op timestamps" estimate.
 *              Otherwise from the counted launch rates inside and between windows:
 *              r_in = n_in / T_in, r_out = n_out / T_out with T_out =
 *              elapsed - T_in - switching; a launch-bound loop slowed by
 *              tracing launches less often inside, and
 *                  c_window = max(0, r_out / r_in - 1)
 *              (a GPU-bound loop keeps its rate: c_window ~ 0, which is
 *              what tracing then costs it).
 *   t_switch   switch_ns / windows (the back end times each edge).
 *   c_between  GPD_GOVERNOR_COUNT_NS * r_out (each counted launch between
 *              windows costs one counter update).
 * Busy windows (another tool held CUPTI: CollectReport busy_windows)
 * traced nothing: the shim leaves them out of windows, window_ns,
 * launches_in, switch_ns and timed_in, so they are never measured windows
 * here (their time and timed launches count as between windows, where the
 * process ran detached), and policy.c does not size the period while the
 * last attempt was busy.
 * No estimate while fewer than GPD_GOVERNOR_MIN_WINDOWS windows closed
 * (the policy's own period stands), nor while the windows held fewer
 * than GPD_GOVERNOR_MIN_LAUNCHES launches but the time between them
 * more (windows that fell in the process's waits: the period stands
 * until one catches it launching); with fewer than
 * GPD_GOVERNOR_MIN_LAUNCHES launches between windows too (a program
 * whose launches bypass libcudart's exported functions: Triton, CuPy,
 * cuBLAS alone) the cost cannot be estimated and the process gets P_max.
 */
#include "governor.h"

#include <errno.h>
#include <math.h>
#include <string.h>

double gpd_governor_slowdown(const gpd_governor_out_t *g, uint32_t window_ms, uint32_t period_ms) {
  if (!g || g->how != GPD_GOV_MEASURED || period_ms == 0)
    return -1;
  return ((double)window_ms * 1e6 * g->c_window + g->t_switch_ns) / ((double)period_ms * 1e6) + g->c_between;
}

int gpd_governor_size(const gpd_governor_in_t *in, gpd_governor_out_t *out) {
  if (!in || !out || in->window_ms >= in->period_min_ms || in->period_min_ms > in->period_max_ms)
    return -EINVAL;
  memset(out, 0, sizeof *out);
  out->slowdown = -1;
  out->period_ms = in->period_ms;
  if (in->windows < GPD_GOVERNOR_MIN_WINDOWS) {
    out->how = GPD_GOV_EARLY;
    return 0;
  }
  uint64_t n_in = in->launches_in, n_out = in->launches > n_in ? in->launches - n_in : 0;
  uint64_t busy = in->window_ns + in->switch_ns;
  double t_in = (double)in->window_ns, t_out = in->elapsed_ns > busy ? (double)(in->elapsed_ns - busy) : 0;
  if (n_out >= GPD_GOVERNOR_MIN_LAUNCHES && n_in < GPD_GOVERNOR_MIN_LAUNCHES && t_out > 0) {
    /* the process launches through libcudart, but its windows so far
     * fell where it launched little (waits, data loading): windows that
     * cheap say nothing yet; the period stands until one holds launches */
    out->how = GPD_GOV_EARLY;
    return 0;
  }
  if (n_in < GPD_GOVERNOR_MIN_LAUNCHES || n_out < GPD_GOVERNOR_MIN_LAUNCHES || !(t_in > 0) || !(t_out > 0)) {
    out->how = GPD_GOV_UNKNOWN;
    out->period_ms = in->period_max_ms;
    return 0;
  }
  double r_in = (double)n_in / t_in, r_out = (double)n_out / t_out;
  out->how = GPD_GOV_MEASURED;
  out->launch_ns = -1;
  if (in->timed_in >= GPD_GOVERNOR_MIN_TIMED && in->timed_out >= GPD_GOVERNOR_MIN_TIMED) {
    double d = (double)in->timed_in_ns / (double)in->timed_in - (double)in->timed_out_ns / (double)in->timed_out;
    out->launch_ns = d > 0 ? d : 0;
    out->per_launch = 1;
    out->c_window = out->launch_ns * (double)n_in / t_in;
  } else {
    out->c_window = r_out / r_in - 1;
  }
  if (out->c_window < 0)
    out->c_window = 0;
  out->t_switch_ns = (double)in->switch_ns / (double)in->windows;
  out->c_between = GPD_GOVERNOR_COUNT_NS * r_out;
  double b = (double)in->budget_bp / 10000.0;
  double p;
  if (b <= out->c_between) {
    out->over = 1;
    p = in->period_max_ms;
  } else {
    p = ceil(((double)in->window_ms * 1e6 * out->c_window + out->t_switch_ns) / (b - out->c_between) / 1e6);
    if (p < in->period_min_ms)
      p = in->period_min_ms;
    if (p > in->period_max_ms) {
      p = in->period_max_ms;
      out->over = 1;
    }
  }
  out->period_ms = (uint32_t)p;
  out->slowdown = gpd_governor_slowdown(out, in->window_ms, out->period_ms);
  return 0;
}

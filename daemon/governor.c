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
 * The budget is a ceiling, not a target: c_window is an estimate, and a
 * period sized at the estimate itself exceeds the budget about half the
 * time it is wrong.  So P* is taken at the estimate's one-sided 95 %
 * upper bound
 *
 *     c_hi = c_window + t_0.95(k - 1) sd_k / sqrt(k),
 *
 * the upper confidence limit of a mean from k values (Student's t; the
 * standard error of the mean, sd_k / sqrt(k)), where the k values are
 * the per-window estimates c_1..c_k (policy.c: one from each
 * CollectReport interval that closed windows, its timed launches inside
 * against the process's mean between) and sd_k their sample standard
 * deviation.  c_window, the ratio over all windows, is that mean
 * weighted by each window's length; the spread between windows (phases
 * of the program, launches blocked on a full queue, the GPU's share)
 * is what makes it uncertain.  With fewer than GPD_GOVERNOR_MIN_SPREAD
 * per-window values, or c_window from the launch rates, c_hi =
 * c_window.  The slowdown reported is the estimate's (at c_window);
 * slowdown_hi is the bound held under the budget.
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

static double slowdown_at(const gpd_governor_out_t *g, double c, uint32_t window_ms, uint32_t period_ms) {
  if (!g || g->how != GPD_GOV_MEASURED || period_ms == 0)
    return -1;
  return ((double)window_ms * 1e6 * c + g->t_switch_ns) / ((double)period_ms * 1e6) + g->c_between;
}

double gpd_governor_slowdown(const gpd_governor_out_t *g, uint32_t window_ms, uint32_t period_ms) {
  return slowdown_at(g, g ? g->c_window : 0, window_ms, period_ms);
}

double gpd_governor_slowdown_hi(const gpd_governor_out_t *g, uint32_t window_ms, uint32_t period_ms) {
  return slowdown_at(g, g ? g->c_hi : 0, window_ms, period_ms);
}

double gpd_governor_t95(uint32_t df) {
  /* one-sided 0.95 quantiles of Student's t (any statistics table) */
  static const struct {
    uint32_t df;
    double t;
  } tab[] = {{1, 6.314}, {2, 2.920}, {3, 2.353}, {4, 2.132},  {5, 2.015},  {6, 1.943},  {7, 1.895},
             {8, 1.860}, {9, 1.833}, {10, 1.812}, {12, 1.782}, {15, 1.753}, {20, 1.725}, {30, 1.697}};
  if (df > 30)
    return 1.645;
  double t = tab[0].t;
  for (size_t i = 0; i < sizeof tab / sizeof tab[0] && tab[i].df <= df; i++)
    t = tab[i].t;
  return t;
}

int gpd_governor_window_c(uint64_t dwindows, uint64_t dtimed, uint64_t dtimed_ns, uint64_t dlaunches,
                          uint64_t dwindow_ns, uint64_t timed_out, uint64_t timed_out_ns, double *c) {
  if (dwindows == 0 || dtimed < GPD_GOVERNOR_MIN_TIMED || dwindow_ns == 0 || timed_out < GPD_GOVERNOR_MIN_TIMED)
    return 0;
  double d = (double)dtimed_ns / (double)dtimed - (double)timed_out_ns / (double)timed_out;
  *c = (d > 0 ? d : 0) * (double)dlaunches / (double)dwindow_ns;
  return 1;
}

void gpd_governor_spread_add(gpd_governor_spread_t *s, double x) {
  s->n++;
  double d = x - s->mean;
  s->mean += d / s->n;
  s->m2 += d * (x - s->mean);
}

double gpd_governor_spread_sd(const gpd_governor_spread_t *s) {
  return s->n >= 2 && s->m2 > 0 ? sqrt(s->m2 / (s->n - 1)) : 0;
}

int gpd_governor_size(const gpd_governor_in_t *in, gpd_governor_out_t *out) {
  if (!in || !out || in->window_ms >= in->period_min_ms || in->period_min_ms > in->period_max_ms)
    return -EINVAL;
  memset(out, 0, sizeof *out);
  out->slowdown = out->slowdown_hi = -1;
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
  out->c_hi = out->c_window;
  if (out->per_launch && in->c_n >= GPD_GOVERNOR_MIN_SPREAD && in->c_sd > 0) {
    out->c_n = in->c_n;
    out->c_hi += gpd_governor_t95(in->c_n - 1) * in->c_sd / sqrt((double)in->c_n);
  }
  out->t_switch_ns = (double)in->switch_ns / (double)in->windows;
  out->c_between = GPD_GOVERNOR_COUNT_NS * r_out;
  double b = (double)in->budget_bp / 10000.0;
  double p;
  if (b <= out->c_between) {
    out->over = 1;
    p = in->period_max_ms;
  } else {
    p = ceil(((double)in->window_ms * 1e6 * out->c_hi + out->t_switch_ns) / (b - out->c_between) / 1e6);
    if (p < in->period_min_ms)
      p = in->period_min_ms;
    if (p > in->period_max_ms) {
      p = in->period_max_ms;
      out->over = 1;
    }
  }
  out->period_ms = (uint32_t)p;
  out->slowdown = gpd_governor_slowdown(out, in->window_ms, out->period_ms);
  out->slowdown_hi = gpd_governor_slowdown_hi(out, in->window_ms, out->period_ms);
  return 0;
}

/* governor.h - the overhead governor's arithmetic: from what collection
 * measurably costs one process, the duty period that holds its slowdown
 * under the budget (governor.c has the derivation).  Pure: no daemon
 * state, any thread; tests/daemon/test-governor.c checks it with known
 * numbers. */
#ifndef GPD_DAEMON_GOVERNOR_H
#define GPD_DAEMON_GOVERNOR_H

#include <stdint.h>

/** Cost of one counted launch between windows (ns): the launch counters
 *  of shim/cupti/cupti-count.c (their measured cost per call:
 *  docs/PERFORMANCE-CUDA.md, the detached mode's overhead). */
#define GPD_GOVERNOR_COUNT_NS 15.0
/** An estimate needs this many closed windows ... */
#define GPD_GOVERNOR_MIN_WINDOWS 3u
/** ... and this many counted launches inside and between windows. */
#define GPD_GOVERNOR_MIN_LAUNCHES 200u
/** The per-launch cost needs this many timed launches inside and between
 *  windows (cupti-count.c times every launch inside, 1 in 64 between). */
#define GPD_GOVERNOR_MIN_TIMED 16u

/** The spread term needs this many per-window estimates of c_window. */
#define GPD_GOVERNOR_MIN_SPREAD 3u
/** What one process reported (CollectReport) and its policy. */
typedef struct gpd_governor_in_s {
  uint64_t elapsed_ns;   /* since the duty schedule started */
  uint64_t window_ns;    /* inside closed windows */
  uint64_t windows;      /* closed windows */
  uint64_t launches;     /* counted launches since the schedule started */
  uint64_t launches_in;  /* of which inside windows */
  uint64_t switch_ns;    /* attach + detach + flush + finalize, summed */
  uint64_t timed_out, timed_out_ns; /* timed launches between windows: count, summed wall ns */
  uint64_t timed_in, timed_in_ns;   /* ... and inside windows */
  /* per-window estimates of c_window (policy.c, from the timed launches
   * of each report interval that closed windows): count, sample mean and
   * sample standard deviation (fractions); c_n 0: none */
  uint32_t c_n;
  double c_mean, c_sd;
  uint32_t window_ms;    /* W */
  uint32_t period_ms;    /* the policy's period (no estimate yet) */
  uint32_t period_min_ms, period_max_ms;
  uint32_t budget_bp;    /* B, 1/100 % */
} gpd_governor_in_t;

enum {
  GPD_GOV_EARLY = 0,     /* too few windows yet: the policy's period */
  GPD_GOV_MEASURED = 1,  /* c_window, c_between, t_switch measured */
  GPD_GOV_UNKNOWN = 2,   /* windows enough, launches too few: smallest duty */
};

/** The governor's answer. */
typedef struct gpd_governor_out_s {
  int how;               /* GPD_GOV_* */
  double c_window;       /* relative slowdown inside a window */
  double c_hi;           /* its one-sided 95 % upper bound (= c_window without a spread); the period holds the budget at c_hi */
  uint32_t c_n;          /* per-window estimates behind c_hi's spread (0: none) */
  double launch_ns;      /* per-launch: tracing's added wall time per launch (ns); < 0 not timed */
  int per_launch;        /* 1: c_window from the timed launches, 0: from launch rates */
  double c_between;      /* relative slowdown between windows */
  double t_switch_ns;    /* switching time per window */
  uint32_t period_ms;    /* P to use */
  double slowdown;       /* estimated s at period_ms (fraction), at c_window; < 0 unknown */
  double slowdown_hi;    /* the same at c_hi: the bound the period holds under the budget */
  int over;              /* the budget cannot be held (c_between >= B) */
} gpd_governor_out_t;

/** Size the period for `in` (formula in governor.c).  0 or -EINVAL
 *  (NULL, window >= period_min, period_min > period_max). */
int gpd_governor_size(const gpd_governor_in_t *in, gpd_governor_out_t *out);

/** Estimated slowdown (fraction) at period_ms with the measured costs of
 *  out (s = (W c_window + t_switch) / P + c_between); < 0 when g holds no
 *  measurement. */
double gpd_governor_slowdown(const gpd_governor_out_t *g, uint32_t window_ms, uint32_t period_ms);
/** The same at g->c_hi (the upper bound the governor sizes with). */
double gpd_governor_slowdown_hi(const gpd_governor_out_t *g, uint32_t window_ms, uint32_t period_ms);
/** One-sided 95 % quantile of Student's t with df degrees of freedom
 *  (df >= 1; a table, conservative between its rows: the value of the
 *  next smaller listed df; 1.645 beyond 30). */
double gpd_governor_t95(uint32_t df);
/** One per-window estimate of c_window, from the counters' growth over a
 *  report interval that closed dwindows windows: dtimed launches timed
 *  inside them taking dtimed_ns in all, dlaunches counted inside them,
 *  dwindow_ns their length; the baseline is the process's mean between
 *  windows so far (timed_out launches, timed_out_ns):
 *      c_k = max(0, dtimed_ns / dtimed - timed_out_ns / timed_out) dlaunches / dwindow_ns.
 *  1 and *c set, or 0 (no window closed, or fewer than
 *  GPD_GOVERNOR_MIN_TIMED timed launches on either side). */
int gpd_governor_window_c(uint64_t dwindows, uint64_t dtimed, uint64_t dtimed_ns, uint64_t dlaunches,
                          uint64_t dwindow_ns, uint64_t timed_out, uint64_t timed_out_ns, double *c);
/** Running mean and spread of per-window estimates (Welford's update). */
typedef struct gpd_governor_spread_s {
  uint32_t n;
  double mean, m2;
} gpd_governor_spread_t;
/** Add x to s. */
void gpd_governor_spread_add(gpd_governor_spread_t *s, double x);
/** Sample standard deviation of s (0 with fewer than 2 values). */
double gpd_governor_spread_sd(const gpd_governor_spread_t *s);

#endif

/* duty.h - estimates from duty-cycled tracing windows (common/duty.c):
 * the window fraction, the per-launch (Poisson / Horvitz-Thompson)
 * estimate and its error, and the per-window (cluster sampling) error.
 * Used by the CUDA back end (its exit summary, shim/cupti) and by
 * `gpuprof report` (cli/report-duty.c).  Pure: any thread, no allocation.
 */
#ifndef GPUPROF_DUTY_H
#define GPUPROF_DUTY_H

#include <stdint.h>

/** Estimate of one calling context's launches and GPU time over the run. */
typedef struct gpd_duty_estimate_s {
  double count, count_se;     /* launches: estimate, standard error */
  double time_ns, time_se_ns; /* GPU time: estimate, standard error (ns) */
} gpd_duty_estimate_t;

/** Window fraction f = window_ns / elapsed_ns, in [0, 1] (0 if elapsed
 *  is 0): the inclusion probability of a launch.  Also the launch
 *  fraction: gpd_duty_fraction(launches inside windows, all launches)
 *  (counted by shim/cupti/cupti-count.c), which stays unbiased when
 *  tracing slows the program inside windows. */
double gpd_duty_fraction(uint64_t window_ns, uint64_t elapsed_ns);

/** Fewest counted launches for which the launch fraction is used. */
#define GPD_DUTY_MIN_LAUNCHES 100u

/** The launch fraction f = in / all of a run whose back end counted its
 *  kernel launches (all, and `in` inside windows: TRACEWIN's launches and
 *  launches_in), or 0 when it cannot be used (fewer than
 *  GPD_DUTY_MIN_LAUNCHES counted, none inside a window, or in > all):
 *  the caller then falls back to the time fraction.  Tracing slows a
 *  launch-bound program inside its windows, which the time fraction
 *  misses and this one does not (common/duty.c). */
double gpd_duty_launch_fraction(uint64_t in, uint64_t all);

/** Per-launch estimate (launches sampled independently with probability
 *  f; common/duty.c gives the formulas and their source): from n launches
 *  and t_ns of GPU time observed in windows, s2_ns2 the sum of their
 *  squared durations (0 = unknown: durations taken as equal), f in
 *  (0, 1].  0 or -EINVAL. */
int gpd_duty_poisson(double n, double t_ns, double s2_ns2, double f, gpd_duty_estimate_t *out);

/** Per-window (cluster sampling) estimate of a total: m >= 2 windows
 *  observed (those without any of it count, as 0), sum and sum2 the sum
 *  of the per-window totals y_i and of their squares, f in (0, 1]:
 *  *est = sum / f, *se its standard error (common/duty.c).  0, or
 *  -EINVAL (m < 2: no variance to estimate from one window). */
int gpd_duty_cluster(double m, double sum, double sum2, double f, double *est, double *se);

#endif

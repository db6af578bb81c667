/* duty.c - estimates from duty-cycled tracing windows (gpuprof/duty.h).
 *
 * A window traces the GPU operations *launched* while it is open (CUPTI
 * records an activity for work enqueued while its kind is enabled), so
 * the run's launches are sampled by the windows, and the inclusion
 * probability of a launch is the fraction f of the run's time covered by
 * windows, f = (sum of window lengths) / (elapsed time), both measured by
 * the back end's controller (docs/CUDA.md).
 *
 * Per launch (gpd_duty_poisson).  For a calling context with n launches
 * and kernel time T observed in windows, the Horvitz-Thompson estimates
 *     N^ = n / f,    T^ = T / f,
 * and their standard errors with launches included independently with
 * probability f (Poisson sampling):
 *     se(N^) = sqrt(n (1 - f)) / f                relative: sqrt((1-f)/n)
 *     se(T^) = sqrt((1 - f) * S2) / f,  S2 = sum of squared durations,
 * and with S2 unknown (a profile keeps sums), S2 ~= T^2 / n (durations
 * equal within the context): relative se(T^) ~= sqrt((1-f)/n) as well.
 * Horvitz & Thompson, "A generalization of sampling without replacement
 * from a finite universe", JASA 47 (1952), the estimator of a total and
 * its variance under Poisson sampling.
 *
 * Per window (gpd_duty_cluster).  Launches within one window are not
 * independent (a steady loop puts the same number in each window; a
 * burst puts many in one), so where the windows' own totals are known
 * (gpuprof report: the trace rows of each window) the window is the
 * sampling unit: cluster sampling.  With the run cut into K = m / f
 * possible windows of which m were traced (f = m / K: windows of equal
 * length), y_i the context's total (launches, or ns) in window i (0 when
 * it had none), the estimate of the run's total and its standard error
 * under simple random sampling of the windows are
 *     Y^ = K * mean(y) = sum(y) / f,
 *     se(Y^) = K * sqrt((1 - f) * s2 / m) = sqrt(m (1 - f) s2) / f,
 *     s2 = (sum(y^2) - sum(y)^2 / m) / (m - 1),
 * Cochran, Sampling Techniques, 3rd ed. (Wiley 1977), the estimated
 * population total under simple random sampling and its variance
 * (chapter 2), applied with the clusters as the units (chapter 9,
 * clusters of equal size).  A steady loop then gets the small error it
 * deserves (s2 ~ 0); a loop in step with the period P is still
 * mis-estimated without a sign of it (aliasing: windows are systematic,
 * not random).
 *
 * The fraction f.  The windows sample launches, so f is a launch's
 * inclusion probability.  The time fraction (window time / elapsed) is
 * that only if the program launches at the same rate inside windows as
 * outside, and tracing slows a launch-bound program inside them (a
 * PyTorch loop launched 13 % fewer kernels per second inside, and the
 * time fraction overstated f by as much: docs/CUDA.md, "The duty-cycle
 * estimate").  Where the back end counts the launches
 * (shim/cupti/cupti-count.c: every call of libcudart's launch functions,
 * at a few ns each, also while detached) the launch fraction
 *     f = (counted launches inside windows) / (counted launches)
 * is the inclusion probability of the counted launches themselves, and
 * of the others (cuBLAS or cuDNN launches, which reach the driver
 * without passing libcudart's exported functions) as long as they
 * interleave with the counted ones in the same way inside and outside
 * the windows (a steady loop does); same run: -0.04 % in total.
 */
#include "gpuprof/duty.h"

#include <errno.h>
#include <math.h>
#include <string.h>

double gpd_duty_fraction(uint64_t window_ns, uint64_t elapsed_ns) {
  if (!elapsed_ns)
    return 0;
  double f = (double)window_ns / (double)elapsed_ns;
  return f > 1 ? 1 : f;
}

double gpd_duty_launch_fraction(uint64_t in, uint64_t all) {
  if (all < GPD_DUTY_MIN_LAUNCHES || in == 0 || in > all)
    return 0;
  return (double)in / (double)all;
}

int gpd_duty_poisson(double n, double t_ns, double s2_ns2, double f, gpd_duty_estimate_t *out) {
  if (!out || !(f > 0) || f > 1 || n < 0 || t_ns < 0 || s2_ns2 < 0)
    return -EINVAL;
  memset(out, 0, sizeof *out);
  out->count = n / f;
  out->time_ns = t_ns / f;
  out->count_se = sqrt(n * (1 - f)) / f;
  if (s2_ns2 == 0 && n > 0)
    s2_ns2 = t_ns * t_ns / n; /* equal durations within the context */
  out->time_se_ns = sqrt((1 - f) * s2_ns2) / f;
  return 0;
}

int gpd_duty_cluster(double m, double sum, double sum2, double f, double *est, double *se) {
  if (!est || !se || !(m >= 2) || !(f > 0) || f > 1 || sum < 0 || sum2 < 0)
    return -EINVAL;
  double s2 = (sum2 - sum * sum / m) / (m - 1);
  if (s2 < 0)
    s2 = 0; /* rounding: equal totals */
  *est = sum / f;
  *se = sqrt(m * (1 - f) * s2) / f;
  return 0;
}

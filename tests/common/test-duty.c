/* test-duty.c - the duty-cycle estimators (common/duty.c) with exact
 * numbers: the cluster (per-window) estimate of a context seen in 10
 * windows at f = 0.1, a steady context (no error), the per-launch
 * (Poisson) estimate of the same observations, and bad arguments. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "gpuprof/duty.h"

/* launches per window of context A (1000 ns each), m = 10, f = 0.1 */
static const double a[10] = {3, 1, 2, 2, 3, 1, 2, 2, 3, 1};

static void test_cluster(void **st) {
  (void)st;
  double sum = 0, sum2 = 0, est, se;
  for (int i = 0; i < 10; i++) {
    sum += a[i] * 1000;
    sum2 += a[i] * 1000 * a[i] * 1000;
  }
  /* time: Y^ = 20000 / 0.1 = 200000 ns; s2 = (46e6 - 4e8 / 10) / 9 =
   * 6e6 / 9; se = sqrt(10 * 0.9 * 6e6 / 9) / 0.1 = sqrt(6e6) * 10 */
  assert_int_equal(gpd_duty_cluster(10, sum, sum2, 0.1, &est, &se), 0);
  assert_true(fabs(est - 200000) < 1e-6);
  assert_true(fabs(se - sqrt(6e6) * 10) < 1e-6); /* 24494.897... */
  assert_true(fabs(se - 24494.897427831781) < 1e-6);
  /* counts: 20 seen -> 200, se = sqrt(6) * 10 */
  assert_int_equal(gpd_duty_cluster(10, 20, 46, 0.1, &est, &se), 0);
  assert_true(fabs(est - 200) < 1e-9 && fabs(se - sqrt(6) * 10) < 1e-9);
  /* a steady context (5000 ns in every window): exact */
  assert_int_equal(gpd_duty_cluster(10, 50000, 10 * 25e6, 0.1, &est, &se), 0);
  assert_true(fabs(est - 500000) < 1e-6 && se == 0);
  /* every window traced (f = 1): the total itself, no error */
  assert_int_equal(gpd_duty_cluster(10, 20, 46, 1, &est, &se), 0);
  assert_true(est == 20 && se == 0);
}

static void test_poisson_same_data(void **st) {
  (void)st;
  gpd_duty_estimate_t e;
  /* 20 launches of 1000 ns at f = 0.1: N^ = 200, se = sqrt(20*0.9)/0.1 */
  assert_int_equal(gpd_duty_poisson(20, 20000, 0, 0.1, &e), 0);
  assert_true(fabs(e.count - 200) < 1e-9 && fabs(e.time_ns - 200000) < 1e-6);
  assert_true(fabs(e.count_se - sqrt(18) / 0.1) < 1e-9);
  assert_true(fabs(e.time_se_ns - sqrt(0.9 * 20000.0 * 20000.0 / 20) / 0.1) < 1e-6);
}

static void test_bad(void **st) {
  (void)st;
  double est, se;
  assert_int_equal(gpd_duty_cluster(1, 5, 25, 0.1, &est, &se), -EINVAL); /* one window */
  assert_int_equal(gpd_duty_cluster(10, 5, 25, 0, &est, &se), -EINVAL);
  assert_int_equal(gpd_duty_cluster(10, 5, 25, 1.5, &est, &se), -EINVAL);
  assert_int_equal(gpd_duty_cluster(10, -5, 25, 0.5, &est, &se), -EINVAL);
  assert_int_equal(gpd_duty_cluster(10, 5, 25, 0.5, NULL, &se), -EINVAL);
  assert_true(gpd_duty_fraction(1, 0) == 0 && gpd_duty_fraction(20, 10) == 1);
  assert_true(fabs(gpd_duty_fraction(100, 1000) - 0.1) < 1e-15);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cluster),
      cmocka_unit_test(test_poisson_same_data),
      cmocka_unit_test(test_bad),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test-cupti-mode.c - unit test of shim/cupti/cupti-mode.c: the
 * GPUPROF_CUDA_TRACE parser (modes full / detached / duty:W/P with the
 * operation classes, and the bad inputs), the duty schedule, and the
 * duty-cycle estimator (exact numbers on a synthetic launch stream sampled
 * by the schedule, and the error formula). */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "backends.h"
#include "cupti-internal.h"
#include "gpuprof/duty.h"

#define OPS_ALL (~0u)
#define B(op) (1u << (op))

static void test_parse_modes(void **st) {
  (void)st;
  gpd_cupti_mode_t m;
  assert_int_equal(gpd_cupti_mode_parse(NULL, &m), 0);
  assert_int_equal(m.mode, GPD_CUPTI_FULL);
  assert_int_equal(m.ops, OPS_ALL);
  assert_int_equal(gpd_cupti_mode_parse("", &m), 0);
  assert_int_equal(m.mode, GPD_CUPTI_FULL);
  assert_int_equal(gpd_cupti_mode_parse("full", &m), 0);
  assert_int_equal(m.mode, GPD_CUPTI_FULL);
  assert_int_equal(m.ops, OPS_ALL);
  assert_int_equal(gpd_cupti_mode_parse("detached", &m), 0);
  assert_int_equal(m.mode, GPD_CUPTI_DETACHED);
  assert_int_equal(m.ops, OPS_ALL);
  assert_int_equal(gpd_cupti_mode_parse("duty:20/1", &m), 0);
  assert_int_equal(m.mode, GPD_CUPTI_DUTY);
  assert_int_equal(m.window_ms, 20);
  assert_int_equal(m.period_ms, 1000);
  assert_int_equal(gpd_cupti_mode_parse("duty:5/0.25,coarse", &m), 0);
  assert_int_equal(m.mode, GPD_CUPTI_DUTY);
  assert_int_equal(m.window_ms, 5);
  assert_int_equal(m.period_ms, 250);
  assert_int_equal(m.ops, B(GPD_OP_KERNEL) | B(GPD_OP_COPY) | B(GPD_OP_MEMSET));
  /* detach by cuptiFinalize: the default of the detached and duty modes
   * with every operation class, "keep" keeps CUPTI loaded, "finalize"
   * says the default; never with full tracing, never with a subset of the
   * classes (coarse here: CUPTI crashed there after a finalize) */
  assert_int_equal(m.finalize, 0);
  assert_int_equal(gpd_cupti_mode_parse("duty:5/0.25,kernel,copy,memset,alloc,sync", &m), 0);
  assert_int_equal(m.finalize, 1);
  assert_int_equal(gpd_cupti_mode_parse("duty:5/0.25,all", &m), 0);
  assert_int_equal(m.finalize, 1);
  assert_int_equal(gpd_cupti_mode_parse("duty:5/0.25,kernel,copy,memset,alloc", &m), 0);
  assert_int_equal(m.finalize, 0);
  assert_int_equal(gpd_cupti_mode_parse("detached", &m), 0);
  assert_int_equal(m.finalize, 1);
  assert_int_equal(gpd_cupti_mode_parse("full", &m), 0);
  assert_int_equal(m.finalize, 0);
  assert_int_equal(gpd_cupti_mode_parse("full,finalize", &m), 0);
  assert_int_equal(m.finalize, 0);
  assert_int_equal(gpd_cupti_mode_parse("kernel", &m), 0);
  assert_int_equal(m.finalize, 0);
  assert_int_equal(gpd_cupti_mode_parse("duty:10/0.2,keep", &m), 0);
  assert_int_equal(m.mode, GPD_CUPTI_DUTY);
  assert_int_equal(m.window_ms, 10);
  assert_int_equal(m.period_ms, 200);
  assert_int_equal(m.finalize, 0);
  assert_int_equal(m.ops, OPS_ALL);
  assert_int_equal(gpd_cupti_mode_parse("finalize,detached,kernel", &m), 0);
  assert_int_equal(m.mode, GPD_CUPTI_DETACHED);
  assert_int_equal(m.finalize, 0); /* asked for, but a subset */
  assert_int_equal(m.ops, B(GPD_OP_KERNEL));
  assert_int_equal(gpd_cupti_mode_parse("keep,keep,detached", &m), 0);
  assert_int_equal(m.finalize, 0);
  assert_int_equal(gpd_cupti_mode_parse("finalizer", &m), -EINVAL);
  assert_int_equal(m.finalize, 0); /* the defaults: full */
  assert_int_equal(gpd_cupti_mode_parse("detached,keep,finalize", &m), -EINVAL);
}

static void test_parse_ops(void **st) {
  (void)st;
  gpd_cupti_mode_t m;
  assert_int_equal(gpd_cupti_mode_parse("kernel,copy", &m), 0);
  assert_int_equal(m.mode, GPD_CUPTI_FULL);
  assert_int_equal(m.ops, B(GPD_OP_KERNEL) | B(GPD_OP_COPY));
  assert_int_equal(gpd_cupti_mode_parse("alloc", &m), 0); /* alloc brings free */
  assert_int_equal(m.ops, B(GPD_OP_ALLOC) | B(GPD_OP_FREE));
  assert_int_equal(gpd_cupti_mode_parse("coarse", &m), 0);
  assert_int_equal(m.ops, B(GPD_OP_KERNEL) | B(GPD_OP_COPY) | B(GPD_OP_MEMSET));
  assert_int_equal(gpd_cupti_mode_parse("detached,sync,memset", &m), 0);
  assert_int_equal(m.mode, GPD_CUPTI_DETACHED);
  assert_int_equal(m.ops, B(GPD_OP_SYNC) | B(GPD_OP_MEMSET));
  assert_int_equal(gpd_cupti_mode_parse("all", &m), 0);
  assert_int_equal(m.ops, OPS_ALL);
}

static void test_parse_bad(void **st) {
  (void)st;
  static const char *const bad[] = {"fulll",       "kernels",    "duty",       "duty:",     "duty:20",
                                    "duty:20/",    "duty:0/1",   "duty:x/1",   "duty:20/-1", "duty:1000/1",
                                    "duty:2000/1", "duty:20/1s", "kernel,,copy", ",",        "detached,full",
                                    "duty:20/1,detached", "free", "duty:20/99999"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    gpd_cupti_mode_t m;
    m.mode = 77;
    assert_int_equal(gpd_cupti_mode_parse(bad[i], &m), -EINVAL);
    assert_int_equal(m.mode, GPD_CUPTI_FULL); /* defaults after a failure */
  }
  assert_int_equal(gpd_cupti_mode_parse("full", NULL), -EINVAL);
}

static void test_schedule(void **st) {
  (void)st;
  gpd_cupti_mode_t m;
  assert_int_equal(gpd_cupti_mode_parse("duty:20/1", &m), 0);
  const uint64_t ms = 1000000ull, t0 = 5 * ms;
  int on = -1;
  assert_int_equal(gpd_cupti_duty_next(&m, t0, 0, &on), t0); /* before start */
  assert_int_equal(on, 0);
  assert_int_equal(gpd_cupti_duty_next(&m, t0, t0, &on), t0 + 20 * ms);
  assert_int_equal(on, 1);
  assert_int_equal(gpd_cupti_duty_next(&m, t0, t0 + 19 * ms, &on), t0 + 20 * ms);
  assert_int_equal(on, 1);
  assert_int_equal(gpd_cupti_duty_next(&m, t0, t0 + 20 * ms, &on), t0 + 1000 * ms);
  assert_int_equal(on, 0);
  assert_int_equal(gpd_cupti_duty_next(&m, t0, t0 + 3010 * ms, &on), t0 + 3020 * ms);
  assert_int_equal(on, 1);
  assert_int_equal(gpd_cupti_duty_next(&m, t0, t0 + 3999 * ms, &on), t0 + 4000 * ms);
  assert_int_equal(on, 0);
}

/* A steady loop: one launch of 100 us every 1 ms for 10 s, sampled by the
 * schedule duty:20/1: exactly 20 launches per window, 10 windows, f = 0.02;
 * the estimates are exact and the error is the formula's. */
static void test_estimate_steady(void **st) {
  (void)st;
  gpd_cupti_mode_t m;
  assert_int_equal(gpd_cupti_mode_parse("duty:20/1", &m), 0);
  const uint64_t ms = 1000000ull;
  uint64_t win = 0, n = 0, t = 0;
  int was_on = 0;
  uint64_t since = 0;
  for (uint64_t now = 0; now < 10000 * ms; now += ms) {
    int on;
    gpd_cupti_duty_next(&m, 0, now, &on);
    if (on && !was_on)
      since = now;
    if (!on && was_on)
      win += now - since;
    was_on = on;
    if (on) {
      n++;
      t += 100000;
    }
  }
  if (was_on)
    win += 10000 * ms - since;
  assert_int_equal(n, 200);
  assert_int_equal(win, 200 * ms);
  double f = gpd_duty_fraction(win, 10000 * ms);
  assert_true(fabs(f - 0.02) < 1e-12);
  gpd_duty_estimate_t e;
  assert_int_equal(gpd_duty_poisson((double)n, (double)t, 0, f, &e), 0);
  assert_true(fabs(e.count - 10000) < 1e-6);
  assert_true(fabs(e.time_ns - 1e9) < 1e-3); /* 10000 x 100 us */
  assert_true(fabs(e.count_se - sqrt(200 * 0.98) / 0.02) < 1e-9); /* 700 */
  assert_true(fabs(e.count_se / e.count - sqrt(0.98 / 200)) < 1e-12);
  assert_true(fabs(e.time_se_ns / e.time_ns - sqrt(0.98 / 200)) < 1e-12);
  /* with the squared durations known: the same when all are equal */
  gpd_duty_estimate_t e2;
  assert_int_equal(gpd_duty_poisson((double)n, (double)t, 200 * 1e10, f, &e2), 0);
  assert_true(fabs(e2.time_se_ns - e.time_se_ns) < 1e-6);
  /* unequal durations: a larger error than the equal-duration one */
  assert_int_equal(gpd_duty_poisson(2, 300, 100 * 100 + 200 * 200, 0.5, &e2), 0);
  assert_true(fabs(e2.time_ns - 600) < 1e-9);
  assert_true(fabs(e2.time_se_ns - sqrt(0.5 * 50000) / 0.5) < 1e-9);
}

/* Tracing slows the loop inside windows (the H100 run of 2026-11-24: 13 %
 * fewer launches per second): one launch every 1 ms outside windows, one
 * every 1.25 ms inside, duty:20/1 for 10 s.  The time fraction (0.02)
 * then underestimates by a fifth; the launch fraction that the launch
 * counters give (launches inside windows / all launches, cupti-count.c)
 * gives the exact totals. */
static void test_estimate_slowed(void **st) {
  (void)st;
  gpd_cupti_mode_t m;
  assert_int_equal(gpd_cupti_mode_parse("duty:20/1", &m), 0);
  const uint64_t us = 1000ull, ms = 1000 * us;
  uint64_t all = 0, in = 0, win = 0, next = 0;
  for (uint64_t now = 0; now < 10000 * ms; now = next) {
    int on;
    uint64_t edge = gpd_cupti_duty_next(&m, 0, now, &on);
    if (on) {
      win += edge - now;
      for (uint64_t t = now; t < edge; t += 1250 * us) /* launches inside the window */
        in++, all++;
    } else {
      for (uint64_t t = now; t < edge && t < 10000 * ms; t += ms)
        all++;
    }
    next = edge;
  }
  assert_int_equal(win, 200 * ms);
  assert_int_equal(in, 160);      /* 10 windows x 16 */
  assert_int_equal(all, 9960);    /* + 10 x 980 outside */
  double ft = gpd_duty_fraction(win, 10000 * ms), fl = gpd_duty_fraction(in, all);
  assert_true(fabs(ft - 0.02) < 1e-12);
  assert_true(fabs(fl - 160.0 / 9960.0) < 1e-15);
  gpd_duty_estimate_t et, el;
  assert_int_equal(gpd_duty_poisson((double)in, (double)in * 100 * us, 0, ft, &et), 0);
  assert_int_equal(gpd_duty_poisson((double)in, (double)in * 100 * us, 0, fl, &el), 0);
  assert_true(fabs(et.count - 8000) < 1e-6);            /* -19.7 %: the bias */
  assert_true(fabs(el.count - 9960) < 1e-6);            /* exact */
  assert_true(fabs(el.time_ns - 9960 * 100e3) < 1e-3);  /* 996 ms of GPU time */
  assert_true(fabs(el.count_se / el.count - sqrt((1 - fl) / 160)) < 1e-12);
}

static void test_estimate_edges(void **st) {
  (void)st;
  gpd_duty_estimate_t e;
  assert_int_equal(gpd_duty_poisson(10, 10, 0, 0, &e), -EINVAL);
  assert_int_equal(gpd_duty_poisson(10, 10, 0, 1.5, &e), -EINVAL);
  assert_int_equal(gpd_duty_poisson(-1, 10, 0, 0.5, &e), -EINVAL);
  assert_int_equal(gpd_duty_poisson(10, 10, 0, 0.5, NULL), -EINVAL);
  assert_int_equal(gpd_duty_poisson(10, 1000, 0, 1.0, &e), 0); /* full: no error */
  assert_true(e.count == 10 && e.time_ns == 1000 && e.count_se == 0 && e.time_se_ns == 0);
  assert_int_equal(gpd_duty_poisson(0, 0, 0, 0.1, &e), 0); /* nothing seen */
  assert_true(e.count == 0 && e.time_ns == 0 && e.time_se_ns == 0);
  assert_true(gpd_duty_fraction(5, 0) == 0);
  assert_true(gpd_duty_fraction(20, 10) == 1);
}

/* The controller's decision: detached with an on-demand window, duty with
 * one overlapping its windows, a window "until stopped", and a stop. */
static void test_ctl_want(void **st) {
  (void)st;
  const uint64_t ms = 1000000ull, NONE = UINT64_MAX;
  gpd_cupti_mode_t det, duty;
  assert_int_equal(gpd_cupti_mode_parse("detached", &det), 0);
  assert_int_equal(gpd_cupti_mode_parse("duty:20/1", &duty), 0);
  uint64_t next = 0;
  /* detached, no request: off, nothing scheduled */
  assert_int_equal(gpd_cupti_ctl_want(&det, 0, 0, 0, 5 * ms, &next), 0);
  assert_true(next == NONE);
  /* detached, request [100, 600) ms: off before (wake at 100), on inside
   * (wake at 600), off after */
  assert_int_equal(gpd_cupti_ctl_want(&det, 0, 100 * ms, 600 * ms, 50 * ms, &next), 0);
  assert_true(next == 100 * ms);
  assert_int_equal(gpd_cupti_ctl_want(&det, 0, 100 * ms, 600 * ms, 100 * ms, &next), 1);
  assert_true(next == 600 * ms);
  assert_int_equal(gpd_cupti_ctl_want(&det, 0, 100 * ms, 600 * ms, 599 * ms, &next), 1);
  assert_int_equal(gpd_cupti_ctl_want(&det, 0, 100 * ms, 600 * ms, 600 * ms, &next), 0);
  assert_true(next == NONE);
  /* until stopped */
  assert_int_equal(gpd_cupti_ctl_want(&det, 0, 100 * ms, NONE, 99999 * ms, &next), 1);
  assert_true(next == NONE);
  /* duty + a request [1010, 1500) ms: the duty window [1000, 1020) and the
   * request overlap; on from 1000 until the request ends at 1500, then the
   * next duty window at 2000 */
  assert_int_equal(gpd_cupti_ctl_want(&duty, 0, 1010 * ms, 1500 * ms, 1005 * ms, &next), 1);
  assert_true(next == 1010 * ms);
  assert_int_equal(gpd_cupti_ctl_want(&duty, 0, 1010 * ms, 1500 * ms, 1020 * ms, &next), 1);
  assert_true(next == 1500 * ms);
  assert_int_equal(gpd_cupti_ctl_want(&duty, 0, 1010 * ms, 1500 * ms, 1500 * ms, &next), 0);
  assert_true(next == 2000 * ms);
  /* a stop request (until = 0) leaves only the duty schedule */
  assert_int_equal(gpd_cupti_ctl_want(&duty, 0, 0, 0, 1300 * ms, &next), 0);
  assert_true(next == 2000 * ms);
}

/* Which CUPTI results mean "another tool holds it" (cupti_result.h's
 * words, cupti-mode.c), and the busy back-off: one window, then 2, 4, ...
 * windows on from the busy window's own, at most 60 s; 1 s doubling to
 * 60 s without a duty schedule. */
static void test_busy(void **st) {
  (void)st;
  const uint64_t ms = 1000000ull;
  assert_string_equal(gpd_cupti_busy_name(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, 0),
                      "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED");
  assert_int_equal(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, 39);
  assert_string_equal(gpd_cupti_busy_name(CUPTI_ERROR_HARDWARE_BUSY, 0), "CUPTI_ERROR_HARDWARE_BUSY");
  assert_int_equal(CUPTI_ERROR_HARDWARE_BUSY, 26);
  assert_null(gpd_cupti_busy_name(CUPTI_ERROR_NOT_COMPATIBLE, 0)); /* an activity kind: a real error */
  assert_string_equal(gpd_cupti_busy_name(CUPTI_ERROR_NOT_COMPATIBLE, 1), "CUPTI_ERROR_NOT_COMPATIBLE");
  assert_string_equal(gpd_cupti_busy_name(CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED, 1),
                      "CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED");
  assert_null(gpd_cupti_busy_name(CUPTI_SUCCESS, 1));
  assert_null(gpd_cupti_busy_name(CUPTI_ERROR_NOT_INITIALIZED, 1));
  assert_null(gpd_cupti_busy_name(CUPTI_ERROR_UNKNOWN, 0));
  gpd_cupti_mode_t duty, det;
  assert_int_equal(gpd_cupti_mode_parse("duty:100/0.5", &duty), 0);
  assert_int_equal(gpd_cupti_mode_parse("detached", &det), 0);
  /* t0 = 1000 ms; busy in the window starting at 3000 (k = 4) */
  assert_true(gpd_cupti_busy_retry(&duty, 1000 * ms, 3010 * ms, 1) == 3500 * ms);
  assert_true(gpd_cupti_busy_retry(&duty, 1000 * ms, 3010 * ms, 2) == 4000 * ms);
  assert_true(gpd_cupti_busy_retry(&duty, 1000 * ms, 3010 * ms, 4) == 7000 * ms);
  /* at most 60 s: 120 windows of 500 ms */
  assert_true(gpd_cupti_busy_retry(&duty, 1000 * ms, 3010 * ms, 7) == 3000 * ms + 64 * 500 * ms);
  assert_true(gpd_cupti_busy_retry(&duty, 1000 * ms, 3010 * ms, 8) == 3000 * ms + 120 * 500 * ms);
  assert_true(gpd_cupti_busy_retry(&duty, 1000 * ms, 3010 * ms, 1000) == 3000 * ms + 120 * 500 * ms);
  /* a period above 60 s: the next window */
  assert_int_equal(gpd_cupti_mode_parse("duty:100/90", &duty), 0);
  assert_true(gpd_cupti_busy_retry(&duty, 0, 10 * ms, 5) == 90000 * ms);
  /* no duty schedule (on-demand windows, PC sampling) */
  assert_true(gpd_cupti_busy_retry(&det, 0, 5 * ms, 1) == 1005 * ms);
  assert_true(gpd_cupti_busy_retry(&det, 0, 5 * ms, 3) == 4005 * ms);
  assert_true(gpd_cupti_busy_retry(&det, 0, 5 * ms, 7) == 60005 * ms);
  assert_true(gpd_cupti_busy_retry(&det, 0, 5 * ms, 100) == 60005 * ms);
}

/* Precedence of the mode: GPUPROF_CUDA_TRACE > the daemon's policy > full. */
static void test_resolve(void **st) {
  (void)st;
  gpd_cupti_mode_t m;
  char text[48];
  gpd_shim_policy_t duty = {.mode = "duty", .window_ms = 10, .period_ms = 3000, .budget_bp = 100};
  gpd_shim_policy_t det = {.mode = "detached"}, full = {.mode = "full"};
  /* no daemon policy: full tracing, as before policies */
  assert_int_equal(gpd_cupti_mode_resolve(NULL, NULL, &m, text, sizeof text), GPD_CUPTI_SRC_DEFAULT);
  assert_int_equal(m.mode, GPD_CUPTI_FULL);
  assert_int_equal(m.finalize, 0);
  assert_string_equal(text, "full");
  /* the daemon's policy */
  assert_int_equal(gpd_cupti_mode_resolve(NULL, &duty, &m, text, sizeof text), GPD_CUPTI_SRC_DAEMON);
  assert_int_equal(m.mode, GPD_CUPTI_DUTY);
  assert_int_equal(m.window_ms, 10);
  assert_int_equal(m.period_ms, 3000);
  assert_int_equal(m.finalize, 1);
  assert_int_equal(m.ops, OPS_ALL);
  assert_string_equal(text, "duty:10/3");
  assert_int_equal(gpd_cupti_mode_resolve("", &det, &m, text, sizeof text), GPD_CUPTI_SRC_DAEMON);
  assert_int_equal(m.mode, GPD_CUPTI_DETACHED);
  assert_string_equal(text, "detached");
  assert_int_equal(gpd_cupti_mode_resolve(NULL, &full, &m, text, sizeof text), GPD_CUPTI_SRC_DAEMON);
  assert_int_equal(m.mode, GPD_CUPTI_FULL);
  assert_int_equal(m.finalize, 0);
  /* the environment wins, also over a cheaper policy */
  assert_int_equal(gpd_cupti_mode_resolve("full", &duty, &m, text, sizeof text), GPD_CUPTI_SRC_ENV);
  assert_int_equal(m.mode, GPD_CUPTI_FULL);
  assert_string_equal(text, "full");
  assert_int_equal(gpd_cupti_mode_resolve("duty:20/0.5,coarse", &full, &m, text, sizeof text),
                   GPD_CUPTI_SRC_ENV);
  assert_int_equal(m.mode, GPD_CUPTI_DUTY);
  assert_int_equal(m.period_ms, 500);
  assert_int_equal(m.ops, B(GPD_OP_KERNEL) | B(GPD_OP_COPY) | B(GPD_OP_MEMSET));
  assert_string_equal(text, "duty:20/0.5,coarse");
  /* a policy this shim cannot read: the cheapest mode */
  gpd_shim_policy_t odd = {.mode = "sampled", .window_ms = 10, .period_ms = 20};
  assert_int_equal(gpd_cupti_mode_resolve(NULL, &odd, &m, text, sizeof text), GPD_CUPTI_SRC_DAEMON);
  assert_int_equal(m.mode, GPD_CUPTI_DETACHED);
  gpd_shim_policy_t bad = {.mode = "duty", .window_ms = 30, .period_ms = 20};
  assert_int_equal(gpd_cupti_mode_resolve(NULL, &bad, &m, text, sizeof text), GPD_CUPTI_SRC_DAEMON);
  assert_int_equal(m.mode, GPD_CUPTI_DETACHED);
  /* the text of periods that are not whole seconds */
  m.mode = GPD_CUPTI_DUTY;
  m.window_ms = 5;
  m.period_ms = 1250;
  gpd_cupti_mode_text(&m, text, sizeof text);
  assert_string_equal(text, "duty:5/1.25");
  m.period_ms = 1001;
  gpd_cupti_mode_text(&m, text, sizeof text);
  assert_string_equal(text, "duty:5/1.001");
  /* full, switched to at run time: the controller attaches for good */
  uint64_t next = 0;
  gpd_cupti_mode_t fm = {.mode = GPD_CUPTI_FULL};
  assert_int_equal(gpd_cupti_ctl_want(&fm, 0, 0, 0, 5, &next), 1);
  assert_true(next == UINT64_MAX);
}

/* GPUPROF_CUDA_DRAIN_TRIES: decimal 0..1000, else the default (20). */
static void test_drain_tries(void **st) {
  (void)st;
  unsigned t = 7;
  assert_int_equal(gpd_cupti_drain_parse(NULL, &t), 0);
  assert_int_equal(t, 20);
  assert_int_equal(gpd_cupti_drain_parse("", &t), 0);
  assert_int_equal(t, 20);
  assert_int_equal(gpd_cupti_drain_parse("0", &t), 0);
  assert_int_equal(t, 0);
  assert_int_equal(gpd_cupti_drain_parse("1000", &t), 0);
  assert_int_equal(t, 1000);
  static const char *const bad[] = {"1001", "-1", "+3", " 3", "3 ", "3x", "x", "99999999999999999999999"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    t = 7;
    assert_int_equal(gpd_cupti_drain_parse(bad[i], &t), -EINVAL);
    assert_int_equal(t, 20);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_resolve),         cmocka_unit_test(test_drain_tries),
      cmocka_unit_test(test_parse_modes),     cmocka_unit_test(test_parse_ops),
      cmocka_unit_test(test_parse_bad),       cmocka_unit_test(test_schedule),
      cmocka_unit_test(test_estimate_steady), cmocka_unit_test(test_estimate_slowed),
      cmocka_unit_test(test_estimate_edges),
      cmocka_unit_test(test_ctl_want),        cmocka_unit_test(test_busy),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

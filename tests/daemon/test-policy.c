/* test-policy.c - the collection policy: [collect] and its override
 * sections (config.c), their precedence for one process (policy.c
 * gpd_policy_resolve, gpd_policy_why), run-time changes
 * (gpd_config_collect_set), bad sections with their exact file:line
 * message, and the governor's arithmetic (governor.c) with known numbers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "governor.h"
#include "policy.h"
#include "gpuprof/error.h"

static char tmpdir[] = "/tmp/gpd-test-policy-XXXXXX";

#include "conf-file.h"

static void load(gpd_config_t *c, const char *text) {
  char err[512];
  gpd_config_defaults(c);
  int rc = gpd_config_load(c, write_conf("p.conf", text), 1, err, sizeof err);
  if (rc)
    fail_msg("load: %s", err);
}

static const char conf[] = "[collect]\n"
                           "budget = 0.5%\n"
                           "period_ms = 4s\n"
                           "[collect \"exe=*/python3*\"]\n" /* line 4 */
                           "window_ms = 20\n"
                           "budget = 2\n"
                           "[collect \"uid=1000\"]\n" /* line 7 */
                           "budget = 3 %\n"
                           "[collect \"job=1234\"]\n" /* line 9 */
                           "mode = full\n"
                           "[collect \"exe=/opt/*\"]\n" /* line 11 */
                           "mode = detached\n";

static void test_defaults(void **st) {
  (void)st;
  gpd_config_t c;
  gpd_policy_t p;
  gpd_config_defaults(&c);
  assert_int_equal(c.collect.mode, GPD_COLLECT_DUTY);
  assert_int_equal(c.collect.window_ms, 100);
  assert_int_equal(c.collect.period_ms, 10000);
  assert_int_equal(c.collect.period_min_ms, 500);
  assert_int_equal(c.collect.period_max_ms, 60000);
  assert_int_equal(c.collect.pcs_window_ms, 0);
  assert_int_equal(c.collect.cpu_hz, 0);
  assert_int_equal(c.collect.budget_bp, 100);
  assert_int_equal(c.collect.governor, 1);
  assert_int_equal(c.ncollect_rules, 0);
  gpd_policy_resolve(&c, "77", 1000, "/usr/bin/python3", &p);
  assert_string_equal(p.rule, "[collect]");
  for (unsigned k = 0; k < GPD_COLLECT_NKEYS; k++)
    assert_int_equal(p.src[k], GPD_POLICY_SRC_DEFAULT);
}

/* conf < exe < uid < job, key by key; sections that do not match change
 * nothing. */
static void test_precedence(void **st) {
  (void)st;
  gpd_config_t c;
  gpd_policy_t p;
  char why[1024];
  load(&c, conf);
  assert_int_equal(c.ncollect_rules, 4);
  /* a section's line is its first key's (inih reports keys, not headers) */
  assert_int_equal(c.collect_rules[0].line, 5);
  assert_int_equal(c.collect_rules[1].line, 8);
  assert_int_equal(c.collect_rules[2].line, 10);

  /* nothing matches: [collect] over the defaults */
  gpd_policy_resolve(&c, "9", 500, "/usr/bin/app", &p);
  assert_int_equal(p.v.mode, GPD_COLLECT_DUTY);
  assert_int_equal(p.v.window_ms, 100);
  assert_int_equal(p.v.period_ms, 4000);
  assert_int_equal(p.v.budget_bp, 50);
  assert_string_equal(p.rule, "[collect]");

  /* exe only */
  gpd_policy_resolve(&c, NULL, 500, "/usr/bin/python3.11", &p);
  assert_int_equal(p.v.window_ms, 20);
  assert_int_equal(p.v.budget_bp, 200);
  assert_int_equal(p.v.period_ms, 4000);
  assert_string_equal(p.rule, "[collect] < [collect \"exe=*/python3*\"]");

  /* exe + uid: uid's budget wins, exe's window stays */
  gpd_policy_resolve(&c, "", 1000, "/usr/bin/python3", &p);
  assert_int_equal(p.v.window_ms, 20);
  assert_int_equal(p.v.budget_bp, 300);
  assert_int_equal(p.src[1], 0);  /* window_ms: section 0 */
  assert_int_equal(p.src[8], 1);  /* budget: section 1 */
  assert_int_equal(p.src[2], GPD_POLICY_SRC_BASE);
  assert_int_equal(p.src[3], GPD_POLICY_SRC_DEFAULT);

  /* exe + uid + job: job's mode; a second exe section (file order) */
  gpd_policy_resolve(&c, "1234", 1000, "/opt/python3", &p);
  assert_int_equal(p.v.mode, GPD_COLLECT_FULL);
  assert_int_equal(p.v.budget_bp, 300);
  assert_string_equal(p.rule, "[collect] < [collect \"exe=*/python3*\"] < [collect \"exe=/opt/*\"] < "
                              "[collect \"uid=1000\"] < [collect \"job=1234\"]");
  gpd_policy_why(&c, &p, why, sizeof why);
  assert_string_equal(why, "mode=full ([collect \"job=1234\"]), window_ms=20 ([collect \"exe=*/python3*\"]), "
                           "period_ms=4000 ([collect]), period_min_ms=500 (default), period_max_ms=60000 "
                           "(default), pc_window_ms=0 (default), pc_period_s=300 (default), cpu_sample_hz=0 "
                           "(default), budget=3.00% ([collect \"uid=1000\"]), governor=1 (default)");
  /* job ids match exactly, not as patterns */
  gpd_policy_resolve(&c, "12345", 1001, NULL, &p);
  assert_int_equal(p.v.mode, GPD_COLLECT_DUTY);
}

/* gpuprof policy set: a new section after the file's, an existing one
 * changed, [collect] itself; refused changes leave nothing behind. */
static void test_set(void **st) {
  (void)st;
  gpd_config_t c;
  gpd_policy_t p;
  char why[256];
  load(&c, conf);
  assert_int_equal(gpd_config_collect_set(&c, "uid=2000", "mode", "detached", why, sizeof why), 0);
  assert_int_equal(c.ncollect_rules, 5);
  assert_int_equal(c.collect_rules[4].runtime, 1);
  gpd_policy_resolve(&c, NULL, 2000, NULL, &p);
  assert_int_equal(p.v.mode, GPD_COLLECT_DETACHED);
  assert_string_equal(p.rule, "[collect] < [collect \"uid=2000\"] (set at run time)");
  /* the job section from the file, changed */
  assert_int_equal(gpd_config_collect_set(&c, "job=1234", "budget", "0.25%", why, sizeof why), 0);
  assert_int_equal(c.ncollect_rules, 5);
  gpd_policy_resolve(&c, "1234", 1000, NULL, &p);
  assert_int_equal(p.v.budget_bp, 25);
  assert_int_equal(p.v.mode, GPD_COLLECT_FULL);
  /* [collect] */
  assert_int_equal(gpd_config_collect_set(&c, NULL, "period_ms", "2s", why, sizeof why), 0);
  assert_int_equal(c.collect.period_ms, 2000);
  /* refused: bad key, bad value, a window as long as the period, bad selector */
  gpd_config_t before = c;
  assert_int_equal(gpd_config_collect_set(&c, NULL, "nosuch", "1", why, sizeof why), GPD_ECONFIG);
  assert_string_equal(why, "unknown policy key 'nosuch' (see gpuprof policy)");
  assert_int_equal(gpd_config_collect_set(&c, "uid=5", "budget", "0.123", why, sizeof why), GPD_ECONFIG);
  assert_string_equal(why, "finer than the key's unit");
  assert_int_equal(gpd_config_collect_set(&c, "uid=5", "window_ms", "2s", why, sizeof why), GPD_ECONFIG);
  assert_string_equal(why, "window_ms (2000) must be shorter than period_ms (2000)");
  assert_int_equal(gpd_config_collect_set(&c, "host=x", "mode", "full", why, sizeof why), GPD_ECONFIG);
  assert_string_equal(why, "override section must be exe=PATTERN, uid=U or job=J");
  assert_int_equal(gpd_config_collect_set(&c, "uid=abc", "mode", "full", why, sizeof why), GPD_ECONFIG);
  assert_memory_equal(&c, &before, sizeof c);
  /* the bound */
  for (unsigned i = c.ncollect_rules; i < GPD_COLLECT_RULES_MAX; i++) {
    char sel[32];
    snprintf(sel, sizeof sel, "job=j%u", i);
    assert_int_equal(gpd_config_collect_set(&c, sel, "mode", "full", why, sizeof why), 0);
  }
  assert_int_equal(gpd_config_collect_set(&c, "job=onemore", "mode", "full", why, sizeof why), -ENOSPC);
  assert_int_equal(c.ncollect_rules, GPD_COLLECT_RULES_MAX);
}

/* Bad sections and values: exact messages, file:line of the line at fault
 * (of the section for a combination). */
static void test_bad(void **st) {
  (void)st;
  static const struct {
    const char *text, *msg;
  } cases[] = {
      {"[collect]\nmode = fast\n", "%s:2: 'mode = fast': expected full, detached or duty"},
      {"[collect]\nbudget = 1.234%\n", "%s:2: 'budget = 1.234%%': finer than the key's unit"},
      {"[collect]\nbudget = 101%\n", "%s:2: 'budget = 101%%': out of range [0, 10000]"},
      {"[collect]\nbudget = x\n",
       "%s:2: 'budget = x': not a percentage (number with at most 2 decimals, optional %%)"},
      {"[collect \"host=a\"]\nmode = full\n",
       "%s:2: 'mode = full': override section must be exe=PATTERN, uid=U or job=J"},
      {"[collect uid=1]\nmode = full\n",
       "%s:2: 'mode = full': override section must read [collect \"exe=PATTERN\"], [collect \"uid=U\"] or "
       "[collect \"job=J\"]"},
      {"[collect \"uid=x\"]\nmode = full\n", "%s:2: 'mode = full': override section: uid must be a number"},
      {"[collect \"job=7\"]\nwindow = 3\n", "%s:2: 'window = 3': unknown key 'window' in [collect]"},
      {"[collect]\nwindow_ms = 3s\nperiod_ms = 2s\n",
       "%s: [collect]: window_ms (3000) must be shorter than period_ms (2000)"},
      {"[collect]\n\n[collect \"uid=1000\"]\nwindow_ms = 15s\n",
       "%s:4: [collect \"uid=1000\"]: window_ms (15000) must be shorter than period_ms (10000)"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    gpd_config_t c;
    char err[512], want[512];
    const char *path = write_conf("bad.conf", cases[i].text);
    gpd_config_defaults(&c);
    assert_int_equal(gpd_config_load(&c, path, 1, err, sizeof err), GPD_ECONFIG);
    snprintf(want, sizeof want, cases[i].msg, path);
    assert_string_equal(err, want);
  }
}

/* The governor with known numbers (governor.c):
 *   10 windows of 10 ms (T_in = 100 ms) with 4 000 launches: r_in = 40/ms;
 *   switching 100 ms in all (10 ms per window); elapsed 30.1 s, so
 *   T_out = 29.9 s with 1 495 000 launches: r_out = 50/ms;
 *   c_window = 50/40 - 1 = 0.25, c_between = 15 ns * 50/ms = 0.00075;
 *   P* = (10 ms * 0.25 + 10 ms) / (B - 0.00075):
 *     B = 1 %:   12.5 / 0.00925 = 1351.35 -> 1352 ms
 *     B = 0.5 %: 12.5 / 0.00425 = 2941.18 -> 2942 ms
 *     B = 3 %:   12.5 / 0.02925 =  427.35 -> 500 ms (period_min)
 *     B = 0.05 %: B <= c_between -> 60000 ms, over. */
/* Student's t table and the running spread (governor.c). */
static void test_governor_spread(void **st) {
  (void)st;
  assert_true(gpd_governor_t95(1) == 6.314);
  assert_true(gpd_governor_t95(4) == 2.132);
  assert_true(gpd_governor_t95(11) == 1.812); /* between rows: the smaller df's */
  assert_true(gpd_governor_t95(30) == 1.697);
  assert_true(gpd_governor_t95(31) == 1.645);
  gpd_governor_spread_t s = {0};
  assert_true(gpd_governor_spread_sd(&s) == 0);
  gpd_governor_spread_add(&s, 1);
  assert_true(gpd_governor_spread_sd(&s) == 0);
  gpd_governor_spread_add(&s, 2);
  gpd_governor_spread_add(&s, 3);
  gpd_governor_spread_add(&s, 4);
  /* 1..4: mean 2.5, sample variance 5/3 */
  assert_int_equal(s.n, 4);
  assert_true(s.mean > 2.5 - 1e-12 && s.mean < 2.5 + 1e-12);
  assert_true(fabs(gpd_governor_spread_sd(&s) - sqrt(5.0 / 3.0)) < 1e-12);
  /* one window of 100 ms: 400 launches, 400 timed at 6 us each, against
   * 3.5 us between: d = 2.5 us, c = 2.5 us * 400 / 100 ms = 0.01 */
  double c = -1;
  assert_int_equal(gpd_governor_window_c(1, 400, 400ull * 6000, 400, 100000000ull, 1000, 1000ull * 3500, &c), 1);
  assert_true(c > 0.01 - 1e-12 && c < 0.01 + 1e-12);
  /* faster inside: 0, not negative */
  assert_int_equal(gpd_governor_window_c(1, 400, 400ull * 3000, 400, 100000000ull, 1000, 1000ull * 3500, &c), 1);
  assert_true(c == 0);
  /* no window closed; too few timed inside; too few timed between */
  assert_int_equal(gpd_governor_window_c(0, 400, 400ull * 6000, 400, 100000000ull, 1000, 1000ull * 3500, &c), 0);
  assert_int_equal(gpd_governor_window_c(1, 15, 15ull * 6000, 400, 100000000ull, 1000, 1000ull * 3500, &c), 0);
  assert_int_equal(gpd_governor_window_c(1, 400, 400ull * 6000, 400, 100000000ull, 15, 15ull * 3500, &c), 0);
}

static void test_governor(void **st) {
  (void)st;
  gpd_governor_in_t in = {.elapsed_ns = 30100000000ull,
                          .window_ns = 100000000ull,
                          .windows = 10,
                          .launches = 1499000,
                          .launches_in = 4000,
                          .switch_ns = 100000000ull,
                          .window_ms = 10,
                          .period_ms = 3000,
                          .period_min_ms = 500,
                          .period_max_ms = 60000,
                          .budget_bp = 100};
  gpd_governor_out_t g;
  assert_int_equal(gpd_governor_size(&in, &g), 0);
  assert_int_equal(g.how, GPD_GOV_MEASURED);
  assert_true(g.c_window > 0.25 - 1e-12 && g.c_window < 0.25 + 1e-12);
  assert_true(g.c_between > 0.00075 - 1e-12 && g.c_between < 0.00075 + 1e-12);
  assert_true(g.t_switch_ns > 1e7 - 1e-3 && g.t_switch_ns < 1e7 + 1e-3);
  assert_int_equal(g.period_ms, 1352);
  assert_int_equal(g.over, 0);
  /* s(1352) = 12.5 / 1352 + 0.00075 = 0.0099956 <= 1 % */
  assert_true(g.slowdown > 0.0099955 && g.slowdown < 0.0099957);
  in.budget_bp = 50;
  assert_int_equal(gpd_governor_size(&in, &g), 0);
  assert_int_equal(g.period_ms, 2942);
  in.budget_bp = 300;
  assert_int_equal(gpd_governor_size(&in, &g), 0);
  assert_int_equal(g.period_ms, 500);
  /* s(500) = 0.025 + 0.00075 */
  assert_true(g.slowdown > 0.02575 - 1e-9 && g.slowdown < 0.02575 + 1e-9);
  in.budget_bp = 5;
  assert_int_equal(gpd_governor_size(&in, &g), 0);
  assert_int_equal(g.period_ms, 60000);
  assert_int_equal(g.over, 1);
  /* per launch: 62 launches timed inside windows at 6 us each, 23 359
   * between at 3.5 us: d = 2.5 us, c_window = 2.5 us * 4 000 / 100 ms
   * = 0.1 (the rates' 0.25 is not used); P* = (10 ms * 0.1 + 10 ms) /
   * (0.01 - 0.00075) = 1189.19 -> 1190 ms */
  in.budget_bp = 100;
  in.timed_in = 62;
  in.timed_in_ns = 62ull * 6000;
  in.timed_out = 23359;
  in.timed_out_ns = 23359ull * 3500;
  assert_int_equal(gpd_governor_size(&in, &g), 0);
  assert_int_equal(g.per_launch, 1);
  assert_true(g.launch_ns > 2500 - 1e-6 && g.launch_ns < 2500 + 1e-6);
  assert_true(g.c_window > 0.1 - 1e-12 && g.c_window < 0.1 + 1e-12);
  assert_int_equal(g.period_ms, 1190);
  assert_true(g.c_hi == g.c_window && g.c_n == 0); /* no spread given */
  /* the spread of 5 per-window estimates, sd 0.04: c_hi = 0.1 + t_0.95(4)
   * 0.04 / sqrt(5) = 0.1 + 2.132 * 0.0178885 = 0.1381384; P* = (10 ms *
   * 0.1381384 + 10 ms) / 0.00925 = 1230.42 -> 1231 ms; s at c_window
   * 11 / 1231 + 0.00075 = 0.0096858, at c_hi 0.0099956 */
  in.c_n = 5;
  in.c_sd = 0.04;
  assert_int_equal(gpd_governor_size(&in, &g), 0);
  assert_int_equal(g.c_n, 5);
  assert_true(g.c_hi > 0.1381383 && g.c_hi < 0.1381385);
  assert_int_equal(g.period_ms, 1231);
  assert_true(g.slowdown > 0.0096857 && g.slowdown < 0.0096859);
  assert_true(g.slowdown_hi > 0.0099955 && g.slowdown_hi < 0.0099957);
  /* 2 per-window estimates: too few for a spread */
  in.c_n = 2;
  assert_int_equal(gpd_governor_size(&in, &g), 0);
  assert_true(g.c_hi == g.c_window && g.c_n == 0);
  assert_int_equal(g.period_ms, 1190);
  in.c_n = 0;
  in.c_sd = 0;
  /* faster inside than between (noise): no added cost, not negative */
  in.timed_in_ns = 62ull * 3000;
  assert_int_equal(gpd_governor_size(&in, &g), 0);
  assert_true(g.launch_ns == 0 && g.c_window == 0);
  /* 15 timed inside: too few, back to the launch rates (0.25) */
  in.timed_in = 15;
  assert_int_equal(gpd_governor_size(&in, &g), 0);
  assert_int_equal(g.per_launch, 0);
  assert_true(g.c_window > 0.25 - 1e-12 && g.c_window < 0.25 + 1e-12);
  in.timed_in = in.timed_in_ns = in.timed_out = in.timed_out_ns = 0;
  /* tracing that costs nothing inside (GPU-bound: equal rates) */
  in.launches = 4000 + 1196000; /* r_out = 40/ms */
  assert_int_equal(gpd_governor_size(&in, &g), 0);
  assert_true(g.c_window < 1e-12);
  /* P* = 10 ms / (0.01 - 0.0006) = 1063.83 -> 1064 */
  assert_int_equal(g.period_ms, 1064);
  /* too few windows: the policy's period stands */
  in.windows = 2;
  assert_int_equal(gpd_governor_size(&in, &g), 0);
  assert_int_equal(g.how, GPD_GOV_EARLY);
  assert_int_equal(g.period_ms, 3000);
  assert_true(g.slowdown < 0);
  /* windows enough, 199 launches inside them but plenty between (the
   * windows fell in waits): no estimate yet, the period stands */
  in.windows = 10;
  in.launches_in = 199;
  assert_int_equal(gpd_governor_size(&in, &g), 0);
  assert_int_equal(g.how, GPD_GOV_EARLY);
  assert_int_equal(g.period_ms, 3000);
  /* few launches on both sides (they bypass libcudart): the smallest duty */
  in.launches = 199 + 199;
  assert_int_equal(gpd_governor_size(&in, &g), 0);
  assert_int_equal(g.how, GPD_GOV_UNKNOWN);
  assert_int_equal(g.period_ms, 60000);
  /* bad input */
  in.period_min_ms = 10;
  assert_int_equal(gpd_governor_size(&in, &g), -22);
  assert_int_equal(gpd_governor_size(NULL, &g), -22);
}

int main(void) {
  if (!mkdtemp(tmpdir))
    return 1;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_defaults), cmocka_unit_test(test_precedence), cmocka_unit_test(test_set),
      cmocka_unit_test(test_bad),      cmocka_unit_test(test_governor),
      cmocka_unit_test(test_governor_spread),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
  if (system(cmd) != 0)
    rc = rc ? rc : 1;
  return rc;
}

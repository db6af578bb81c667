/* test-idle.c - idleness blame (cli/idle.c) on a hand-built trace with
 * known numbers: one process, kernels at [0, 10) and [1000, 1010) ns (one
 * idle interval of 990 ns), one thread that launches at 5 and 995 and
 * waits in a synchronization [900, 990) called at 900.
 *   - with CPU samples in the interval (20 at context 400, 1 at 500): the
 *     sync's 90 ns are "waiting" on its call site, the other 900 ns are
 *     split evenly over the 21 samples; the interval is labelled with the
 *     context whose blame summed over it is largest (400: 857 ns), not
 *     with the largest single entry (the 90 ns wait);
 *   - without samples: span by span on the call that ends the span.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gpuprof/record.h"
#include "trace.h"

#define PROF 1

static gpd_tproc_t proc = {.profile_id = PROF, .pid = 42};

static gpd_xev_t ev[] = {
    {.profile = PROF, .start = 0, .end = 10, .corr = 1, .node = 11, .op = GPD_OP_KERNEL},
    {.profile = PROF, .start = 900, .end = 990, .corr = 9, .node = 12, .op = GPD_OP_SYNC},
    {.profile = PROF, .start = 1000, .end = 1010, .corr = 2, .node = 11, .op = GPD_OP_KERNEL},
};
static gpd_xlaunch_t la[] = {
    {.profile = PROF, .ts = 5, .corr = 1, .node = 100, .tid = 7, .op = GPD_OP_KERNEL},
    {.profile = PROF, .ts = 900, .corr = 9, .node = 300, .tid = 7, .op = GPD_OP_SYNC},
    {.profile = PROF, .ts = 995, .corr = 2, .node = 200, .tid = 7, .op = GPD_OP_KERNEL},
};

static void trace_of(gpd_xtrace_t *x, gpd_xsample_t *cs, size_t ncs) {
  memset(x, 0, sizeof *x);
  x->tree.procs = &proc;
  x->tree.nprocs = 1;
  x->ev = ev;
  x->nev = sizeof ev / sizeof ev[0];
  x->la = la;
  x->nla = sizeof la / sizeof la[0];
  x->cs = cs;
  x->ncs = ncs;
}

/* gpd_idle_xtrace of the trace with samples cs[0..ncs): exactly one interval */
typedef struct {
  gpd_xgap_t *gaps;
  gpd_xblame_t *bl;
  size_t ngaps, nbl;
  double idle, span;
} result_t;

static result_t idle_of(gpd_xsample_t *cs, size_t ncs) {
  gpd_xtrace_t x;
  result_t r = {0};
  trace_of(&x, cs, ncs);
  assert_int_equal(gpd_idle_xtrace(&x, &r.gaps, &r.ngaps, &r.bl, &r.nbl, &r.idle, &r.span), 0);
  assert_int_equal(r.ngaps, 1);
  assert_int_equal(r.gaps[0].start, 10);
  assert_int_equal(r.gaps[0].end, 1000);
  assert_true(r.idle == 990 && r.span == 1010);
  return r;
}

static const gpd_xblame_t *find(const gpd_xblame_t *bl, size_t n, uint64_t node, int sync) {
  for (size_t i = 0; i < n; i++)
    if (bl[i].node == node && bl[i].cpu == sync)
      return &bl[i];
  return NULL;
}

static void test_samples(void **st) {
  (void)st;
  gpd_xsample_t cs[21];
  for (int i = 0; i < 21; i++) /* one in the wait, the rest around it */
    cs[i] = (gpd_xsample_t){.profile = PROF, .ts = 20 + 40 * (uint64_t)i, .node = i == 3 ? 500 : 400,
                            .tid = 7};
  result_t res = idle_of(cs, 21);
  gpd_xgap_t *gaps = res.gaps;
  gpd_xblame_t *bl = res.bl;
  size_t nbl = res.nbl;
  /* the label: context 400 with 20/21 of the 900 running ns */
  assert_int_equal(gaps[0].node, 400);
  assert_int_equal(gaps[0].cpu, 0);
  assert_true(gaps[0].ns > 857.1 && gaps[0].ns < 857.2);
  /* the blame, largest first: 400 running, 300 waiting 90, 500 running */
  assert_int_equal(nbl, 3);
  assert_int_equal(bl[0].node, 400);
  const gpd_xblame_t *w = find(bl, nbl, 300, 1), *r = find(bl, nbl, 500, 0);
  assert_non_null(w);
  assert_non_null(r);
  assert_true(w->ns == 90);
  assert_true(r->ns > 42.8 && r->ns < 42.9);
  free(gaps);
  free(bl);
}

static void test_no_samples(void **st) {
  (void)st;
  result_t res = idle_of(NULL, 0);
  gpd_xgap_t *gaps = res.gaps;
  gpd_xblame_t *bl = res.bl;
  size_t nbl = res.nbl;
  /* no CPU samples: the CPU context is unknown, the call that ends each
   * span kept as a hint.  [10, 900) ends in the sync's call (300,
   * unknown); [900, 995) in the launch at 995: its [900, 990) is the wait
   * (300, waiting), 5 ns on 200; [995, 1000) past the last launch: 200
   * again */
  assert_int_equal(nbl, 3);
  const gpd_xblame_t *a = find(bl, nbl, 300, GPD_XCPU_UNKNOWN), *b = find(bl, nbl, 300, GPD_XCPU_WAITING),
                     *c = find(bl, nbl, 200, GPD_XCPU_UNKNOWN);
  assert_non_null(a);
  assert_non_null(b);
  assert_non_null(c);
  assert_true(a->ns == 890 && b->ns == 90 && c->ns == 10);
  assert_int_equal(gaps[0].node, 300);
  assert_int_equal(gaps[0].cpu, GPD_XCPU_UNKNOWN);
  assert_string_equal(gpd_idle_cpu_name(gaps[0].cpu), "unknown");
  assert_true(gaps[0].ns == 890);
  free(gaps);
  free(bl);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_samples),
      cmocka_unit_test(test_no_samples),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

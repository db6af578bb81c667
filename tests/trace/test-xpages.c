/* test-xpages.c - a trace written page by page (cli/xlayout.c, as
 * `gpuprof trace --pid N --duration D` writes a live window) is the same
 * file, byte for byte, as the trace written whole, in both formats, with
 * pages of 1, 7 and 50 rows: launches two pages before their kernels
 * (flows), slices open across many pages (a stream whose operations
 * overlap: lanes), host-timed syncs on their thread, copies with bytes,
 * CPU samples of a thread that launches nothing (its track after the
 * launching thread's).  The fixture keeps the GPU busy from the first
 * operation to the last (back-to-back kernels on 4 streams): per-page idle
 * intervals equal the whole trace's (none).  The writer holds one page of
 * rows at most, and what it carries between pages (launches awaiting
 * their activities, open slices) is the same for 1 000 and 8 000
 * operations: bounded independently of the trace's length.  Rows that
 * change between the scan and the write need a new scan (-EAGAIN). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gpuprof/record.h"
#include "xwrite.h"

#define NSITE 5
#define T0 1000000000ull

/* one process, one launching thread (tid 10), 5 call sites under main */
static void build_paused(gpd_xtrace_t *x, size_t n, int pause) {
  gpd_tree_t *t = &x->tree;
  uint64_t ph[NSITE], kn[NSITE], sy[NSITE], cp[NSITE];
  char fn[64];
  gpd_tree_node_add(t, 1, 0, GPD_NODE_ROOT, "<program root>", "", 0, "");
  gpd_tree_frame_add(t, (size_t)gpd_tree_node_add(t, 2, 1, GPD_NODE_FRAME, "", "app", 0x10, ""), "main",
                     "app.c", 10, 0);
  for (int s = 0; s < NSITE; s++) {
    uint64_t id = 10 + 10 * (uint64_t)s;
    snprintf(fn, sizeof fn, "step%d", s);
    gpd_tree_frame_add(t, (size_t)gpd_tree_node_add(t, id, 2, GPD_NODE_FRAME, "", "app", 0x100 + s, ""), fn,
                       "app.c", 20 + s, 0);
    ph[s] = id + 1;
    gpd_tree_node_add(t, ph[s], id, GPD_NODE_PLACEHOLDER, "<gpu kernel>", "", 0, "");
    kn[s] = id + 2;
    snprintf(fn, sizeof fn, "kernel_%d<float>(int)", s);
    gpd_tree_node_add(t, kn[s], ph[s], GPD_NODE_KERNEL, fn, "", 0, fn);
    sy[s] = id + 3;
    gpd_tree_node_add(t, sy[s], id, GPD_NODE_PLACEHOLDER, "<gpu sync>", "", 0, "");
    cp[s] = id + 4;
    gpd_tree_node_add(t, cp[s], id, GPD_NODE_PLACEHOLDER, "<gpu copy>", "", 0, "");
  }
  gpd_tproc_t *pr = gpd_tree_proc_new(t);
  pr->profile_id = 1;
  pr->pid = 10;
  pr->exe = strdup("/bin/app");
  assert_int_equal(gpd_tree_finish(t, 0), 0);
  x->ev = calloc(n, sizeof *x->ev);
  x->la = calloc(n + 2, sizeof *x->la);
  x->cs = calloc(n / 3 + 1, sizeof *x->cs);
  assert_true(x->ev && x->la && x->cs);
  /* launch i at T0 + 1000 i; its operation 5003 ns later: a kernel of
   * 4000 ns on stream i % 4 (back to back), every 7th a kernel of
   * 12 000 ns on stream 4 (overlapping: 2 lanes), every 20th a sync of
   * 500 ns on the thread, every 50th a copy */
  for (size_t i = 0; i < n; i++) {
    int s = (int)(i % NSITE);
    uint64_t ts = T0 + 1000 * i + (pause ? i / 100 * 20000 : 0);
    unsigned op = i % 20 == 19 ? GPD_OP_SYNC : i % 50 == 49 ? GPD_OP_COPY : GPD_OP_KERNEL;
    uint64_t node = op == GPD_OP_SYNC ? sy[s] : op == GPD_OP_COPY ? cp[s] : ph[s];
    x->la[i] = (gpd_xlaunch_t){.profile = 1, .ts = ts, .corr = i + 1, .node = node, .tid = 10, .op = (uint8_t)op};
    uint64_t start = op == GPD_OP_SYNC ? ts + 100 : ts + 5003;
    int wide = op == GPD_OP_KERNEL && i % 7 == 6;
    uint64_t dur = op == GPD_OP_SYNC ? 500 : wide ? 12000 : 4000;
    x->ev[i] = (gpd_xev_t){.profile = 1, .start = start, .end = start + dur, .corr = i + 1,
                           .node = op == GPD_OP_KERNEL ? kn[s] : node, .bytes = op == GPD_OP_COPY ? 4096 : 0,
                           .stream = wide ? 4 : (uint32_t)(i % 4),
                           .op = (uint8_t)op, .subkind = op == GPD_OP_COPY ? 1 : 0};
  }
  for (size_t j = 0; j < n / 3; j++)
    x->cs[j] = (gpd_xsample_t){.profile = 1, .ts = T0 + 3000 * j + 500, .node = 10 + 10 * (j % NSITE),
                               .tid = pause && j % 2 ? 10 : 77};
  x->nev = x->nla = n;
  x->ncs = n / 3;
  gpd__xtrace_sort(x);
}

static void build(gpd_xtrace_t *x, size_t n) { build_paused(x, n, 0); }

/* Pages of k rows of trace x: the rows of the k earliest times (all
 * distinct in the fixture), copied into a page of their own. */
typedef struct {
  gpd_xpages_t src;
  const gpd_xtrace_t *x;
  size_t k, iev, ila, ics;
  gpd_xtrace_t pg;
} kpages_t;

static int kp_next(gpd_xpages_t *s, gpd_xtrace_t **page, uint64_t *hi) {
  kpages_t *p = (kpages_t *)s;
  const gpd_xtrace_t *x = p->x;
  p->pg.nev = p->pg.nla = p->pg.ncs = 0;
  uint64_t last = 0;
  for (size_t n = 0; n < p->k; n++) {
    uint64_t te = p->iev < x->nev ? x->ev[p->iev].start : UINT64_MAX;
    uint64_t tl = p->ila < x->nla ? x->la[p->ila].ts : UINT64_MAX;
    uint64_t tc = p->ics < x->ncs ? x->cs[p->ics].ts : UINT64_MAX;
    if (te == UINT64_MAX && tl == UINT64_MAX && tc == UINT64_MAX)
      break;
    if (te <= tl && te <= tc)
      p->pg.ev[p->pg.nev++] = x->ev[p->iev++], last = te;
    else if (tl <= tc)
      p->pg.la[p->pg.nla++] = x->la[p->ila++], last = tl;
    else
      p->pg.cs[p->pg.ncs++] = x->cs[p->ics++], last = tc;
  }
  if (p->pg.nev + p->pg.nla + p->pg.ncs == 0)
    return 0;
  *page = &p->pg;
  *hi = last;
  return 1;
}

static int kp_rewind(gpd_xpages_t *s) {
  kpages_t *p = (kpages_t *)s;
  p->iev = p->ila = p->ics = 0;
  return 0;
}

/* launches without activity the scan of write_k finds */
static long missing;

/* the trace x written whole (k 0) or in pages of k rows, as format fmt
 * (0 Perfetto, 1 Chrome JSON with launches); *out malloc'd, *l: the
 * layout's counters */
static size_t write_k(const gpd_xtrace_t *x, size_t k, int fmt, char **out, gpd_xlayout_t *lc) {
  size_t len = 0;
  FILE *f = open_memstream(out, &len);
  assert_non_null(f);
  gpd_xlayout_t l;
  if (k == 0) {
    assert_int_equal(fmt ? gpd_xwrite_chrome_launches(f, x) : gpd_xwrite_perfetto(f, x), 0);
    memset(lc, 0, sizeof *lc);
  } else {
    kpages_t p = {.src = {kp_next, kp_rewind}, .x = x, .k = k};
    p.pg.ev = calloc(k, sizeof *p.pg.ev);
    p.pg.la = calloc(k, sizeof *p.pg.la);
    p.pg.cs = calloc(k, sizeof *p.pg.cs);
    gpd__xlayout_open(&l, x, 0, 0);
    assert_int_equal(gpd__xlayout_scan(&l, &p.src), 0);
    assert_int_equal(l.nev, x->nev);
    assert_int_equal(l.nla, x->nla);
    assert_int_equal(l.ncs, x->ncs);
    assert_int_equal(l.missing, missing);
    assert_int_equal(fmt ? gpd__xwrite_chrome_pages(f, &l, &p.src, 1) : gpd__xwrite_perfetto_pages(f, &l, &p.src), 0);
    *lc = l; /* counters only: its arrays are freed */
    gpd__xlayout_free(&l);
    free(p.pg.ev);
    free(p.pg.la);
    free(p.pg.cs);
  }
  assert_int_equal(fclose(f), 0);
  return len;
}

static size_t count(const char *s, const char *what) {
  size_t n = 0;
  for (const char *p = s; (p = strstr(p, what)) != NULL; p++)
    n++;
  return n;
}

static void test_same_file(void **state) {
  (void)state;
  gpd_xtrace_t x;
  gpd_xtrace_init(&x);
  build(&x, 1000);
  for (int fmt = 0; fmt < 2; fmt++) {
    char *whole, *paged;
    gpd_xlayout_t lc;
    size_t n = write_k(&x, 0, fmt, &whole, &lc);
    assert_true(n > 20000);
    static const size_t ks[] = {1, 7, 50};
    for (size_t j = 0; j < 3; j++) {
      size_t m = write_k(&x, ks[j], fmt, &paged, &lc);
      assert_int_equal(m, n);
      assert_memory_equal(paged, whole, n);
      assert_int_equal(lc.max_rows, ks[j]);
      assert_int_equal(lc.nth, 2); /* tid 10 (launches), then 77 (samples) */
      assert_int_equal(lc.nst, 6); /* streams 0-3, stream 4's 2 lanes */
      free(paged);
    }
    if (fmt) { /* a flow from each launch but the 50 syncs' to its GPU slice */
      assert_int_equal(count(whole, "\"flow_out\":true"), 950);
      assert_int_equal(count(whole, "\"flow_in\":true"), 950);
      assert_int_equal(count(whole, "\"bind_id\":999,"), 2); /* launch 998: 999 is a sync */
    }
    free(whole);
  }
  gpd_xtrace_free(&x);
}

/* Written in pages of 7 rows, whole or only the launches of its last
 * 500 us (a live window: the launches before it and their operations
 * read, then left out); n operations; *kept: GPU operations written.
 * Returns the most launches + open slices carried between pages. */
static size_t pending(size_t n, int window, size_t *kept) {
  gpd_xtrace_t x;
  gpd_xtrace_init(&x);
  build(&x, n);
  kpages_t p = {.src = {kp_next, kp_rewind}, .x = &x, .k = 7};
  p.pg.ev = calloc(7, sizeof *p.pg.ev);
  p.pg.la = calloc(7, sizeof *p.pg.la);
  p.pg.cs = calloc(7, sizeof *p.pg.cs);
  gpd_xlayout_t l;
  uint64_t to = T0 + 1000 * (n - 1);
  gpd__xlayout_open(&l, &x, window ? to - 500000 : 0, window ? to : 0);
  assert_int_equal(gpd__xlayout_scan(&l, &p.src), 0);
  FILE *f = fopen("/dev/null", "w");
  assert_int_equal(gpd__xwrite_perfetto_pages(f, &l, &p.src), 0);
  fclose(f);
  assert_int_equal(l.max_rows, 7);
  assert_int_equal(l.missing, 0);
  size_t pend = l.max_pending;
  *kept = l.nev;
  gpd__xlayout_free(&l);
  free(p.pg.ev);
  free(p.pg.la);
  free(p.pg.cs);
  gpd_xtrace_free(&x);
  return pend;
}

static void test_bounded(void **state) {
  (void)state;
  size_t k0, k1;
  size_t p0 = pending(1000, 0, &k0), p1 = pending(8000, 0, &k1);
  assert_int_equal(k0, 1000);
  assert_int_equal(k1, 8000);
  assert_true(p0 > 0 && p0 < 40);
  assert_int_equal(p1, p0);
  /* the window: launches 7500..7999 of 8000 (or 500..999 of 1000) */
  p0 = pending(1000, 1, &k0);
  p1 = pending(8000, 1, &k1);
  assert_int_equal(k0, 501);
  assert_int_equal(k1, 501);
  assert_true(p0 > 0 && p0 < 40);
  assert_int_equal(p1, p0);
}

static size_t count_idle(const char *s) { return count(s, "\"name\":\"GPU idle\""); }

/* A trace with idle intervals (the CPU pauses 20 us every 100 launches;
 * half the CPU samples on the launching thread, so that some intervals
 * are blamed on samples, others on the calls that end them): in pages,
 * each interval found and blamed as the pages come (its begin keeps its
 * place in the file until the launch after it that its blame reads has
 * come), the file is byte for byte the file written whole, in both
 * formats; the rows kept for the blame stay about a page. */
static void test_idle(void **state) {
  (void)state;
  gpd_xtrace_t x;
  gpd_xtrace_init(&x);
  build_paused(&x, 1000, 1);
  for (int fmt = 0; fmt < 2; fmt++) {
    char *whole, *paged;
    gpd_xlayout_t lc;
    size_t n = write_k(&x, 0, fmt, &whole, &lc);
    if (fmt)
      assert_int_equal(count_idle(whole), 9); /* the 9 pauses */
    static const size_t ks[] = {1, 7, 50, 333};
    for (size_t j = 0; j < 4; j++) {
      size_t m = write_k(&x, ks[j], fmt, &paged, &lc);
      assert_int_equal(m, n);
      assert_memory_equal(paged, whole, n);
      assert_true(lc.max_idle > 0 && lc.max_idle <= ks[j] + 20);
      free(paged);
    }
    free(whole);
  }
  gpd_xtrace_free(&x);
}

/* More intervals waiting for their blame than places are kept for (a
 * second thread, active throughout, launches only at the start and the
 * end, so that every interval's blame waits for its last launch): the
 * earliest are blamed with the rows at hand; the file still holds every
 * interval, in time order (the same idle slices, begin and duration, as
 * whole; only blames may differ), and every other line as whole. */
static void test_idle_many(void **state) {
  (void)state;
  gpd_xtrace_t x;
  gpd_xtrace_init(&x);
  build_paused(&x, 8000, 1);
  uint64_t last = x.la[x.nla - 1].ts;
  x.la[x.nla++] = (gpd_xlaunch_t){.profile = 1, .ts = T0 - 500, .corr = 100001, .node = 10, .tid = 11};
  x.la[x.nla++] = (gpd_xlaunch_t){.profile = 1, .ts = last + 1, .corr = 100002, .node = 20, .tid = 11};
  gpd__xtrace_sort(&x);
  char *whole, *paged;
  gpd_xlayout_t lc;
  missing = 2; /* thread 11's launches */
  write_k(&x, 0, 1, &whole, &lc);
  write_k(&x, 7, 1, &paged, &lc);
  missing = 0;
  size_t nw = count_idle(whole);
  assert_int_equal(nw, 79); /* 79 pauses */
  assert_int_equal(count_idle(paged), nw);
  assert_int_equal(count(paged, "\"ph\":\"X\""), count(whole, "\"ph\":\"X\""));
  /* the idle slices' begins and durations in the same order */
  const char *p = whole, *q = paged;
  for (size_t i = 0; i < nw; i++) {
    p = strstr(p, "\"name\":\"GPU idle\"");
    q = strstr(q, "\"name\":\"GPU idle\"");
    const char *pe = strstr(p, ",\"sf\""), *qe = strstr(q, ",\"sf\"");
    assert_non_null(pe);
    assert_non_null(qe);
    assert_int_equal(pe - p, qe - q);
    assert_memory_equal(p, q, (size_t)(pe - p));
    p++, q++;
  }
  free(whole);
  free(paged);
  gpd_xtrace_free(&x);
}

/* rows that change between the scan and the walk (a late activity on a
 * stream the scan did not see) make the walk fail with -EAGAIN, before
 * its page is drawn, and a scan again makes it pass */
static void test_changed(void **state) {
  (void)state;
  gpd_xtrace_t x;
  gpd_xtrace_init(&x);
  build(&x, 200);
  kpages_t p = {.src = {kp_next, kp_rewind}, .x = &x, .k = 7};
  p.pg.ev = calloc(7, sizeof *p.pg.ev);
  p.pg.la = calloc(7, sizeof *p.pg.la);
  p.pg.cs = calloc(7, sizeof *p.pg.cs);
  gpd_xlayout_t l;
  gpd__xlayout_open(&l, &x, 0, 0);
  assert_int_equal(gpd__xlayout_scan(&l, &p.src), 0);
  assert_int_equal(l.nst, 6);
  x.ev[150].stream = 9;
  char *out;
  size_t len;
  FILE *f = open_memstream(&out, &len);
  assert_int_equal(gpd__xwrite_perfetto_pages(f, &l, &p.src), -EAGAIN);
  fclose(f);
  free(out);
  assert_int_equal(gpd__xlayout_scan(&l, &p.src), 0);
  assert_int_equal(l.nst, 7);
  f = open_memstream(&out, &len);
  assert_int_equal(gpd__xwrite_perfetto_pages(f, &l, &p.src), 0);
  fclose(f);
  assert_non_null(memmem(out, len, "GPU 0 stream 9", 14));
  free(out);
  gpd__xlayout_free(&l);
  free(p.pg.ev);
  free(p.pg.la);
  free(p.pg.cs);
  gpd_xtrace_free(&x);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_same_file), cmocka_unit_test(test_bounded),
                                     cmocka_unit_test(test_changed), cmocka_unit_test(test_idle),
                                     cmocka_unit_test(test_idle_many)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test-tracewin.c - a process's tracing windows (daemon/tracewin.c): the
 * summary follows the record with the most windows (records come from
 * two rings, in any order), the same window reported twice (at exit) is
 * one row, the bound counts what it drops, a snapshot moves the
 * watermark, and the rows and summary land in a real store once
 * (INSERT OR IGNORE / REPLACE: a rewrite after a failed transaction adds
 * nothing). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "daemon.h"
#include "store-write.h"
#include "tracewin.h"

static gpd_rec_tracewin_t rec(int final, uint32_t windows, uint64_t start, uint64_t end, uint64_t wns) {
  gpd_rec_tracewin_t r;
  memset(&r, 0, sizeof r);
  r.h.type = GPD_REC_TRACEWIN;
  r.h.version = GPD_REC_VERSION;
  r.h.nslots = GPD_REC_NSLOTS(r);
  r.h.flags = final ? GPD_TRACEWIN_F_FINAL : 0;
  r.api = GPD_API_CUDA;
  r.duty = 1;
  r.windows = windows;
  r.t0 = 1000;
  r.start = start;
  r.end = end;
  r.window_ns = wns;
  assert_int_equal(gpd_rec_validate(&r, sizeof r), 0);
  return r;
}

static void test_ingest(void **st) {
  (void)st;
  gpd_tracewin_t tw;
  memset(&tw, 0, sizeof tw);
  gpd_rec_tracewin_t r = rec(0, 1, 2000, 2010, 10);
  gpd_tracewin_ingest(&tw, &r);
  r = rec(0, 2, 3000, 3010, 20);
  gpd_tracewin_ingest(&tw, &r);
  /* the final record from the exiting thread before the controller's
   * record of the last window: the summary keeps the most windows */
  r = rec(1, 3, 5000, 5000, 30);
  gpd_tracewin_ingest(&tw, &r);
  r = rec(0, 3, 4000, 4008, 28); /* the exit's own record of window 3 */
  gpd_tracewin_ingest(&tw, &r);
  assert_int_equal(tw.window_ns, 30); /* not back to 28 */
  r = rec(0, 3, 4000, 4010, 30); /* the controller's, a little later */
  gpd_tracewin_ingest(&tw, &r);
  assert_int_equal(tw.nwin, 3);
  assert_int_equal(tw.win[2].start, 4000);
  assert_int_equal(tw.win[2].end, 4010);
  assert_int_equal(tw.windows, 3);
  assert_int_equal(tw.window_ns, 30);
  assert_int_equal(tw.t0, 1000);
  assert_int_equal(tw.end, 5000);
  assert_true(tw.final && tw.duty && tw.api == GPD_API_CUDA);
  /* an older record (fewer windows) does not move the summary back */
  r = rec(0, 1, 2000, 2010, 10);
  gpd_tracewin_ingest(&tw, &r);
  assert_int_equal(tw.windows, 3);
  assert_int_equal(tw.window_ns, 30);
  gpd_tracewin_free(&tw);
}

static void test_bound(void **st) {
  (void)st;
  gpd_tracewin_t tw;
  memset(&tw, 0, sizeof tw);
  for (uint32_t i = 0; i < GPD_TRACEWIN_MAX + 5; i++) {
    gpd_rec_tracewin_t r = rec(0, i + 1, 2000 + 10ull * i, 2005 + 10ull * i, 5ull * (i + 1));
    gpd_tracewin_ingest(&tw, &r);
  }
  assert_int_equal(tw.nwin, GPD_TRACEWIN_MAX);
  assert_int_equal(tw.dropped, 5);
  assert_int_equal(tw.windows, GPD_TRACEWIN_MAX + 5);
  assert_true(gpd_tracewin_bytes(&tw) >= GPD_TRACEWIN_MAX * sizeof(gpd_tw_win_t));
  gpd_tracewin_free(&tw);
}

static int64_t q1(sqlite3 *db, const char *sql) {
  sqlite3_stmt *q;
  int64_t v = -1;
  assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &q, NULL), SQLITE_OK);
  if (sqlite3_step(q) == SQLITE_ROW)
    v = sqlite3_column_int64(q, 0);
  sqlite3_finalize(q);
  return v;
}

static void test_store(void **st) {
  (void)st;
  char dir[] = "/tmp/test-tracewin.XXXXXX", path[64], cmd[96];
  assert_non_null(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/t.gpdb", dir);
  gpd_dstore_t *s;
  assert_int_equal(gpd_dstore_open(&s, path), 0);
  gpd_dstore_close(s);
  sqlite3 *db;
  assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);

  gpd_tracewin_t tw;
  memset(&tw, 0, sizeof tw);
  gpd_tw_snap_t snap;
  assert_int_equal(gpd_tracewin_snap(&tw, &snap), 0); /* nothing seen: nothing */
  assert_false(snap.have);
  assert_int_equal(gpd_store_write_tracewin(db, 7, &snap), 0);
  assert_int_equal(q1(db, "SELECT count(*) FROM trace_duty"), 0);
  for (uint32_t i = 0; i < 4; i++) {
    gpd_rec_tracewin_t r = rec(0, i + 1, 2000 + 100ull * i, 2010 + 100ull * i, 10ull * (i + 1));
    gpd_tracewin_ingest(&tw, &r);
  }
  assert_int_equal(gpd_tracewin_snap(&tw, &snap), 0);
  assert_int_equal(snap.nwin, 4);
  assert_int_equal(tw.nwin_saved, 4);
  assert_int_equal(gpd_store_write_tracewin(db, 7, &snap), 0);
  gpd_tracewin_snap_free(&snap);
  /* the next snapshot: the new window only; then a failed transaction's
   * rewrite (watermark back to 0) adds no row twice */
  gpd_rec_tracewin_t r = rec(0, 5, 2400, 2410, 50);
  gpd_tracewin_ingest(&tw, &r);
  r = rec(1, 5, 3000, 3000, 50);
  gpd_tracewin_ingest(&tw, &r);
  assert_int_equal(gpd_tracewin_snap(&tw, &snap), 0);
  assert_int_equal(snap.nwin, 1);
  gpd_tracewin_snap_free(&snap);
  tw.nwin_saved = 0;
  assert_int_equal(gpd_tracewin_snap(&tw, &snap), 0);
  assert_int_equal(snap.nwin, 5);
  assert_int_equal(gpd_store_write_tracewin(db, 7, &snap), 0);
  gpd_tracewin_snap_free(&snap);
  assert_int_equal(q1(db, "SELECT count(*) FROM trace_window WHERE profile_id=7"), 5);
  assert_int_equal(q1(db, "SELECT sum(end_ns - start_ns) FROM trace_window WHERE profile_id=7"), 50);
  assert_int_equal(q1(db, "SELECT count(*) FROM trace_duty"), 1);
  assert_int_equal(q1(db, "SELECT windows FROM trace_duty WHERE profile_id=7"), 5);
  assert_int_equal(q1(db, "SELECT window_ns FROM trace_duty WHERE profile_id=7"), 50);
  assert_int_equal(q1(db, "SELECT t0_ns FROM trace_duty WHERE profile_id=7"), 1000);
  assert_int_equal(q1(db, "SELECT end_ns FROM trace_duty WHERE profile_id=7"), 3000);
  assert_int_equal(q1(db, "SELECT final FROM trace_duty WHERE profile_id=7"), 1);
  assert_int_equal(q1(db, "SELECT duty FROM trace_duty WHERE profile_id=7"), 1);
  /* no launch counts: no trace_duty_launch row (the report keeps the time fraction) */
  assert_int_equal(q1(db, "SELECT count(*) FROM trace_duty_launch"), 0);
  gpd_tracewin_free(&tw);

  /* counted launches: the latest record's pair (most launches), whatever
   * the order: the exit's final record, then the controller's last window */
  memset(&tw, 0, sizeof tw);
  r = rec(0, 1, 2000, 2010, 10);
  r.launches = 50, r.launches_in = 5;
  gpd_tracewin_ingest(&tw, &r);
  r = rec(1, 2, 3000, 3000, 20);
  r.launches = 300, r.launches_in = 12;
  gpd_tracewin_ingest(&tw, &r);
  r = rec(0, 2, 2500, 2510, 20);
  r.launches = 260, r.launches_in = 12;
  gpd_tracewin_ingest(&tw, &r);
  assert_int_equal(tw.launches, 300);
  assert_int_equal(tw.launches_in, 12);
  assert_int_equal(gpd_tracewin_snap(&tw, &snap), 0);
  assert_int_equal(gpd_store_write_tracewin(db, 8, &snap), 0);
  assert_int_equal(gpd_store_write_tracewin(db, 8, &snap), 0); /* a rewrite replaces */
  gpd_tracewin_snap_free(&snap);
  assert_int_equal(q1(db, "SELECT count(*) FROM trace_duty_launch"), 1);
  assert_int_equal(q1(db, "SELECT launches FROM trace_duty_launch WHERE profile_id=8"), 300);
  assert_int_equal(q1(db, "SELECT launches_in FROM trace_duty_launch WHERE profile_id=8"), 12);
  gpd_tracewin_free(&tw);
  sqlite3_close(db);
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  assert_int_equal(system(cmd), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ingest),
      cmocka_unit_test(test_bound),
      cmocka_unit_test(test_store),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

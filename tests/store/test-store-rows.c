/* test-store-rows.c - store/ alone (linked without the daemon): a real
 * file made by gpd_store_schema_upgrade, rows written through the typed
 * writers of one transaction and read back through the reload readers
 * with exact values; a rolled-back transaction leaves nothing; a linked
 * database path is refused.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "gpuprof/error.h"

#include "store-db.h"
#include "store-reload.h"
#include "store-sql.h"
#include "store-write.h"

static char dir[64], path[96];

static sqlite3 *open_new(void) {
  sqlite3 *db = NULL;
  snprintf(dir, sizeof dir, "/tmp/gpd-store-rows-XXXXXX");
  assert_non_null(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/t.gpdb", dir);
  assert_int_equal(gpd_store_db_private(path, 1), 0);
  assert_int_equal(gpd_store_db_open(path, 1, &db), 0);
  assert_int_equal(gpd_store_schema_pragmas(db), 0);
  assert_int_equal(gpd_store_db_begin(db), 0);
  assert_int_equal(gpd_store_schema_upgrade(db, path), 0);
  assert_int_equal(gpd_store_db_commit(db), 0);
  return db;
}

static void close_rm(sqlite3 *db) {
  char cmd[128];
  gpd_store_db_close(db);
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  assert_int_equal(system(cmd), 0);
}

typedef struct {
  int n;
  gpd_store_module_row_t m;
  char path[64], bid[64];
} seen_t;

static int on_module(void *arg, const gpd_store_module_row_t *r) {
  seen_t *s = arg;
  s->m = *r;
  snprintf(s->path, sizeof s->path, "%s", r->path);
  snprintf(s->bid, sizeof s->bid, "%s", r->build_id ? r->build_id : "(null)");
  s->n++;
  return 0;
}

static int on_context(void *arg, const gpd_store_context_row_t *r) {
  uint64_t *sum = arg;
  *sum += r->id * 1000 + r->parent;
  return 0;
}

static int on_metric(void *arg, uint64_t ctx, int64_t metric, double v) {
  double *sum = arg;
  *sum += (double)ctx * 100 + (double)metric * 10 + v;
  return 0;
}

static int on_pending(void *arg, const void *rec, size_t len) {
  char *out = arg;
  strncat(out, rec, len);
  return 0;
}

static int on_cursor(void *arg, int64_t ring, uint64_t pos) {
  uint64_t *c = arg;
  c[ring] = pos;
  return 0;
}

static void test_roundtrip(void **state) {
  (void)state;
  sqlite3 *db = open_new();
  assert_int_equal(gpd_store_meta_first_id(db), 1);
  assert_int_equal(gpd_store_meta_reserve(db, 77), 0);
  assert_int_equal(gpd_store_meta_first_id(db), 77);

  gpd_store_write_t *w = NULL;
  assert_int_equal(gpd_store_write_open(db, &w), 0);
  assert_int_equal(gpd_store_db_begin(db), 0);
  gpd_store_profile_row_t p = {.id = 5, .pid = 4242, .uid = 1000, .gid = 100, .exe = "/bin/app",
                               .records = 12, .proc_start = 987654321, .state = "running"};
  assert_int_equal(gpd_store_write_profile(w, &p), 0);
  gpd_store_module_row_t m = {3, "/lib/libx.so", "abcd", 0x1000, 0x2000};
  assert_int_equal(gpd_store_write_module(w, 5, &m), 0);
  gpd_store_context_row_t root = {.id = 1, .parent = 0, .kind = 0, .label = "<root>"};
  gpd_store_context_row_t leaf = {.id = 9, .parent = 1, .kind = 2, .label = "k"};
  assert_int_equal(gpd_store_write_context(w, 1000, &root), 0);
  assert_int_equal(gpd_store_write_context(w, 1000, &leaf), 0);
  assert_int_equal(gpd_store_write_metric(w, 5, 9, 2, 3.5), 0);
  assert_int_equal(gpd_store_write_pending(w, 5, 2, "bb", 2), 0);
  assert_int_equal(gpd_store_write_pending(w, 5, 1, "aa", 2), 0);
  assert_int_equal(gpd_store_write_cursor(w, 5, 1, 640), 0);
  assert_int_equal(gpd_store_db_commit(db), 0);
  /* a transaction that is rolled back leaves nothing */
  assert_int_equal(gpd_store_db_begin(db), 0);
  assert_int_equal(gpd_store_write_metric(w, 5, 1, 2, 100.0), 0);
  gpd_store_db_rollback(db);
  gpd_store_write_close(w);

  gpd_store_profile_row_t h;
  assert_int_equal(gpd_store_reload_profile(db, 5, &h), 1);
  assert_int_equal(h.uid, 1000);
  assert_int_equal(h.pid, 4242);
  assert_int_equal(h.records, 12);
  assert_int_equal(h.proc_start, 987654321);
  assert_int_equal(gpd_store_reload_profile(db, 6, &h), 0);
  seen_t s = {0};
  assert_int_equal(gpd_store_reload_modules(db, 5, on_module, &s), 0);
  assert_int_equal(s.n, 1);
  assert_int_equal(s.m.id, 3);
  assert_string_equal(s.path, "/lib/libx.so");
  assert_string_equal(s.bid, "abcd");
  assert_int_equal(s.m.base, 0x1000);
  assert_int_equal(s.m.size, 0x2000);
  uint64_t csum = 0;
  assert_int_equal(gpd_store_reload_contexts(db, 5, 1000, on_context, &csum), 0);
  assert_int_equal(csum, 1 * 1000 + 0 + 9 * 1000 + 1); /* the metric's context and its parent */
  csum = 0;
  assert_int_equal(gpd_store_reload_contexts(db, 5, 1001, on_context, &csum), 0);
  assert_int_equal(csum, 0); /* another uid's rows */
  double msum = 0;
  assert_int_equal(gpd_store_reload_metrics(db, 5, on_metric, &msum), 0);
  assert_true(msum == 900 + 20 + 3.5);
  char pend[16] = "";
  assert_int_equal(gpd_store_reload_pending(db, 5, on_pending, pend), 0);
  assert_string_equal(pend, "aabb"); /* seq order */
  uint64_t cur[2] = {0, 0};
  assert_int_equal(gpd_store_reload_cursors(db, 5, on_cursor, cur), 0);
  assert_int_equal(cur[1], 640);
  assert_int_equal(gpd_store_reload_trace_rows(db, 5), 0);
  assert_int_equal(gpd_store_reload_mark_lost(db), 0);
  assert_int_equal(gpd_store_db_int(db, "SELECT COUNT(*) FROM profile WHERE state='lost'", -1), 1);
  close_rm(db);
}

static void test_link_refused(void **state) {
  (void)state;
  sqlite3 *db = open_new();
  char link[128];
  snprintf(link, sizeof link, "%s/l.gpdb", dir);
  assert_int_equal(symlink(path, link), 0);
  assert_int_equal(gpd_store_db_private(link, 0), GPD_ESTORE);
  sqlite3 *l = NULL;
  assert_int_equal(gpd_store_db_open(link, 0, &l), GPD_ESTORE);
  assert_null(l);
  close_rm(db);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_roundtrip), cmocka_unit_test(test_link_refused)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}

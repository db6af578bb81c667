/* test-cpusample.c - the daemon side of CPU sampling (daemon/cpusample.c)
 * and the CPUSAMPLE record's validation (common/record.c):
 *   validate   the rules of gpd_rec_validate for CPUSAMPLE
 *   attribute  CPUTIME at the announced node (exclusive), a sample whose
 *              NODE comes later waits and is placed by the retry, one
 *              whose NODE never comes goes to <unknown context> at finish
 *   bound      trace rows stop at gpd_cpusample_trace_max, the rest are
 *              counted and still add CPUTIME
 *   snapshot   snap moves rows out, unsnap puts them back in front, and
 *              the write fills trace_cpu_sample / cpu_sample_stat
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "gpuprof/error.h"
#include "gpuprof/metric.h"
#include "gpuprof/record.h"

#include "cpusample.h"
#include "profile.h"
#include "store-write.h"

static gpd_rec_cpusample_t sample(uint32_t node, uint64_t weight, uint64_t ts) {
  gpd_rec_cpusample_t r;
  memset(&r, 0, sizeof r);
  r.h.type = GPD_REC_CPUSAMPLE;
  r.h.version = GPD_REC_VERSION;
  r.h.nslots = GPD_REC_NSLOTS(r);
  r.node = node;
  r.tid = 77;
  r.ts = ts;
  r.weight = weight;
  r.expirations = 1;
  return r;
}

static void feed(gpd_profile_t *p, const void *rec) {
  _Alignas(64) uint8_t b[64];
  size_t n = (size_t)((const gpd_rec_hdr_t *)rec)->nslots * GPD_SLOT_SIZE; /* NODE 32, CPUSAMPLE 64 */
  assert_true(n <= sizeof b);
  memcpy(b, rec, n);
  assert_int_equal(gpd_rec_validate(b, n), 0);
  gpd_profile_ingest(p, b, n);
}

static void feed_node(gpd_profile_t *p, uint32_t id, uint32_t parent, uint64_t off) {
  gpd_rec_node_t n;
  memset(&n, 0, sizeof n);
  n.h.type = GPD_REC_NODE;
  n.h.version = GPD_REC_VERSION;
  n.h.nslots = GPD_REC_NSLOTS(n);
  n.id = id;
  n.parent = parent;
  n.offset = off; /* module 0: offset is the address */
  feed(p, &n);
}

static double cputime_at(gpd_profile_t *p, uint32_t local) {
  uint32_t i = gpd_profile_local(p, local);
  assert_int_not_equal(i, GPD_NONE);
  return gpd_profile_node_metric(p, &p->nodes[i], GPD_M_CPUTIME);
}

static void test_validate(void **state) {
  (void)state;
  _Alignas(64) uint8_t b[128];
  gpd_rec_cpusample_t r = sample(3, 1000000, 5);
  memcpy(b, &r, 64);
  assert_int_equal(gpd_rec_validate(b, 64), 0);
  gpd_rec_cpusample_t bad[7] = {r, r, r, r, r, r, r};
  bad[0].node = 0;
  bad[1].weight = 0;
  bad[2].weight = GPD_CPUSAMPLE_MAX_WEIGHT + 1;
  bad[3].expirations = 0;
  bad[4].h.flags = 1;
  bad[5].h.nslots = 1; /* two slots, exactly */
  bad[6].h.nslots = 3;
  for (int i = 0; i < 7; i++) {
    memset(b, 0, sizeof b);
    memcpy(b, &bad[i], 64);
    assert_int_equal(gpd_rec_validate(b, 128), GPD_EBADRECORD);
  }
  assert_string_equal(gpd_rec_type_name(GPD_REC_CPUSAMPLE), "cpusample");
  assert_int_equal(gpd_metric_by_name("CPUTIME"), GPD_M_CPUTIME);
}

static void test_attribute(void **state) {
  (void)state;
  gpd_profile_t p;
  assert_int_equal(gpd_profile_init(&p, 1), 0);
  feed_node(&p, 1, 0, 0x1000);
  feed_node(&p, 2, 1, 0x2000);
  gpd_rec_cpusample_t s = sample(2, 1000000, 10);
  feed(&p, &s);
  feed(&p, &s);
  assert_true(cputime_at(&p, 2) == 2e6);
  assert_true(cputime_at(&p, 1) == 0); /* exclusive: not at the caller */
  /* node 5's NODE comes after its sample (another ring drained later) */
  s = sample(5, 4000000, 20);
  feed(&p, &s);
  feed_node(&p, 5, 1, 0x3000);
  gpd_profile_retry(&p);
  assert_true(cputime_at(&p, 5) == 4e6);
  /* node 9 is never announced: <unknown context> at the end */
  s = sample(9, 3000000, 30);
  feed(&p, &s);
  gpd_profile_finish(&p);
  double unk = 0;
  for (uint32_t i = 0; i < p.nnodes; i++)
    if (p.nodes[i].kind == GPD_NODE_UNKNOWN)
      unk = gpd_profile_node_metric(&p, &p.nodes[i], GPD_M_CPUTIME);
  assert_true(unk == 3e6);
  gpd_cps_snap_t sn;
  assert_int_equal(gpd_cpusample_snap(p.cps, &sn), 0);
  assert_int_equal(sn.nrows, 4);
  assert_int_equal(sn.samples, 4);
  assert_int_equal(sn.cputime_ns, 9000000); /* 2 x 1 + 4 + 3 ms */
  assert_int_equal(sn.unknown, 1);
  /* trace rows name the contexts' Merkle ids */
  assert_int_equal(sn.rows[0].ctx, p.nodes[gpd_profile_local(&p, 2)].id);
  assert_int_equal(sn.rows[2].ctx, p.nodes[gpd_profile_local(&p, 5)].id);
  assert_int_equal(sn.rows[2].ts, 20);
  assert_int_equal(sn.rows[0].tid, 77);
  gpd_cpusample_snap_free(&sn);
  gpd_profile_free(&p);
}

static void test_bound_and_snapshot(void **state) {
  (void)state;
  gpd_profile_t p;
  assert_int_equal(gpd_profile_init(&p, 7), 0);
  feed_node(&p, 1, 0, 0x1000);
  atomic_store(&gpd_cpusample_trace_max, 3);
  for (int i = 0; i < 5; i++) {
    gpd_rec_cpusample_t s = sample(1, 1000, (uint64_t)i);
    feed(&p, &s);
  }
  atomic_store(&gpd_cpusample_trace_max, GPD_CPS_TRACE_MAX_DEFAULT);
  assert_true(cputime_at(&p, 1) == 5000); /* every sample counts */
  gpd_cps_snap_t sn;
  assert_int_equal(gpd_cpusample_snap(p.cps, &sn), 0);
  assert_int_equal(sn.nrows, 3);
  assert_int_equal(sn.trace_rows, 3);
  assert_int_equal(sn.trace_dropped, 2);
  /* a failed flush: its rows go back in front of a newer one */
  gpd_rec_cpusample_t s = sample(1, 1000, 99);
  feed(&p, &s);
  gpd_cpusample_unsnap(p.cps, &sn);
  gpd_cpusample_snap_free(&sn);
  assert_int_equal(gpd_cpusample_snap(p.cps, &sn), 0);
  assert_int_equal(sn.nrows, 4);
  assert_int_equal(sn.rows[0].ts, 0);
  assert_int_equal(sn.rows[3].ts, 99);
  /* the write */
  sqlite3 *db;
  assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
  assert_int_equal(sqlite3_exec(db,
                                "CREATE TABLE trace_cpu_sample(profile INTEGER NOT NULL, tid INTEGER NOT NULL,"
                                " ts_ns INTEGER NOT NULL, node INTEGER NOT NULL);"
                                "CREATE TABLE cpu_sample_stat(profile_id INTEGER PRIMARY KEY, samples INTEGER"
                                " NOT NULL, cputime_ns INTEGER NOT NULL, trace_rows INTEGER NOT NULL,"
                                " trace_dropped INTEGER NOT NULL, unknown INTEGER NOT NULL);",
                                NULL, NULL, NULL),
                   SQLITE_OK);
  assert_int_equal(gpd_store_write_cpusample(db, 7, &sn), 0);
  sqlite3_stmt *q;
  assert_int_equal(sqlite3_prepare_v2(db,
                                      "SELECT (SELECT COUNT(*) FROM trace_cpu_sample WHERE profile=7),"
                                      " samples, cputime_ns, trace_rows, trace_dropped FROM cpu_sample_stat",
                                      -1, &q, NULL),
                   SQLITE_OK);
  assert_int_equal(sqlite3_step(q), SQLITE_ROW);
  assert_int_equal(sqlite3_column_int64(q, 0), 4);
  assert_int_equal(sqlite3_column_int64(q, 1), 6);
  assert_int_equal(sqlite3_column_int64(q, 2), 6000);
  assert_int_equal(sqlite3_column_int64(q, 3), 4);
  assert_int_equal(sqlite3_column_int64(q, 4), 2);
  sqlite3_finalize(q);
  /* the next flush adds only what came since (a restarted daemon that
   * reloads the profile does the same) */
  gpd_cpusample_snap_free(&sn);
  s = sample(1, 500, 100);
  feed(&p, &s);
  assert_int_equal(gpd_cpusample_snap(p.cps, &sn), 0);
  assert_int_equal(sn.samples, 1);
  assert_int_equal(sn.nrows, 1);
  assert_int_equal(gpd_store_write_cpusample(db, 7, &sn), 0);
  assert_int_equal(sqlite3_prepare_v2(db, "SELECT samples, cputime_ns, trace_rows FROM cpu_sample_stat", -1, &q,
                                      NULL),
                   SQLITE_OK);
  assert_int_equal(sqlite3_step(q), SQLITE_ROW);
  assert_int_equal(sqlite3_column_int64(q, 0), 7);
  assert_int_equal(sqlite3_column_int64(q, 1), 6500);
  assert_int_equal(sqlite3_column_int64(q, 2), 5);
  sqlite3_finalize(q);
  sqlite3_close(db);
  gpd_cpusample_snap_free(&sn);
  gpd_profile_free(&p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_validate),
      cmocka_unit_test(test_attribute),
      cmocka_unit_test(test_bound_and_snapshot),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test-pcsample-store.c - the daemon side of GPU PC samples: PCSAMPLE /
 * PCSTATS / CUBIN records validated as the monitor validates them, fed
 * through gpd_profile_ingest into daemon/pcsample.c, snapshotted and
 * written into a real store (gpd_dstore_open's schema) as deltas: exact
 * sums across flushes, a failed flush put back without loss or double
 * counting, bad records refused, the per-process key bound counted. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "gpuprof/error.h"
#include "gpuprof/record.h"
#include "pcsample.h"
#include "profile.h"
#include "dstore.h"
#include "store-write.h"

typedef struct {
  _Alignas(64) uint8_t b[sizeof(gpd_rec_pcsample_t)]; /* PCSAMPLE, CUBIN, PCSTATS: 2 slots each */
} slot_t;

static int feed(gpd_profile_t *p, const void *rec) {
  slot_t r;
  memcpy(r.b, rec, sizeof r.b);
  int err = gpd_rec_validate(r.b, sizeof r.b);
  if (err == 0)
    gpd_profile_ingest(p, r.b, sizeof r.b);
  return err;
}

static int sample(gpd_profile_t *p, uint32_t func, uint32_t stall, uint64_t cubin, uint64_t pc,
                  uint32_t n) {
  gpd_rec_pcsample_t r;
  memset(&r, 0, sizeof r);
  r.h = (gpd_rec_hdr_t){GPD_REC_PCSAMPLE, GPD_REC_VERSION, GPD_REC_NSLOTS(gpd_rec_pcsample_t), 0, 0};
  r.func = func;
  r.stall = stall;
  r.cubin_id = cubin;
  r.pc = pc;
  r.samples = n;
  return feed(p, &r);
}

static int64_t q1(const char *path, const char *sql) {
  sqlite3 *db = NULL;
  sqlite3_stmt *q = NULL;
  int64_t v = -1;
  assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
  assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &q, NULL), SQLITE_OK);
  if (sqlite3_step(q) == SQLITE_ROW)
    v = sqlite3_column_int64(q, 0);
  sqlite3_finalize(q);
  sqlite3_close(db);
  return v;
}

/* One flush: snapshot, write in a transaction, free. */
static void flush(gpd_profile_t *p, const char *path) {
  gpd_pcs_snap_t s;
  sqlite3 *db = NULL;
  assert_int_equal(gpd_pcsample_snap(p->pcs, &s), 0);
  assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
  assert_int_equal(sqlite3_exec(db, "BEGIN", NULL, NULL, NULL), SQLITE_OK);
  assert_int_equal(gpd_store_write_pcsample(db, 1, &s), 0);
  assert_int_equal(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
  sqlite3_close(db);
  gpd_pcsample_snap_free(&s);
}

static void test_store_deltas(void **state) {
  (void)state;
  char dir[] = "/tmp/gpd-pcs-XXXXXX", path[64];
  assert_non_null(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/p.gpdb", dir);
  gpd_dstore_t *st = NULL;
  assert_int_equal(gpd_dstore_open(&st, path), 0); /* the daemon's schema */
  gpd_dstore_close(st);

  gpd_profile_t p;
  assert_int_equal(gpd_profile_init(&p, 1), 0);
  /* bad records: refused by validation, nothing ingested */
  assert_int_equal(sample(&p, 0, 6, 1, 0, 5), GPD_EBADRECORD);
  assert_int_equal(sample(&p, 5, 0, 1, 0, 5), GPD_EBADRECORD);
  gpd_rec_cubin_t cb;
  memset(&cb, 0, sizeof cb);
  cb.h = (gpd_rec_hdr_t){GPD_REC_CUBIN, GPD_REC_VERSION, GPD_REC_NSLOTS(gpd_rec_cubin_t), 0, 0};
  cb.cubin_id = 0xabc;
  memcpy(cb.hash, "C093BEAF1608AC1626D8F4A117D40950", 32); /* upper case */
  assert_int_equal(feed(&p, &cb), GPD_EBADRECORD);
  assert_null(p.pcs);

  memcpy(cb.hash, "c093beaf1608ac1626d8f4a117d40950", 32);
  assert_int_equal(feed(&p, &cb), 0);
  assert_int_equal(sample(&p, 5, 6, 0xabc, 0x100, 10), 0);
  assert_int_equal(sample(&p, 5, 6, 0xabc, 0x100, 5), 0); /* same key: added */
  assert_int_equal(sample(&p, 5, 7, 0xabc, 0x100, 3), 0);
  assert_int_equal(sample(&p, 5, 6, 0xabc, 0x110, 1), 0);
  gpd_rec_pcstats_t ps;
  memset(&ps, 0, sizeof ps);
  ps.h = (gpd_rec_hdr_t){GPD_REC_PCSTATS, GPD_REC_VERSION, GPD_REC_NSLOTS(gpd_rec_pcstats_t), 0, 0};
  ps.total = 100;
  ps.dropped = 3;
  ps.period_log2 = 11;
  ps.sm_count = 132;
  ps.clock_khz = 1980000;
  assert_int_equal(feed(&p, &ps), 0);
  flush(&p, path);
  assert_int_equal(q1(path, "SELECT samples FROM pcsample WHERE pc=256 AND stall=6"), 15);
  assert_int_equal(q1(path, "SELECT count(*) FROM pcsample"), 3);
  assert_int_equal(q1(path, "SELECT count(*) FROM pcsample_cubin WHERE cubin_id=2748 AND "
                            "hash='c093beaf1608ac1626d8f4a117d40950'"),
                   1);
  assert_int_equal(q1(path, "SELECT total FROM pcsample_stat"), 100);
  /* a second flush adds only what came since */
  flush(&p, path);
  assert_int_equal(q1(path, "SELECT samples FROM pcsample WHERE pc=256 AND stall=6"), 15);
  assert_int_equal(sample(&p, 5, 6, 0xabc, 0x100, 7), 0);
  assert_int_equal(feed(&p, &ps), 0);
  flush(&p, path);
  assert_int_equal(q1(path, "SELECT samples FROM pcsample WHERE pc=256 AND stall=6"), 22);
  assert_int_equal(q1(path, "SELECT total FROM pcsample_stat"), 200);
  assert_int_equal(q1(path, "SELECT dropped FROM pcsample_stat"), 6);
  /* a flush that was not committed: its deltas go back, then are written once */
  assert_int_equal(sample(&p, 5, 6, 0xabc, 0x100, 4), 0);
  gpd_pcs_snap_t s;
  assert_int_equal(gpd_pcsample_snap(p.pcs, &s), 0);
  assert_int_equal(s.nrows, 1);
  assert_int_equal(sample(&p, 5, 6, 0xabc, 0x100, 2), 0); /* arrives meanwhile */
  gpd_pcsample_unsnap(p.pcs, &s);
  gpd_pcsample_snap_free(&s);
  flush(&p, path);
  assert_int_equal(q1(path, "SELECT samples FROM pcsample WHERE pc=256 AND stall=6"), 28);
  gpd_profile_free(&p);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
}

/* More keys than a process may hold: the rest is counted, not stored. */
static void test_key_bound(void **state) {
  (void)state;
  gpd_profile_t p;
  assert_int_equal(gpd_profile_init(&p, 1), 0);
  const uint32_t n = 300000; /* > 2^18 */
  for (uint32_t i = 0; i < n; i++)
    assert_int_equal(sample(&p, 5, 6, 1, 16ull * i, 2), 0);
  gpd_pcs_snap_t s;
  assert_int_equal(gpd_pcsample_snap(p.pcs, &s), 0);
  assert_true(s.nrows <= (1u << 18));
  uint64_t kept = 0;
  for (uint32_t i = 0; i < s.nrows; i++)
    kept += s.rows[i].samples;
  assert_int_equal(kept + s.lost, 2ull * n); /* every sample stored or counted */
  assert_true(s.lost > 0);
  gpd_pcsample_snap_free(&s);
  gpd_profile_free(&p);
}

/* Running totals per (func, stall) for the live replies: summed over
 * records, kept across snapshots (a flush moves the deltas out, not the
 * totals), not doubled by a failed flush put back; bounded. */
static uint64_t total_of(const gpd_profile_t *p, uint32_t func, uint32_t stall) {
  uint32_t n;
  const gpd_pcs_total_t *t = gpd_pcsample_totals(p->pcs, &n);
  for (uint32_t i = 0; i < n; i++)
    if (t[i].func == func && t[i].stall == stall)
      return t[i].samples;
  return 0;
}

static void test_live_totals(void **state) {
  (void)state;
  gpd_profile_t p;
  assert_int_equal(gpd_profile_init(&p, 1), 0);
  uint32_t n;
  assert_null(gpd_pcsample_totals(p.pcs, &n));
  assert_int_equal(n, 0);
  assert_int_equal(sample(&p, 5, 6, 1, 0x10, 7), 0);
  assert_int_equal(sample(&p, 5, 6, 1, 0x20, 3), 0);
  assert_int_equal(sample(&p, 5, 8, 1, 0x10, 4), 0);
  gpd_pcs_snap_t s;
  assert_int_equal(gpd_pcsample_snap(p.pcs, &s), 0);
  assert_int_equal(total_of(&p, 5, 6), 10); /* snap leaves the totals */
  gpd_pcsample_unsnap(p.pcs, &s);           /* a failed flush: not doubled */
  gpd_pcsample_snap_free(&s);
  assert_int_equal(total_of(&p, 5, 6), 10);
  assert_int_equal(total_of(&p, 5, 8), 4);
  assert_int_equal(sample(&p, 5, 6, 1, 0x10, 1), 0);
  assert_int_equal(total_of(&p, 5, 6), 11);
  gpd_pcsample_totals(p.pcs, &n);
  assert_int_equal(n, 2);
  /* the bound: keys past GPD_PCS_MAX_TOTALS are not added, nothing breaks */
  for (uint32_t f = 0; f < GPD_PCS_MAX_TOTALS + 100; f++)
    assert_int_equal(sample(&p, 100 + f, 6, 1, 0, 1), 0);
  gpd_pcsample_totals(p.pcs, &n);
  assert_int_equal(n, GPD_PCS_MAX_TOTALS);
  assert_int_equal(total_of(&p, 5, 6), 11);
  assert_int_equal(sample(&p, 5, 6, 1, 0x10, 2), 0); /* known keys still count */
  assert_int_equal(total_of(&p, 5, 6), 13);
  gpd_profile_free(&p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_store_deltas),
      cmocka_unit_test(test_key_bound),
      cmocka_unit_test(test_live_totals),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

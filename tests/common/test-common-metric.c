/* test-common-metric.c - metric table, lookups and the attribution rule
 * (gpd_metric_accumulate); also error names. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "gpuprof/error.h"
#include "gpuprof/metric.h"
#include "gpuprof/record.h"

static gpd_rec_activity_t act(unsigned op, unsigned sub, uint64_t start, uint64_t end, uint64_t bytes) {
  gpd_rec_activity_t a;
  memset(&a, 0, sizeof a);
  a.op = (uint8_t)op;
  a.subkind = (uint8_t)sub;
  a.start = start;
  a.end = end;
  a.bytes = bytes;
  return a;
}

static void test_table(void **state) {
  (void)state;
  assert_string_equal(gpd_metric_desc(GPD_M_GPUOP)->name, "GPUOP");
  assert_string_equal(gpd_metric_desc(GPD_M_GXCOPY_H2D)->name, "GXCOPY:H2D");
  assert_int_equal(gpd_metric_desc(GPD_M_GXCOPY_H2D)->unit, GPD_UNIT_BYTES);
  assert_string_equal(gpd_metric_desc(GPD_M_GKER_OCC_THR)->name, "GKER:OCC_THR");
  assert_null(gpd_metric_desc(GPD_M__COUNT));
  for (unsigned i = 0; i < GPD_M__COUNT; i++)
    assert_int_equal(gpd_metric_by_name(gpd_metric_desc(i)->name), (int)i);
  assert_int_equal(gpd_metric_by_name("NOPE"), -1);
  assert_int_equal(gpd_metric_by_name(NULL), -1);
  assert_int_equal(gpd_metric_copy_bytes(GPD_COPY_D2H), GPD_M_GXCOPY_D2H);
  assert_int_equal(gpd_metric_copy_bytes(GPD_COPY_MAX), -1);
  assert_int_equal(gpd_metric_mem_bytes(GPD_MEM_MAN), GPD_M_GMEM_MAN);
  assert_int_equal(gpd_metric_mset_bytes(GPD_MEM_PIN), GPD_M_GMSET_PIN);
  assert_int_equal(gpd_metric_sync_time(GPD_SYNC_CTX), GPD_M_GSYNC_CTX);
  assert_int_equal(gpd_metric_sync_time(GPD_SYNC_MAX), -1);
  /* each per-kind metric is named after record.h's kind name */
  for (unsigned k = 0; k < GPD_COPY_MAX; k++)
    assert_string_equal(gpd_metric_desc((unsigned)gpd_metric_copy_bytes(k))->name + 7, gpd_copy_name(k));
  for (unsigned k = 0; k < GPD_MEM_MAX; k++)
    assert_string_equal(gpd_metric_desc((unsigned)gpd_metric_mem_bytes(k))->name + 5, gpd_mem_name(k));
  for (unsigned k = 0; k < GPD_SYNC_MAX; k++)
    assert_string_equal(gpd_metric_desc((unsigned)gpd_metric_sync_time(k))->name + 6, gpd_sync_name(k));
}

static void test_accumulate(void **state) {
  (void)state;
  double v[GPD_M__COUNT] = {0};
  gpd_rec_activity_t a = act(GPD_OP_KERNEL, 0, 100, 350, 0);
  a.static_smem = 1000;
  a.dynamic_smem = 24;
  a.blocks = 80;
  a.block_threads = 256;
  a.regs_per_thread = 32;
  a.local_mem = 8;
  a.occ_permille = 750;
  gpd_metric_accumulate(v, &a);
  gpd_metric_accumulate(v, &a);
  assert_true(v[GPD_M_GKER] == 500);
  assert_true(v[GPD_M_GKER_COUNT] == 2);
  assert_true(v[GPD_M_GKER_BLK_SM] == 2048);
  assert_true(v[GPD_M_GKER_STMEM] == 2000);
  assert_true(v[GPD_M_GKER_DYMEM] == 48);
  assert_true(v[GPD_M_GKER_BLK] == 160);
  assert_true(v[GPD_M_GKER_BLK_THR] == 512);
  assert_true(v[GPD_M_GKER_THR_REG] == 64);
  assert_true(v[GPD_M_GKER_LMEM] == 16);
  assert_true(v[GPD_M_GKER_OCC_THR] == 1.5);

  a = act(GPD_OP_COPY, GPD_COPY_H2D, 1000, 1100, 4096);
  gpd_metric_accumulate(v, &a);
  assert_true(v[GPD_M_GXCOPY] == 100);
  assert_true(v[GPD_M_GXCOPY_H2D] == 4096);
  assert_true(v[GPD_M_GXCOPY_COUNT] == 1);

  a = act(GPD_OP_ALLOC, GPD_MEM_DEV, 0, 10, 1 << 20);
  gpd_metric_accumulate(v, &a);
  a = act(GPD_OP_FREE, GPD_MEM_DEV, 20, 25, 1 << 20);
  gpd_metric_accumulate(v, &a);
  assert_true(v[GPD_M_GMEM] == 15);
  assert_true(v[GPD_M_GMEM_COUNT] == 2);
  assert_true(v[GPD_M_GMEM_DEV] == 2 << 20);

  a = act(GPD_OP_MEMSET, GPD_MEM_PIN, 0, 7, 64);
  gpd_metric_accumulate(v, &a);
  assert_true(v[GPD_M_GMSET] == 7 && v[GPD_M_GMSET_PIN] == 64 && v[GPD_M_GMSET_COUNT] == 1);

  a = act(GPD_OP_SYNC, GPD_SYNC_STR, 0, 30, 0);
  gpd_metric_accumulate(v, &a);
  assert_true(v[GPD_M_GSYNC] == 30 && v[GPD_M_GSYNC_STR] == 30 && v[GPD_M_GSYNC_COUNT] == 1);

  /* GPUOP = sum of the op times */
  assert_true(v[GPD_M_GPUOP] == 500 + 100 + 15 + 7 + 30);
  assert_true(v[GPD_M_GPUOP] ==
              v[GPD_M_GKER] + v[GPD_M_GMEM] + v[GPD_M_GMSET] + v[GPD_M_GXCOPY] + v[GPD_M_GSYNC]);

  /* end < start: zero time, still counted */
  a = act(GPD_OP_COPY, GPD_COPY_D2H, 500, 100, 8);
  gpd_metric_accumulate(v, &a);
  assert_true(v[GPD_M_GXCOPY] == 100 && v[GPD_M_GXCOPY_COUNT] == 2 && v[GPD_M_GXCOPY_D2H] == 8);
  /* occupancy is clamped to 1 */
  a = act(GPD_OP_KERNEL, 0, 0, 0, 0);
  a.occ_permille = 5000;
  gpd_metric_accumulate(v, &a);
  assert_true(v[GPD_M_GKER_OCC_THR] == 2.5);
  /* unknown op adds nothing */
  double before = v[GPD_M_GPUOP];
  a = act(0, 0, 0, 99, 0);
  gpd_metric_accumulate(v, &a);
  assert_true(v[GPD_M_GPUOP] == before);
}

static void test_strerror(void **state) {
  (void)state;
  assert_string_equal(gpd_strerror(0), "success");
  assert_string_equal(gpd_strerror(GPD_EBADRING), "ring indices are out of range (corrupt ring)");
  assert_string_equal(gpd_strerror(GPD_ESTORE), "profile store (SQLite) error");
  assert_string_equal(gpd_strerror(-ENOENT), "No such file or directory");
  assert_string_equal(gpd_strerror(GPD_E__BASE), "unknown error");
  assert_string_equal(gpd_strerror(42), "unknown error");
  assert_true(GPD_E__END < -4096);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_table),
    cmocka_unit_test(test_accumulate),
    cmocka_unit_test(test_strerror),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

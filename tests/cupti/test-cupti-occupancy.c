/* test-cupti-occupancy.c - unit test of the theoretical occupancy
 * (shim/cupti/cupti-occupancy.c) against cases worked by hand with the CUDA
 * Occupancy Calculator's formula, on H100 properties (cc 9.0: 2048
 * threads, 64 warps, 32 blocks, 65536 registers, 228 KiB shared memory per
 * SM, 1 KiB reserved per block). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "cupti-internal.h"

static const gpd_cupti_devprops_t H100 = {
    .warp_size = 32, .max_threads_per_sm = 2048, .max_warps_per_sm = 64, .max_blocks_per_sm = 32,
    .regs_per_sm = 65536, .max_regs_per_block = 65536, .smem_per_sm = 233472,
    .max_smem_per_block = 232448, .reserved_smem_per_block = 1024, .cc_major = 9, .cc_minor = 0};

static void test_cases(void **st) {
  (void)st;
  static const struct { uint32_t thr, regs, smem, cfg, want; } c[] = {
      {256, 32, 0, 0, 1000},       /* warps and registers both allow 8 blocks */
      {256, 64, 0, 0, 500},        /* registers: 2048/warp -> 32 warps -> 4 blocks */
      {128, 255, 0, 0, 125},       /* 255 regs round to 8192/warp -> 8 warps -> 2 blocks */
      {32, 16, 0, 0, 500},         /* block limit: 32 blocks of 1 warp */
      {1024, 32, 49152, 0, 1000},  /* 2 blocks by warps; smem would allow 4 */
      {256, 32, 102400, 0, 250},   /* smem: (100 KiB + 1 KiB) -> 2 blocks */
      {256, 32, 8192, 32768, 375}, /* launch ran with a 32 KiB carveout: 3 blocks */
      {96, 0, 0, 0, 984},          /* 3-warp blocks: 21 blocks, 2016 threads */
      {100, 0, 0, 0, 781},         /* partial warp: 4 warps/block, 16 blocks, 1600 threads */
      {1024, 128, 0, 0, 0},        /* block needs 131072 registers > 65536: cannot run */
      {2048 + 32, 0, 0, 0, 0},     /* more threads than an SM holds */
      {0, 32, 0, 0, 0},            /* empty block */
  };
  for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
    uint32_t want = c[i].want;
    uint32_t got = gpd_cupti_occupancy_permille(&H100, c[i].thr, c[i].regs, c[i].smem, c[i].cfg);
    if (got != want) fail_msg("case %zu: thr %u regs %u smem %u cfg %u: got %u want %u", i, c[i].thr,
                              c[i].regs, c[i].smem, c[i].cfg, got, want);
  }
  gpd_cupti_devprops_t none;
  memset(&none, 0, sizeof none);
  assert_int_equal(gpd_cupti_occupancy_permille(&none, 256, 32, 0, 0), 0);
  assert_int_equal(gpd_cupti_occupancy_permille(NULL, 256, 32, 0, 0), 0);
}

static void test_from_record(void **st) {
  (void)st;
  CUpti_ActivityDevice5 d;
  memset(&d, 0, sizeof d);
  d.kind = CUPTI_ACTIVITY_KIND_DEVICE;
  d.numThreadsPerWarp = 32; d.maxWarpsPerMultiprocessor = 64; d.maxBlocksPerMultiprocessor = 32;
  d.maxRegistersPerMultiprocessor = 65536; d.maxRegistersPerBlock = 65536;
  d.maxSharedMemoryPerMultiprocessor = 233472; d.maxSharedMemoryPerBlock = 49152;
  d.computeCapabilityMajor = 9; d.computeCapabilityMinor = 0;
  gpd_cupti_devprops_t p;
  memset(&p, 0, sizeof p);
  gpd_cupti_devprops_from_record(&p, &d);
  assert_int_equal(p.warp_size, 32);
  assert_int_equal(p.max_threads_per_sm, 2048);
  assert_int_equal(p.max_warps_per_sm, 64);
  assert_int_equal(p.max_blocks_per_sm, 32);
  assert_int_equal(p.regs_per_sm, 65536);
  assert_int_equal(p.max_regs_per_block, 65536);
  assert_int_equal(p.smem_per_sm, 233472);
  assert_int_equal(p.max_smem_per_block, 49152);
  assert_int_equal(p.reserved_smem_per_block, 1024);
  assert_int_equal(p.cc_major, 9);
  assert_int_equal(gpd_cupti_occupancy_permille(&p, 256, 64, 0, 0), 500);
}

int main(void) {
  const struct CMUnitTest t[] = {cmocka_unit_test(test_cases), cmocka_unit_test(test_from_record)};
  return cmocka_run_group_tests(t, NULL, NULL);
}

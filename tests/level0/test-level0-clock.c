/* test-level0-clock - device kernel timestamps -> gpuprof clock
 * (shim/level0/level0-translate.c), exact numbers: rate, offset, the
 * kernel timestamp's narrower width and its wrap, stamps before the sync
 * sample; and the host-time fallback of gpd_l0_translate. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "level0/level0.h"

static int fails;
#define EXPECT_EQ(got, want)                                                                              \
  do {                                                                                                    \
    unsigned long long g_ = (got), w_ = (want);                                                           \
    if (g_ != w_) {                                                                                       \
      fprintf(stderr, "FAIL line %d: %s = %llu, want %llu\n", __LINE__, #got, g_, w_);                    \
      fails++;                                                                                            \
    }                                                                                                     \
  } while (0)

int main(void) {
  const uint64_t host = 1000000000000ull, m32 = 0xffffffffull;
  /* 25 MHz (40 ns a tick), 32-bit kernel stamps, a 64-bit global timer far
   * above 2^32 (what the test driver does). */
  gpd_l0_clock_t c = {host, 0x1234500000000ull + 1000, 25000000, 32};
  EXPECT_EQ(gpd_l0_ticks_to_ns(&c, (c.dev_ticks + 250) & m32), host + 10000);
  EXPECT_EQ(gpd_l0_ticks_to_ns(&c, c.dev_ticks & m32), host);
  EXPECT_EQ(gpd_l0_ticks_to_ns(&c, (c.dev_ticks - 500) & m32), host - 20000);
  /* 1 s after the sample: 25e6 ticks */
  EXPECT_EQ(gpd_l0_ticks_to_ns(&c, (c.dev_ticks + 25000000) & m32), host + 1000000000ull);
  /* The kernel stamp wrapped past 2^32 after the sample. */
  c.dev_ticks = 0x12345ffffff00ull;
  EXPECT_EQ(gpd_l0_ticks_to_ns(&c, 0x100), host + 0x200 * 40);
  /* ... and a stamp taken before a sample that is just past the wrap. */
  c.dev_ticks = 0x1234600000010ull;
  EXPECT_EQ(gpd_l0_ticks_to_ns(&c, 0xfffffff0ull), host - 0x20 * 40);
  /* 19.2 MHz: 192 ticks = 10 us exactly; 64-bit stamps. */
  gpd_l0_clock_t d = {host, 5000, 19200000, 64};
  EXPECT_EQ(gpd_l0_ticks_to_ns(&d, 5192), host + 10000);
  EXPECT_EQ(gpd_l0_ticks_to_ns(&d, 5000 - 19200000ull), host - 1000000000ull);
  /* Large distances do not overflow: 10 h at 19.2 MHz. */
  EXPECT_EQ(gpd_l0_ticks_to_ns(&d, 5000 + 19200000ull * 36000), host + 36000ull * 1000000000ull);
  /* No rate: 0 (unknown), never a division by zero. */
  gpd_l0_clock_t z = {host, 0, 0, 32};
  EXPECT_EQ(gpd_l0_ticks_to_ns(&z, 123), 0);

  /* Translate: device times when the stamps convert, else host times
   * flagged GPD_ACTIVITY_HOST_TIME. */
  gpd_l0_cmd_t cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.corr = GPD_CORR(GPD_API_LEVEL0, 7);
  cmd.op = GPD_OP_KERNEL;
  cmd.bytes = 0;
  cmd.stream = 3;
  cmd.name = 9;
  cmd.blocks = 16;
  cmd.block_threads = 64;
  cmd.ts = 42;
  c.dev_ticks = 0x1234500000000ull;
  ze_kernel_timestamp_result_t ts;
  memset(&ts, 0, sizeof ts);
  ts.global.kernelStart = (c.dev_ticks + 25) & m32;
  ts.global.kernelEnd = (c.dev_ticks + 75) & m32;
  gpd_rec_activity_t a;
  gpd_l0_translate(&cmd, &ts, &c, &a);
  EXPECT_EQ(a.api, GPD_API_LEVEL0);
  EXPECT_EQ(a.op, GPD_OP_KERNEL);
  EXPECT_EQ(a.corr, cmd.corr);
  EXPECT_EQ(a.start, host + 1000);
  EXPECT_EQ(a.end, host + 3000);
  EXPECT_EQ(a.h.flags, 0);
  EXPECT_EQ(a.stream, 3);
  EXPECT_EQ(a.name, 9);
  EXPECT_EQ(a.blocks, 16);
  EXPECT_EQ(a.block_threads, 64);
  gpd_l0_translate(&cmd, NULL, NULL, &a);
  EXPECT_EQ(a.h.flags, GPD_ACTIVITY_HOST_TIME);
  EXPECT_EQ(a.start, 42);
  EXPECT_EQ(a.end >= a.start, 1);
  if (fails)
    return 1;
  printf("PASS level0.clock\n");
  return 0;
}

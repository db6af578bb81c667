/* level0-translate.c - a completed Level Zero command -> vendor-neutral
 * ACTIVITY record, and device ticks -> the gpuprof clock.
 *
 * Clock: zeEventQueryKernelTimestamp gives device ticks of the global
 * timer (`global.kernelStart/End`, kernelTimestampValidBits wide, so they
 * wrap: 32 bits at 19.2 MHz wrap every 224 s).  zeDeviceGetGlobalTimestamps
 * reads the device's global timer with a host timestamp; the shim reads
 * the gpuprof clock (CLOCK_MONOTONIC_RAW) just before and after it and
 * takes the midpoint as the host time of the device sample (the driver's
 * own host clock is not assumed to be ours).  The tick rate is
 * ze_device_properties_t.timerResolution read with
 * ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES_1_2 (cycles per second).
 */
#include <string.h>

#include "gpuprof/clock.h"
#include "level0.h"

uint64_t gpd_l0_ticks_to_ns(const gpd_l0_clock_t *c, uint64_t ticks) {
  if (!c || c->hz == 0)
    return 0;
  unsigned bits = c->valid_bits ? c->valid_bits : 64;
  uint64_t mask = bits >= 64 ? ~0ull : (1ull << bits) - 1;
  uint64_t d = (ticks - c->dev_ticks) & mask;
  int neg = d > (mask >> 1); /* before the sample (mod 2^bits) */
  if (neg)
    d = (mask - d) + 1;
  /* d * 1e9 / hz without overflow for d up to 2^64 / 1e9 ticks ... split */
  uint64_t whole = d / c->hz, rest = d % c->hz;
  uint64_t ns = whole * 1000000000ull + (uint64_t)((unsigned __int128)rest * 1000000000ull / c->hz);
  if (neg)
    return ns > c->host_ns ? 0 : c->host_ns - ns;
  return c->host_ns + ns;
}

void gpd_l0_translate(const gpd_l0_cmd_t *c, const ze_kernel_timestamp_result_t *ts, const gpd_l0_clock_t *clk,
                      gpd_rec_activity_t *a) {
  memset(a, 0, sizeof *a);
  a->api = GPD_API_LEVEL0;
  a->op = c->op;
  a->subkind = c->subkind;
  a->device = c->device;
  a->corr = c->corr;
  a->bytes = c->bytes;
  a->stream = c->stream;
  a->name = c->name;
  a->blocks = c->blocks;
  a->block_threads = c->block_threads;
  uint64_t s = 0, e = 0;
  if (ts && clk) {
    s = gpd_l0_ticks_to_ns(clk, ts->global.kernelStart);
    e = gpd_l0_ticks_to_ns(clk, ts->global.kernelEnd);
  }
  if (s > 0 && e >= s) {
    a->start = s;
    a->end = e;
  } else {
    a->start = c->ts;
    a->end = gpd_clock_ns();
    a->h.flags = GPD_ACTIVITY_HOST_TIME;
  }
}

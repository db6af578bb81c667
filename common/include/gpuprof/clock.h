/* clock.h - the one clock of gpuprof.
 *
 * Every timestamp in records, profiles and traces is nanoseconds of
 * CLOCK_MONOTONIC_RAW.  Reason: PoCL stamps OpenCL events with
 * CLOCK_MONOTONIC_RAW and offers no clGetDeviceAndHostTimer, so host times
 * taken on the same clock need no conversion; CUPTI is given this clock
 * through cuptiActivityRegisterTimestampCallback.  (CLOCK_MONOTONIC differs
 * from it by NTP slewing, ~120 ms on one machine here.)
 */
#ifndef GPUPROF_CLOCK_H
#define GPUPROF_CLOCK_H

#include <stdint.h>
#include <time.h>

/** Now, in ns of CLOCK_MONOTONIC_RAW.  vDSO, no syscall on x86-64. */
static inline uint64_t gpd_clock_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/** CLOCK_MONOTONIC (not RAW: what pthread_cond_timedwait with a
 *  CLOCK_MONOTONIC condattr measures) `ns` from now, as a timespec. */
static inline struct timespec gpd_clock_deadline(uint64_t ns) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  ns += (uint64_t)ts.tv_nsec;
  ts.tv_sec += (time_t)(ns / 1000000000ull);
  ts.tv_nsec = (long)(ns % 1000000000ull);
  return ts;
}

#endif

/* devices-cpuslot.c - the per-process table of the CPU counter back ends
 * (devices-papi.c, devices-perf.c): entries that start with a
 * gpd_cpu_slot_t, found by (profile id, pid), marked each round and swept
 * when no longer wanted (devices.h).  Sampler thread only. */
#include <stdint.h>
#include <string.h>

#include "gpuprof/log.h"

#include "devices.h"

gpd_cpu_slot_t *gpd__devices_cpuslot_get(void *slots, size_t stride, uint32_t *n, uint32_t max,
                                         uint64_t profile_id, int32_t pid, int *added,
                                         int *full_logged, const char *who) {
  gpd_cpu_slot_t *e;
  *added = 0;
  for (uint32_t i = 0; i < *n; i++) {
    e = (gpd_cpu_slot_t *)((char *)slots + (size_t)i * stride);
    if (e->profile_id == profile_id && e->pid == pid) {
      e->seen = 1;
      return e;
    }
  }
  if (*n == max) {
    if (!*full_logged)
      GPD_WARN("devices: %s: more than %u processes, pid %d and later not counted", who, max,
               (int)pid);
    *full_logged = 1;
    return NULL;
  }
  e = (gpd_cpu_slot_t *)((char *)slots + (size_t)(*n)++ * stride);
  memset(e, 0, stride);
  e->profile_id = profile_id;
  e->pid = pid;
  e->seen = 1;
  *added = 1;
  return e;
}

void gpd__devices_cpuslot_unsee(void *slots, size_t stride, uint32_t n) {
  for (uint32_t i = 0; i < n; i++)
    ((gpd_cpu_slot_t *)((char *)slots + (size_t)i * stride))->seen = 0;
}

void gpd__devices_cpuslot_sweep(void *slots, size_t stride, uint32_t *n,
                                void (*drop)(void *ctx, void *entry), void *ctx) {
  for (uint32_t i = 0; i < *n;) {
    char *e = (char *)slots + (size_t)i * stride;
    if (((gpd_cpu_slot_t *)e)->seen) {
      i++;
      continue;
    }
    drop(ctx, e);
    if (i != --*n)
      memcpy(e, (char *)slots + (size_t)*n * stride, stride);
  }
}

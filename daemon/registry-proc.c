/* registry-proc.c - one registered process's record (gpd_proc_t,
 * registry.h): its ring cursors, its region, its counters, and freeing
 * it with what it owns (profile, policy state, journal hold).  Below
 * registry.c and handback.c, which both free processes; it calls neither.
 * Lock: as registry.h says per function. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"

int gpd_registry_cursors(gpd_proc_t *p) {
  uint32_t n = p->region.nrings;
  free(p->cursor);
  free(p->cursor_saved);
  p->cursor = calloc(n ? n : 1, sizeof *p->cursor);
  p->cursor_saved = calloc(n ? n : 1, sizeof *p->cursor_saved);
  if (p->cursor == NULL || p->cursor_saved == NULL) {
    free(p->cursor);
    free(p->cursor_saved);
    p->cursor = p->cursor_saved = NULL;
    return -ENOMEM;
  }
  for (uint32_t i = 0; i < n; i++)
    p->cursor[i] = p->cursor_saved[i] =
        atomic_load_explicit(&p->region.ctl[i].tail, memory_order_acquire);
  return 0;
}

int gpd_registry_detach_region(gpd_proc_t *p, gpd_region_t *out) {
  gpd_journal_release(p); /* its segments stay until committed or swept */
  int had = p->has_region;
  if (had) {
    *out = p->region;
    memset(&p->region, 0, sizeof p->region);
    p->region.fd = -1;
  }
  p->has_region = 0;
  if (p->held) { /* its uid holds one region fewer */
    __atomic_sub_fetch(&p->held->n, 1, __ATOMIC_RELAXED);
    p->held = NULL;
  }
  free(p->cursor);
  free(p->cursor_saved);
  p->cursor = p->cursor_saved = NULL;
  return had;
}

void gpd_registry_close_region(gpd_proc_t *p) {
  gpd_region_t r;
  if (gpd_registry_detach_region(p, &r))
    gpd_region_close(&r);
}

void gpd_registry_free_proc(gpd_proc_t *p) {
  if (p == NULL)
    return;
  gpd_registry_close_region(p);
  gpd_profile_free(&p->prof);
  gpd_policy_proc_free(&p->policy);
  free(p->exe);
  free(p->job_id);
  free(p->step_id);
  free(p->hostname);
  free(p->argv_json);
  for (size_t i = 0; i < p->argc; i++)
    free(p->argv[i]);
  free(p->argv);
  free(p);
}

void gpd_registry_counters(const gpd_proc_t *p, uint32_t *rings, uint64_t *records,
                           uint64_t *drops) {
  *rings = p->rings_in_use;
  *records = p->prof.records;
  *drops = p->drops;
}

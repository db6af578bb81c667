/* profile-corr.c - bounds of the correlation map (corr -> invocation):
 * the age fifo of the invocations in it, eviction of the oldest past
 * max_corr entries or max_corr_age records (profile.h), and removal.
 * Caller holds the daemon lock. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "profile-internal.h"

void gpd__profile_corr_del(gpd_profile_t *p, uint64_t corr, uint64_t val) {
  if (val & GPD_CORR_STORED)
    gpd__profile_delta_gone(p, GPD_PEND_SEQ(1, corr) | GPD_PEND_STORED);
  gpd_map_del(&p->corr, corr);
}

/* Rewrite the ring with only the keys still in the map (oldest first). */
static void corr_compact(gpd_profile_t *p) {
  uint32_t w = 0, old = 0;
  for (uint32_t k = 0; k < p->corr_nfifo; k++) {
    gpd_corr_age_t e = p->corr_fifo[(p->corr_head + k) & (p->corr_capfifo - 1)];
    if (k + 16 < p->corr_nfifo) /* a miss per entry with many in flight */
      gpd_map_prefetch(&p->corr, p->corr_fifo[(p->corr_head + k + 16) & (p->corr_capfifo - 1)].corr);
    if (gpd_map_get(&p->corr, e.corr, NULL)) {
      p->corr_fifo[w++] = e; /* w <= k: in place once head is folded below */
      old += k < p->corr_old;
    }
  }
  p->corr_head = 0;
  p->corr_nfifo = w;
  p->corr_old = old;
}

/* An invocation entered the map: remember its age, then evict the oldest
 * while a bound is exceeded.  O(1) amortized. */
void gpd__profile_corr_track(gpd_profile_t *p, uint64_t corr) {
  if (p->corr_nfifo == p->corr_capfifo) {
    uint32_t nc = p->corr_capfifo ? p->corr_capfifo * 2 : 64;
    gpd_corr_age_t *na = malloc((size_t)nc * sizeof *na);
    if (na != NULL) {
      for (uint32_t k = 0; k < p->corr_nfifo; k++)
        na[k] = p->corr_fifo[(p->corr_head + k) & (p->corr_capfifo - 1)];
      free(p->corr_fifo);
      p->corr_fifo = na;
      p->corr_capfifo = nc;
      p->corr_head = 0;
    }
  }
  if (p->corr_nfifo < p->corr_capfifo) {
    p->corr_fifo[(p->corr_head + p->corr_nfifo) & (p->corr_capfifo - 1)] =
        (gpd_corr_age_t){.corr = corr, .seq = p->records};
    p->corr_nfifo++;
  } else {
    p->pend_full = 1; /* untracked: the next snapshot writes every row */
  }
  while (p->corr_nfifo > 0) {
    gpd_corr_age_t *e = &p->corr_fifo[p->corr_head];
    int over = p->corr.n > p->max_corr || p->records - e->seq > p->max_corr_age;
    if (e->corr == corr && !over)
      break; /* the entry just added: in the map, no lookup needed */
    uint64_t val;
    int present = gpd_map_get(&p->corr, e->corr, &val);
    if (present && !over)
      break;
    if (present) {
      gpd__profile_corr_del(p, e->corr, val);
      p->corr_evicted++;
    }
    p->corr_head = (p->corr_head + 1) & (p->corr_capfifo - 1);
    p->corr_nfifo--;
    if (p->corr_old)
      p->corr_old--;
  }
  if (p->corr_nfifo > 2 * p->corr.n + 64) {
    /* fold the ring so that compaction can work in place */
    gpd_corr_age_t *na = malloc((size_t)p->corr_capfifo * sizeof *na);
    if (na != NULL) {
      for (uint32_t k = 0; k < p->corr_nfifo; k++)
        na[k] = p->corr_fifo[(p->corr_head + k) & (p->corr_capfifo - 1)];
      free(p->corr_fifo);
      p->corr_fifo = na;
      p->corr_head = 0;
      corr_compact(p);
    }
  }
}

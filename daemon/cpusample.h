/* cpusample.h - CPU-time samples of one process (CPUSAMPLE records of the
 * shim's sampler, shim/cpusample.c): CPUTIME in the process's CCT and the
 * per-thread CPU sample trace (cpusample.c).
 * Lock: the daemon lock, like profile.h. */
#ifndef GPD_DAEMON_CPUSAMPLE_H
#define GPD_DAEMON_CPUSAMPLE_H

#include <stdatomic.h>
#include <stdint.h>

#include "store-rows.h"

struct gpd_profile_s;

/** Most CPUSAMPLE records of one process waiting for their NODE; past it a
 *  sample goes to <unknown context> at once (never lost). */
#define GPD_CPS_MAX_PENDING 65536u
/** Default of [store] cpu_sample_trace_max_rows. */
#define GPD_CPS_TRACE_MAX_DEFAULT 1000000u

/** Most trace rows kept per profile (the daemon sets it from its config;
 *  0: no CPU sample trace).  Samples past it still add CPUTIME and are
 *  counted in trace_dropped. */
extern _Atomic uint64_t gpd_cpusample_trace_max;

/* The snapshot types (gpd_cps_snap_t, gpd_cps_row_t): store-rows.h. */

typedef struct gpd_cpusample_s gpd_cpusample_t;

/** Attribute a validated CPUSAMPLE record: weight ns to CPUTIME of the
 *  node the shim announced as r->node (kept pending until it is placed),
 *  and a trace row.  Allocates p's state on first use; on -ENOMEM the
 *  sample goes to <unknown context>. */
void gpd_cpusample_ingest(struct gpd_profile_s *p, const void *rec);
/** Attribute pending samples whose node was placed since; force: all of
 *  them (the rest to <unknown context>), at the process's end. */
void gpd_cpusample_retry(struct gpd_profile_s *p, int force);
/** Move the new rows and the totals into *out.  0 or -ENOMEM. */
int gpd_cpusample_snap(gpd_cpusample_t *cs, gpd_cps_snap_t *out);
/** A snapshot that was not committed: put its rows back. */
void gpd_cpusample_unsnap(gpd_cpusample_t *cs, gpd_cps_snap_t *s);
void gpd_cpusample_snap_free(gpd_cps_snap_t *s);
void gpd_cpusample_free(gpd_cpusample_t *cs);

#endif

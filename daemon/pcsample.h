/* pcsample.h - GPU PC samples of one process (pcsample.c).
 * Lock: the daemon lock, like profile.h. */
#ifndef GPD_DAEMON_PCSAMPLE_H
#define GPD_DAEMON_PCSAMPLE_H

#include <stdint.h>

#include "store-rows.h"

#include "gpuprof/record.h"

/* The snapshot types (gpd_pcs_snap_t, its rows) are the store's rows:
 * store-rows.h. */

typedef struct gpd_pcsample_s gpd_pcsample_t;

/** Samples of one (function, stall reason) since the process started
 *  (string ids of the profile): what the live tree and top show. */
typedef struct gpd_pcs_total_s {
  uint32_t func, stall;
  uint64_t samples;
} gpd_pcs_total_t;

/** The running totals of ps (never reset by a snapshot; at most
 *  GPD_PCS_MAX_TOTALS keys, samples of further keys are not counted
 *  there).  *n = how many; NULL and 0 when ps is NULL or has none.  Valid
 *  until the next ingest.  Under the daemon lock. */
const gpd_pcs_total_t *gpd_pcsample_totals(const gpd_pcsample_t *ps, uint32_t *n);
#define GPD_PCS_MAX_TOTALS 4096u

/** Add a validated PCSAMPLE / PCSTATS / CUBIN record; *ps is allocated on
 *  first use (NULL stays NULL on -ENOMEM: the record is lost). */
void gpd_pcsample_ingest(gpd_pcsample_t **ps, const void *rec);
/** Move the deltas out into *out (ps may be NULL: empty).  0, -ENOMEM. */
int gpd_pcsample_snap(gpd_pcsample_t *ps, gpd_pcs_snap_t *out);
/** A snapshot that was not committed: add its deltas back. */
void gpd_pcsample_unsnap(gpd_pcsample_t *ps, gpd_pcs_snap_t *s);
void gpd_pcsample_snap_free(gpd_pcs_snap_t *s);
void gpd_pcsample_free(gpd_pcsample_t *ps);

#endif

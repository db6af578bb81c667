/* store-device.h - the device monitoring series (device-write.c: tables
 * device, device_sample, device_proc, cpu_counter; docs/FORMATS.md,
 * docs/DEVICES.md), written by the daemon's sampler thread on its own
 * connection (gpd_store_db_open).
 *
 * Rows go in the caller's transaction (gpd_store_db_begin / _commit);
 * functions return 0 or GPD_ESTORE (logged).  One thread per connection.
 */
#ifndef GPD_STORE_DEVICE_H
#define GPD_STORE_DEVICE_H

#include <stdint.h>

#include <sqlite3.h>

/** Columns of device_sample after (device, t_ns), in table order; bit
 *  1 << GPD_STORE_DS_x of a row's `null` stores that column as NULL (the
 *  back end did not read it). */
enum {
  GPD_STORE_DS_UTIL_GPU, GPD_STORE_DS_UTIL_MEM, GPD_STORE_DS_MEM_USED, GPD_STORE_DS_MEM_TOTAL,
  GPD_STORE_DS_POWER, GPD_STORE_DS_TEMP, GPD_STORE_DS_CLOCK_SM, GPD_STORE_DS_CLOCK_MEM,
  GPD_STORE_DS_PCIE_TX, GPD_STORE_DS_PCIE_RX, GPD_STORE_DS_ECC_CORR, GPD_STORE_DS_ECC_UNCORR,
  GPD_STORE_DS_XID, GPD_STORE_DS_NVLINK_TX, GPD_STORE_DS_NVLINK_RX, GPD_STORE_DS__N
};

/** One sample of one device (units: percent, bytes, W, degrees C, MHz,
 *  bytes/s, counts): v[GPD_STORE_DS_x]; the integer columns are stored
 *  as integers. */
typedef struct gpd_store_dev_sample_row_s {
  int64_t device; /* gpd_store_device_id */
  uint64_t t_ns;
  uint32_t null;
  double v[GPD_STORE_DS__N];
} gpd_store_dev_sample_row_t;

/** One process on a device at t_ns; a field at its "unknown" value is
 *  stored as NULL (uid < 0, profile_id 0, job NULL or "", mem_bytes
 *  UINT64_MAX, !has_util). */
typedef struct gpd_store_dev_proc_row_s {
  int64_t device, pid, uid;
  uint64_t t_ns, profile_id, mem_bytes;
  const char *job;
  int has_util;
  double sm_util, mem_util;
} gpd_store_dev_proc_row_t;

/** The id of device (api, uuid), its row made or its index and name
 *  updated.  The id (>= 0) or GPD_ESTORE. */
int64_t gpd_store_device_id(sqlite3 *db, const char *api, int64_t index, const char *name, const char *uuid);

/** A handle on one flush's inserts of the series (a statement set, store-sql.h). */
typedef struct gpd_store_stmts_s gpd_store_device_t;
/** Prepare one flush's inserts on db.  0 or GPD_ESTORE (logged). */
int gpd_store_device_open(sqlite3 *db, gpd_store_device_t **w);
void gpd_store_device_close(gpd_store_device_t *w);
/** Insert or replace one row of device_sample / device_proc / cpu_counter. */
int gpd_store_device_sample(gpd_store_device_t *w, const gpd_store_dev_sample_row_t *r);
int gpd_store_device_proc(gpd_store_device_t *w, const gpd_store_dev_proc_row_t *r);
int gpd_store_device_cpu(gpd_store_device_t *w, uint64_t profile, uint64_t t_ns, const char *event, int64_t value);
/** Series retention: rows of device_sample, device_proc and cpu_counter
 *  older than before_ns (0: none), and all but the newest max_rows of
 *  each (0: no bound), deleted.  Best effort (failures logged). */
void gpd_store_device_trim(sqlite3 *db, uint64_t before_ns, uint64_t max_rows);

#endif

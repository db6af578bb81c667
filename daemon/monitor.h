/* monitor.h - the monitor thread: drains rings into profiles.
 *
 * Lock: gpd_monitor_pass takes gpd_daemon_t.lock per process;
 * gpd_monitor_drain needs it held. */
#ifndef GPD_DAEMON_MONITOR_H
#define GPD_DAEMON_MONITOR_H

#include <stdint.h>

#include "registry.h"

typedef struct gpd_daemon_s gpd_daemon_t;

int gpd_monitor_start(gpd_daemon_t *d);
void gpd_monitor_stop(gpd_daemon_t *d);
/** One pass over all processes (monitor thread or tests); takes the lock
 *  per process.  Returns records consumed. */
uint64_t gpd_monitor_pass(gpd_daemon_t *d);
/** Drain one process completely and finish it if ENDING (lock held). */
uint64_t gpd_monitor_drain(gpd_daemon_t *d, gpd_proc_t *p, unsigned max_per_ring);

#endif

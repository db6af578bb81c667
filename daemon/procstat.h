/* procstat.h - what the daemon reads from /proc/PID/stat (procstat.c):
 * a process's start time, which tells a pid's process from a later one
 * that reuses the pid (journal.c, devices-perf.c).  Any thread. */
#ifndef GPD_DAEMON_PROCSTAT_H
#define GPD_DAEMON_PROCSTAT_H

#include <stdint.h>
#include <sys/types.h>

/** Start time of process pid (clock ticks after boot, /proc/pid/stat
 *  field 22), 0 if unknown or gone. */
uint64_t gpd_procstat_start(pid_t pid);

#endif

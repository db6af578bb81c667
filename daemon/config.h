/* config.h - gpuprofd settings: one declarative table (config.c) read from
 * an INI file with inih.  Owned by the main thread; the monitor and writer
 * threads read only the fields marked "live" through atomics/locks of
 * their own owners after a SIGHUP reload.
 */
#ifndef GPD_DAEMON_CONFIG_H
#define GPD_DAEMON_CONFIG_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#define GPD_DEFAULT_SOCKET "/run/gpuprofd/gpuprofd.sock"
#define GPD_DEFAULT_STATE_DIR "/var/lib/gpuprofd"
#define GPD_DEFAULT_CONFIG "/etc/gpuprofd/gpuprofd.conf"

/** All settings.  Units in the names: _ms, _s, _bytes. */
typedef struct gpd_config_s {
  char socket[108];          /* [daemon] socket            */
  char state_dir[PATH_MAX];  /* [daemon] state_dir; env GPUPROF_STATE_DIR wins */
  char db_name[256];         /* [store] db = gpuprofd.gpdb (relative to state_dir) */
  uint32_t rings;            /* [shm] rings_per_process = 64 */
  uint32_t ring_slots;       /* [shm] ring_slots = 131072 (4 MiB of 32-byte slots) (power of two) */
  char admin_group[64];      /* [access] admin_group = "" (none)  live */
  uint32_t flush_ms;         /* [store] flush_interval_ms = 1000  live */
  uint64_t retain_age_s;     /* [store] retention_max_age_s = 604800 live */
  uint64_t retain_bytes;     /* [store] retention_max_bytes = 1 GiB live */
  uint64_t cpu_trace_max;    /* [store] cpu_sample_trace_max_rows = 1000000 live (0: none) */
  int log_level;             /* [daemon] log_level = warn  live */
  uint32_t max_clients;      /* [daemon] max_clients = 4096 */
  uint32_t poll_us;          /* [monitor] poll_interval_us = 200 live */
  uint32_t monitor_threads;  /* [monitor] threads = 1 (1..8) */
  /* Connection limits (client.c, server.c; docs/SERVICE.md "Connection
   * limits").  Not live: a reload does not change them. */
  uint32_t max_clients_per_uid;     /* [daemon] max_clients_per_uid = 1024 (root exempt) */
  uint32_t clients_reserve;         /* [daemon] clients_reserve = 64 */
  uint32_t clients_reserve_per_uid; /* [daemon] clients_reserve_per_uid = 4 */
  uint32_t idle_timeout_ms;         /* [daemon] idle_timeout_ms = 10000 */
  uint64_t client_out_max;          /* [daemon] client_out_max = 16 MiB */
  uint32_t limit_log_interval_s;    /* [daemon] limit_log_interval_s = 60 */
  /* Device monitoring (devices.c, docs/DEVICES.md).  Not live. */
  uint32_t dev_interval_ms;         /* [devices] interval_ms = 1000 (0: off) */
  char dev_nvml_lib[256];           /* [devices] nvml_library = libnvidia-ml.so.1 */
  char dev_sysman_lib[256];         /* [devices] sysman_library = libze_loader.so.1 */
  char dev_papi_events[512];        /* [devices] papi_events */
  uint32_t dev_papi_max_procs;      /* [devices] papi_max_procs = 256 */
  uint64_t dev_max_rows;            /* [devices] max_rows = 1000000 (0: no limit) */
  /* Tracing threads (trace.c, docs/TRACE.md).  Not live. */
  uint32_t trace_threads;           /* [trace] threads = 2 (0: no traces) */
  uint32_t trace_streams_per_thread; /* [trace] streams_per_thread = 4 */
  uint32_t trace_queue_events;      /* [trace] queue_events = 16384 */
  uint32_t trace_flush_ms;          /* [trace] flush_interval_ms = 200 */
  uint64_t trace_max_events;        /* [trace] max_events_per_profile = 2000000 */
} gpd_config_t;

/** Fill compiled-in defaults. */
void gpd_config_defaults(gpd_config_t *c);

/** Read an INI file over *c.  A missing file at the default path is not an
 *  error (returns 0); a missing file named explicitly is.  On a bad line
 *  (unknown section/key, value out of [min,max], bad number) returns
 *  GPD_ECONFIG and writes "file:line: 'text': reason" to err.  Then
 *  applies GPUPROF_STATE_DIR. */
int gpd_config_load(gpd_config_t *c, const char *path, int explicit_path,
                    char *err, size_t errlen);

/** SIGHUP: re-read `path` into a copy; on success copy only the live
 *  fields into *live and return 0; on error keep *live unchanged. */
int gpd_config_reload(gpd_config_t *live, const char *path, char *err, size_t errlen);

/* Additive (service helper): introspection of the key table, used by
 * tests to keep docs/SERVICE.md and systemd/gpuprofd.conf in step. */

/** Number of keys in the table. */
size_t gpd_config_nkeys(void);

/** Markdown table row for key i: "| [section] | key | type | default |
 *  range | live | doc |".  0 or -EINVAL (i out of range). */
int gpd_config_key_describe(size_t i, char *out, size_t outlen);

#endif

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

/** Collection modes of [collect] mode (the CUDA back end's
 *  GPUPROF_CUDA_TRACE modes, shim/cupti/cupti-mode.c). */
enum { GPD_COLLECT_FULL = 0, GPD_COLLECT_DETACHED = 1, GPD_COLLECT_DUTY = 2 };

/** The keys of [collect] and of its override sections (daemon/policy.c
 *  resolves them per process; docs/SERVICE.md "Collection policy"). */
typedef struct gpd_collect_s {
  uint32_t mode;          /* mode = duty (GPD_COLLECT_*) */
  uint32_t window_ms;     /* window_ms = 10 */
  uint32_t period_ms;     /* period_ms = 3000 (> window_ms) */
  uint32_t period_min_ms; /* period_min_ms = 500: the governor's shortest period */
  uint32_t period_max_ms; /* period_max_ms = 60000: the smallest duty */
  uint32_t pcs_window_ms; /* pc_window_ms = 0 (no rotating PC sampling) */
  uint32_t pcs_period_s;  /* pc_period_s = 300 */
  uint32_t cpu_hz;        /* cpu_sample_hz = 0 (off) */
  uint32_t budget_bp;     /* budget = 1% (basis points: 100 = 1 %) */
  uint32_t governor;      /* governor = 1 */
} gpd_collect_t;

/** Number of keys of gpd_collect_t (bits of gpd_collect_rule_t.set). */
#define GPD_COLLECT_NKEYS 10u
/** Override sections kept at most (file and `gpuprof policy set`). */
#define GPD_COLLECT_RULES_MAX 64u

/** Selector of an override section: [collect "job=J"], [collect "uid=U"],
 *  [collect "exe=PATTERN"]. */
enum { GPD_COLLECT_EXE = 0, GPD_COLLECT_UID = 1, GPD_COLLECT_JOB = 2 };

/** One override section: the keys it sets (bit i: key i of the collect
 *  keys, in table order) over the ones below it. */
typedef struct gpd_collect_rule_s {
  uint32_t kind;        /* GPD_COLLECT_EXE / _UID / _JOB */
  char pattern[256];    /* exe: fnmatch(3) pattern; uid: decimal; job: exact */
  uint32_t set;         /* keys this section sets */
  int line;             /* line of its first key (0: `gpuprof policy set`) */
  int runtime;          /* set at run time, not from the file */
  gpd_collect_t v;
} gpd_collect_rule_t;

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
  uint64_t retain_uid_bytes; /* [store] retention_uid_max_bytes = 0 (half of retain_bytes) live */
  uint64_t cpu_trace_max;    /* [store] cpu_sample_trace_max_rows = 1000000 live (0: none) */
  int log_level;             /* [daemon] log_level = warn  live */
  uint32_t max_clients;      /* [daemon] max_clients = 4096 */
  uint32_t poll_us;          /* [monitor] poll_interval_us = 200 live */
  uint32_t monitor_threads;  /* [monitor] threads = 1 (1..8) */
  /* Connection limits (client.c, server.c; docs/SERVICE.md "Connection
   * limits").  Not live: a reload does not change them. */
  uint32_t max_clients_per_uid;     /* [daemon] max_clients_per_uid = 1024 (root exempt) */
  uint32_t max_procs_per_uid;       /* [daemon] max_procs_per_uid = 1024 (root exempt): regions held */
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
  uint64_t trace_max_events;        /* [trace] max_events_per_profile = 16000000 */
  /* Collection policy (policy.c, docs/SERVICE.md).  Live: a reload
   * replaces [collect] and every override section (also those set at run
   * time). */
  gpd_collect_t collect;            /* [collect] */
  uint32_t collect_set;             /* keys [collect] itself sets (the rest: defaults) */
  uint32_t ncollect_rules;
  gpd_collect_rule_t collect_rules[GPD_COLLECT_RULES_MAX];
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

/** Set collect key `key` to `value` (the file's syntax) in [collect]
 *  (rule NULL) or in the override section `rule` names ("job=J", "uid=U",
 *  "exe=PATTERN"; created when missing, marked runtime).  Checks the
 *  result as a file line would be (window < period, ...).  0, or
 *  GPD_ECONFIG with the reason in why; -ENOSPC: GPD_COLLECT_RULES_MAX
 *  sections exist.  Main thread. */
int gpd_config_collect_set(gpd_config_t *c, const char *rule, const char *key, const char *value,
                           char *why, size_t whylen);

/** Name of collect key i (0..GPD_COLLECT_NKEYS-1), NULL beyond. */
const char *gpd_config_collect_key(unsigned i);

/** Text of collect key i of v in the file's syntax ("duty", "1.5%", "3000"). */
void gpd_config_collect_value(const gpd_collect_t *v, unsigned i, char *out, size_t n);

/* Additive (service helper): introspection of the key table, used by
 * tests to keep docs/SERVICE.md and systemd/gpuprofd.conf in step. */

/** Number of keys in the table. */
size_t gpd_config_nkeys(void);

/** Markdown table row for key i: "| [section] | key | type | default |
 *  range | live | doc |".  0 or -EINVAL (i out of range). */
int gpd_config_key_describe(size_t i, char *out, size_t outlen);

#endif

/* store-rows.h - one typed row per table of a .gpdb that the daemon writes
 * and reads back (docs/FORMATS.md gives the columns and units).  Plain
 * data: strings are borrowed (NULL: SQL NULL), valid for the call that
 * hands them over.  No SQLite type here, so daemon headers may include it.
 */
#ifndef GPD_STORE_ROWS_H
#define GPD_STORE_ROWS_H

#include <stdint.h>

/** Table profile: one process. */
typedef struct gpd_store_profile_row_s {
  uint64_t id;
  int64_t pid, ppid, uid, gid, rank, local_rank;
  const char *exe, *argv, *hostname, *job, *step, *error;
  uint64_t start_ns, end_ns, records, drops;
  uint64_t proc_start; /* kernel start time of the process (0: unknown) */
  const char *state;   /* "running", "exited" or "lost" */
} gpd_store_profile_row_t;

/** Table backend: one API's state in a profile. */
typedef struct gpd_store_backend_row_s {
  const char *api;
  int enabled, code;
  const char *reason;
} gpd_store_backend_row_t;

/** Table module: a load module of a profile; build_id in lowercase hex. */
typedef struct gpd_store_module_row_s {
  uint32_t id;
  const char *path, *build_id;
  uint64_t base, size;
} gpd_store_module_row_t;

/** Table string: a profile's interned string. */
typedef struct gpd_store_string_row_s {
  uint32_t id, kind;
  const char *text;
} gpd_store_string_row_t;

/** Table context: one CCT node of a uid (id: Merkle id of the path). */
typedef struct gpd_store_context_row_s {
  uint64_t id, parent, offset;
  int kind;
  const char *module, *build_id, *label, *raw;
} gpd_store_context_row_t;

/** Table frame: one source frame of a context (depth 0: outermost). */
typedef struct gpd_store_frame_row_s {
  const char *function, *file;
  unsigned line;
  int inlined;
} gpd_store_frame_row_t;

/* --- GPU PC samples (tables pcsample, pcsample_cubin, pcsample_stat) */

#define GPD_PCS_MAX_DEV 64u

/** One key's samples: GPU binary (vendor id), function and stall reason
 *  (string ids of the profile), pc (bytes into the function), device. */
typedef struct gpd_pcs_row_s {
  uint64_t cubin_id, pc;
  uint32_t func, stall, device;
  uint64_t samples, latency;
} gpd_pcs_row_t;

typedef struct gpd_pcs_cubin_s {
  uint64_t cubin_id;
  char hash[33];
} gpd_pcs_cubin_t;

/** Sampling totals of one device (GSAMP:TOT/DRP, period, SMs, clock). */
typedef struct gpd_pcs_stat_s {
  uint32_t device, period_log2, sm_count, clock_khz;
  uint64_t total, dropped, non_user;
} gpd_pcs_stat_t;

/** What one flush writes: deltas since the previous snapshot. */
typedef struct gpd_pcs_snap_s {
  gpd_pcs_row_t *rows;
  uint32_t nrows;
  gpd_pcs_cubin_t *cubins;
  uint32_t ncubins;
  gpd_pcs_stat_t stats[GPD_PCS_MAX_DEV];
  uint32_t nstats;
  uint64_t lost; /* samples of keys past the bound */
} gpd_pcs_snap_t;

/* --- CPU-time samples (tables trace_cpu_sample, cpu_sample_stat) */

/** One CPU sample of the trace: thread, time (ns, gpuprof clock) and the
 *  Merkle context id of the CCT node it was attributed to. */
typedef struct gpd_cps_row_s {
  uint64_t ts, ctx;
  uint32_t tid;
} gpd_cps_row_t;

/** What one flush writes: trace rows and the counters' increase since
 *  the previous snapshot (added to cpu_sample_stat's totals). */
typedef struct gpd_cps_snap_s {
  gpd_cps_row_t *rows;
  uint32_t nrows;
  int have;               /* the process had samples: write the counters */
  uint64_t samples;       /* CPUSAMPLE records attributed (increase) */
  uint64_t cputime_ns;    /* their weight: the process's CPUTIME (increase) */
  uint64_t trace_rows;    /* rows kept (increase) */
  uint64_t trace_dropped; /* rows not kept: the bound (increase) */
  uint64_t unknown;       /* samples whose node never came: <unknown context> */
} gpd_cps_snap_t;

/* --- tracing windows (tables trace_duty, trace_window, trace_duty_launch) */

/** One window, ns on the gpuprof clock. */
typedef struct gpd_tw_win_s {
  uint64_t start, end;
} gpd_tw_win_t;

/** What one flush writes: the summary and the windows since the last. */
typedef struct gpd_tw_snap_s {
  int have;
  uint8_t api, duty, final;
  uint64_t t0, end, windows, window_ns, launches, launches_in;
  gpd_tw_win_t *win;
  uint32_t nwin;
} gpd_tw_snap_t;

/* --- GPU binaries (tables gpubin, gpubin_ref) */

/** A stored GPU binary's row: its file is gpubins/<hash>.gpubin. */
typedef struct gpd_store_gpubin_row_s {
  struct gpd_store_gpubin_row_s *next;
  char hash[33], kind[32];
  uint64_t size;
  int64_t profile_id;
  uint32_t uid;
} gpd_store_gpubin_row_t;

#endif

/* devices.h - vendor device monitoring (docs/DEVICES.md).
 *
 * One sampler thread (devices.c) reads, every `[devices] interval_ms`:
 *   - every GPU of the GPU back ends: NVML (devices-nvml.c, libnvidia-ml
 *     loaded with dlopen, no build dependency) and Level Zero Sysman
 *     (devices-sysman.c, the loader loaded with dlopen; built when
 *     CMake found zes_api.h);
 *   - PAPI events of every running profiled process (devices-papi.c,
 *     built when CMake found PAPI), attached to its pid; where PAPI
 *     cannot count (not built, or no PMU), the kernel's software events
 *     through perf_event_open(2) instead (devices-perf.c).
 * Vendor calls may block (a hung driver): they run only on that thread,
 * never on the libuv loop and never with gpd_daemon_t.lock held.  The
 * newest sample of each device and process is published under the
 * devices' own mutex (queries copy it); the samples go to the store as
 * time series (devices-series.c, the thread's own SQLite connection),
 * attributed to the registered process (profile, job, uid) of each pid
 * the vendor reports on a device.
 *
 * Lock order: gpd_daemon_t.lock, then gpd_devices_t.mu (never the other
 * way).  Vendor calls hold neither.
 */
#ifndef GPD_DAEMON_DEVICES_H
#define GPD_DAEMON_DEVICES_H

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "access.h"

typedef struct gpd_daemon_s gpd_daemon_t;
typedef struct gpd_dstore_s gpd_dstore_t;

/** Bits of gpd_dev_sample_t.present: which fields the vendor answered. */
enum {
  GPD_DF_UTIL_GPU = 1u << 0,   /* util_gpu */
  GPD_DF_UTIL_MEM = 1u << 1,   /* util_mem */
  GPD_DF_MEM = 1u << 2,        /* mem_used, mem_total */
  GPD_DF_POWER = 1u << 3,      /* power_w */
  GPD_DF_TEMP = 1u << 4,       /* temp_c */
  GPD_DF_CLOCK_SM = 1u << 5,   /* clock_sm_mhz */
  GPD_DF_CLOCK_MEM = 1u << 6,  /* clock_mem_mhz */
  GPD_DF_PCIE = 1u << 7,       /* pcie_tx_bps, pcie_rx_bps */
  GPD_DF_ECC = 1u << 8,        /* ecc_corrected, ecc_uncorrected */
  GPD_DF_XID = 1u << 9,        /* xid_events, last_xid */
  GPD_DF_PROCS = 1u << 10,     /* procs[] (the process list was read) */
  GPD_DF_NVLINK = 1u << 11,    /* nvlink_tx_bps, nvlink_rx_bps */
};

/** Most processes kept per device and sample (more are counted in
 *  nprocs_dropped). */
#define GPD_DEV_MAX_PROCS 64u
/** Most GPUs per back end. */
#define GPD_DEV_MAX 64u
/** Most PAPI events per process. */
#define GPD_PAPI_MAX_EVENTS 8u

/** One process the vendor reports on a device, and who it is. */
typedef struct gpd_dev_proc_s {
  int32_t pid;
  uid_t uid;               /* owner (registry, else /proc/<pid>); (uid_t)-1 unknown */
  uint64_t profile_id;     /* 0: not a profiled process */
  char job_id[64];         /* "" when unknown */
  int job_verified;        /* job_id from its cgroup, not only claimed (job.h) */
  char exe[64];            /* base name, "" when unknown */
  uint64_t mem_bytes;      /* device memory it holds; UINT64_MAX unknown */
  int has_util;            /* sm_util/mem_util were reported */
  uint64_t util_ts;        /* vendor timestamp of that report (us) */
  double sm_util, mem_util;/* percent of the device, vendor's last window */
} gpd_dev_proc_t;

/** One sample of one device.  Units: percent, bytes, W, degrees C, MHz,
 *  bytes/s; counters are totals since the driver loaded (ECC) or since
 *  the sampler started (XID). */
typedef struct gpd_dev_sample_s {
  uint64_t t_ns;           /* gpd_clock_ns() when the sample was taken */
  uint32_t present;        /* GPD_DF_* */
  double util_gpu, util_mem;
  uint64_t mem_used, mem_total;
  double power_w, temp_c;
  uint32_t clock_sm_mhz, clock_mem_mhz;
  uint64_t pcie_tx_bps, pcie_rx_bps;
  uint64_t nvlink_tx_bps, nvlink_rx_bps; /* data payload, all links summed */
  uint64_t ecc_corrected, ecc_uncorrected;
  uint64_t xid_events, last_xid;
  uint32_t nprocs, nprocs_dropped;
  gpd_dev_proc_t procs[GPD_DEV_MAX_PROCS];
} gpd_dev_sample_t;

/** A GPU back end (devices-nvml.c, devices-sysman.c).  All functions run
 *  on the sampler thread only and may block. */
typedef struct gpd_gpu_backend_s {
  const char *api; /* "nvml", "sysman" */
  /** Load the library `lib` and enumerate devices.  0 with *st, or a
   *  negative code with the reason in why (shown by `gpuprof devices`). */
  int (*open)(void **st, const char *lib, char *why, size_t whylen);
  uint32_t (*count)(void *st);
  /** Name and a stable unique id (UUID) of device i.  0 or < 0. */
  int (*describe)(void *st, uint32_t i, char *name, size_t nlen, char *uuid, size_t ulen);
  /** Fill s (present bits, values, procs with pid/mem/util only).  0, or
   *  < 0 when the device did not answer at all. */
  int (*sample)(void *st, uint32_t i, gpd_dev_sample_t *s);
  void (*close)(void *st);
} gpd_gpu_backend_t;

extern const gpd_gpu_backend_t gpd_devices_nvml;
#ifdef GPD_HAVE_SYSMAN
extern const gpd_gpu_backend_t gpd_devices_sysman;
#endif

/** One device as published: identity plus its newest sample. */
typedef struct gpd_dev_s {
  char api[8];             /* back end */
  uint32_t index;          /* index within the back end */
  char name[96], uuid[96];
  int64_t row_id;          /* device table id (sampler thread) */
  gpd_dev_sample_t last;
} gpd_dev_t;

/** PAPI readings of one profiled process (newest). */
typedef struct gpd_cpu_s {
  uint64_t profile_id;
  int32_t pid;
  uid_t uid;
  char job_id[64];
  int job_verified; /* job.h */
  uint64_t t_ns;
  uint32_t nvalues;
  long long values[GPD_PAPI_MAX_EVENTS]; /* cumulative since attach, PAPI units */
  double rate[GPD_PAPI_MAX_EVENTS];      /* per second over the last interval */
} gpd_cpu_t;

/** State of one back end, for `gpuprof devices`. */
typedef struct gpd_dev_status_s {
  char api[8];
  int enabled;
  int code;
  char reason[256];
} gpd_dev_status_t;

/** The monitoring state (embedded in gpd_daemon_t through a pointer). */
typedef struct gpd_devices_s gpd_devices_t;

/** Start the sampler thread (no-op when `[devices] interval_ms` is 0:
 *  the status then says "disabled").  Opens the back ends on that
 *  thread.  0 or -errno.  Main thread, after the store is open. */
int gpd_devices_start(gpd_daemon_t *d);
/** Stop and join the sampler, write what is pending, close the back
 *  ends.  Main thread. */
void gpd_devices_stop(gpd_daemon_t *d);

struct Gpuprof__Msg;
/** Build the DevicesReply for `peer` into *out (free with
 *  gpd_devices_reply_free).  Node-level device rows go to everyone;
 *  process and job rows only where gpd_access_may_see(peer, uid) (the
 *  rest are neither sent nor counted; a pid whose owner is unknown is
 *  shown to admins only), of job `job_id` only when it is not "".  Main thread; takes
 *  gpd_devices_t.mu briefly, never blocks on a vendor.  0 or -ENOMEM. */
int gpd_devices_reply(gpd_daemon_t *d, const gpd_peer_t *peer, const char *job_id,
                      struct Gpuprof__Msg **out);
void gpd_devices_reply_free(struct Gpuprof__Msg *m);

/* ---- the per-process table of the CPU counter back ends (devices-cpuslot.c) ---- */
/** Head of one entry of a CPU back end's process table: the entry
 *  structs of devices-papi.c and devices-perf.c start with it. */
typedef struct {
  uint64_t profile_id;
  int32_t pid;
  int seen; /* still wanted in this round */
} gpd_cpu_slot_t;
/** The entry of (profile_id, pid) in `slots` (*n used of max, entries of
 *  `stride` bytes, zeroed by the caller's calloc), marked seen.  Absent:
 *  a new one is appended with *added = 1, or NULL when the table is full
 *  (a warning naming `who` is logged once, *full_logged set).  Sampler
 *  thread. */
gpd_cpu_slot_t *gpd__devices_cpuslot_get(void *slots, size_t stride, uint32_t *n, uint32_t max,
                                         uint64_t profile_id, int32_t pid, int *added,
                                         int *full_logged, const char *who);
/** Clear every entry's seen mark (start of a round). */
void gpd__devices_cpuslot_unsee(void *slots, size_t stride, uint32_t n);
/** Remove the entries not seen this round, calling drop(ctx, entry)
 *  first for each, keeping the table dense.  Sampler thread. */
void gpd__devices_cpuslot_sweep(void *slots, size_t stride, uint32_t *n,
                                void (*drop)(void *ctx, void *entry), void *ctx);

/* ---- PAPI (devices-papi.c); stubs when PAPI is not built ---- */
typedef struct gpd_papi_s gpd_papi_t;
#ifdef GPD_HAVE_PAPI
/** Initialise PAPI and check that every event of the comma-separated
 *  list `events` exists and can be counted.  0 with *out, or < 0 with why.
 *  Sampler thread. */
int gpd_devices_papi_open(gpd_papi_t **out, const char *events, uint32_t max_procs, char *why,
                  size_t whylen);
/** Event names (PAPI's spelling) and their count. */
uint32_t gpd_devices_papi_nevents(const gpd_papi_t *p, const char *const **names);
/** Make the attached set equal to `pids` (profile ids `ids`, n of them):
 *  attach new ones (PAPI_attach: the daemon's privileges), detach gone
 *  ones, then read all into cpu[] (matching order; nvalues 0 where the
 *  attach failed).  Sampler thread. */
void gpd_devices_papi_sample(gpd_papi_t *p, const uint64_t *ids, const int32_t *pids, uint32_t n,
                     gpd_cpu_t *cpu);
void gpd_devices_papi_close(gpd_papi_t *p);
#else
static inline int gpd_devices_papi_open(gpd_papi_t **out, const char *events, uint32_t max_procs,
                                char *why, size_t whylen) {
  (void)events, (void)max_procs;
  *out = NULL;
  snprintf(why, whylen, "gpuprofd was built without PAPI (libpapi-dev not found)");
  return -ENOSYS;
}
static inline uint32_t gpd_devices_papi_nevents(const gpd_papi_t *p, const char *const **names) {
  (void)p;
  *names = NULL;
  return 0;
}
static inline void gpd_devices_papi_sample(gpd_papi_t *p, const uint64_t *ids, const int32_t *pids,
                                   uint32_t n, gpd_cpu_t *cpu) {
  (void)p, (void)ids, (void)pids, (void)n, (void)cpu;
}
static inline void gpd_devices_papi_close(gpd_papi_t *p) { (void)p; }
#endif

/* ---- perf_event (devices-perf.c): the kernel's software events where
 * PAPI cannot count (no PAPI, or its perf_event component disabled) ---- */
typedef struct gpd_perf_s gpd_perf_t;
/** Map the comma-separated libpfm4 names of `events` (perf::TASK-CLOCK,
 *  perf::CONTEXT-SWITCHES, perf::CPU-MIGRATIONS, perf::PAGE-FAULTS,
 *  perf::MINOR-FAULTS, perf::MAJOR-FAULTS, perf::CPU-CLOCK and libpfm4's
 *  aliases) to PERF_TYPE_SOFTWARE counters and check once on the daemon
 *  itself that the kernel counts them.  At most max_procs processes are
 *  counted at once (max_procs * events fds).  0 with *out, or < 0 with
 *  why (GPD_ECONFIG: an event that is not a software event; -errno of
 *  perf_event_open(2)).  Sampler thread. */
int gpd_devices_perf_open(gpd_perf_t **out, const char *events, uint32_t max_procs, char *why,
                  size_t whylen);
/** Event names (libpfm4's spelling) and their count. */
uint32_t gpd_devices_perf_nevents(const gpd_perf_t *p, const char *const **names);
/** Make the counted set equal to `pids` (registered running profiled
 *  processes only: profile ids `ids`, kernel start times `starts` from the
 *  registry, 0 = unknown; n of them): open counters on new ones (inherit
 *  on: threads and children started later count too; a pid whose start
 *  time no longer matches is not counted), close gone ones, then read all
 *  into cpu[] (matching order; cumulative ns or events since the attach;
 *  nvalues 0 where the open failed).  Sampler thread. */
void gpd_devices_perf_sample(gpd_perf_t *p, const uint64_t *ids, const int32_t *pids,
                     const uint64_t *starts, uint32_t n, gpd_cpu_t *cpu);
/** Close every counter and free p (NULL is fine). */
void gpd_devices_perf_close(gpd_perf_t *p);

/* ---- series (devices-series.c): the sampler thread's SQLite writes ---- */
typedef struct gpd_series_s gpd_series_t;
/** Open the sampler's own connection to the open store (gpd_dstore_connect).
 *  max_rows: most rows kept per series table (0: no limit).  0, -ENOMEM
 *  or GPD_ESTORE. */
int gpd_devices_series_open(gpd_series_t **out, gpd_dstore_t *store, uint64_t max_rows);
/** The device table id of (api, uuid), inserted when new.  >0 or < 0. */
int64_t gpd_devices_series_device(gpd_series_t *s, const gpd_dev_t *dev);
/** Queue one device sample / one process's counters (copied; bounded:
 *  past 65536 queued rows the oldest is dropped and counted). */
void gpd_devices_series_add_sample(gpd_series_t *s, int64_t device, const gpd_dev_sample_t *x);
void gpd_devices_series_add_cpu(gpd_series_t *s, const gpd_cpu_t *c, const char *const *names);
/** Write what is queued in one transaction, then (once a minute, after a
 *  quarter of max_rows was written, or with `force`) drop rows older than
 *  max_age_s and the oldest beyond max_rows per table.  0 or GPD_ESTORE
 *  (rows stay queued). */
int gpd_devices_series_flush(gpd_series_t *s, uint64_t max_age_s, int force);
/** Rows dropped by the queue bound. */
uint64_t gpd_devices_series_dropped(const gpd_series_t *s);
void gpd_devices_series_close(gpd_series_t *s);

#endif

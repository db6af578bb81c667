/* daemon.h - the daemon object and the umbrella of the daemon's headers.
 *
 * Threads (docs/DAEMON.md):
 *   main     libuv loop: listening socket, clients, queries, signals, timers
 *   monitor  drains every registered region's rings, attributes records
 *   writer   persists dirty profiles to SQLite every flush_ms
 *   symbolizer  call sites of stored contexts, budget per uid (symbolizer.c)
 * All shared state (the registry and every profile in it) is guarded by
 * gpd_daemon_t.lock.  The monitor holds it for a pass (helper monitors
 * drain under the leader's hold, monitor.c); queries
 * and the writer take it briefly (the writer copies, then writes outside).
 * A Hello never waits for it (registry.c): a new process goes on the
 * incoming list under the small reg_lock, and whoever holds lock next
 * (gpd_registry_lock) moves it into the registry.
 * Each noun has its own header saying which lock its functions need.
 */
#ifndef GPD_DAEMON_DAEMON_H
#define GPD_DAEMON_DAEMON_H

#include <limits.h>
#include <pthread.h>
#include <stdint.h>

#include "access.h"
#include "config.h"
#include "control.h"
#include "policy.h"
#include "devices.h"
#include "journal.h"
#include "map.h"
#include "merge.h"
#include "monitor.h"
#include "profile.h"
#include "query.h"
#include "registry.h"
#include "server.h"
#include "dstore.h"
#include "symbols.h"
#include "symbolizer.h"
#include "trace.h"

/* GPD_PROTO_VERSION: gpuprof/region.h (the shim checks the same one) */

/** The daemon. */
typedef struct gpd_daemon_s {
  gpd_config_t cfg;
  char config_path[4096];
  int config_explicit;
  char db_path[PATH_MAX + 300];
  int exit_when_idle;
  /* --release-on-consume (gpuprof record): the monitor gives ring slots
   * back as soon as it consumed them, not after the writer committed
   * them.  No successor daemon will re-read a private recorder's rings,
   * so waiting for the commit (symbolization + SQLite, hundreds of ms
   * under load) only made a fast producer's ring overflow. */
  int release_on_consume;
  int foreground;
  pthread_mutex_t lock;
  pthread_cond_t writer_cv;
  gpd_proc_t *procs;    /* registry list, newest first */
  uint32_t nprocs;
  /* reg_lock: taken alone or inside lock, never the other way round;
   * held only for a few pointer moves */
  pthread_mutex_t reg_lock;
  gpd_proc_t *incoming; /* registered, not yet in procs, newest first (reg_lock) */
  gpd_proc_t *eofs;     /* EOFs while lock was busy, linked by eof_next (reg_lock) */
  struct gpd_uid_held_s *uid_held; /* regions held per non-root uid (registry.h; reg_lock) */
  uint64_t next_profile_id; /* reg_lock, like the store's id_hw */
  /* tests only (GPUPROF_TEST_MONITOR_HOLD=MS,PROCS, daemon.register64):
   * until PROCS processes are registered, every monitor pass keeps the
   * lock MS longer and the next follows at once, as on a loaded machine
   * while processes load (0: off) */
  unsigned test_hold_ms, test_hold_procs;
  int stop;             /* threads: stop after a last pass */
  int had_client;       /* exit-when-idle: a process registered once */
  int lock_want;        /* the writer waits for lock (atomic): a monitor pass
                           lets it in between two processes (monitor.c) */
  int flush_now;        /* wake the writer: a process ended, or a ring is
                           more than half full of unreleased slots */
  uint64_t early_flushes; /* flushes asked for by ring back-pressure */
  uint64_t mon_pass_max_ns; /* atomic: the longest monitor pass (monitor.c) */
  int journal_urgent;   /* atomic: a uid's journal holds over a quarter of its
                           budget (gpd_journal_pressure): the next flush runs
                           before retention's share; cleared by that flush */
  int writer_stop;      /* writer: last flush, then exit (set with an atomic store:
                           retention reads it between its transactions) */
  int retain_stop;      /* main, at SIGTERM (atomic): a retention pass ends at its
                           next transaction, before the threads are stopped */
  int shutting_down;    /* main: closing connections does not end processes */
  pthread_t monitor_tid, writer_tid;
  struct gpd_mpool_s *mpool; /* helper monitor threads (monitor.c), NULL: none */
  int monitor_started, writer_started;
  gpd_dstore_t *store;
  gpd_journal_t *journal; /* ring journal (journal.c), NULL: release at commit */
  struct gpd_sizer_s *sizer; /* profile sizer thread (sizer.c), NULL: retention sizes on the writer */
  struct gpd_symbolizer_s *symbolizer; /* symbolizer thread (symbolizer.c), NULL: none */
  gpd_devices_t *devices; /* device monitoring (devices.c) */
  struct gpd_trace_s *trace; /* tracing threads (trace.c), NULL: off */
  struct uv_loop_s *loop;
} gpd_daemon_t;

#endif

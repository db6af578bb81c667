/* pcrotate.h - rotating PC-sampling windows of the node policy
 * ([collect] pc_window_ms / pc_period_s, docs/SERVICE.md "Collection
 * policy", docs/CUDA.md "Rotating PC-sampling windows").
 *
 * The daemon, not the shim, decides when a process samples: each running
 * CUDA process whose resolved policy has pc_window_ms > 0 is due one
 * window of pc_window_ms every pc_period_s; due processes are served one
 * window at a time on the node (so never two on one GPU), the least
 * recently sampled first (round robin).  A process another tool keeps
 * from sampling (its CUDA CollectReport says busy) is skipped and tried
 * again after GPD_PCROT_BUSY_SKIPS skipped turns; a deep dive (`gpuprof
 * sample`: Control kind PC_SAMPLING from a CLI) takes precedence: no
 * rotating window starts while one runs, and one that runs in the same
 * process is given up.
 *
 * Threads: main thread (libuv loop) only, like the per-process counters
 * (gpd_pcrot_proc_t in gpd_proc_t: written by the tick and the acks, read
 * by the query replies, all built there).  gpd_pcrotate_tick takes
 * gpd_daemon_t.lock with trylock only, to walk the registry (never waits
 * on the loop); nothing else here takes it.
 */
#ifndef GPD_DAEMON_PCROTATE_H
#define GPD_DAEMON_PCROTATE_H

#include <stddef.h>
#include <stdint.h>

typedef struct gpd_daemon_s gpd_daemon_t;
struct gpd_client_s;
struct gpd_proc_s;
struct Gpuprof__ControlAck;

/** Due turns a busy process is skipped before it is tried again. */
#define GPD_PCROT_BUSY_SKIPS 3u

/** Rotating windows of one process (embedded in gpd_proc_t; zeroed =
 *  none yet).  Times on the gpuprof clock (gpd_clock_ns), ns. */
typedef struct gpd_pcrot_proc_s {
  uint32_t windows;   /* windows the shim accepted (ack code 0) */
  uint32_t skipped;   /* due turns skipped: the process was busy */
  uint32_t refused;   /* windows the shim refused (ack code != 0) */
  uint32_t busy_run;  /* consecutive busy skips (GPD_PCROT_BUSY_SKIPS) */
  uint64_t window_ns; /* accepted windows' length, summed (as asked) */
  uint64_t last_ns;   /* start of the latest window sent (0: none) */
  uint64_t next_ns;   /* when the next one is due (0: not yet planned) */
} gpd_pcrot_proc_t;

/** Run the schedule (main.c's 100 ms tick): close an overdue window, and
 *  when none is open start one in the next due process.  Never waits for
 *  d->lock (tried again at the next tick). */
void gpd_pcrotate_tick(gpd_daemon_t *d);

/** A ControlAck from shim connection `shim` (process p): 1 when it
 *  answers the rotating window (consumed: control.c does nothing more),
 *  else 0. */
int gpd_pcrotate_ack(gpd_daemon_t *d, struct gpd_client_s *shim, struct gpd_proc_s *p,
                     const struct Gpuprof__ControlAck *a);

/** A CLI's PC-sampling Control (a deep dive) is about to go to p: the
 *  rotating window open in p, if any, is given up (counted as run). */
void gpd_pcrotate_preempt(struct gpd_proc_s *p);

/** Connection c is closing: the window open in its process ends. */
void gpd_pcrotate_client_gone(struct gpd_client_s *c);


#endif

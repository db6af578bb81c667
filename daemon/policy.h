/* policy.h - the node's collection policy (gpuprofd.conf [collect] and its
 * override sections, docs/SERVICE.md "Collection policy"): resolved per
 * process at Hello, delivered in HelloReply, changed at run time by
 * `gpuprof policy set` (admins) and per process by the overhead governor
 * (governor.h) from what the shim reports (CollectReports).
 *
 * Threads: gpd_policy_resolve / _why / _section_name are pure (any
 * thread).  The rest run on the main thread (libuv loop), which alone
 * touches gpd_proc_t.policy; they take gpd_daemon_t.lock only to walk or
 * search the registry (never in Hello or a report). */
#ifndef GPD_DAEMON_POLICY_H
#define GPD_DAEMON_POLICY_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "access.h"
#include "config.h"
#include "governor.h"

typedef struct gpd_daemon_s gpd_daemon_t;
struct gpd_client_s;
struct gpd_proc_s;
struct gpd_proc_policy_s;
struct Gpuprof__Msg;
struct Gpuprof__Process;
struct Gpuprof__CollectPolicy;
struct Gpuprof__CollectReports;
struct Gpuprof__PolicyRequest;

/** Where a resolved key came from. */
enum { GPD_POLICY_SRC_DEFAULT = -2, GPD_POLICY_SRC_BASE = -1 /* >= 0: override section index */ };

/** The policy of one process: [collect] with its matching sections. */
typedef struct gpd_policy_s {
  gpd_collect_t v;
  int16_t src[GPD_COLLECT_NKEYS]; /* GPD_POLICY_SRC_* or section index */
  char rule[512];                 /* "[collect] < [collect "uid=1000"]" */
} gpd_policy_t;

/** Resolve c's policy for a process of job `job` (NULL/"" none), `uid`
 *  and executable path `exe` (NULL/"" none).  Layers, lowest first:
 *  compiled defaults, [collect], exe sections (fnmatch(3), no flags),
 *  uid sections, job sections (exact); each kind in c's order.  Pure. */
void gpd_policy_resolve(const gpd_config_t *c, const char *job, uint32_t uid, const char *exe,
                        gpd_policy_t *out);

/** `[collect "uid=1000"]` (+ " (set at run time)" for runtime ones). */
void gpd_policy_section_name(const gpd_collect_rule_t *r, char *out, size_t n);

/** "mode=duty ([collect]), window_ms=10 (default), ..." for p.  Pure. */
void gpd_policy_why(const gpd_config_t *c, const gpd_policy_t *p, char *out, size_t n);

/** One line per section of c ("[collect] mode=duty window_ms=10 ..."):
 *  calls emit(line, arg) for each.  Pure. */
void gpd_policy_describe(const gpd_config_t *c, void (*emit)(const char *line, void *arg), void *arg);

/** Hello of process p succeeded: resolve its policy (kept with p) and fill
 *  `out` (strings point into p's state: valid until p changes).  Never
 *  waits for d->lock.  0 or -ENOMEM (out then left empty). */
int gpd_policy_hello(gpd_daemon_t *d, struct gpd_proc_s *p, struct Gpuprof__CollectPolicy *out);

/** A CollectReports from p's shim: keep the latest per api, run the
 *  governor, send p a CONTROL_POLICY when its period changes.  Bounded:
 *  reports of unknown apis are dropped, strings cut. */
void gpd_policy_report(gpd_daemon_t *d, struct gpd_proc_s *p, const struct Gpuprof__CollectReports *r);

/** A PolicyRequest from a CLI peer: answered at once on cli (PolicyReply
 *  or Error).  --pid: own processes only (others: the same error as a pid
 *  that does not exist); set: root or admin_group only. */
void gpd_policy_request(gpd_daemon_t *d, struct gpd_client_s *cli, const gpd_peer_t *peer,
                        const struct Gpuprof__PolicyRequest *r);

/** A deep dive (TRACE / PC_SAMPLING window someone asked for) of
 *  duration_ms (0: until stopped) starts (enable) or ends in p.  Main
 *  thread. */
void gpd_policy_deep_dive(struct gpd_proc_s *p, int enable, uint32_t duration_ms);

/** What the rotating PC-sampling schedule (pcrotate.c) needs of p: its
 *  resolved pc_window_ms (*win_ms, 0: none) and pc_period_s (*per_s), and
 *  *busy: its CUDA back end's last window attempt was refused by another
 *  tool.  0, or -ENOENT when p has no policy or its CUDA back end never
 *  reported (not an attached CUDA process).  d->lock held (main thread). */
int gpd_policy_pcs(const struct gpd_proc_s *p, uint32_t *win_ms, uint32_t *per_s, int *busy);

/** Fill the Process fields of the policy (collect_mode, overhead,
 *  overhead_how, deep_dive, and pcs_state with the CUDA back end's busy
 *  text while another tool holds CUPTI) with strings from
 *  gpd__query_strdup.  Main
 *  thread (query replies are built there). */
void gpd_policy_proc_msg(const struct gpd_proc_s *p, struct Gpuprof__Process *m);

/** SIGHUP reloaded the policy: resolve every running process again and
 *  send the changed ones a CONTROL_POLICY.  Returns how many were sent. */
unsigned gpd_policy_push_all(gpd_daemon_t *d);

/** Free a process's policy state (*state: gpd_proc_t.policy, one malloc'd
 *  block with no pointers inside) and clear it (registry-proc.c, with the
 *  process).  Inline so that freeing a process does not call policy.c,
 *  which calls the registry. */
static inline void gpd_policy_proc_free(struct gpd_proc_policy_s **state) {
  free(*state);
  *state = NULL;
}

#endif

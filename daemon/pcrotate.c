/* pcrotate.c - rotating PC-sampling windows of the node policy
 * (pcrotate.h).
 *
 * One window is open on the node at a time (`cur`): a Control of kind
 * PC_SAMPLING {enable, duration_ms = pc_window_ms} on the process's shim
 * connection, with a daemon-wide id (control-id.c) so that its acks reach
 * gpd_pcrotate_ack and no CLI request.  The shim acks at once (code 0:
 * the window runs; else refused) and again with `ended` when its own
 * timer closed the window (shim/control.c); a window with no ended ack
 * by its end + GPD_CONTROL_ACK_MS is closed here.  The CUDA back end
 * samples every CUDA context of the process in the window, so one window
 * per process covers its GPUs; the daemon does not know which GPUs a
 * process uses before its first samples, so "at most one window per GPU"
 * is kept by one window per node.
 *
 * Choosing: among running processes whose policy has pc_window_ms > 0,
 * whose CUDA back end reported (CollectReport) and that run no deep dive
 * (control_on bit PC_SAMPLING: `gpuprof sample`), those due (next_ns
 * passed; a new process is first due one pc_period_s after it is seen)
 * are served the least recently sampled first.  A due process that is
 * busy (its CUDA report carries "busy: held by another tool") is skipped
 * GPD_PCROT_BUSY_SKIPS turns and then tried again (the busy text only
 * clears after an attempt).  While a deep dive runs in any process, no
 * rotating window starts.
 *
 * What a shim sends back is untrusted: an ack is matched by (connection,
 * id), and only moves that process's own counters.
 */
#include "pcrotate.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "gpuprof.pb-c.h"
#include "gpuprof/clock.h"
#include "gpuprof/log.h"

#include "control.h"
#include "daemon.h"
#include "policy.h"

/* The open window (main thread). */
static struct {
  struct gpd_client_s *shim; /* NULL: none open */
  uint64_t id, profile_id;
  int pid;
  uint64_t start_ns, until_ns; /* sent; closed here if no ended ack by until_ns */
  uint32_t window_ms;
  int acked;
} cur;

static gpd_proc_t *find_profile(gpd_daemon_t *d, uint64_t profile_id) {
  for (gpd_proc_t *p = d->procs; p; p = p->next)
    if (p->profile_id == profile_id)
      return p;
  return NULL;
}

/* Close the open window (how: "ended", ...: the log line the test
 * reads); ran: count it as run in p, its process (NULL: not counted). */
static void cur_close(gpd_proc_t *p, int ran, const char *how) {
  if (p && ran) {
    p->pcrot.windows++;
    p->pcrot.window_ns += (uint64_t)cur.window_ms * 1000000u;
  }
  GPD_INFO("rotating PC-sampling window %" PRIu64 " of pid %d %s", cur.id, cur.pid, how);
  memset(&cur, 0, sizeof cur);
}

/* 1 when p may get a rotating window now (window and period filled),
 * busy set when only its busy state keeps it.  d->lock held. */
static int eligible(gpd_proc_t *p, uint32_t *win_ms, uint32_t *per_s, int *busy) {
  *busy = 0;
  if (p->state != GPD_PROC_RUNNING || !p->client)
    return 0;
  if (gpd_policy_pcs(p, win_ms, per_s, busy) != 0 || *win_ms == 0)
    return 0;
  return 1;
}

/* The next process to sample, or NULL; plans the first turn of new
 * processes and skips busy ones.  d->lock held. */
static gpd_proc_t *pick(gpd_daemon_t *d, uint64_t now, uint32_t *win_ms) {
  gpd_proc_t *best = NULL;
  uint32_t best_win = 0;
  for (gpd_proc_t *p = d->procs; p; p = p->next)
    if (p->control_on & (1u << GPUPROF__CONTROL_KIND__CONTROL_PC_SAMPLING))
      return NULL; /* a deep dive runs: it has the GPU */
  for (gpd_proc_t *p = d->procs; p; p = p->next) {
    uint32_t w, per;
    int busy;
    if (!eligible(p, &w, &per, &busy))
      continue;
    uint64_t period_ns = (uint64_t)per * 1000000000u;
    if (p->pcrot.next_ns == 0)
      p->pcrot.next_ns = now + period_ns; /* first turn: one period after it was seen */
    if (now < p->pcrot.next_ns)
      continue;
    if (busy && p->pcrot.busy_run < GPD_PCROT_BUSY_SKIPS) {
      p->pcrot.busy_run++;
      p->pcrot.skipped++;
      p->pcrot.next_ns = now + period_ns;
      GPD_DEBUG("pid %d: rotating PC-sampling window skipped (busy, %u in a row)", (int)p->pid,
                p->pcrot.busy_run);
      continue;
    }
    if (!best || p->pcrot.last_ns < best->pcrot.last_ns) {
      best = p;
      best_win = w;
    }
  }
  *win_ms = best_win;
  return best;
}

void gpd_pcrotate_tick(gpd_daemon_t *d) {
  if (gpd_registry_trylock(d) != 0)
    return;
  uint64_t now = gpd_clock_ns();
  if (cur.shim && now >= cur.until_ns) {
    cur_close(find_profile(d, cur.profile_id), cur.acked, "closed (no end reported)");
  }
  gpd_proc_t *p = NULL;
  uint32_t win_ms = 0;
  if (!cur.shim)
    p = pick(d, now, &win_ms);
  if (p) {
    uint32_t w, per;
    int busy;
    (void)gpd_policy_pcs(p, &w, &per, &busy);
    p->pcrot.busy_run = 0;
    p->pcrot.last_ns = now;
    p->pcrot.next_ns = now + (uint64_t)per * 1000000000u;
    cur.shim = p->client;
    cur.id = gpd_control_next_id();
    cur.profile_id = p->profile_id;
    cur.pid = (int)p->pid;
    cur.start_ns = now;
    cur.until_ns = now + ((uint64_t)win_ms + GPD_CONTROL_ACK_MS) * 1000000u;
    cur.window_ms = win_ms;
    cur.acked = 0;
  }
  pthread_mutex_unlock(&d->lock);
  if (!p)
    return;
  /* sent without the lock: a failed send may close the connection, which
   * takes it (client.c); main thread, so the client stays until then */
  Gpuprof__Control c = GPUPROF__CONTROL__INIT;
  Gpuprof__Msg m = GPUPROF__MSG__INIT;
  c.id = cur.id;
  c.kind = GPUPROF__CONTROL_KIND__CONTROL_PC_SAMPLING;
  c.enable = 1;
  c.duration_ms = win_ms;
  m.body_case = GPUPROF__MSG__BODY_CONTROL;
  m.control = &c;
  GPD_INFO("rotating PC-sampling window %" PRIu64 " of pid %d started (%u ms)", cur.id, cur.pid, win_ms);
  if (gpd_client_send_msg(cur.shim, &m) < 0)
    cur_close(NULL, 0, "not sent");
}

int gpd_pcrotate_ack(gpd_daemon_t *d, struct gpd_client_s *shim, gpd_proc_t *p, const Gpuprof__ControlAck *a) {
  (void)d;
  if (!cur.shim || shim != cur.shim || a->id != cur.id)
    return 0;
  /* p is the window's process (matched by its connection); its counters
   * are main-thread state: no lock */
  if (a->ended) {
    cur_close(p, 1, "ended");
  } else if (a->code != 0) {
    p->pcrot.refused++;
    GPD_DEBUG("pid %d: rotating PC-sampling window refused: %d %s", (int)p->pid, (int)a->code,
              a->message ? a->message : "");
    cur_close(NULL, 0, "refused");
  } else {
    cur.acked = 1;
  }
  return 1;
}

void gpd_pcrotate_preempt(gpd_proc_t *p) {
  if (cur.shim && cur.profile_id == p->profile_id)
    cur_close(p, cur.acked, "given up (a deep dive)");
}

void gpd_pcrotate_client_gone(struct gpd_client_s *c) {
  /* the process's counters keep what it ran; the open window is not
   * counted (its samples may not have been flushed) */
  if (cur.shim == c)
    cur_close(NULL, 0, "lost (the process ended)");
}


/* control.c - Control of running processes (control.h).
 *
 * A request fans out to its target processes: each gets a Control with a
 * daemon-wide id on its shim connection (the shim's connection thread
 * answers with a ControlAck, shim/control.c).  The request lives in a
 * list until every target has answered, ended (its connection closed), or
 * GPD_CONTROL_ACK_MS passed; then the CLI gets one ControlReply with a
 * result per process.  Nothing here waits: acks, closes and the timer are
 * loop events.
 *
 * What a shim sends is untrusted: an ack is matched by (connection, id),
 * so a process can only answer for itself; its code and message are only
 * passed on to the user who asked (the message bounded by the frame cap
 * and cut at 160 bytes here), and the kind must be < 32 to touch
 * p->control_on.
 */
#include "control.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "gpuprof/error.h"
#include "gpuprof/log.h"
#include "gpuprof.pb-c.h"

#include "daemon.h"
#include "policy.h"
#include "pcrotate.h"
#include "job.h"

#define CTL_KINDS 32u /* shim/backends.h GPD_CONTROL_KINDS */

typedef struct ctl_target_s {
  struct gpd_client_s *shim; /* NULL once answered or gone */
  uint64_t id;
  int32_t pid;
  uint64_t profile_id;
  int code;
  uint32_t targets;
  char msg[160];
} ctl_target_t;

typedef struct ctl_op_s {
  struct ctl_op_s *next, *prev;
  gpd_daemon_t *d;
  struct gpd_client_s *cli; /* NULL: the asker is gone */
  uv_timer_t timer;
  unsigned kind, enable;
  unsigned n, left;
  ctl_target_t t[];
} ctl_op_t;

static ctl_op_t *ops;
static void op_closed(uv_handle_t *h) { free(h->data); }

/* Unlink op and free it once its timer is closed. */
static void op_free(ctl_op_t *op) {
  if (op->prev)
    op->prev->next = op->next;
  else
    ops = op->next;
  if (op->next)
    op->next->prev = op->prev;
  uv_timer_stop(&op->timer);
  uv_close((uv_handle_t *)&op->timer, op_closed);
}

/* Send the ControlReply (targets still open: no answer in time) and let
 * the CLI connection go on. */
static void op_finish(ctl_op_t *op) {
  if (op->cli) {
    Gpuprof__ControlResult *res = calloc(op->n ? op->n : 1, sizeof *res);
    Gpuprof__ControlResult **rp = calloc(op->n ? op->n : 1, sizeof *rp);
    if (res && rp) {
      for (unsigned i = 0; i < op->n; i++) {
        ctl_target_t *t = &op->t[i];
        if (t->shim) {
          t->code = -ETIMEDOUT;
          snprintf(t->msg, sizeof t->msg, "no answer within %u ms", GPD_CONTROL_ACK_MS);
          t->shim = NULL;
        }
        gpuprof__control_result__init(&res[i]);
        res[i].pid = t->pid;
        res[i].profile_id = t->profile_id;
        res[i].code = t->code;
        res[i].message = t->msg;
        res[i].targets = t->targets;
        rp[i] = &res[i];
      }
      Gpuprof__ControlReply cr = GPUPROF__CONTROL_REPLY__INIT;
      cr.n_results = op->n;
      cr.results = rp;
      Gpuprof__Msg m = GPUPROF__MSG__INIT;
      m.body_case = GPUPROF__MSG__BODY_CONTROL_REPLY;
      m.control_reply = &cr;
      if (gpd_client_send_msg(op->cli, &m) < 0)
        gpd_client_send_error(op->cli, -ENOMEM, "out of memory");
    } else {
      gpd_client_send_error(op->cli, -ENOMEM, "out of memory");
    }
    free(res);
    free(rp);
    struct gpd_client_s *cli = op->cli;
    op->cli = NULL;
    op_free(op);
    gpd_client_control_done(cli);
    return;
  }
  op_free(op);
}

static void op_timeout(uv_timer_t *t) { op_finish(t->data); }

/* Set or clear bit kind of p->control_on (lock taken here). */
static void proc_control_on(gpd_daemon_t *d, gpd_proc_t *p, unsigned kind, int on) {
  if (kind == 0 || kind >= CTL_KINDS)
    return;
  pthread_mutex_lock(&d->lock);
  if (on)
    p->control_on |= 1u << kind;
  else
    p->control_on &= ~(1u << kind);
  pthread_mutex_unlock(&d->lock);
}

/* Error reply: 0 (answered). */
static int refuse(struct gpd_client_s *cli, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int refuse(struct gpd_client_s *cli, int code, const char *fmt, ...) {
  char msg[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  gpd_client_send_error(cli, code, msg);
  return 0;
}

int gpd_control_request(gpd_daemon_t *d, struct gpd_client_s *cli, const gpd_peer_t *peer,
                        const Gpuprof__ControlRequest *r) {
  const Gpuprof__Control *c = r->control;
  int has_job = r->job_id && r->job_id[0];
  if (c == NULL)
    return refuse(cli, -EINVAL, "control request without a control");
  if ((r->pid != 0) == has_job)
    return refuse(cli, -EINVAL, "control request: give exactly one of a pid and a job");
  if (r->pid < 0)
    return refuse(cli, -EINVAL, "control request: bad pid %d", (int)r->pid);
  unsigned kind = (unsigned)c->kind;
  if (kind == 0 || kind >= CTL_KINDS)
    return refuse(cli, -EINVAL, "unknown control kind %u", kind);
  if (kind == GPUPROF__CONTROL_KIND__CONTROL_POLICY) /* policy.c sends these; CLIs use PolicyRequest */
    return refuse(cli, -EINVAL, "control kind %u: use gpuprof policy set", kind);
  if (c->enable && c->duration_ms > GPD_CONTROL_MAX_MS)
    return refuse(cli, -EINVAL, "control window of %u ms is longer than %u ms", c->duration_ms,
                  GPD_CONTROL_MAX_MS);
  if (c->period > 31)
    return refuse(cli, -EINVAL, "control period %u outside 0..31", c->period);

  /* the targets, under the lock: running processes with a connection */
  gpd_registry_lock(d);
  unsigned n = 0;
  for (gpd_proc_t *p = d->procs; p; p = p->next)
    n++;
  ctl_op_t *op = calloc(1, sizeof *op + (size_t)(n ? n : 1) * sizeof(ctl_target_t));
  if (op == NULL) {
    pthread_mutex_unlock(&d->lock);
    return -ENOMEM;
  }
  char why[256] = "";
  int code = 0;
  if (!has_job) {
    gpd_proc_t *p = gpd_registry_find_visible(d, peer, r->pid);
    if (p == NULL) {
      code = -ESRCH;
      snprintf(why, sizeof why, GPD_NO_PID_FMT, (int)r->pid);
    } else if (p->state != GPD_PROC_RUNNING || p->client == NULL) {
      code = -ESRCH;
      snprintf(why, sizeof why, "process %d has ended", (int)r->pid);
    } else {
      op->t[op->n++] = (ctl_target_t){.shim = p->client, .pid = p->pid, .profile_id = p->profile_id};
      gpd_policy_deep_dive(p, c->enable, c->duration_ms);
      if (kind == GPUPROF__CONTROL_KIND__CONTROL_PC_SAMPLING)
        gpd_pcrotate_preempt(p); /* a deep dive takes precedence */
    }
  } else {
    for (gpd_proc_t *p = d->procs; p && op->n < n; p = p->next)
      if (p->state == GPD_PROC_RUNNING && p->client &&
          gpd_job_selects(r->job_id, peer->uid, p->job_id, p->job_verified, p->uid) &&
          gpd_access_may_see(peer, p->uid)) {
        op->t[op->n++] = (ctl_target_t){.shim = p->client, .pid = p->pid, .profile_id = p->profile_id};
        gpd_policy_deep_dive(p, c->enable, c->duration_ms);
        if (kind == GPUPROF__CONTROL_KIND__CONTROL_PC_SAMPLING)
          gpd_pcrotate_preempt(p);
      }
    if (op->n == 0) {
      code = -ESRCH;
      snprintf(why, sizeof why, "no running process of job %s that you may control", r->job_id);
    }
  }
  pthread_mutex_unlock(&d->lock);
  if (code) {
    free(op);
    return refuse(cli, code, "%s", why);
  }

  op->d = d;
  op->cli = cli;
  op->kind = kind;
  op->enable = c->enable;
  op->left = op->n;
  uv_timer_init(d->loop, &op->timer);
  op->timer.data = op;
  op->next = ops;
  if (ops)
    ops->prev = op;
  ops = op;
  GPD_INFO("peer pid %d uid %u: control kind %u %s (%u ms, period %u, flags %#x) for %u process(es)",
           (int)peer->pid, (unsigned)peer->uid, kind, c->enable ? "on" : "off", c->duration_ms,
           c->period, c->flags, op->n);
  for (unsigned i = 0; i < op->n; i++) {
    ctl_target_t *t = &op->t[i];
    Gpuprof__Control out = GPUPROF__CONTROL__INIT;
    t->id = gpd_control_next_id();
    out.id = t->id;
    out.kind = c->kind;
    out.enable = c->enable;
    out.duration_ms = c->enable ? c->duration_ms : 0;
    out.period = c->period;
    out.flags = c->flags;
    Gpuprof__Msg m = GPUPROF__MSG__INIT;
    m.body_case = GPUPROF__MSG__BODY_CONTROL;
    m.control = &out;
    int err = gpd_client_send_msg(t->shim, &m);
    if (err < 0) {
      t->shim = NULL;
      t->code = err;
      snprintf(t->msg, sizeof t->msg, "cannot send to the process: %s", gpd_strerror(err));
      op->left--;
    }
  }
  if (op->left == 0) {
    op_finish(op);
    return 1; /* answered, but through gpd_client_control_done */
  }
  uv_timer_start(&op->timer, op_timeout, GPD_CONTROL_ACK_MS, 0);
  return 1;
}

void gpd_control_ack(gpd_daemon_t *d, struct gpd_client_s *shim, gpd_proc_t *p,
                     const Gpuprof__ControlAck *a) {
  unsigned kind = (unsigned)a->kind;
  if (gpd_pcrotate_ack(d, shim, p, a))
    return; /* a rotating PC-sampling window's (pcrotate.c) */
  if (a->ended) { /* a window closed by the shim itself */
    proc_control_on(d, p, kind, 0);
    gpd_policy_deep_dive(p, 0, 0); /* policy state: main thread only */
    return;
  }
  for (ctl_op_t *op = ops; op; op = op->next)
    for (unsigned i = 0; i < op->n; i++) {
      ctl_target_t *t = &op->t[i];
      if (t->shim != shim || t->id != a->id)
        continue;
      t->shim = NULL;
      t->code = a->code;
      t->targets = a->targets;
      snprintf(t->msg, sizeof t->msg, "%s", a->message ? a->message : "");
      if (a->code == 0)
        proc_control_on(d, p, op->kind, (int)op->enable);
      if (--op->left == 0)
        op_finish(op);
      return;
    }
  /* no pending request: a late answer (after the timeout): keep its state */
  if (a->code == 0 && kind > 0 && kind < CTL_KINDS)
    GPD_DEBUG("process %d: late control ack %llu", (int)p->pid, (unsigned long long)a->id);
}

void gpd_control_client_gone(struct gpd_client_s *c) {
  gpd_pcrotate_client_gone(c);
  for (ctl_op_t *op = ops, *next; op; op = next) {
    next = op->next;
    if (op->cli == c) {
      op->cli = NULL;
      op_free(op);
      continue;
    }
    int changed = 0;
    for (unsigned i = 0; i < op->n; i++) {
      ctl_target_t *t = &op->t[i];
      if (t->shim != c)
        continue;
      t->shim = NULL;
      t->code = -ESRCH;
      snprintf(t->msg, sizeof t->msg, "the process ended before it answered");
      op->left--;
      changed = 1;
    }
    if (changed && op->left == 0)
      op_finish(op);
  }
}

void gpd_control_close_all(void) {
  while (ops) {
    ops->cli = NULL;
    op_free(ops);
  }
}

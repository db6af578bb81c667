/* control.c - Control messages from the daemon, dispatched to the back
 * ends (shim/backends.h `control`), and the windows they open.
 *
 * Only the connection thread (conn.c) calls in here: it hands a Control
 * over (gpd_shim__control_msg: decoded, a policy kept, applied) and sends
 * the ControlAck filled in; every
 * poll round (<= 100 ms) it calls gpd_shim__control_due, which closes the
 * windows whose time is up (the back ends get enable = 0) and reports
 * them as ControlAck{ended}.  So a window ends on time even when the
 * daemon is gone, and no application thread ever runs this code.
 *
 * A kind is served by every back end that does not answer -ENOTSUP; the
 * answer is 0 when at least one applied it (targets summed), else the
 * first failure, else -ENOTSUP ("no back end here serves it").
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "backends.h"
#include "gpuprof.pb-c.h"
#include "gpuprof/clock.h"
#include "gpuprof/log.h"
#include "internal.h"

/* Test hook: one more back end, consulted after the built ones (tests/
 * integration/ctl-app.c registers a recording one; no vendor needed). */
GPD_EXPORT const gpd_backend_t *volatile gpd_shim__control_backend;

/* Open windows, by kind (connection thread only; reset in a fork child). */
static struct {
  uint64_t id;       /* the Control that opened it */
  uint64_t until_ns; /* gpuprof clock; 0 = no window (or no end) */
  int on;
} win[GPD_CONTROL_KINDS];

/* Ask one back end; fold its answer into *applied / *first_err / ack. */
static void control_one(const gpd_backend_t *b, const gpd_control_t *c, gpd_control_ack_t *ack,
                        int *applied, int *first_err) {
  char msg[sizeof ack->message];
  uint32_t t = 0;
  if (b == NULL || b->control == NULL)
    return;
  msg[0] = 0;
  int rc = b->control(c, &t, msg, sizeof msg);
  if (rc == -ENOTSUP)
    return;
  if (rc == 0) {
    *applied = 1;
    ack->targets += t;
    if (msg[0] && !*first_err)
      snprintf(ack->message, sizeof ack->message, "%s: %s", b->name, msg);
  } else if (!*first_err) {
    *first_err = rc;
    snprintf(ack->message, sizeof ack->message, "%s: %s", b->name, msg[0] ? msg : "control failed");
  }
}

static void control_dispatch(const gpd_control_t *c, gpd_control_ack_t *ack) {
  int applied = 0, first_err = 0;
  ack->targets = 0;
  ack->message[0] = 0;
  for (const gpd_backend_t *const *be = gpd_shim__backends(); *be; be++)
    control_one(*be, c, ack, &applied, &first_err);
  control_one(gpd_shim__control_backend, c, ack, &applied, &first_err);
  ack->code = applied ? 0 : first_err ? first_err : -ENOTSUP;
  if (!applied && !first_err && c->kind == GPD_CONTROL_PC_SAMPLING)
    snprintf(ack->message, sizeof ack->message,
             "PC sampling is CUDA-only (CUPTI); this process has no CUDA back end");
  else if (!applied && !first_err)
    snprintf(ack->message, sizeof ack->message, "no back end in this process serves control kind %u",
             c->kind);
}

void gpd_shim__control_apply(const gpd_control_t *c, gpd_control_ack_t *ack) {
  memset(ack, 0, sizeof *ack);
  ack->id = c->id;
  ack->kind = c->kind;
  if (c->kind == 0 || c->kind >= GPD_CONTROL_KINDS) {
    ack->code = -ENOTSUP;
    snprintf(ack->message, sizeof ack->message, "unknown control kind %u", c->kind);
    return;
  }
  control_dispatch(c, ack);
  GPD_INFO("control %llu: kind %u %s (%u ms): %d %s", (unsigned long long)c->id, c->kind,
           c->enable ? "on" : "off", c->duration_ms, ack->code, ack->message);
  if (ack->code != 0)
    return;
  win[c->kind].on = c->enable;
  win[c->kind].id = c->id;
  win[c->kind].until_ns = c->enable && c->duration_ms ? gpd_clock_ns() + c->duration_ms * 1000000ull : 0;
}

int gpd_shim__control_due(uint64_t now_ns, gpd_control_ack_t *ack) {
  for (unsigned k = 1; k < GPD_CONTROL_KINDS; k++) {
    if (!win[k].on || win[k].until_ns == 0 || now_ns < win[k].until_ns)
      continue;
    gpd_control_t c = {.id = win[k].id, .kind = k, .enable = 0};
    memset(ack, 0, sizeof *ack);
    ack->id = win[k].id;
    ack->kind = k;
    ack->ended = 1;
    control_dispatch(&c, ack);
    win[k].on = 0;
    win[k].until_ns = 0;
    GPD_INFO("control %llu: kind %u window ended: %d %s", (unsigned long long)ack->id, k, ack->code,
             ack->message);
    return 1;
  }
  return 0;
}

void gpd_shim__control_msg(const Gpuprof__Control *mc, gpd_control_ack_t *ack) {
  gpd_control_t c = {.id = mc->id,
                     .kind = (unsigned)mc->kind,
                     .enable = mc->enable,
                     .duration_ms = mc->duration_ms,
                     .period = mc->period,
                     .flags = mc->flags};
  gpd_shim_policy_t sp;
  if (c.kind == GPD_CONTROL_POLICY) {
    c.duration_ms = 0; /* a policy is no window */
    if (gpd_shim__policy_set(mc->policy, 0, &sp))
      c.policy = &sp;
  }
  if (c.kind == GPD_CONTROL_POLICY && !c.policy) {
    memset(ack, 0, sizeof *ack);
    ack->id = c.id;
    ack->kind = c.kind;
    ack->code = -EINVAL;
    snprintf(ack->message, sizeof ack->message, "policy control without a policy");
    return;
  }
  gpd_shim__control_apply(&c, ack);
}

void gpd_shim__control_atfork_child(void) { memset(win, 0, sizeof win); }

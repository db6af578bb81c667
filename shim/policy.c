/* policy.c - the daemon's collection policy in the shim (backends.h
 * gpd_shim_policy) and the CollectReports the connection thread sends
 * back (what each back end runs and what it costs).
 *
 * The policy arrives in HelloReply (conn.c, before the back ends start:
 * the constructor waits for the first registration) and again in each
 * CONTROL_POLICY; the back ends read it when they start and get the
 * CONTROL_POLICY itself to switch live.  A back end's own GPUPROF_*
 * variable wins over it (the back end decides and says so in its report).
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "backends.h"
#include "gpuprof.pb-c.h"
#include "internal.h"

static struct {
  pthread_mutex_t mu;
  int have;
  gpd_shim_policy_t p;
  char hello[160]; /* what the latest HelloReply carried, as text */
} pol = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* "duty 10 ms / 3000 ms" */
static void policy_mode_text(const gpd_shim_policy_t *p, char *out, size_t n) {
  if (!strcmp(p->mode, "duty"))
    snprintf(out, n, "duty %u ms / %u ms", p->window_ms, p->period_ms);
  else
    snprintf(out, n, "%s", p->mode);
}

int gpd_shim_policy(gpd_shim_policy_t *out) {
  pthread_mutex_lock(&pol.mu);
  int have = pol.have;
  if (have && out)
    *out = pol.p;
  pthread_mutex_unlock(&pol.mu);
  return have;
}

int gpd_shim__policy_set(const Gpuprof__CollectPolicy *m, int hello, gpd_shim_policy_t *out) {
  if (!m || !m->mode || !*m->mode)
    return 0;
  gpd_shim_policy_t p = {.window_ms = m->window_ms, .period_ms = m->period_ms, .pc_window_ms = m->pc_window_ms,
                         .pc_period_s = m->pc_period_s, .cpu_hz = m->cpu_sample_hz, .budget_bp = m->budget_bp};
  snprintf(p.mode, sizeof p.mode, "%s", m->mode);
  snprintf(p.rule, sizeof p.rule, "%s", m->rule ? m->rule : "");
  char mode[48];
  policy_mode_text(&p, mode, sizeof mode);
  pthread_mutex_lock(&pol.mu);
  pol.p = p;
  pol.have = 1;
  if (hello)
    snprintf(pol.hello, sizeof pol.hello, "%s, budget %u.%02u %%, cpu %u Hz, pc %u ms / %u s", mode,
             p.budget_bp / 100, p.budget_bp % 100, p.cpu_hz, p.pc_window_ms, p.pc_period_s);
  pthread_mutex_unlock(&pol.mu);
  if (out)
    *out = p;
  return 1;
}

uint32_t gpd_shim__policy_cpu_hz(void) {
  gpd_shim_policy_t p;
  return gpd_shim_policy(&p) ? p.cpu_hz : 0;
}

void gpd_shim__policy_atfork_child(void) {
  pthread_mutex_init(&pol.mu, NULL); /* the child keeps the parent's policy */
}

/* The shim core's own report (api 0): the policy it holds. */
static void core_report(gpd_shim_collect_t *o) {
  gpd_shim_policy_t p;
  memset(o, 0, sizeof *o);
  o->can_detach = 1;
  if (!gpd_shim_policy(&p)) {
    snprintf(o->source, sizeof o->source, "default");
    snprintf(o->note, sizeof o->note, "no policy from the daemon");
    return;
  }
  snprintf(o->source, sizeof o->source, "daemon");
  policy_mode_text(&p, o->mode, sizeof o->mode);
  int env = 0;
  uint32_t hz = gpd_cpu_sampler_rate(&env);
  char cpu[48];
  if (hz)
    snprintf(cpu, sizeof cpu, "cpu sampling %u Hz (%s)", hz, env ? "env" : "daemon");
  else
    snprintf(cpu, sizeof cpu, "cpu sampling off%s", env ? " (env)" : "");
  pthread_mutex_lock(&pol.mu);
  snprintf(o->note, sizeof o->note, "in Hello: %.100s; %s", pol.hello, cpu);
  pthread_mutex_unlock(&pol.mu);
}

size_t gpd_shim__policy_collect(gpd_shim_collect_t *out, unsigned *api, size_t max) {
  size_t n = 0;
  if (max == 0)
    return 0;
  core_report(&out[0]);
  api[n++] = 0;
  for (const gpd_backend_t *const *be = gpd_shim__backends(); *be && n < max; be++) {
    const gpd_backend_t *b = *be;
    gpd_shim_collect_t *o = &out[n];
    memset(o, 0, sizeof *o);
    if (b->collect) {
      if (b->collect(o) == 1)
        api[n++] = b->api;
      continue;
    }
    char why[8];
    if (!b->status || b->status(why, sizeof why) != 1)
      continue;
    snprintf(o->source, sizeof o->source, "default");
    snprintf(o->mode, sizeof o->mode, "full");
    /* its cost: the self-cost meter's estimate of the shim's own time
     * (internal.h), against the time since the shim started */
    o->self_ns = gpd_shim__meter_self_ns(b->api, &o->launches);
    uint64_t now = gpd_clock_ns();
    o->elapsed_ns = now > gpd_shim__g.start_ns ? now - gpd_shim__g.start_ns : 0;
    snprintf(o->note, sizeof o->note,
             "%s back end traces every operation (cannot detach); cost: the shim's own time, 1 in %u "
             "operations timed (the runtime's event profiling not included)",
             b->name, GPD_SHIM_METER_EVERY);
    o->can_detach = 0;
    api[n++] = b->api;
  }
  const gpd_backend_t *t = gpd_shim__control_backend;
  if (t && t->collect && n < max) {
    memset(&out[n], 0, sizeof out[n]);
    if (t->collect(&out[n]) == 1)
      api[n++] = t->api;
  }
  return n;
}

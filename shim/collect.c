/* collect.c - the CollectReports the connection thread sends back to the
 * daemon: what the shim core (the policy it holds, the CPU sampling rate)
 * and each back end (its collect op, else its traced-everything cost from
 * the self-cost meter) run and what it costs.  Above policy.c,
 * cpu-sampler.c and control.c, whose state it reads.
 */
#include <stdio.h>
#include <string.h>

#include "backends.h"
#include "gpuprof/clock.h"
#include "internal.h"

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
  gpd_shim__policy_mode_text(&p, o->mode, sizeof o->mode);
  int env = 0;
  uint32_t hz = gpd_cpu_sampler_rate(&env);
  char cpu[48];
  if (hz)
    snprintf(cpu, sizeof cpu, "cpu sampling %u Hz (%s)", hz, env ? "env" : "daemon");
  else
    snprintf(cpu, sizeof cpu, "cpu sampling off%s", env ? " (env)" : "");
  char hello[160];
  gpd_shim__policy_hello(hello, sizeof hello);
  snprintf(o->note, sizeof o->note, "in Hello: %.100s; %s", hello, cpu);
}

size_t gpd_shim__collect_reports(gpd_shim_collect_t *out, unsigned *api, size_t max) {
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

/* policy.c - the daemon's collection policy in the shim (backends.h
 * gpd_shim_policy).  The CollectReports the connection thread sends back
 * are collect.c's.
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

void gpd_shim__policy_mode_text(const gpd_shim_policy_t *p, char *out, size_t n) {
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
  gpd_shim__policy_mode_text(&p, mode, sizeof mode);
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

void gpd_shim__policy_hello(char *out, size_t n) {
  pthread_mutex_lock(&pol.mu);
  snprintf(out, n, "%s", pol.hello);
  pthread_mutex_unlock(&pol.mu);
}

void gpd_shim__policy_atfork_child(void) {
  pthread_mutex_init(&pol.mu, NULL); /* the child keeps the parent's policy */
}

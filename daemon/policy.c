/* policy.c - the node's collection policy per process (policy.h).
 *
 * Precedence, lowest first: compiled defaults < [collect] < exe sections
 * < uid sections < job sections (config.c parses them; `gpuprof policy
 * set` adds runtime ones after the file's) < the process's own GPUPROF_*
 * environment, which the shim applies and reports back (CollectReport
 * source "env"): the daemon never overrides what the user asked for.
 *
 * What a shim reports is untrusted: it only changes the view and the
 * governor's sizing of that same process (its own slowdown), strings are
 * cut to fixed buffers, and one report per known api is kept (overwritten).
 *
 * Threads: a process's policy state (gpd_proc_t.policy) is read and
 * written on the main thread only (Hello, reports, requests, and the
 * query replies, which are built there under the daemon lock), so Hello
 * and the once-a-second reports never wait for the daemon lock (a monitor
 * pass may hold it for hundreds of ms: daemon.register64).  The lock is
 * taken only to walk or search the registry (policy set, reload, --pid).
 */
#include "policy.h"

#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuprof.pb-c.h"
#include "gpuprof/clock.h"
#include "gpuprof/error.h"
#include "gpuprof/log.h"
#include "gpuprof/record.h"

#include "daemon.h"
#include "pcrotate.h"
#include "query-internal.h"

/* The latest CollectReport of one api of a process. */
typedef struct policy_rep_s {
  int set;
  char source[16];
  char mode[48];
  char note[160];
  int can_detach;
  uint64_t elapsed_ns, window_ns, windows, launches, launches_in, switch_ns, pc_window_ns, pc_launches;
  uint64_t self_ns; /* cannot detach: the shim's own time in the operations */
  uint64_t timed_out, timed_out_ns, timed_in, timed_in_ns; /* timed launches (governor.h) */
  uint64_t busy_windows; /* windows another tool kept from starting */
  char busy[160];        /* "busy: held by another tool (...)" while it is, else "" */
  gpd_governor_spread_t spread; /* per-window estimates of c_window (policy_spread) */
} policy_rep_t;

/* The numbers of a CollectReport, named alike in policy_rep_t and the
 * proto message (copied both ways). */
#define POLICY_REP_NUMBERS(X)                                                                    \
  X(can_detach) X(elapsed_ns) X(window_ns) X(windows) X(launches) X(launches_in) X(switch_ns)    \
  X(pc_window_ns) X(pc_launches) X(self_ns) X(timed_out) X(timed_out_ns) X(timed_in) X(timed_in_ns) \
  X(busy_windows)

/* A process's policy state (gpd_proc_t.policy; d->lock).  One block with
 * no pointers inside: gpd_policy_proc_free (policy.h) frees it. */
typedef struct gpd_proc_policy_s {
  gpd_policy_t pol;
  uint32_t period_ms;        /* what the process was last sent (0: pol.v's) */
  policy_rep_t rep[GPD_API_MAX];
  gpd_governor_out_t gov;
  int gov_ran;
  time_t deep_until;         /* deep dive: wall-clock end; 0 none, -1 until stopped */
  char why[768];
} gpd_proc_policy_t;

static const char *const kind_names[] = {"exe", "uid", "job"};

/* ------------------------------------------------------------ resolve */

static int rule_matches(const gpd_collect_rule_t *r, const char *job, uint32_t uid, const char *exe) {
  switch (r->kind) {
  case GPD_COLLECT_EXE:
    return exe && *exe && fnmatch(r->pattern, exe, 0) == 0;
  case GPD_COLLECT_UID:
    return strtoull(r->pattern, NULL, 10) == uid;
  case GPD_COLLECT_JOB:
    return job && *job && strcmp(r->pattern, job) == 0;
  }
  return 0;
}

void gpd_policy_section_name(const gpd_collect_rule_t *r, char *out, size_t n) {
  if (!r) {
    snprintf(out, n, "[collect]");
    return;
  }
  snprintf(out, n, "[collect \"%s=%s\"]%s", kind_names[r->kind % 3], r->pattern,
           r->runtime ? " (set at run time)" : "");
}

void gpd_policy_resolve(const gpd_config_t *c, const char *job, uint32_t uid, const char *exe,
                        gpd_policy_t *out) {
  memset(out, 0, sizeof *out);
  out->v = c->collect;
  for (unsigned i = 0; i < GPD_COLLECT_NKEYS; i++)
    out->src[i] = (c->collect_set & (1u << i)) ? GPD_POLICY_SRC_BASE : GPD_POLICY_SRC_DEFAULT;
  size_t len = (size_t)snprintf(out->rule, sizeof out->rule, "[collect]");
  uint32_t *dst = (uint32_t *)(void *)&out->v;
  for (uint32_t kind = GPD_COLLECT_EXE; kind <= GPD_COLLECT_JOB; kind++)
    for (uint32_t i = 0; i < c->ncollect_rules; i++) {
      const gpd_collect_rule_t *r = &c->collect_rules[i];
      if (r->kind != kind || !r->set || !rule_matches(r, job, uid, exe))
        continue;
      const uint32_t *src = (const uint32_t *)(const void *)&r->v;
      for (unsigned k = 0; k < GPD_COLLECT_NKEYS; k++)
        if (r->set & (1u << k)) {
          dst[k] = src[k];
          out->src[k] = (int16_t)i;
        }
      char name[300];
      gpd_policy_section_name(r, name, sizeof name);
      if (len < sizeof out->rule)
        len += (size_t)snprintf(out->rule + len, sizeof out->rule - len, " < %s", name);
    }
}

void gpd_policy_why(const gpd_config_t *c, const gpd_policy_t *p, char *out, size_t n) {
  size_t len = 0;
  out[0] = '\0';
  for (unsigned k = 0; k < GPD_COLLECT_NKEYS && len < n; k++) {
    char val[32], from[300];
    gpd_config_collect_value(&p->v, k, val, sizeof val);
    if (p->src[k] == GPD_POLICY_SRC_DEFAULT)
      snprintf(from, sizeof from, "default");
    else if (p->src[k] == GPD_POLICY_SRC_BASE || (uint32_t)p->src[k] >= c->ncollect_rules)
      snprintf(from, sizeof from, "[collect]");
    else
      gpd_policy_section_name(&c->collect_rules[p->src[k]], from, sizeof from);
    len += (size_t)snprintf(out + len, n - len, "%s%s=%s (%s)", k ? ", " : "", gpd_config_collect_key(k), val,
                            from);
  }
}

void gpd_policy_describe(const gpd_config_t *c, void (*emit)(const char *line, void *arg), void *arg) {
  char line[1024];
  for (int i = -1; i < (int)c->ncollect_rules; i++) {
    const gpd_collect_rule_t *r = i < 0 ? NULL : &c->collect_rules[i];
    const gpd_collect_t *v = r ? &r->v : &c->collect;
    size_t len;
    gpd_policy_section_name(r, line, sizeof line);
    len = strlen(line);
    for (unsigned k = 0; k < GPD_COLLECT_NKEYS && len < sizeof line; k++) {
      char val[32];
      if (r && !(r->set & (1u << k)))
        continue;
      gpd_config_collect_value(v, k, val, sizeof val);
      len += (size_t)snprintf(line + len, sizeof line - len, " %s=%s", gpd_config_collect_key(k), val);
    }
    emit(line, arg);
  }
}

/* ------------------------------------------------------------- wire */

static const char *mode_name(uint32_t m) {
  return m == GPD_COLLECT_FULL ? "full" : m == GPD_COLLECT_DETACHED ? "detached" : "duty";
}

/* Fill a CollectPolicy from pp (period: the governor's when set); the
 * strings point into pp. */
static void policy_msg(const gpd_proc_policy_t *pp, Gpuprof__CollectPolicy *m) {
  const gpd_collect_t *v = &pp->pol.v;
  gpuprof__collect_policy__init(m);
  m->mode = (char *)mode_name(v->mode);
  m->window_ms = v->window_ms;
  m->period_ms = pp->period_ms ? pp->period_ms : v->period_ms;
  m->pc_window_ms = v->pcs_window_ms;
  m->pc_period_s = v->pcs_period_s;
  m->cpu_sample_hz = v->cpu_hz;
  m->budget_bp = v->budget_bp;
  m->rule = (char *)pp->pol.rule;
  m->governed = v->governor != 0 && v->mode == GPD_COLLECT_DUTY;
  m->why = (char *)pp->why;
}

static gpd_proc_policy_t *proc_policy(gpd_daemon_t *d, gpd_proc_t *p) {
  if (!p->policy) {
    p->policy = calloc(1, sizeof *p->policy);
    if (!p->policy)
      return NULL;
    gpd_policy_resolve(&d->cfg, p->job_id, p->uid, p->exe, &p->policy->pol);
    gpd_policy_why(&d->cfg, &p->policy->pol, p->policy->why, sizeof p->policy->why);
  }
  return p->policy;
}

int gpd_policy_hello(gpd_daemon_t *d, gpd_proc_t *p, Gpuprof__CollectPolicy *out) {
  gpuprof__collect_policy__init(out);
  gpd_proc_policy_t *pp = proc_policy(d, p); /* main thread: no lock (see the top) */
  if (pp)
    policy_msg(pp, out);
  return pp ? 0 : -ENOMEM;
}

/* A CONTROL_POLICY to send once d->lock is released: sending may close
 * the connection, which takes the lock (client.c).  Main thread only, so
 * the client cannot go away between the two. */
typedef struct policy_out_s {
  struct gpd_client_s *client;
  gpd_proc_policy_t pp; /* a copy: the message's strings point into it */
} policy_out_t;

/* Queue p's current policy in *o (caller holds d->lock).  0 or -ESRCH. */
static int policy_take(gpd_proc_t *p, policy_out_t *o) {
  if (!p->client || p->state != GPD_PROC_RUNNING || !p->policy)
    return -ESRCH;
  o->client = p->client;
  o->pp = *p->policy;
  return 0;
}

/* Send o (fire and forget: the ack matches no pending request and only
 * says the shim applied it).  d->lock not held.  0 or negative. */
static int policy_send(policy_out_t *o) {
  Gpuprof__CollectPolicy cp;
  Gpuprof__Control ctl = GPUPROF__CONTROL__INIT;
  Gpuprof__Msg m = GPUPROF__MSG__INIT;
  policy_msg(&o->pp, &cp);
  ctl.id = gpd_control_next_id();
  ctl.kind = GPUPROF__CONTROL_KIND__CONTROL_POLICY;
  ctl.enable = 1;
  ctl.policy = &cp;
  m.body_case = GPUPROF__MSG__BODY_CONTROL;
  m.control = &ctl;
  return gpd_client_send_msg(o->client, &m);
}

/* Resolve p again under the current config; 1 (and *o filled) when it
 * changed.  d->lock held. */
static int policy_refresh(gpd_daemon_t *d, gpd_proc_t *p, policy_out_t *o) {
  gpd_policy_t np;
  gpd_proc_policy_t *pp = proc_policy(d, p);
  if (!pp)
    return 0;
  gpd_policy_resolve(&d->cfg, p->job_id, p->uid, p->exe, &np);
  if (memcmp(&np.v, &pp->pol.v, sizeof np.v) == 0 && strcmp(np.rule, pp->pol.rule) == 0)
    return 0;
  pp->pol = np;
  pp->period_ms = 0; /* the governor starts again from the new policy */
  pp->gov_ran = 0;
  gpd_policy_why(&d->cfg, &pp->pol, pp->why, sizeof pp->why);
  return policy_take(p, o) == 0;
}

unsigned gpd_policy_push_all(gpd_daemon_t *d) {
  unsigned n = 0, sent = 0, cap = 0;
  policy_out_t *out = NULL;
  gpd_registry_lock(d);
  for (gpd_proc_t *p = d->procs; p; p = p->next)
    cap++;
  out = calloc(cap ? cap : 1, sizeof *out);
  for (gpd_proc_t *p = d->procs; out && p && n < cap; p = p->next)
    if (p->state == GPD_PROC_RUNNING && p->client)
      n += (unsigned)policy_refresh(d, p, &out[n]);
  pthread_mutex_unlock(&d->lock);
  for (unsigned i = 0; i < n; i++)
    sent += policy_send(&out[i]) == 0;
  free(out);
  return sent;
}

/* ---------------------------------------------------------- governor */

/* Add the per-window estimate of c_window of the report interval between
 * x (the last report) and c to x's spread (gpd_governor_window_c);
 * counters that went back (the shim's schedule restarted) start the
 * spread again. */
static void policy_spread(policy_rep_t *x, const Gpuprof__CollectReport *c) {
  if (!x->set || c->windows < x->windows || c->timed_in < x->timed_in || c->launches_in < x->launches_in ||
      c->window_ns < x->window_ns || c->timed_in_ns < x->timed_in_ns) {
    memset(&x->spread, 0, sizeof x->spread);
    return;
  }
  double ck;
  if (gpd_governor_window_c(c->windows - x->windows, c->timed_in - x->timed_in, c->timed_in_ns - x->timed_in_ns,
                            c->launches_in - x->launches_in, c->window_ns - x->window_ns, c->timed_out,
                            c->timed_out_ns, &ck))
    gpd_governor_spread_add(&x->spread, ck);
}

/* Run the governor on p's CUDA report; 1 and *o filled when the period
 * moved by more than 5 % (or to the smallest duty).  d->lock held. */
static int policy_govern(gpd_proc_t *p, gpd_proc_policy_t *pp, policy_out_t *o) {
  const policy_rep_t *r = &pp->rep[GPD_API_CUDA];
  const gpd_collect_t *v = &pp->pol.v;
  if (!r->set || strcmp(r->source, "daemon") != 0 || v->mode != GPD_COLLECT_DUTY)
    return 0;
  /* Busy (another tool holds CUPTI): busy windows are in none of the
   * counts, but the rate between windows now carries the other tool's
   * cost; the period stays until windows run again. */
  if (r->busy[0])
    return 0;
  uint32_t cur = pp->period_ms ? pp->period_ms : v->period_ms;
  gpd_governor_in_t in = {.elapsed_ns = r->elapsed_ns,
                          .window_ns = r->window_ns,
                          .windows = r->windows,
                          .launches = r->launches,
                          .launches_in = r->launches_in,
                          .switch_ns = r->switch_ns,
                          .timed_out = r->timed_out,
                          .timed_out_ns = r->timed_out_ns,
                          .timed_in = r->timed_in,
                          .timed_in_ns = r->timed_in_ns,
                          .c_n = r->spread.n,
                          .c_sd = gpd_governor_spread_sd(&r->spread),
                          .window_ms = v->window_ms,
                          .period_ms = cur,
                          .period_min_ms = v->period_min_ms,
                          .period_max_ms = v->period_max_ms,
                          .budget_bp = v->budget_bp};
  if (gpd_governor_size(&in, &pp->gov) < 0)
    return 0;
  pp->gov_ran = 1;
  if (!v->governor || pp->gov.period_ms == cur)
    return 0;
  uint64_t diff = pp->gov.period_ms > cur ? pp->gov.period_ms - cur : cur - pp->gov.period_ms;
  if (diff * 20 <= cur && pp->gov.how == GPD_GOV_MEASURED)
    return 0; /* within 5 %: not worth a restart of the schedule */
  pp->period_ms = pp->gov.period_ms;
  GPD_INFO("pid %d: governor: period %u ms (window %u ms, budget %u.%02u %%, %s; c_window %.4f%s, "
           "95 %% upper %.4f from %u windows, switch %.1f ms/window, estimated %.2f %%, upper %.2f %%)",
           (int)p->pid, pp->period_ms, v->window_ms, v->budget_bp / 100, v->budget_bp % 100,
           pp->gov.how == GPD_GOV_MEASURED ? "measured" : "no estimate: smallest duty", pp->gov.c_window,
           pp->gov.per_launch ? " from timed launches" : "", pp->gov.c_hi, pp->gov.c_n, pp->gov.t_switch_ns / 1e6,
           pp->gov.slowdown >= 0 ? pp->gov.slowdown * 100 : -1.0,
           pp->gov.slowdown_hi >= 0 ? pp->gov.slowdown_hi * 100 : -1.0);
  return policy_take(p, o) == 0;
}

static void copy_cut(char *dst, size_t n, const char *src) {
  size_t i = 0;
  for (; src && src[i] && i + 1 < n; i++)
    dst[i] = (src[i] >= 0x20 && src[i] < 0x7f) ? src[i] : '?';
  dst[i] = '\0';
}

void gpd_policy_report(gpd_daemon_t *d, gpd_proc_t *p, const Gpuprof__CollectReports *r) {
  if (!r)
    return;
  gpd_proc_policy_t *pp = proc_policy(d, p); /* main thread: no lock (see the top) */
  for (size_t i = 0; pp && i < r->n_reports && i < GPD_API_MAX; i++) {
    const Gpuprof__CollectReport *c = r->reports[i];
    if (!c || c->api >= GPD_API_MAX)
      continue;
    policy_rep_t *x = &pp->rep[c->api];
    if (c->api == GPD_API_CUDA)
      policy_spread(x, c);
    x->set = 1;
    copy_cut(x->source, sizeof x->source, c->source);
    copy_cut(x->mode, sizeof x->mode, c->mode);
    copy_cut(x->note, sizeof x->note, c->note);
#define X(f) x->f = c->f;
    POLICY_REP_NUMBERS(X)
#undef X
    copy_cut(x->busy, sizeof x->busy, c->busy);
  }
  policy_out_t *o = pp ? malloc(sizeof *o) : NULL;
  int send = o && policy_govern(p, pp, o);
  if (send)
    (void)policy_send(o);
  free(o);
}

/* Estimated overhead of p and how: fraction (< 0 unknown) and text. */
static double policy_overhead(const gpd_proc_policy_t *pp, char *how, size_t n) {
  const policy_rep_t *r = &pp->rep[GPD_API_CUDA];
  if (!r->set) {
    /* back ends that trace every operation: the shim's own time in them
     * over the time the process ran (a lower bound: the runtime's own
     * profiling of each command is not in it) */
    double self = 0, el = 0;
    uint64_t ops = 0;
    const char *names = "";
    for (unsigned a = 1; a < GPD_API_MAX; a++) {
      const policy_rep_t *x = &pp->rep[a];
      if (!x->set || x->can_detach)
        continue;
      if (x->elapsed_ns == 0 || (x->launches && x->self_ns == 0)) {
        snprintf(how, n, "not estimated: %s", x->note);
        return -1;
      }
      self += (double)x->self_ns;
      el = (double)x->elapsed_ns > el ? (double)x->elapsed_ns : el;
      ops += x->launches;
      names = !names[0] ? gpd_api_name(a) : "opencl+level0";
    }
    if (el > 0) {
      snprintf(how, n, "measured: the shim's own time in %llu %s operations (%.2f us each, sampled) "
               "over %.0f s; the runtime's event profiling not included",
               (unsigned long long)ops, names, ops ? self / (double)ops / 1e3 : 0.0, el / 1e9);
      return self / el;
    }
    snprintf(how, n, "default: no estimate (no CUDA back end report)");
    return -1;
  }
  if (!strncmp(r->mode, "full", 4)) {
    snprintf(how, n, "full tracing: not estimated (no windows to compare)");
    return -1;
  }
  if (!strncmp(r->mode, "detached", 8)) {
    double el = (double)r->elapsed_ns;
    if (el > 0 && r->launches) {
      snprintf(how, n, "measured: launch counters only (detached)");
      return GPD_GOVERNOR_COUNT_NS * (double)r->launches / el;
    }
    snprintf(how, n, "default: no estimate (no launches counted)");
    return -1;
  }
  if (pp->gov_ran && pp->gov.how == GPD_GOV_MEASURED) {
    /* at what the process runs now ("duty:W/P", P in s), else the policy */
    unsigned w = 0;
    double ps = 0;
    uint32_t per = pp->period_ms ? pp->period_ms : pp->pol.v.period_ms;
    if (sscanf(r->mode, "duty:%u/%lf", &w, &ps) == 2 && w > 0 && ps > 0 && ps <= 3600)
      per = (uint32_t)(ps * 1000 + 0.5);
    else
      w = pp->pol.v.window_ms;
    if (pp->gov.per_launch)
      snprintf(how, n,
               "measured: timed launches (+%.2f us per launch in windows, c_window %.3f, 95 %% upper %.3f "
               "from %u windows, switch %.1f ms/window, c_between %.5f; upper bound %.2f %%)%s",
               pp->gov.launch_ns / 1e3, pp->gov.c_window, pp->gov.c_hi, pp->gov.c_n, pp->gov.t_switch_ns / 1e6,
               pp->gov.c_between, gpd_governor_slowdown_hi(&pp->gov, w, per) * 100,
               pp->gov.over ? "; budget cannot be held" : "");
    else
      snprintf(how, n, "measured: window vs between (c_window %.3f, switch %.1f ms/window, c_between %.5f)%s",
               pp->gov.c_window, pp->gov.t_switch_ns / 1e6, pp->gov.c_between,
               pp->gov.over ? "; budget cannot be held" : "");
    return gpd_governor_slowdown(&pp->gov, w, per);
  }
  if (pp->gov_ran && pp->gov.how == GPD_GOV_UNKNOWN) {
    snprintf(how, n, "default: no estimate (too few counted launches): smallest duty");
    return -1;
  }
  if (r->windows >= GPD_GOVERNOR_MIN_WINDOWS)
    snprintf(how, n, "default: no estimate yet (%" PRIu64 " launches counted inside windows, %u needed)",
             r->launches_in, GPD_GOVERNOR_MIN_LAUNCHES);
  else
    snprintf(how, n, "default: no estimate yet (%" PRIu64 " of %u windows)", r->windows, GPD_GOVERNOR_MIN_WINDOWS);
  return -1;
}

void gpd_policy_deep_dive(gpd_proc_t *p, int enable, uint32_t duration_ms) {
  if (!p->policy)
    return;
  if (!enable)
    p->policy->deep_until = 0;
  else
    p->policy->deep_until = duration_ms ? time(NULL) + (time_t)((duration_ms + 999) / 1000) : (time_t)-1;
}

static void deep_text(const gpd_proc_policy_t *pp, char *out, size_t n) {
  out[0] = '\0';
  if (pp->deep_until == (time_t)-1) {
    snprintf(out, n, "deep dive: over budget until stopped");
  } else if (pp->deep_until > time(NULL)) {
    struct tm tm;
    localtime_r(&pp->deep_until, &tm);
    snprintf(out, n, "deep dive: over budget until %02d:%02d:%02d", tm.tm_hour, tm.tm_min, tm.tm_sec);
  }
}

int gpd_policy_pcs(const gpd_proc_t *p, uint32_t *win_ms, uint32_t *per_s, int *busy) {
  const gpd_proc_policy_t *pp = p->policy;
  *win_ms = *per_s = 0;
  *busy = 0;
  if (!pp || !pp->rep[GPD_API_CUDA].set)
    return -ENOENT;
  *win_ms = pp->pol.v.pcs_window_ms;
  *per_s = pp->pol.v.pcs_period_s ? pp->pol.v.pcs_period_s : 1;
  *busy = pp->rep[GPD_API_CUDA].busy[0] != '\0';
  return 0;
}

/* "PC samples estimated from N rotating windows (X s of Y s), next in
 *  Z s" for p (lifetime Y up to now_ns, or its end), "rotating
 *  PC-sampling windows: the first in Z s", or "" when it had none and
 *  none is planned.  Main thread. */
static void pcrot_text(const gpd_proc_t *p, uint64_t now_ns, char *out, size_t n) {
  const gpd_pcrot_proc_t *r = &p->pcrot;
  size_t len = 0;
  out[0] = '\0';
  uint32_t win, per;
  int busy;
  int planned = p->state == GPD_PROC_RUNNING && r->next_ns && gpd_policy_pcs(p, &win, &per, &busy) == 0 && win;
  if (r->windows == 0) {
    if (planned)
      snprintf(out, n, "rotating PC-sampling windows: the first in %.0f s",
               r->next_ns > now_ns ? (double)(r->next_ns - now_ns) / 1e9 : 0.0);
    return;
  }
  uint64_t end = p->state == GPD_PROC_RUNNING || !p->end_ns ? now_ns : p->end_ns;
  double life = end > p->start_ns ? (double)(end - p->start_ns) / 1e9 : 0;
  len = (size_t)snprintf(out, n, "PC samples estimated from %" PRIu32 " rotating window%s (%.1f s of %.1f s)",
                         r->windows, r->windows == 1 ? "" : "s", (double)r->window_ns / 1e9, life);
  if (len < n && (r->skipped || r->refused))
    len += (size_t)snprintf(out + len, n - len, ", %" PRIu32 " skipped busy, %" PRIu32 " refused", r->skipped,
                            r->refused);
  if (len < n && planned)
    snprintf(out + len, n - len, ", next in %.0f s",
             r->next_ns > now_ns ? (double)(r->next_ns - now_ns) / 1e9 : 0.0);
}

/* pcs_state of p: the busy text and the rotating windows' estimate
 * ("busy: ...; PC samples estimated from N rotating windows ..."). */
static void pcs_state_msg(const gpd_proc_t *p, Gpuprof__Process *m) {
  const gpd_proc_policy_t *pp = p->policy;
  const char *busy = pp && p->state == GPD_PROC_RUNNING ? pp->rep[GPD_API_CUDA].busy : "";
  char rot[192], all[400];
  pcrot_text(p, gpd_clock_ns(), rot, sizeof rot);
  if (!busy[0] && !rot[0])
    return;
  snprintf(all, sizeof all, "%s%s%s", busy, busy[0] && rot[0] ? "; " : "", rot);
  m->pcs_state = gpd__query_strdup(all);
}

void gpd_policy_proc_msg(const gpd_proc_t *p, Gpuprof__Process *m) {
  const gpd_proc_policy_t *pp = p->policy;
  char how[256], deep[64];
  pcs_state_msg(p, m);
  if (!pp || p->state != GPD_PROC_RUNNING)
    return;
  const policy_rep_t *r = &pp->rep[GPD_API_CUDA];
  const char *mode = r->set ? r->mode : NULL;
  for (unsigned a = 1; !mode && a < GPD_API_MAX; a++)
    if (pp->rep[a].set && !pp->rep[a].can_detach)
      mode = a == GPD_API_OPENCL ? "opencl: full (cannot detach)" : "level0: full (cannot detach)";
  if (!mode)
    return; /* no GPU back end said what it runs: nothing to show */
  m->collect_mode = gpd__query_strdup(mode);
  m->overhead = policy_overhead(pp, how, sizeof how);
  m->overhead_how = gpd__query_strdup(how);
  deep_text(pp, deep, sizeof deep);
  m->deep_dive = gpd__query_strdup(deep);
}

/* ------------------------------------------------------------ request */

typedef struct {
  char **lines;
  size_t n, cap;
} lines_t;

static void lines_add(const char *line, void *arg) {
  lines_t *l = arg;
  if (l->n == l->cap) {
    size_t cap = l->cap ? 2 * l->cap : 16;
    char **nl = realloc(l->lines, cap * sizeof *nl);
    if (!nl)
      return;
    l->lines = nl;
    l->cap = cap;
  }
  char *s = strdup(line);
  if (s)
    l->lines[l->n++] = s;
}

static void lines_free(lines_t *l) {
  for (size_t i = 0; i < l->n; i++)
    free(l->lines[i]);
  free(l->lines);
}

/* CollectReport messages of pp (strings point into pp). */
static size_t reports_msg(const gpd_proc_policy_t *pp, const gpd_pcrot_proc_t *rot, Gpuprof__CollectReport *rs,
                          Gpuprof__CollectReport **rp) {
  size_t n = 0;
  for (unsigned a = 0; a < GPD_API_MAX; a++) {
    const policy_rep_t *x = &pp->rep[a];
    if (!x->set)
      continue;
    Gpuprof__CollectReport *c = &rs[n];
    gpuprof__collect_report__init(c);
    c->api = a;
    c->source = (char *)x->source;
    c->mode = (char *)x->mode;
    c->note = (char *)x->note;
#define X(f) c->f = x->f;
    POLICY_REP_NUMBERS(X)
#undef X
    c->busy = (char *)x->busy;
    if (a == GPD_API_CUDA) { /* the daemon's own count (pcrotate.c), never the shim's */
      c->pc_rot_windows = rot->windows;
      c->pc_rot_window_ns = rot->window_ns;
      c->pc_rot_skipped = rot->skipped;
    }
    rp[n] = c;
    n++;
  }
  return n;
}

/* `policy set`: admins only; applies and pushes to running processes. */
static void policy_set(gpd_daemon_t *d, struct gpd_client_s *cli, const gpd_peer_t *peer,
                       const Gpuprof__PolicyRequest *r, Gpuprof__PolicyReply *pr, char *msg, size_t n) {
  char rule[sizeof ((gpd_collect_rule_t *)0)->pattern + 8] = "", why[256];
  int nsel = (r->job_id && *r->job_id) + (r->has_uid != 0) + (r->exe && *r->exe);
  if (!peer->admin) {
    GPD_WARN("peer pid %d uid %u: policy set refused (not root or admin_group)", (int)peer->pid,
             (unsigned)peer->uid);
    gpd_client_send_error(cli, GPD_EDENIED, "permission denied: policy set needs root or the admin group");
    return;
  }
  if (nsel > 1) {
    gpd_client_send_error(cli, -EINVAL, "policy set: give at most one of --job, --uid, --exe");
    return;
  }
  const char *sel = r->job_id && *r->job_id ? r->job_id : r->exe && *r->exe ? r->exe : NULL;
  if (sel && strlen(sel) >= sizeof ((gpd_collect_rule_t *)0)->pattern) {
    gpd_client_send_error(cli, -EINVAL, "policy set: the job or exe pattern is longer than 255 bytes");
    return;
  }
  if (r->job_id && *r->job_id)
    snprintf(rule, sizeof rule, "job=%s", r->job_id);
  else if (r->has_uid)
    snprintf(rule, sizeof rule, "uid=%u", (unsigned)r->uid);
  else if (r->exe && *r->exe)
    snprintf(rule, sizeof rule, "exe=%s", r->exe);
  int err = gpd_config_collect_set(&d->cfg, rule, r->key ? r->key : "", r->value ? r->value : "", why,
                                   sizeof why);
  if (err) {
    gpd_client_send_error(cli, err == -ENOMEM ? -ENOMEM : GPD_ECONFIG, why);
    return;
  }
  pr->applied = gpd_policy_push_all(d);
  snprintf(msg, n, "%s=%s for %s: sent to %u running process(es)", r->key, r->value, rule[0] ? rule : "[collect]",
           pr->applied);
  GPD_INFO("peer pid %d uid %u: policy set %s", (int)peer->pid, (unsigned)peer->uid, msg);
  pr->message = msg;
}

void gpd_policy_request(gpd_daemon_t *d, struct gpd_client_s *cli, const gpd_peer_t *peer,
                        const Gpuprof__PolicyRequest *r) {
  Gpuprof__PolicyReply pr = GPUPROF__POLICY_REPLY__INIT;
  Gpuprof__Msg m = GPUPROF__MSG__INIT;
  Gpuprof__CollectPolicy node = GPUPROF__COLLECT_POLICY__INIT, procpol;
  Gpuprof__PolicyProc pp_msg = GPUPROF__POLICY_PROC__INIT, *ppp = &pp_msg;
  Gpuprof__CollectReport rs[GPD_API_MAX], *rp[GPD_API_MAX];
  gpd_proc_policy_t snap;
  gpd_pcrot_proc_t rot;
  lines_t lines = {0};
  char msg[512] = "", how[256], deep[64], *exe = NULL, *job = NULL;

  if (!r) {
    gpd_client_send_error(cli, -EINVAL, "empty policy request");
    return;
  }
  if (r->set) {
    policy_set(d, cli, peer, r, &pr, msg, sizeof msg);
    if (!pr.message)
      return; /* answered with an error */
  }
  if (r->pid > 0) {
    gpd_registry_lock(d);
    gpd_proc_t *p = gpd_registry_find_pid(d, r->pid);
    /* another user's process reads exactly like one that does not exist */
    if (!p || !gpd_access_may_see(peer, p->uid) || !proc_policy(d, p)) {
      pthread_mutex_unlock(&d->lock);
      char e[64];
      snprintf(e, sizeof e, "no profiled process %d", (int)r->pid);
      gpd_client_send_error(cli, -ESRCH, e);
      return;
    }
    /* a copy: the reply is sent without the lock (a send may close) */
    snap = *p->policy;
    rot = p->pcrot;
    exe = strdup(p->exe ? p->exe : "");
    job = strdup(p->job_id ? p->job_id : "");
    pp_msg.pid = p->pid;
    pp_msg.profile_id = p->profile_id;
    pp_msg.uid = p->uid;
    pthread_mutex_unlock(&d->lock);
    pp_msg.exe = exe ? exe : "";
    pp_msg.job_id = job ? job : "";
    policy_msg(&snap, &procpol);
    pp_msg.policy = &procpol;
    pp_msg.n_reports = reports_msg(&snap, &rot, rs, rp);
    pp_msg.reports = rp;
    pp_msg.overhead = policy_overhead(&snap, how, sizeof how);
    pp_msg.overhead_how = how;
    deep_text(&snap, deep, sizeof deep);
    pp_msg.deep_dive = deep;
    pr.n_procs = 1;
    pr.procs = &ppp;
  }
  gpd_policy_describe(&d->cfg, lines_add, &lines);
  pr.rules = lines.lines;
  pr.n_rules = lines.n;
  {
    gpd_proc_policy_t base;
    memset(&base, 0, sizeof base);
    gpd_policy_resolve(&d->cfg, NULL, (uint32_t)-1, NULL, &base.pol);
    /* [collect] alone: no override section matches a null subject, but a
     * uid section for 4294967295 cannot exist (config.c refuses it) */
    gpd_policy_why(&d->cfg, &base.pol, base.why, sizeof base.why);
    policy_msg(&base, &node);
    pr.node = &node;
    m.body_case = GPUPROF__MSG__BODY_POLICY;
    m.policy = &pr;
    if (gpd_client_send_msg(cli, &m) < 0)
      gpd_client_send_error(cli, -ENOMEM, "out of memory");
  }
  lines_free(&lines);
  free(exe);
  free(job);
}

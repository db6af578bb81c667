/* devices-papi.c - CPU counters of the profiled processes through PAPI.
 *
 * The events are named as PAPI names them (`[devices] papi_events`,
 * e.g. "perf::TASK-CLOCK,perf::CONTEXT-SWITCHES"; hardware presets such
 * as PAPI_TOT_INS where the node has them).  Each running profiled
 * process gets one event set attached to its pid (PAPI_attach: opening a
 * counter on another process needs the daemon's privileges, see
 * perf_event_open(2) and perf_event_paranoid), with inheritance asked for
 * so that threads the process starts later are counted too (threads that
 * existed before the attach are not: perf_event follows one task).  At
 * most `max_procs` processes at once; the rest are not counted (logged
 * once).  Sampler thread only: PAPI is initialised and used there alone.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <papi.h>

#include "gpuprof/error.h"
#include "gpuprof/log.h"

#include "devices.h"

typedef struct {
  gpd_cpu_slot_t s; /* profile id, pid, seen */
  int es;           /* PAPI event set, PAPI_NULL when the attach failed */
} papi_proc_t;

struct gpd_papi_s {
  uint32_t nev;
  int codes[GPD_PAPI_MAX_EVENTS];
  char *names[GPD_PAPI_MAX_EVENTS];
  int cidx;        /* component of the events (one event set = one component) */
  uint32_t max, n;
  papi_proc_t *procs;
  int full_logged;
};

/* Stop and free the event set of one process (gpd__devices_cpuslot_sweep's drop). */
static void detach(void *ctx, void *entry) {
  papi_proc_t *pp = entry;
  (void)ctx;
  if (pp->es == PAPI_NULL)
    return;
  long long v[GPD_PAPI_MAX_EVENTS];
  PAPI_stop(pp->es, v);
  PAPI_cleanup_eventset(pp->es);
  PAPI_destroy_eventset(&pp->es);
}

void gpd_devices_papi_close(gpd_papi_t *p) {
  if (p == NULL)
    return;
  for (uint32_t i = 0; i < p->n; i++)
    detach(NULL, &p->procs[i]);
  for (uint32_t i = 0; i < p->nev; i++)
    free(p->names[i]);
  free(p->procs);
  free(p);
  PAPI_shutdown();
}

/* A new event set for pid, started.  PAPI_NULL (logged) when refused. */
static int attach(gpd_papi_t *p, int32_t pid) {
  int es = PAPI_NULL, r;
  const char *what = "PAPI_create_eventset";
  if ((r = PAPI_create_eventset(&es)) != PAPI_OK)
    goto fail;
  what = "PAPI_assign_eventset_component";
  if ((r = PAPI_assign_eventset_component(es, p->cidx)) != PAPI_OK)
    goto fail;
  what = "PAPI_attach";
  if ((r = PAPI_attach(es, (unsigned long)pid)) != PAPI_OK)
    goto fail;
  PAPI_option_t opt;
  memset(&opt, 0, sizeof opt);
  opt.inherit.eventset = es;
  opt.inherit.inherit = PAPI_INHERIT_ALL;
  (void)PAPI_set_opt(PAPI_INHERIT, &opt); /* best effort: new threads too */
  what = "PAPI_add_event";
  for (uint32_t i = 0; i < p->nev; i++)
    if ((r = PAPI_add_event(es, p->codes[i])) != PAPI_OK)
      goto fail;
  what = "PAPI_start";
  if ((r = PAPI_start(es)) != PAPI_OK)
    goto fail;
  return es;
fail:
  GPD_INFO("devices: PAPI: pid %d not counted: %s: %s", (int)pid, what, PAPI_strerror(r));
  if (es != PAPI_NULL) {
    PAPI_cleanup_eventset(es);
    PAPI_destroy_eventset(&es);
  }
  return PAPI_NULL;
}

int gpd_devices_papi_open(gpd_papi_t **out, const char *events, uint32_t max_procs, char *why,
                  size_t whylen) {
  int err = 0, r;
  char list[512], *save = NULL;
  gpd_papi_t *p = NULL;
  *out = NULL;
  if ((r = PAPI_library_init(PAPI_VER_CURRENT)) != PAPI_VER_CURRENT) {
    snprintf(why, whylen, "PAPI_library_init failed: %s",
             r < 0 ? PAPI_strerror(r) : "version mismatch");
    return GPD_EVENDOR;
  }
  if ((p = calloc(1, sizeof *p)) == NULL || (p->procs = calloc(max_procs, sizeof *p->procs)) == NULL) {
    err = -ENOMEM;
    goto fail;
  }
  p->max = max_procs;
  p->cidx = -1;
  snprintf(list, sizeof list, "%s", events);
  for (char *t = strtok_r(list, ", \t", &save); t; t = strtok_r(NULL, ", \t", &save)) {
    int code, cidx;
    if (p->nev == GPD_PAPI_MAX_EVENTS) {
      snprintf(why, whylen, "more than %u PAPI events", GPD_PAPI_MAX_EVENTS);
      err = GPD_ECONFIG;
      goto fail;
    }
    if ((r = PAPI_event_name_to_code(t, &code)) != PAPI_OK) {
      snprintf(why, whylen, "PAPI event %s: %s", t, PAPI_strerror(r));
      err = GPD_EVENDOR;
      goto fail;
    }
    cidx = PAPI_get_event_component(code);
    if (p->cidx >= 0 && cidx != p->cidx) {
      snprintf(why, whylen, "PAPI event %s is of another component than %s", t, p->names[0]);
      err = GPD_ECONFIG;
      goto fail;
    }
    p->cidx = cidx;
    p->codes[p->nev] = code;
    if ((p->names[p->nev++] = strdup(t)) == NULL) {
      err = -ENOMEM;
      goto fail;
    }
  }
  if (p->nev == 0) {
    snprintf(why, whylen, "no PAPI events configured ([devices] papi_events)");
    err = GPD_ECONFIG;
    goto fail;
  }
  /* can they be counted at all?  try them on ourselves once */
  int es = attach(p, (int32_t)getpid());
  if (es == PAPI_NULL) {
    snprintf(why, whylen, "PAPI cannot count %s%s here (see the INFO log line)", p->names[0],
             p->nev > 1 ? ",..." : "");
    err = GPD_EVENDOR;
    goto fail;
  }
  long long v[GPD_PAPI_MAX_EVENTS];
  PAPI_stop(es, v);
  PAPI_cleanup_eventset(es);
  PAPI_destroy_eventset(&es);
  *out = p;
  return 0;
fail:
  if (err == -ENOMEM)
    snprintf(why, whylen, "out of memory");
  gpd_devices_papi_close(p); /* shuts PAPI down */
  if (p == NULL)
    PAPI_shutdown();
  return err;
}

uint32_t gpd_devices_papi_nevents(const gpd_papi_t *p, const char *const **names) {
  *names = p ? (const char *const *)p->names : NULL;
  return p ? p->nev : 0;
}

void gpd_devices_papi_sample(gpd_papi_t *p, const uint64_t *ids, const int32_t *pids, uint32_t n,
                     gpd_cpu_t *cpu) {
  if (p == NULL)
    return;
  gpd__devices_cpuslot_unsee(p->procs, sizeof *p->procs, p->n);
  for (uint32_t k = 0; k < n; k++) {
    int added;
    papi_proc_t *pp =
        (papi_proc_t *)gpd__devices_cpuslot_get(p->procs, sizeof *p->procs, &p->n, p->max, ids[k],
                                                pids[k], &added, &p->full_logged, "PAPI");
    cpu[k].nvalues = 0;
    if (pp == NULL)
      continue;
    if (added)
      pp->es = attach(p, pids[k]);
    if (pp->es != PAPI_NULL && PAPI_read(pp->es, cpu[k].values) == PAPI_OK)
      cpu[k].nvalues = p->nev;
  }
  /* detach processes that are gone */
  gpd__devices_cpuslot_sweep(p->procs, sizeof *p->procs, &p->n, detach, NULL);
}

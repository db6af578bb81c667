/* devices-perf.c - CPU software counters of the profiled processes
 * through perf_event_open(2), where PAPI cannot count.
 *
 * PAPI's perf_event component needs libpfm4 to find a hardware PMU; on
 * virtual machines without one ("libpfm4 no default PMU found") the whole
 * component is disabled and even the software events perf::TASK-CLOCK,
 * perf::CONTEXT-SWITCHES ... "do not exist", although the kernel counts
 * them.  This back end opens those PERF_TYPE_SOFTWARE events itself and
 * reports them under libpfm4's names (perf_event_open(2), "Software
 * events"; libpfm4 lib/events/perf_events.h for the names), so the rows
 * look the same whichever path counted.
 *
 * One counter per event and process, opened on the process's pid (its
 * main thread) with inherit on: threads and child processes started
 * after the attach are counted too and their counts are summed into the
 * read value (threads that existed before the attach are not: a perf
 * counter follows one task).  user and kernel time both count
 * (exclude_hv only), as `perf stat -p PID` does.  Values are cumulative
 * since the attach: ns for TASK-CLOCK/CPU-CLOCK, events otherwise.
 *
 * Only pids the sampler hands over are opened, and those come from the
 * daemon's registry (registered, running, profiled processes); after the
 * open the process's kernel start time is compared with the registered
 * one, so a pid reused by another process between the registry read and
 * the open is closed again and not counted.  At most `max_procs`
 * processes are open at once (so at most max_procs * events fds, and
 * never more than a quarter of the RLIMIT_NOFILE soft limit: the daemon's
 * clients need the rest); the
 * fds of processes that are no longer running are closed in the next
 * round.  Sampler thread only.
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "gpuprof/error.h"
#include "gpuprof/log.h"

#include "devices.h"
#include "procstat.h"

/* libpfm4's perf:: names of the kernel's software events (and the
 * aliases libpfm4 accepts for them), with their PERF_COUNT_SW_* config. */
static const struct {
  const char *name, *alias;
  uint64_t config;
} sw_events[] = {
    {"perf::TASK-CLOCK", NULL, PERF_COUNT_SW_TASK_CLOCK},
    {"perf::CPU-CLOCK", NULL, PERF_COUNT_SW_CPU_CLOCK},
    {"perf::CONTEXT-SWITCHES", "perf::CS", PERF_COUNT_SW_CONTEXT_SWITCHES},
    {"perf::CPU-MIGRATIONS", "perf::MIGRATIONS", PERF_COUNT_SW_CPU_MIGRATIONS},
    {"perf::PAGE-FAULTS", "perf::FAULTS", PERF_COUNT_SW_PAGE_FAULTS},
    {"perf::MINOR-FAULTS", NULL, PERF_COUNT_SW_PAGE_FAULTS_MIN},
    {"perf::MAJOR-FAULTS", NULL, PERF_COUNT_SW_PAGE_FAULTS_MAJ},
};
#define NSW (sizeof sw_events / sizeof sw_events[0])

typedef struct {
  gpd_cpu_slot_t s;             /* profile id, pid, seen */
  int fds[GPD_PAPI_MAX_EVENTS]; /* -1 where not open (fds[0] < 0: not counted) */
} perf_proc_t;

struct gpd_perf_s {
  uint32_t nev;
  uint64_t config[GPD_PAPI_MAX_EVENTS];
  char *names[GPD_PAPI_MAX_EVENTS];
  uint32_t max, n;
  perf_proc_t *procs;
  int full_logged;
};

/* Close the counters of one process (gpd__devices_cpuslot_sweep's drop). */
static void close_proc(void *ctx, void *entry) {
  gpd_perf_t *p = ctx;
  perf_proc_t *pp = entry;
  for (uint32_t e = 0; e < p->nev; e++)
    if (pp->fds[e] >= 0) {
      close(pp->fds[e]);
      pp->fds[e] = -1;
    }
}

void gpd_devices_perf_close(gpd_perf_t *p) {
  if (p == NULL)
    return;
  for (uint32_t i = 0; i < p->n; i++)
    close_proc(p, &p->procs[i]);
  for (uint32_t i = 0; i < p->nev; i++)
    free(p->names[i]);
  free(p->procs);
  free(p);
}

static int open_one(uint64_t config, int32_t pid) {
  struct perf_event_attr a;
  memset(&a, 0, sizeof a);
  a.size = sizeof a;
  a.type = PERF_TYPE_SOFTWARE;
  a.config = config;
  a.inherit = 1;
  a.exclude_hv = 1;
  long fd = syscall(SYS_perf_event_open, &a, (pid_t)pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
  return fd < 0 ? -errno : (int)fd;
}

/* Open every event on pid; 0, or < 0 (all closed again) with what in why. */
static int attach(gpd_perf_t *p, perf_proc_t *pp, uint64_t start, char *why, size_t whylen) {
  int r = 0;
  for (uint32_t e = 0; e < p->nev; e++)
    pp->fds[e] = -1;
  for (uint32_t e = 0; e < p->nev; e++)
    if ((r = open_one(p->config[e], pp->s.pid)) < 0) {
      snprintf(why, whylen, "perf_event_open(%s, pid %d): %s", p->names[e], (int)pp->s.pid,
               strerror(-r));
      goto fail;
    } else {
      pp->fds[e] = r;
    }
  /* the counters follow the task we opened: is it still the registered one? */
  if (start != 0 && gpd_procstat_start(pp->s.pid) != start) {
    snprintf(why, whylen, "pid %d is no longer the registered process", (int)pp->s.pid);
    r = -ESRCH;
    goto fail;
  }
  return 0;
fail:
  close_proc(p, pp);
  return r;
}

int gpd_devices_perf_open(gpd_perf_t **out, const char *events, uint32_t max_procs, char *why,
                  size_t whylen) {
  int err = 0;
  char list[512], *save = NULL;
  gpd_perf_t *p = NULL;
  *out = NULL;
  if ((p = calloc(1, sizeof *p)) == NULL ||
      (p->procs = calloc(max_procs ? max_procs : 1, sizeof *p->procs)) == NULL) {
    err = -ENOMEM;
    goto fail;
  }
  p->max = max_procs;
  snprintf(list, sizeof list, "%s", events);
  for (char *t = strtok_r(list, ", \t", &save); t; t = strtok_r(NULL, ", \t", &save)) {
    size_t k;
    if (p->nev == GPD_PAPI_MAX_EVENTS) {
      snprintf(why, whylen, "more than %u events", GPD_PAPI_MAX_EVENTS);
      err = GPD_ECONFIG;
      goto fail;
    }
    for (k = 0; k < NSW; k++)
      if (strcasecmp(t, sw_events[k].name) == 0 ||
          (sw_events[k].alias && strcasecmp(t, sw_events[k].alias) == 0))
        break;
    if (k == NSW) {
      snprintf(why, whylen, "%s is not a kernel software event (perf::TASK-CLOCK, "
                            "perf::CONTEXT-SWITCHES, perf::CPU-MIGRATIONS, perf::PAGE-FAULTS, "
                            "perf::MINOR-FAULTS, perf::MAJOR-FAULTS, perf::CPU-CLOCK)", t);
      err = GPD_ECONFIG;
      goto fail;
    }
    p->config[p->nev] = sw_events[k].config;
    if ((p->names[p->nev++] = strdup(sw_events[k].name)) == NULL) {
      err = -ENOMEM;
      goto fail;
    }
  }
  if (p->nev == 0) {
    snprintf(why, whylen, "no events configured ([devices] papi_events)");
    err = GPD_ECONFIG;
    goto fail;
  }
  /* the counters share the daemon's fd table with its clients: keep them
   * to a quarter of the soft limit, so they cannot make accepts fail */
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
      (uint64_t)p->max * p->nev > rl.rlim_cur / 4) {
    p->max = (uint32_t)(rl.rlim_cur / 4 / p->nev);
    GPD_WARN("devices: perf_event: at most %u processes counted (%u events each, a quarter of "
             "the fd limit %llu; papi_max_procs %u)", p->max, p->nev,
             (unsigned long long)rl.rlim_cur, max_procs);
  }
  /* can they be counted at all?  try them on ourselves once */
  perf_proc_t self = {.s.pid = (int32_t)getpid()};
  if ((err = attach(p, &self, 0, why, whylen)) < 0)
    goto fail;
  close_proc(p, &self);
  *out = p;
  return 0;
fail:
  if (err == -ENOMEM)
    snprintf(why, whylen, "out of memory");
  gpd_devices_perf_close(p);
  return err;
}

uint32_t gpd_devices_perf_nevents(const gpd_perf_t *p, const char *const **names) {
  *names = p ? (const char *const *)p->names : NULL;
  return p ? p->nev : 0;
}

void gpd_devices_perf_sample(gpd_perf_t *p, const uint64_t *ids, const int32_t *pids,
                     const uint64_t *starts, uint32_t n, gpd_cpu_t *cpu) {
  if (p == NULL)
    return;
  gpd__devices_cpuslot_unsee(p->procs, sizeof *p->procs, p->n);
  for (uint32_t k = 0; k < n; k++) {
    int added;
    char why[160];
    perf_proc_t *pp =
        (perf_proc_t *)gpd__devices_cpuslot_get(p->procs, sizeof *p->procs, &p->n, p->max, ids[k],
                                                pids[k], &added, &p->full_logged, "perf_event");
    cpu[k].nvalues = 0;
    if (pp == NULL)
      continue;
    if (added && attach(p, pp, starts[k], why, sizeof why) < 0)
      GPD_INFO("devices: perf_event: pid %d not counted: %s", (int)pids[k], why);
    if (pp->fds[0] < 0)
      continue;
    uint32_t e;
    for (e = 0; e < p->nev; e++) {
      uint64_t v;
      if (read(pp->fds[e], &v, sizeof v) != (ssize_t)sizeof v)
        break;
      cpu[k].values[e] = (long long)v;
    }
    if (e == p->nev)
      cpu[k].nvalues = p->nev;
  }
  /* close processes that are gone */
  gpd__devices_cpuslot_sweep(p->procs, sizeof *p->procs, &p->n, close_proc, p);
}

/* devices.c - the device sampler thread, the published newest samples and
 * the DevicesReply (docs/DEVICES.md; interfaces in devices.h).
 *
 * One thread, started at daemon start when `[devices] interval_ms` > 0:
 * opens the back ends (NVML, Sysman, PAPI: each may be missing, the
 * reason is kept for `gpuprof devices`), then every interval samples
 * every GPU, attributes the processes the vendor reports to registered
 * processes (under gpd_daemon_t.lock, copying only), reads the CPU
 * counters of the running profiled processes (PAPI, or the kernel's
 * software events through perf_event_open where PAPI cannot count), publishes the newest
 * values under `mu` and queues the rows for the store, flushed about once
 * a second.  A vendor call that hangs delays only this thread: the loop
 * answers `gpuprof devices` from what was published.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "gpuprof.pb-c.h"
#include "gpuprof/clock.h"
#include "gpuprof/error.h"
#include "gpuprof/log.h"

#include "daemon.h"
#include "job.h"
#include "devices.h"

#define NGPU_BACKENDS 2
#define FLUSH_NS 1000000000ull

enum { ST_NVML, ST_SYSMAN, ST_PAPI, ST__N };
static const char *const st_api[ST__N] = {"nvml", "sysman", "papi"};

struct gpd_devices_s {
  gpd_daemon_t *d;
  pthread_t tid;
  int started;
  pthread_mutex_t mu; /* guards everything below "published" and stop */
  pthread_cond_t cv;
  int stop;
  uint32_t interval_ms;
  /* published (mu) */
  gpd_dev_t *devs;
  uint32_t ndevs;
  gpd_cpu_t *cpus;
  uint32_t ncpus;
  char events[GPD_PAPI_MAX_EVENTS][64];
  uint32_t nevents;
  gpd_dev_status_t status[ST__N];
  uint64_t rounds;
  uint64_t series_dropped;
  /* sampler thread only */
  const gpd_gpu_backend_t *be[NGPU_BACKENDS];
  void *st[NGPU_BACKENDS];
  uint32_t first[NGPU_BACKENDS]; /* first index in devs of each back end */
  gpd_dev_sample_t *scratch;     /* one per device */
  gpd_cpu_t *cpu_scratch, *cpu_prev;
  uint32_t nprev;
  uint64_t *ids;
  int32_t *pids;
  uint64_t *starts;
  gpd_papi_t *papi;
  gpd_perf_t *perf; /* the kernel's software events where PAPI cannot count */
  gpd_series_t *series;
};

static void set_status(gpd_devices_t *v, int which, int enabled, int code, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void set_status(gpd_devices_t *v, int which, int enabled, int code, const char *fmt, ...) {
  va_list ap;
  pthread_mutex_lock(&v->mu);
  gpd_dev_status_t *s = &v->status[which];
  s->enabled = enabled;
  s->code = code;
  va_start(ap, fmt);
  vsnprintf(s->reason, sizeof s->reason, fmt, ap);
  va_end(ap);
  pthread_mutex_unlock(&v->mu);
  if (!enabled)
    GPD_INFO("devices: %s: %s", st_api[which], s->reason);
}

/* Open the GPU back ends and PAPI (sampler thread). */
static void open_backends(gpd_devices_t *v) {
  const gpd_config_t *c = &v->d->cfg;
  const char *libs[NGPU_BACKENDS] = {c->dev_nvml_lib, c->dev_sysman_lib};
  char why[256];
  uint32_t total = 0;
  v->be[ST_NVML] = &gpd_devices_nvml;
#ifdef GPD_HAVE_SYSMAN
  v->be[ST_SYSMAN] = &gpd_devices_sysman;
#endif
  for (int b = 0; b < NGPU_BACKENDS; b++) {
    if (v->be[b] == NULL) {
      set_status(v, b, 0, -ENOSYS, "gpuprofd was built without Level Zero Sysman (zes_api.h "
                                   "not found)");
      continue;
    }
    if (libs[b][0] == 0) {
      set_status(v, b, 0, 0, "disabled ([devices] %s_library = \"\")", st_api[b]);
      continue;
    }
    why[0] = 0;
    int e = v->be[b]->open(&v->st[b], libs[b], why, sizeof why);
    if (e < 0) {
      v->st[b] = NULL;
      set_status(v, b, 0, e, "%s", why[0] ? why : gpd_strerror(e));
      continue;
    }
    uint32_t n = v->be[b]->count(v->st[b]);
    if (n > GPD_DEV_MAX)
      n = GPD_DEV_MAX;
    if (n == 0) {
      set_status(v, b, 0, 0, "%s loaded, but it reports no devices", libs[b]);
      v->be[b]->close(v->st[b]);
      v->st[b] = NULL;
      continue;
    }
    set_status(v, b, 1, 0, "%u device%s (%s)", n, n == 1 ? "" : "s", libs[b]);
    total += n;
  }
  gpd_dev_t *devs = calloc(total ? total : 1, sizeof *devs);
  v->scratch = calloc(total ? total : 1, sizeof *v->scratch);
  if (devs == NULL || v->scratch == NULL) {
    free(devs);
    for (int b = 0; b < NGPU_BACKENDS; b++)
      if (v->st[b]) {
        v->be[b]->close(v->st[b]);
        v->st[b] = NULL;
        set_status(v, b, 0, -ENOMEM, "out of memory");
      }
    total = 0;
    devs = NULL;
  }
  uint32_t k = 0;
  for (int b = 0; b < NGPU_BACKENDS && devs; b++) {
    v->first[b] = k;
    if (v->st[b] == NULL)
      continue;
    uint32_t n = v->be[b]->count(v->st[b]);
    for (uint32_t i = 0; i < n && k < total; i++, k++) {
      gpd_dev_t *dv = &devs[k];
      snprintf(dv->api, sizeof dv->api, "%s", v->be[b]->api);
      dv->index = i;
      v->be[b]->describe(v->st[b], i, dv->name, sizeof dv->name, dv->uuid, sizeof dv->uuid);
      dv->row_id = v->series ? gpd_devices_series_device(v->series, dv) : -1;
    }
  }
  pthread_mutex_lock(&v->mu);
  v->devs = devs;
  v->ndevs = k;
  pthread_mutex_unlock(&v->mu);

  /* PAPI */
  if (c->dev_papi_events[0] == 0) {
    set_status(v, ST_PAPI, 0, 0, "disabled ([devices] papi_events = \"\")");
  } else {
    why[0] = 0;
    char pwhy[sizeof why];
    int e = gpd_devices_papi_open(&v->papi, c->dev_papi_events, c->dev_papi_max_procs, why, sizeof why);
    if (e < 0) {
      /* PAPI missing or its perf_event component disabled (no PMU): the
       * kernel's software events through perf_event_open(2) instead */
      v->papi = NULL;
      snprintf(pwhy, sizeof pwhy, "%s", why[0] ? why : gpd_strerror(e));
      why[0] = 0;
      int pe = gpd_devices_perf_open(&v->perf, c->dev_papi_events, c->dev_papi_max_procs, why,
                             sizeof why);
      if (pe < 0) {
        v->perf = NULL;
        set_status(v, ST_PAPI, 0, e, "%s; perf_event: %s", pwhy,
                   why[0] ? why : gpd_strerror(pe));
      }
    }
    if (v->papi || v->perf) {
      const char *const *names;
      uint32_t n = v->papi ? gpd_devices_papi_nevents(v->papi, &names) : gpd_devices_perf_nevents(v->perf, &names);
      v->cpu_scratch = calloc(c->dev_papi_max_procs, sizeof *v->cpu_scratch);
      v->cpu_prev = calloc(c->dev_papi_max_procs, sizeof *v->cpu_prev);
      v->ids = calloc(c->dev_papi_max_procs, sizeof *v->ids);
      v->pids = calloc(c->dev_papi_max_procs, sizeof *v->pids);
      v->starts = calloc(c->dev_papi_max_procs, sizeof *v->starts);
      gpd_cpu_t *pub = calloc(c->dev_papi_max_procs, sizeof *pub);
      if (!v->cpu_scratch || !v->cpu_prev || !v->ids || !v->pids || !v->starts || !pub) {
        free(pub);
        gpd_devices_papi_close(v->papi);
        v->papi = NULL;
        gpd_devices_perf_close(v->perf);
        v->perf = NULL;
        set_status(v, ST_PAPI, 0, -ENOMEM, "out of memory");
      } else {
        pthread_mutex_lock(&v->mu);
        v->cpus = pub;
        for (uint32_t i = 0; i < n; i++)
          snprintf(v->events[i], sizeof v->events[i], "%s", names[i]);
        v->nevents = n;
        pthread_mutex_unlock(&v->mu);
        if (v->papi)
          set_status(v, ST_PAPI, 1, 0, "%s, per profiled process; back end papi", c->dev_papi_events);
        else
          set_status(v, ST_PAPI, 1, 0, "%s, per profiled process; back end perf_event (%s)",
                     c->dev_papi_events, pwhy);
      }
    }
  }
}

static void close_backends(gpd_devices_t *v) {
  for (int b = 0; b < NGPU_BACKENDS; b++)
    if (v->st[b]) {
      v->be[b]->close(v->st[b]);
      v->st[b] = NULL;
    }
  gpd_devices_papi_close(v->papi);
  v->papi = NULL;
  gpd_devices_perf_close(v->perf);
  v->perf = NULL;
}

static void base_name(char *out, size_t n, const char *path) {
  const char *s = path ? strrchr(path, '/') : NULL;
  snprintf(out, n, "%s", s ? s + 1 : path ? path : "");
}

/* Who each process of the samples is (registry under d->lock, copied),
 * and which profiled processes PAPI should count.  Returns that count. */
static uint32_t attribute(gpd_devices_t *v, uint32_t ndevs) {
  gpd_daemon_t *d = v->d;
  uint32_t nrun = 0, maxrun = v->papi || v->perf ? d->cfg.dev_papi_max_procs : 0;
  gpd_registry_lock(d);
  for (uint32_t k = 0; k < ndevs; k++) {
    gpd_dev_sample_t *s = &v->scratch[k];
    for (uint32_t j = 0; j < s->nprocs; j++) {
      gpd_dev_proc_t *p = &s->procs[j];
      gpd_proc_t *r = gpd_registry_find_pid(d, p->pid);
      if (r == NULL || r->state == GPD_PROC_EXITED)
        continue;
      p->profile_id = r->profile_id;
      p->uid = r->uid;
      snprintf(p->job_id, sizeof p->job_id, "%s", r->job_id ? r->job_id : "");
      p->job_verified = r->job_verified;
      base_name(p->exe, sizeof p->exe, r->exe);
    }
  }
  for (gpd_proc_t *r = d->procs; r && nrun < maxrun; r = r->next) {
    if (r->state != GPD_PROC_RUNNING)
      continue;
    gpd_cpu_t *c = &v->cpu_scratch[nrun];
    memset(c, 0, sizeof *c);
    c->profile_id = r->profile_id;
    c->pid = r->pid;
    c->uid = r->uid;
    snprintf(c->job_id, sizeof c->job_id, "%s", r->job_id ? r->job_id : "");
    c->job_verified = r->job_verified;
    v->ids[nrun] = r->profile_id;
    v->pids[nrun] = r->pid;
    v->starts[nrun] = r->proc_start;
    nrun++;
  }
  pthread_mutex_unlock(&d->lock);
  /* not profiled: the owner of /proc/<pid> (the process's real uid) */
  for (uint32_t k = 0; k < ndevs; k++) {
    gpd_dev_sample_t *s = &v->scratch[k];
    for (uint32_t j = 0; j < s->nprocs; j++) {
      gpd_dev_proc_t *p = &s->procs[j];
      char path[32];
      struct stat st;
      if (p->profile_id)
        continue;
      snprintf(path, sizeof path, "/proc/%d", (int)p->pid);
      if (p->pid > 0 && stat(path, &st) == 0)
        p->uid = st.st_uid;
    }
  }
  return nrun;
}

/* One sampling round. */
static void sample_round(gpd_devices_t *v) {
  uint32_t ndevs = v->ndevs; /* fixed after open_backends (this thread) */
  for (int b = 0; b < NGPU_BACKENDS; b++) {
    if (v->st[b] == NULL)
      continue;
    uint32_t n = v->be[b]->count(v->st[b]);
    for (uint32_t i = 0; i < n && v->first[b] + i < ndevs; i++) {
      gpd_dev_sample_t *s = &v->scratch[v->first[b] + i];
      memset(s, 0, offsetof(gpd_dev_sample_t, procs));
      s->t_ns = gpd_clock_ns();
      if (v->be[b]->sample(v->st[b], i, s) < 0)
        s->present = 0;
    }
  }
  uint32_t nrun = attribute(v, ndevs);
  uint64_t now = gpd_clock_ns();
  if (v->papi || v->perf) {
    if (v->papi)
      gpd_devices_papi_sample(v->papi, v->ids, v->pids, nrun, v->cpu_scratch);
    else
      gpd_devices_perf_sample(v->perf, v->ids, v->pids, v->starts, nrun, v->cpu_scratch);
    for (uint32_t k = 0; k < nrun; k++) {
      gpd_cpu_t *c = &v->cpu_scratch[k];
      c->t_ns = now;
      for (uint32_t j = 0; j < v->nprev; j++) {
        const gpd_cpu_t *o = &v->cpu_prev[j];
        if (o->profile_id != c->profile_id || o->nvalues != c->nvalues || now <= o->t_ns)
          continue;
        for (uint32_t e = 0; e < c->nvalues; e++)
          c->rate[e] = (double)(c->values[e] - o->values[e]) * 1e9 / (double)(now - o->t_ns);
      }
    }
    memcpy(v->cpu_prev, v->cpu_scratch, nrun * sizeof *v->cpu_prev);
    v->nprev = nrun;
  }
  pthread_mutex_lock(&v->mu);
  for (uint32_t k = 0; k < ndevs; k++)
    v->devs[k].last = v->scratch[k];
  if (v->cpus) {
    memcpy(v->cpus, v->cpu_scratch, nrun * sizeof *v->cpus);
    v->ncpus = nrun;
  }
  v->rounds++;
  if (v->series)
    v->series_dropped = gpd_devices_series_dropped(v->series);
  pthread_mutex_unlock(&v->mu);
  if (v->series) {
    const char *const *names;
    if (v->perf)
      gpd_devices_perf_nevents(v->perf, &names);
    else
      gpd_devices_papi_nevents(v->papi, &names);
    for (uint32_t k = 0; k < ndevs; k++)
      if (v->scratch[k].present && v->devs[k].row_id > 0)
        gpd_devices_series_add_sample(v->series, v->devs[k].row_id, &v->scratch[k]);
    for (uint32_t k = 0; k < nrun; k++)
      gpd_devices_series_add_cpu(v->series, &v->cpu_scratch[k], names);
  }
}

static void *sampler(void *arg) {
  gpd_devices_t *v = arg;
  gpd_daemon_t *d = v->d;
  uint64_t last_flush = gpd_clock_ns();
  pthread_setname_np(pthread_self(), "gpd-devices"); /* top -H, /proc/PID/task/TID/comm */
  if (gpd_devices_series_open(&v->series, d->store, d->cfg.dev_max_rows) < 0) {
    GPD_ERR("devices: samples will not be stored (no store connection)");
    v->series = NULL;
  }
  open_backends(v);
  struct timespec next;
  clock_gettime(CLOCK_MONOTONIC, &next);
  for (;;) {
    pthread_mutex_lock(&v->mu);
    int stop = v->stop;
    pthread_mutex_unlock(&v->mu);
    if (stop)
      break;
    sample_round(v);
    uint64_t now = gpd_clock_ns();
    if (v->series && now - last_flush >= FLUSH_NS) {
      gpd_devices_series_flush(v->series, __atomic_load_n(&d->cfg.retain_age_s, __ATOMIC_RELAXED), 0);
      last_flush = now;
    }
    /* fixed rate: the next round is one interval after the last start;
     * a round that overran starts the next at once (no catch-up burst) */
    uint64_t ns = (uint64_t)next.tv_nsec + (uint64_t)v->interval_ms * 1000000ull;
    next.tv_sec += (time_t)(ns / 1000000000ull);
    next.tv_nsec = (long)(ns % 1000000000ull);
    struct timespec cur;
    clock_gettime(CLOCK_MONOTONIC, &cur);
    if (cur.tv_sec > next.tv_sec || (cur.tv_sec == next.tv_sec && cur.tv_nsec > next.tv_nsec))
      next = cur;
    pthread_mutex_lock(&v->mu);
    while (!v->stop && pthread_cond_timedwait(&v->cv, &v->mu, &next) == 0)
      ;
    pthread_mutex_unlock(&v->mu);
  }
  if (v->series) { /* the last rows, and retention over them (force) */
    gpd_devices_series_flush(v->series, __atomic_load_n(&d->cfg.retain_age_s, __ATOMIC_RELAXED), 1);
    gpd_devices_series_close(v->series);
    v->series = NULL;
  }
  close_backends(v);
  return NULL;
}

static gpd_devices_t *devices_new(gpd_daemon_t *d) {
  gpd_devices_t *v = calloc(1, sizeof *v);
  if (v == NULL)
    return NULL;
  v->d = d;
  v->interval_ms = d->cfg.dev_interval_ms;
  pthread_mutex_init(&v->mu, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&v->cv, &ca);
  pthread_condattr_destroy(&ca);
  for (int i = 0; i < ST__N; i++) {
    snprintf(v->status[i].api, sizeof v->status[i].api, "%s", st_api[i]);
    snprintf(v->status[i].reason, sizeof v->status[i].reason, "%s",
             v->interval_ms ? "starting" : "disabled ([devices] interval_ms = 0)");
  }
  return v;
}

int gpd_devices_start(gpd_daemon_t *d) {
  gpd_devices_t *v = devices_new(d);
  if (v == NULL)
    return -ENOMEM;
  d->devices = v;
  if (v->interval_ms == 0)
    return 0;
  /* Level Zero loader 1.8 (API 1.4) reaches Sysman through zeInit with
   * this set (devices-sysman.c); set here, on the main thread, before the
   * sampler exists; an operator's own setting wins. */
  if (d->cfg.dev_sysman_lib[0])
    setenv("ZES_ENABLE_SYSMAN", "1", 0);
  int e = pthread_create(&v->tid, NULL, sampler, v);
  if (e != 0) {
    for (int i = 0; i < ST__N; i++)
      snprintf(v->status[i].reason, sizeof v->status[i].reason, "no sampler thread: %s",
               strerror(e));
    return -e;
  }
  v->started = 1;
  return 0;
}

void gpd_devices_stop(gpd_daemon_t *d) {
  gpd_devices_t *v = d->devices;
  if (v == NULL)
    return;
  if (v->started) {
    pthread_mutex_lock(&v->mu);
    v->stop = 1;
    pthread_cond_signal(&v->cv);
    pthread_mutex_unlock(&v->mu);
    pthread_join(v->tid, NULL);
  }
  free(v->devs);
  free(v->cpus);
  free(v->scratch);
  free(v->cpu_scratch);
  free(v->cpu_prev);
  free(v->ids);
  free(v->pids);
  free(v->starts);
  pthread_mutex_destroy(&v->mu);
  pthread_cond_destroy(&v->cv);
  free(v);
  d->devices = NULL;
}

/* ---------------------------------------------------------- the reply */

static char *xdup(const char *s) { return strdup(s ? s : ""); }

void gpd_devices_reply_free(Gpuprof__Msg *m) {
  if (m == NULL)
    return;
  Gpuprof__DevicesReply *r = m->devices;
  if (r) {
    for (size_t i = 0; i < r->n_devices; i++) {
      Gpuprof__Device *dv = r->devices[i];
      if (dv == NULL)
        continue;
      for (size_t j = 0; j < dv->n_procs; j++) {
        if (dv->procs[j] == NULL)
          continue;
        free(dv->procs[j]->job_id);
        free(dv->procs[j]->exe);
        free(dv->procs[j]);
      }
      free(dv->procs);
      free(dv->api);
      free(dv->name);
      free(dv->uuid);
      free(dv);
    }
    free(r->devices);
    for (size_t i = 0; i < r->n_cpu; i++) {
      Gpuprof__CpuCounters *c = r->cpu[i];
      if (c == NULL)
        continue;
      free(c->job_id);
      for (size_t j = 0; j < c->n_events; j++)
        free(c->events[j]);
      free(c->events);
      free(c->values);
      free(c->rates);
      free(c);
    }
    free(r->cpu);
    for (size_t i = 0; i < r->n_backends; i++) {
      if (r->backends[i] == NULL)
        continue;
      free(r->backends[i]->api);
      free(r->backends[i]->reason);
      free(r->backends[i]);
    }
    free(r->backends);
    free(r);
  }
  free(m);
}

static Gpuprof__Device *reply_device(const gpd_dev_t *dv, const gpd_peer_t *peer,
                                     const char *job) {
  const gpd_dev_sample_t *s = &dv->last;
  Gpuprof__Device *o = calloc(1, sizeof *o);
  if (o == NULL)
    return NULL;
  gpuprof__device__init(o);
  o->api = xdup(dv->api);
  o->name = xdup(dv->name);
  o->uuid = xdup(dv->uuid);
  o->procs = calloc(s->nprocs ? s->nprocs : 1, sizeof *o->procs);
  if (!o->api || !o->name || !o->uuid || !o->procs)
    return o; /* the caller sees the NULLs and frees */
  o->index = dv->index;
  o->time_ns = s->t_ns;
  o->present = s->present;
  o->util_gpu = s->util_gpu;
  o->util_mem = s->util_mem;
  o->mem_used = s->mem_used;
  o->mem_total = s->mem_total;
  o->power_w = s->power_w;
  o->temp_c = s->temp_c;
  o->clock_sm_mhz = s->clock_sm_mhz;
  o->clock_mem_mhz = s->clock_mem_mhz;
  o->pcie_tx_bps = s->pcie_tx_bps;
  o->pcie_rx_bps = s->pcie_rx_bps;
  o->nvlink_tx_bps = s->nvlink_tx_bps;
  o->nvlink_rx_bps = s->nvlink_rx_bps;
  o->ecc_corrected = s->ecc_corrected;
  o->ecc_uncorrected = s->ecc_uncorrected;
  o->xid_events = s->xid_events;
  o->last_xid = s->last_xid;
  o->dropped_procs = s->nprocs_dropped;
  for (uint32_t j = 0; j < s->nprocs; j++) {
    const gpd_dev_proc_t *p = &s->procs[j];
    /* unknown owner: only admins.  Rows of other users are left out
     * without a count: nobody learns how many processes others run. */
    if (p->uid == (uid_t)-1 ? !peer->admin : !gpd_access_may_see(peer, p->uid))
      continue;
    if (!gpd_job_selects(job, peer->uid, p->job_id, p->job_verified, p->uid))
      continue;
    Gpuprof__DeviceProcess *q = calloc(1, sizeof *q);
    if (q == NULL)
      return o;
    gpuprof__device_process__init(q);
    o->procs[o->n_procs++] = q;
    q->pid = p->pid;
    q->uid = (uint32_t)p->uid;
    q->profile_id = p->profile_id;
    q->job_id = xdup(p->job_id);
    q->job_claimed = !p->job_verified && p->job_id[0];
    q->exe = xdup(p->exe);
    if (!q->job_id || !q->exe)
      return o;
    q->has_mem = p->mem_bytes != UINT64_MAX;
    q->mem_used = q->has_mem ? p->mem_bytes : 0;
    q->has_util = p->has_util;
    q->sm_util = p->sm_util;
    q->mem_util = p->mem_util;
  }
  return o;
}

/* Did reply_device finish (no allocation failed)? */
static int device_complete(const Gpuprof__Device *o) {
  if (!o->api || !o->name || !o->uuid || !o->procs)
    return 0;
  for (size_t j = 0; j < o->n_procs; j++)
    if (!o->procs[j]->job_id || !o->procs[j]->exe)
      return 0;
  return 1;
}

int gpd_devices_reply(gpd_daemon_t *d, const gpd_peer_t *peer, const char *job,
                      Gpuprof__Msg **out) {
  gpd_devices_t *v = d->devices;
  Gpuprof__Msg *m = calloc(1, sizeof *m);
  Gpuprof__DevicesReply *r = calloc(1, sizeof *r);
  *out = NULL;
  if (m == NULL || r == NULL) {
    free(m);
    free(r);
    return -ENOMEM;
  }
  gpuprof__msg__init(m);
  gpuprof__devices_reply__init(r);
  m->body_case = GPUPROF__MSG__BODY_DEVICES;
  m->devices = r;
  r->now_ns = gpd_clock_ns();
  if (v == NULL) {
    *out = m;
    return 0;
  }
  pthread_mutex_lock(&v->mu);
  r->interval_ms = v->interval_ms;
  r->samples = v->rounds;
  r->series_dropped = v->series_dropped;
  r->backends = calloc(ST__N, sizeof *r->backends);
  r->devices = calloc(v->ndevs ? v->ndevs : 1, sizeof *r->devices);
  r->cpu = calloc(v->ncpus ? v->ncpus : 1, sizeof *r->cpu);
  if (!r->backends || !r->devices || !r->cpu)
    goto nomem;
  for (int i = 0; i < ST__N; i++) {
    Gpuprof__Backend *b = calloc(1, sizeof *b);
    if (b == NULL)
      goto nomem;
    gpuprof__backend__init(b);
    r->backends[r->n_backends++] = b;
    b->api = xdup(v->status[i].api);
    b->reason = xdup(v->status[i].reason);
    if (!b->api || !b->reason)
      goto nomem;
    b->enabled = v->status[i].enabled;
    b->code = v->status[i].code;
  }
  for (uint32_t k = 0; k < v->ndevs; k++) {
    if (v->devs[k].last.t_ns == 0)
      continue; /* not sampled yet */
    Gpuprof__Device *o = reply_device(&v->devs[k], peer, job);
    if (o == NULL)
      goto nomem;
    r->devices[r->n_devices++] = o;
    if (!device_complete(o))
      goto nomem;
  }
  for (uint32_t k = 0; k < v->ncpus; k++) {
    const gpd_cpu_t *c = &v->cpus[k];
    if (!gpd_access_may_see(peer, c->uid) || c->nvalues == 0)
      continue;
    if (!gpd_job_selects(job, peer->uid, c->job_id, c->job_verified, c->uid))
      continue;
    Gpuprof__CpuCounters *o = calloc(1, sizeof *o);
    if (o == NULL)
      goto nomem;
    gpuprof__cpu_counters__init(o);
    r->cpu[r->n_cpu++] = o;
    o->profile_id = c->profile_id;
    o->pid = c->pid;
    o->uid = (uint32_t)c->uid;
    o->time_ns = c->t_ns;
    o->job_id = xdup(c->job_id);
    o->job_claimed = !c->job_verified && c->job_id[0];
    o->events = calloc(c->nvalues, sizeof *o->events);
    o->values = calloc(c->nvalues, sizeof *o->values);
    o->rates = calloc(c->nvalues, sizeof *o->rates);
    if (!o->job_id || !o->events || !o->values || !o->rates)
      goto nomem;
    for (uint32_t e = 0; e < c->nvalues && e < v->nevents; e++) {
      if ((o->events[e] = xdup(v->events[e])) == NULL)
        goto nomem;
      o->n_events = o->n_values = o->n_rates = e + 1;
      o->values[e] = c->values[e];
      o->rates[e] = c->rate[e];
    }
  }
  pthread_mutex_unlock(&v->mu);
  *out = m;
  return 0;
nomem:
  pthread_mutex_unlock(&v->mu);
  gpd_devices_reply_free(m);
  return -ENOMEM;
}

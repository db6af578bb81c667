/* devices-series.c - device and CPU-counter samples as time series in the
 * store (tables device, device_sample, device_proc, cpu_counter;
 * docs/FORMATS.md).
 *
 * The sampler thread owns one SQLite connection of its own
 * (gpd_dstore_connect): its writes never wait for the profile writer's
 * lock while holding anything else, and a busy database only delays the
 * sampler's flush.  Rows wait in bounded queues (QMAX each; the oldest is
 * dropped and counted) and are written in one transaction per flush.
 * Retention, like profiles' (retention.c): rows older than
 * `[store] retention_max_age_s`, and the oldest beyond `[devices]
 * max_rows` per table, are deleted once a minute, after a quarter of
 * max_rows was written, and at stop.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "gpuprof/clock.h"
#include "gpuprof/error.h"
#include "gpuprof/log.h"

#include "daemon.h"
#include "devices.h"
#include "store-db.h"
#include "store-device.h"

#define QMAX 65536u
#define RETAIN_PERIOD_NS (60ull * 1000000000ull)

typedef struct {
  int64_t device;
  gpd_dev_sample_t x; /* procs[] unused: see proc_row_t */
} sample_row_t;

typedef struct {
  int64_t device;
  uint64_t t_ns;
  gpd_dev_proc_t p;
} proc_row_t;

typedef struct {
  uint64_t profile_id, t_ns;
  long long value;
  char event[64];
} cpu_row_t;

/* A bounded FIFO of fixed-size rows. */
typedef struct {
  void *v;
  size_t size;
  uint32_t head, n; /* oldest at head */
  uint64_t dropped;
} queue_t;

struct gpd_series_s {
  sqlite3 *db;
  uint64_t max_rows;
  uint64_t last_retain_ns;
  uint64_t since_retain; /* rows written since the last retention pass */
  queue_t samples, procs, cpus;
};

static int queue_init(queue_t *q, size_t size) {
  q->size = size;
  q->v = malloc(size * QMAX);
  return q->v ? 0 : -ENOMEM;
}

/* A slot for one more row (the oldest is overwritten when full). */
static void *queue_push(queue_t *q) {
  if (q->n == QMAX) {
    q->head = (q->head + 1) % QMAX;
    q->n--;
    q->dropped++;
  }
  uint32_t i = (q->head + q->n++) % QMAX;
  return (char *)q->v + (size_t)i * q->size;
}

static void *queue_at(queue_t *q, uint32_t k) {
  return (char *)q->v + (size_t)((q->head + k) % QMAX) * q->size;
}

int gpd_devices_series_open(gpd_series_t **out, gpd_dstore_t *store, uint64_t max_rows) {
  gpd_series_t *s = calloc(1, sizeof *s);
  *out = NULL;
  if (s == NULL || queue_init(&s->samples, sizeof(sample_row_t)) < 0 ||
      queue_init(&s->procs, sizeof(proc_row_t)) < 0 || queue_init(&s->cpus, sizeof(cpu_row_t)) < 0) {
    gpd_devices_series_close(s);
    return -ENOMEM;
  }
  s->max_rows = max_rows;
  if (gpd_dstore_connect(store, &s->db) < 0) {
    gpd_devices_series_close(s);
    return GPD_ESTORE;
  }
  *out = s;
  return 0;
}

void gpd_devices_series_close(gpd_series_t *s) {
  if (s == NULL)
    return;
  gpd_store_db_close(s->db);
  free(s->samples.v);
  free(s->procs.v);
  free(s->cpus.v);
  free(s);
}

uint64_t gpd_devices_series_dropped(const gpd_series_t *s) {
  return s->samples.dropped + s->procs.dropped + s->cpus.dropped;
}

int64_t gpd_devices_series_device(gpd_series_t *s, const gpd_dev_t *dev) {
  return gpd_store_device_id(s->db, dev->api, dev->index, dev->name, dev->uuid);
}

void gpd_devices_series_add_sample(gpd_series_t *s, int64_t device, const gpd_dev_sample_t *x) {
  sample_row_t *r = queue_push(&s->samples);
  r->device = device;
  memcpy(&r->x, x, offsetof(gpd_dev_sample_t, procs));
  for (uint32_t k = 0; k < x->nprocs; k++) {
    proc_row_t *p = queue_push(&s->procs);
    p->device = device;
    p->t_ns = x->t_ns;
    p->p = x->procs[k];
  }
}

void gpd_devices_series_add_cpu(gpd_series_t *s, const gpd_cpu_t *c, const char *const *names) {
  for (uint32_t k = 0; k < c->nvalues; k++) {
    cpu_row_t *r = queue_push(&s->cpus);
    r->profile_id = c->profile_id;
    r->t_ns = c->t_ns;
    r->value = c->values[k];
    snprintf(r->event, sizeof r->event, "%s", names[k]);
  }
}

/* device_sample columns and the sample fields that fill them */
static const struct {
  uint32_t flag;
  size_t off;
  int real; /* a double field, else uint64_t / uint32_t by size */
  int u32;
} DS_FIELDS[GPD_STORE_DS__N] = {
    [GPD_STORE_DS_UTIL_GPU] = {GPD_DF_UTIL_GPU, offsetof(gpd_dev_sample_t, util_gpu), 1, 0},
    [GPD_STORE_DS_UTIL_MEM] = {GPD_DF_UTIL_MEM, offsetof(gpd_dev_sample_t, util_mem), 1, 0},
    [GPD_STORE_DS_MEM_USED] = {GPD_DF_MEM, offsetof(gpd_dev_sample_t, mem_used), 0, 0},
    [GPD_STORE_DS_MEM_TOTAL] = {GPD_DF_MEM, offsetof(gpd_dev_sample_t, mem_total), 0, 0},
    [GPD_STORE_DS_POWER] = {GPD_DF_POWER, offsetof(gpd_dev_sample_t, power_w), 1, 0},
    [GPD_STORE_DS_TEMP] = {GPD_DF_TEMP, offsetof(gpd_dev_sample_t, temp_c), 1, 0},
    [GPD_STORE_DS_CLOCK_SM] = {GPD_DF_CLOCK_SM, offsetof(gpd_dev_sample_t, clock_sm_mhz), 0, 1},
    [GPD_STORE_DS_CLOCK_MEM] = {GPD_DF_CLOCK_MEM, offsetof(gpd_dev_sample_t, clock_mem_mhz), 0, 1},
    [GPD_STORE_DS_PCIE_TX] = {GPD_DF_PCIE, offsetof(gpd_dev_sample_t, pcie_tx_bps), 0, 0},
    [GPD_STORE_DS_PCIE_RX] = {GPD_DF_PCIE, offsetof(gpd_dev_sample_t, pcie_rx_bps), 0, 0},
    [GPD_STORE_DS_ECC_CORR] = {GPD_DF_ECC, offsetof(gpd_dev_sample_t, ecc_corrected), 0, 0},
    [GPD_STORE_DS_ECC_UNCORR] = {GPD_DF_ECC, offsetof(gpd_dev_sample_t, ecc_uncorrected), 0, 0},
    [GPD_STORE_DS_XID] = {GPD_DF_XID, offsetof(gpd_dev_sample_t, xid_events), 0, 0},
    [GPD_STORE_DS_NVLINK_TX] = {GPD_DF_NVLINK, offsetof(gpd_dev_sample_t, nvlink_tx_bps), 0, 0},
    [GPD_STORE_DS_NVLINK_RX] = {GPD_DF_NVLINK, offsetof(gpd_dev_sample_t, nvlink_rx_bps), 0, 0},
};

static int write_samples(gpd_series_t *s, gpd_store_device_t *w) {
  for (uint32_t k = 0; k < s->samples.n; k++) {
    const sample_row_t *r = queue_at(&s->samples, k);
    gpd_store_dev_sample_row_t row = {.device = r->device, .t_ns = r->x.t_ns};
    for (unsigned c = 0; c < GPD_STORE_DS__N; c++) {
      const char *f = (const char *)&r->x + DS_FIELDS[c].off;
      if (!(r->x.present & DS_FIELDS[c].flag))
        row.null |= 1u << c;
      else if (DS_FIELDS[c].real)
        row.v[c] = *(const double *)f;
      else
        row.v[c] = DS_FIELDS[c].u32 ? (double)*(const uint32_t *)f : (double)*(const uint64_t *)f;
    }
    if (gpd_store_device_sample(w, &row) < 0)
      return GPD_ESTORE;
  }
  return 0;
}

static int write_procs(gpd_series_t *s, gpd_store_device_t *w) {
  for (uint32_t k = 0; k < s->procs.n; k++) {
    const proc_row_t *r = queue_at(&s->procs, k);
    gpd_store_dev_proc_row_t row = {.device = r->device, .pid = r->p.pid,
                                    .uid = r->p.uid != (uid_t)-1 ? (int64_t)r->p.uid : -1, .t_ns = r->t_ns,
                                    .profile_id = r->p.profile_id, .mem_bytes = r->p.mem_bytes,
                                    .job = r->p.job_id, .has_util = r->p.has_util, .sm_util = r->p.sm_util,
                                    .mem_util = r->p.mem_util};
    if (gpd_store_device_proc(w, &row) < 0)
      return GPD_ESTORE;
  }
  return 0;
}

static int write_cpus(gpd_series_t *s, gpd_store_device_t *w) {
  for (uint32_t k = 0; k < s->cpus.n; k++) {
    const cpu_row_t *r = queue_at(&s->cpus, k);
    if (gpd_store_device_cpu(w, r->profile_id, r->t_ns, r->event, r->value) < 0)
      return GPD_ESTORE;
  }
  return 0;
}

/* Delete rows older than the age cutoff and the oldest beyond max_rows. */
static void retain(gpd_series_t *s, uint64_t max_age_s) {
  uint64_t now = gpd_clock_ns();
  gpd_store_device_trim(s->db, max_age_s && now > max_age_s * 1000000000ull ? now - max_age_s * 1000000000ull : 0,
                        s->max_rows);
}

int gpd_devices_series_flush(gpd_series_t *s, uint64_t max_age_s, int force) {
  gpd_store_device_t *w = NULL;
  int err = GPD_ESTORE;
  if (s->samples.n + s->procs.n + s->cpus.n == 0)
    goto retention;
  if (gpd_store_device_open(s->db, &w) < 0 || gpd_store_db_begin(s->db) < 0)
    goto out;
  if (write_samples(s, w) < 0 || write_procs(s, w) < 0 || write_cpus(s, w) < 0) {
    GPD_ERR("devices: store: insert: %s", sqlite3_errmsg(s->db));
    gpd_store_db_rollback(s->db);
    goto out;
  }
  if (gpd_store_db_commit(s->db) < 0) {
    gpd_store_db_rollback(s->db);
    goto out;
  }
  s->since_retain += s->samples.n + s->procs.n + s->cpus.n;
  s->samples.n = s->procs.n = s->cpus.n = 0;
  s->samples.head = s->procs.head = s->cpus.head = 0;
retention:
  err = 0;
  /* a minute passed, or a quarter of max_rows was written since */
  if (force || gpd_clock_ns() - s->last_retain_ns >= RETAIN_PERIOD_NS ||
      (s->max_rows && s->since_retain > s->max_rows / 4)) {
    s->last_retain_ns = gpd_clock_ns();
    s->since_retain = 0;
    retain(s, max_age_s);
  }
out:
  gpd_store_device_close(w);
  return err;
}

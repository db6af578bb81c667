/* devices-series.c - device and CPU-counter samples as time series in the
 * store (tables device, device_sample, device_proc, cpu_counter;
 * docs/FORMATS.md).
 *
 * The sampler thread owns one SQLite connection of its own
 * (gpd_store_connect): its writes never wait for the profile writer's
 * lock while holding anything else, and a busy database only delays the
 * sampler's flush.  Rows wait in bounded queues (QMAX each; the oldest is
 * dropped and counted) and are written in one transaction per flush.
 * Retention, like profiles' (retention.c): rows older than
 * `[store] retention_max_age_s`, and the oldest beyond `[devices]
 * max_rows` per table, are deleted once a minute, after a quarter of
 * max_rows was written, and at stop.
 */
#include <errno.h>
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

int gpd_series_open(gpd_series_t **out, gpd_store_t *store, uint64_t max_rows) {
  gpd_series_t *s = calloc(1, sizeof *s);
  *out = NULL;
  if (s == NULL || queue_init(&s->samples, sizeof(sample_row_t)) < 0 ||
      queue_init(&s->procs, sizeof(proc_row_t)) < 0 || queue_init(&s->cpus, sizeof(cpu_row_t)) < 0) {
    gpd_series_close(s);
    return -ENOMEM;
  }
  s->max_rows = max_rows;
  if (gpd_store_connect(store, &s->db) < 0) {
    gpd_series_close(s);
    return GPD_ESTORE;
  }
  *out = s;
  return 0;
}

void gpd_series_close(gpd_series_t *s) {
  if (s == NULL)
    return;
  if (s->db)
    sqlite3_close(s->db);
  free(s->samples.v);
  free(s->procs.v);
  free(s->cpus.v);
  free(s);
}

uint64_t gpd_series_dropped(const gpd_series_t *s) {
  return s->samples.dropped + s->procs.dropped + s->cpus.dropped;
}

int64_t gpd_series_device(gpd_series_t *s, const gpd_dev_t *dev) {
  sqlite3_stmt *q = NULL;
  int64_t id = GPD_ESTORE;
  if (sqlite3_prepare_v2(s->db,
                         "INSERT INTO device(api, idx, name, uuid) VALUES(?1,?2,?3,?4)"
                         " ON CONFLICT(api, uuid) DO UPDATE SET idx=?2, name=?3 RETURNING id",
                         -1, &q, NULL) != SQLITE_OK)
    goto out;
  sqlite3_bind_text(q, 1, dev->api, -1, SQLITE_STATIC);
  sqlite3_bind_int64(q, 2, dev->index);
  sqlite3_bind_text(q, 3, dev->name, -1, SQLITE_STATIC);
  sqlite3_bind_text(q, 4, dev->uuid, -1, SQLITE_STATIC);
  if (sqlite3_step(q) == SQLITE_ROW)
    id = sqlite3_column_int64(q, 0);
out:
  if (id < 0)
    GPD_ERR("devices: store: device row for %s %s: %s", dev->api, dev->uuid, sqlite3_errmsg(s->db));
  sqlite3_finalize(q);
  return id;
}

void gpd_series_add_sample(gpd_series_t *s, int64_t device, const gpd_dev_sample_t *x) {
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

void gpd_series_add_cpu(gpd_series_t *s, const gpd_cpu_t *c, const char *const *names) {
  for (uint32_t k = 0; k < c->nvalues; k++) {
    cpu_row_t *r = queue_push(&s->cpus);
    r->profile_id = c->profile_id;
    r->t_ns = c->t_ns;
    r->value = c->values[k];
    snprintf(r->event, sizeof r->event, "%s", names[k]);
  }
}

static int exec(sqlite3 *db, const char *sql) {
  char *msg = NULL;
  if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
    GPD_ERR("devices: store: %s: %s", sql, msg ? msg : sqlite3_errmsg(db));
    sqlite3_free(msg);
    return GPD_ESTORE;
  }
  return 0;
}

#define BIND_IF(q, col, bit, expr, kind)                                                          \
  ((x->present & (bit)) ? sqlite3_bind_##kind(q, col, expr) : sqlite3_bind_null(q, col))

static int write_samples(gpd_series_t *s, sqlite3_stmt *q) {
  for (uint32_t k = 0; k < s->samples.n; k++) {
    const sample_row_t *r = queue_at(&s->samples, k);
    const gpd_dev_sample_t *x = &r->x;
    sqlite3_reset(q);
    sqlite3_bind_int64(q, 1, r->device);
    sqlite3_bind_int64(q, 2, (int64_t)x->t_ns);
    BIND_IF(q, 3, GPD_DF_UTIL_GPU, x->util_gpu, double);
    BIND_IF(q, 4, GPD_DF_UTIL_MEM, x->util_mem, double);
    BIND_IF(q, 5, GPD_DF_MEM, (int64_t)x->mem_used, int64);
    BIND_IF(q, 6, GPD_DF_MEM, (int64_t)x->mem_total, int64);
    BIND_IF(q, 7, GPD_DF_POWER, x->power_w, double);
    BIND_IF(q, 8, GPD_DF_TEMP, x->temp_c, double);
    BIND_IF(q, 9, GPD_DF_CLOCK_SM, x->clock_sm_mhz, int64);
    BIND_IF(q, 10, GPD_DF_CLOCK_MEM, x->clock_mem_mhz, int64);
    BIND_IF(q, 11, GPD_DF_PCIE, (int64_t)x->pcie_tx_bps, int64);
    BIND_IF(q, 12, GPD_DF_PCIE, (int64_t)x->pcie_rx_bps, int64);
    BIND_IF(q, 13, GPD_DF_ECC, (int64_t)x->ecc_corrected, int64);
    BIND_IF(q, 14, GPD_DF_ECC, (int64_t)x->ecc_uncorrected, int64);
    BIND_IF(q, 15, GPD_DF_XID, (int64_t)x->xid_events, int64);
    BIND_IF(q, 16, GPD_DF_NVLINK, (int64_t)x->nvlink_tx_bps, int64);
    BIND_IF(q, 17, GPD_DF_NVLINK, (int64_t)x->nvlink_rx_bps, int64);
    if (sqlite3_step(q) != SQLITE_DONE)
      return GPD_ESTORE;
  }
  return 0;
}

static int write_procs(gpd_series_t *s, sqlite3_stmt *q) {
  for (uint32_t k = 0; k < s->procs.n; k++) {
    const proc_row_t *r = queue_at(&s->procs, k);
    sqlite3_reset(q);
    sqlite3_bind_int64(q, 1, r->device);
    sqlite3_bind_int64(q, 2, (int64_t)r->t_ns);
    sqlite3_bind_int64(q, 3, r->p.pid);
    if (r->p.uid != (uid_t)-1)
      sqlite3_bind_int64(q, 4, r->p.uid);
    else
      sqlite3_bind_null(q, 4);
    if (r->p.profile_id)
      sqlite3_bind_int64(q, 5, (int64_t)r->p.profile_id);
    else
      sqlite3_bind_null(q, 5);
    if (r->p.job_id[0])
      sqlite3_bind_text(q, 6, r->p.job_id, -1, SQLITE_STATIC);
    else
      sqlite3_bind_null(q, 6);
    if (r->p.mem_bytes != UINT64_MAX)
      sqlite3_bind_int64(q, 7, (int64_t)r->p.mem_bytes);
    else
      sqlite3_bind_null(q, 7);
    if (r->p.has_util) {
      sqlite3_bind_double(q, 8, r->p.sm_util);
      sqlite3_bind_double(q, 9, r->p.mem_util);
    } else {
      sqlite3_bind_null(q, 8);
      sqlite3_bind_null(q, 9);
    }
    if (sqlite3_step(q) != SQLITE_DONE)
      return GPD_ESTORE;
  }
  return 0;
}

static int write_cpus(gpd_series_t *s, sqlite3_stmt *q) {
  for (uint32_t k = 0; k < s->cpus.n; k++) {
    const cpu_row_t *r = queue_at(&s->cpus, k);
    sqlite3_reset(q);
    sqlite3_bind_int64(q, 1, (int64_t)r->profile_id);
    sqlite3_bind_int64(q, 2, (int64_t)r->t_ns);
    sqlite3_bind_text(q, 3, r->event, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 4, r->value);
    if (sqlite3_step(q) != SQLITE_DONE)
      return GPD_ESTORE;
  }
  return 0;
}

/* Delete rows older than the age cutoff and the oldest beyond max_rows. */
static void retain(gpd_series_t *s, uint64_t max_age_s) {
  static const char *tabs[] = {"device_sample", "device_proc", "cpu_counter"};
  uint64_t now = gpd_clock_ns();
  char sql[320];
  for (size_t i = 0; i < sizeof tabs / sizeof tabs[0]; i++) {
    if (max_age_s && now > max_age_s * 1000000000ull) {
      snprintf(sql, sizeof sql, "DELETE FROM %s WHERE t_ns < %lld;", tabs[i],
               (long long)(now - max_age_s * 1000000000ull));
      exec(s->db, sql);
    }
    if (s->max_rows) {
      snprintf(sql, sizeof sql,
               "DELETE FROM %s WHERE t_ns <= (SELECT t_ns FROM %s ORDER BY t_ns DESC"
               " LIMIT 1 OFFSET %llu);",
               tabs[i], tabs[i], (unsigned long long)s->max_rows);
      exec(s->db, sql);
    }
  }
}

int gpd_series_flush(gpd_series_t *s, uint64_t max_age_s, int force) {
  sqlite3_stmt *qs = NULL, *qp = NULL, *qc = NULL;
  int err = GPD_ESTORE;
  if (s->samples.n + s->procs.n + s->cpus.n == 0)
    goto retention;
  if (sqlite3_prepare_v2(s->db,
                         "INSERT OR REPLACE INTO device_sample VALUES"
                         "(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17)",
                         -1, &qs, NULL) != SQLITE_OK ||
      sqlite3_prepare_v2(s->db,
                         "INSERT OR REPLACE INTO device_proc VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9)",
                         -1, &qp, NULL) != SQLITE_OK ||
      sqlite3_prepare_v2(s->db, "INSERT OR REPLACE INTO cpu_counter VALUES(?1,?2,?3,?4)", -1, &qc,
                         NULL) != SQLITE_OK) {
    GPD_ERR("devices: store: %s", sqlite3_errmsg(s->db));
    goto out;
  }
  if (exec(s->db, "BEGIN IMMEDIATE;") < 0)
    goto out;
  if (write_samples(s, qs) < 0 || write_procs(s, qp) < 0 || write_cpus(s, qc) < 0) {
    GPD_ERR("devices: store: insert: %s", sqlite3_errmsg(s->db));
    exec(s->db, "ROLLBACK;");
    goto out;
  }
  if (exec(s->db, "COMMIT;") < 0) {
    exec(s->db, "ROLLBACK;");
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
  sqlite3_finalize(qs);
  sqlite3_finalize(qp);
  sqlite3_finalize(qc);
  return err;
}

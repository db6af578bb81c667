/* device-write.c - the device monitoring series (store-device.h). */
#include "store-device.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "gpuprof/error.h"
#include "gpuprof/log.h"

#include "store-db.h"
#include "store-sql.h"

enum { D_SAMPLE, D_PROC, D_CPU, D__N };

static const char *const D_SQL[D__N] = {
    "INSERT OR REPLACE INTO device_sample VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17)",
    "INSERT OR REPLACE INTO device_proc VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9)",
    "INSERT OR REPLACE INTO cpu_counter VALUES(?1,?2,?3,?4)",
};

/* device_sample columns stored as REAL (the others as INTEGER) */
#define DS_REAL ((1u << GPD_STORE_DS_UTIL_GPU) | (1u << GPD_STORE_DS_UTIL_MEM) | (1u << GPD_STORE_DS_POWER) | \
                 (1u << GPD_STORE_DS_TEMP))

int64_t gpd_store_device_id(sqlite3 *db, const char *api, int64_t index, const char *name, const char *uuid) {
  sqlite3_stmt *q = NULL;
  int64_t id = GPD_ESTORE;
  if (sqlite3_prepare_v2(db,
                         "INSERT INTO device(api, idx, name, uuid) VALUES(?1,?2,?3,?4)"
                         " ON CONFLICT(api, uuid) DO UPDATE SET idx=?2, name=?3 RETURNING id",
                         -1, &q, NULL) != SQLITE_OK)
    goto out;
  sqlite3_bind_text(q, 1, api, -1, SQLITE_STATIC);
  sqlite3_bind_int64(q, 2, index);
  sqlite3_bind_text(q, 3, name, -1, SQLITE_STATIC);
  sqlite3_bind_text(q, 4, uuid, -1, SQLITE_STATIC);
  if (sqlite3_step(q) == SQLITE_ROW)
    id = sqlite3_column_int64(q, 0);
out:
  if (id < 0)
    GPD_ERR("devices: store: device row for %s %s: %s", api, uuid, sqlite3_errmsg(db));
  sqlite3_finalize(q);
  return id;
}

int gpd_store_device_open(sqlite3 *db, gpd_store_device_t **w) {
  return (*w = gpd_store_stmts_new(db, "devices", D_SQL, D__N)) ? 0 : GPD_ESTORE;
}

void gpd_store_device_close(gpd_store_device_t *w) { gpd_store_stmts_free(w); }

int gpd_store_device_sample(gpd_store_device_t *w, const gpd_store_dev_sample_row_t *r) {
  sqlite3_stmt *q = w->st[D_SAMPLE];
  sqlite3_bind_int64(q, 1, r->device);
  sqlite3_bind_int64(q, 2, (int64_t)r->t_ns);
  for (unsigned c = 0; c < GPD_STORE_DS__N; c++) {
    if (r->null & (1u << c))
      sqlite3_bind_null(q, 3 + (int)c);
    else if (DS_REAL & (1u << c))
      sqlite3_bind_double(q, 3 + (int)c, r->v[c]);
    else
      sqlite3_bind_int64(q, 3 + (int)c, (int64_t)r->v[c]);
  }
  return gpd_store_db_run(q);
}

int gpd_store_device_proc(gpd_store_device_t *w, const gpd_store_dev_proc_row_t *r) {
  sqlite3_stmt *q = w->st[D_PROC];
  sqlite3_bind_int64(q, 1, r->device);
  sqlite3_bind_int64(q, 2, (int64_t)r->t_ns);
  sqlite3_bind_int64(q, 3, r->pid);
  if (r->uid >= 0)
    sqlite3_bind_int64(q, 4, r->uid);
  if (r->profile_id)
    sqlite3_bind_int64(q, 5, (int64_t)r->profile_id);
  if (r->job && r->job[0])
    sqlite3_bind_text(q, 6, r->job, -1, SQLITE_TRANSIENT);
  if (r->mem_bytes != UINT64_MAX)
    sqlite3_bind_int64(q, 7, (int64_t)r->mem_bytes);
  if (r->has_util) {
    sqlite3_bind_double(q, 8, r->sm_util);
    sqlite3_bind_double(q, 9, r->mem_util);
  }
  return gpd_store_db_run(q); /* clears the bindings: unbound columns are NULL */
}

int gpd_store_device_cpu(gpd_store_device_t *w, uint64_t profile, uint64_t t_ns, const char *event, int64_t value) {
  sqlite3_stmt *q = w->st[D_CPU];
  sqlite3_bind_int64(q, 1, (int64_t)profile);
  sqlite3_bind_int64(q, 2, (int64_t)t_ns);
  sqlite3_bind_text(q, 3, event, -1, SQLITE_TRANSIENT);
  sqlite3_bind_int64(q, 4, value);
  return gpd_store_db_run(q);
}

void gpd_store_device_trim(sqlite3 *db, uint64_t before_ns, uint64_t max_rows) {
  static const char *tabs[] = {"device_sample", "device_proc", "cpu_counter"};
  char sql[320];
  for (size_t i = 0; i < sizeof tabs / sizeof tabs[0]; i++) {
    if (before_ns) {
      snprintf(sql, sizeof sql, "DELETE FROM %s WHERE t_ns < %lld;", tabs[i], (long long)before_ns);
      gpd_store_db_exec(db, sql);
    }
    if (max_rows) {
      snprintf(sql, sizeof sql,
               "DELETE FROM %s WHERE t_ns <= (SELECT t_ns FROM %s ORDER BY t_ns DESC"
               " LIMIT 1 OFFSET %llu);",
               tabs[i], tabs[i], (unsigned long long)max_rows);
      gpd_store_db_exec(db, sql);
    }
  }
}

/* retention.c - the store's retention pass (writer thread, after a
 * flush): drop the oldest finished profiles by age and by database size,
 * then the contexts and frames no profile of their uid refers to.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <sqlite3.h>

#include "gpuprof/clock.h"
#include "gpuprof/error.h"
#include "gpuprof/log.h"

#include "daemon.h"
#include "store-internal.h"

static int64_t db_size(sqlite3 *db) {
  sqlite3_stmt *q = NULL;
  int64_t pc = 0, ps = 0, fl = 0;
  if (sqlite3_prepare_v2(db, "SELECT * FROM pragma_page_count, pragma_page_size,"
                             " pragma_freelist_count", -1, &q, NULL) == SQLITE_OK &&
      sqlite3_step(q) == SQLITE_ROW) {
    pc = sqlite3_column_int64(q, 0);
    ps = sqlite3_column_int64(q, 1);
    fl = sqlite3_column_int64(q, 2);
  }
  sqlite3_finalize(q);
  return (pc - fl) * ps;
}

static int delete_profile(sqlite3 *db, int64_t id) {
  static const char *tabs[] = {"metric", "cct_local", "string", "module", "backend", "pending",
                               "ring_cursor", "cpu_counter",
                               "pcsample", "pcsample_cubin", "pcsample_stat", "cpu_sample_stat",
                               "trace_event", "trace_launch", "trace_stat", "trace_duty", "trace_duty_launch",
                               "trace_window"};
  char sql[128];
  for (size_t i = 0; i < sizeof tabs / sizeof tabs[0]; i++) {
    snprintf(sql, sizeof sql, "DELETE FROM %s WHERE profile_id=%lld;", tabs[i], (long long)id);
    if (gpd__db_exec(db, sql) < 0)
      return GPD_ESTORE;
  }
  snprintf(sql, sizeof sql, "DELETE FROM trace_cpu_sample WHERE profile=%lld;", (long long)id);
  if (gpd__db_exec(db, sql) < 0)
    return GPD_ESTORE;
  snprintf(sql, sizeof sql, "DELETE FROM profile WHERE id=%lld;", (long long)id);
  return gpd__db_exec(db, sql);
}

int gpd_store_retain(gpd_daemon_t *d) {
  gpd_store_t *s = d->store;
  if (s == NULL)
    return 0;
  uint64_t max_bytes = __atomic_load_n(&d->cfg.retain_bytes, __ATOMIC_RELAXED);
  uint64_t max_age = __atomic_load_n(&d->cfg.retain_age_s, __ATOMIC_RELAXED);
  uint64_t now = gpd_clock_ns();
  int64_t cutoff = max_age && now > max_age * 1000000000ull
                       ? (int64_t)(now - max_age * 1000000000ull) : INT64_MIN;
  /* ids that live in memory and are not finished: never deleted */
  uint64_t *live = NULL;
  size_t nlive = 0;
  gpd_daemon_lock(d);
  live = calloc(d->nprocs + 1, sizeof *live);
  for (gpd_proc_t *p = d->procs; p && live; p = p->next)
    if (p->state != GPD_PROC_EXITED)
      live[nlive++] = p->profile_id;
  pthread_mutex_unlock(&d->lock);

  int deleted = 0, err = 0;
  for (int round = 0; round < 4096; round++) {
    int64_t size = db_size(s->wdb);
    int over = max_bytes && (uint64_t)size > max_bytes;
    sqlite3_stmt *q = NULL;
    /* oldest finished profile that is too old, or any oldest when over size */
    if (sqlite3_prepare_v2(s->wdb,
                           "SELECT id FROM profile WHERE state != 'running'"
                           " AND (?1 OR (end_ns IS NOT NULL AND end_ns < ?2))"
                           " ORDER BY COALESCE(end_ns, start_ns, 0), id LIMIT 64",
                           -1, &q, NULL) != SQLITE_OK)
      break;
    sqlite3_bind_int(q, 1, over);
    sqlite3_bind_int64(q, 2, cutoff);
    int64_t victim = -1;
    while (sqlite3_step(q) == SQLITE_ROW) {
      int64_t id = sqlite3_column_int64(q, 0);
      int is_live = 0;
      for (size_t i = 0; i < nlive; i++)
        if ((int64_t)live[i] == id)
          is_live = 1;
      if (!is_live) {
        victim = id;
        break;
      }
    }
    sqlite3_finalize(q);
    if (victim < 0)
      break;
    if ((err = gpd__db_exec(s->wdb, "BEGIN IMMEDIATE;")) < 0)
      break;
    err = delete_profile(s->wdb, victim);
    if (err == 0)
      err = gpd__db_exec(s->wdb, "COMMIT;");
    if (err < 0) {
      gpd__db_exec(s->wdb, "ROLLBACK;");
      break;
    }
    GPD_INFO("store: retention removed profile %lld", (long long)victim);
    deleted++;
    if (over) {
      /* contexts no profile refers to any more, leaves first */
      for (int k = 0; k < 256; k++) {
        if (gpd__db_exec(s->wdb,
                    "DELETE FROM context AS x WHERE parent != 0 AND NOT EXISTS"
                    " (SELECT 1 FROM metric m JOIN profile p ON p.id=m.profile_id"
                    "  WHERE m.context_id=x.id AND p.uid=x.uid)"
                    " AND NOT EXISTS (SELECT 1 FROM cct_local l JOIN profile p ON p.id=l.profile_id"
                    "  WHERE l.context_id=x.id AND p.uid=x.uid)"
                    " AND NOT EXISTS (SELECT 1 FROM context y WHERE y.uid=x.uid AND y.parent=x.id);") <
                0 ||
            sqlite3_changes(s->wdb) == 0)
          break;
      }
      gpd__db_exec(s->wdb, "DELETE FROM frame AS f WHERE NOT EXISTS (SELECT 1 FROM context c"
                      " WHERE c.uid=f.uid AND c.id=f.context_id);");
      gpd__db_exec(s->wdb, "PRAGMA incremental_vacuum;");
    }
  }
  if (deleted && s->flushes % 64 == 0)
    gpd__db_exec(s->wdb, "PRAGMA incremental_vacuum;");
  free(live);
  return err;
}


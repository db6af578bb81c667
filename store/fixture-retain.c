/* fixture-retain.c - synthetic stores for retention, and the retention
 * statements the daemon's pass replaced (store-fixture-retain.h). */
#include "store-fixture-retain.h"

#include <stdio.h>
#include <string.h>

#include <sqlite3.h>

#include "gpuprof/clock.h"
#include "gpuprof/error.h"

static int fx_open(const char *path, sqlite3 **db) {
  if (sqlite3_open(path, db) != SQLITE_OK) {
    fprintf(stderr, "store fixture: %s: %s\n", path, *db ? sqlite3_errmsg(*db) : "out of memory");
    sqlite3_close(*db);
    *db = NULL;
    return GPD_ESTORE;
  }
  sqlite3_busy_timeout(*db, 10000);
  return 0;
}

static int fx_exec(sqlite3 *db, const char *sql) {
  char *msg = NULL;
  if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
    fprintf(stderr, "store fixture: %s: %s\n", sql, msg ? msg : "?");
    sqlite3_free(msg);
    return GPD_ESTORE;
  }
  return 0;
}

/* ------------------------------------------------------------- the fill */

int gpd_store_fixture_retain_fill(const char *path, const gpd_store_fixture_fill_t *f) {
  sqlite3 *db = NULL;
  sqlite3_stmt *st[6] = {0};
  static const char *sql[6] = {
      "INSERT OR IGNORE INTO context(uid,id,parent,kind,module,build_id,offset,label,raw_name)"
      " VALUES(?1,?2,?3,2,'/usr/lib/libapp.so','0011223344556677',?2*16,'function_'||?2,NULL)",
      "INSERT OR IGNORE INTO frame VALUES(?1,?2,0,'function_'||?2,'/src/app/file.c',?2,0)",
      "INSERT INTO profile(id,pid,ppid,uid,gid,exe,start_ns,end_ns,state,records)"
      " VALUES(?1,?1,1,?2,?2,'/usr/bin/app',?3,?4,'exited',1000)",
      "INSERT INTO cct_local VALUES(?1,?2,?3)",
      "INSERT INTO metric VALUES(?1,?2,?3,?4)",
      "INSERT INTO trace_event VALUES(?1,?2,1,?2,?2+100,0,1,0,3,1,0)",
  };
  if (fx_open(path, &db) < 0)
    return GPD_ESTORE;
  int err = fx_exec(db, "BEGIN");
  for (int i = 0; i < 6 && err == 0; i++)
    if (sqlite3_prepare_v2(db, sql[i], -1, &st[i], NULL) != SQLITE_OK) {
      fprintf(stderr, "store fixture: %s: %s\n", sql[i], sqlite3_errmsg(db));
      err = GPD_ESTORE;
    }
#define RF_STEP(q)                                                                                 \
  do {                                                                                             \
    if (err == 0 && sqlite3_step(q) != SQLITE_DONE) {                                              \
      fprintf(stderr, "store fixture: %s\n", sqlite3_errmsg(db));                                  \
      err = GPD_ESTORE;                                                                            \
    }                                                                                              \
    sqlite3_reset(q);                                                                              \
  } while (0)
  for (int64_t c = 1; c <= f->nctx && err == 0; c++) {
    sqlite3_bind_int64(st[0], 1, f->uid);
    sqlite3_bind_int64(st[0], 2, c);
    sqlite3_bind_int64(st[0], 3, c / 2);
    RF_STEP(st[0]);
    sqlite3_bind_int64(st[1], 1, f->uid);
    sqlite3_bind_int64(st[1], 2, c);
    RF_STEP(st[1]);
  }
  int64_t span = f->nctx - 1 - f->window > 0 ? f->nctx - 1 - f->window : 0;
  for (int k = 0; k < f->nprof && err == 0; k++) {
    int64_t id = f->first + k;
    sqlite3_bind_int64(st[2], 1, id);
    sqlite3_bind_int64(st[2], 2, f->uid);
    sqlite3_bind_int64(st[2], 3, f->t0 + k - 1000);
    sqlite3_bind_int64(st[2], 4, f->t0 + k);
    RF_STEP(st[2]);
    int64_t base = 2 + (f->nprof > 1 ? (int64_t)k * span / (f->nprof - 1) : 0);
    for (int w = 0; w < f->window && err == 0; w++) {
      int64_t c = base + w;
      if (c > f->nctx)
        break;
      sqlite3_bind_int64(st[3], 1, id);
      sqlite3_bind_int64(st[3], 2, w + 1);
      sqlite3_bind_int64(st[3], 3, c);
      RF_STEP(st[3]);
      for (int m = 1; m <= 2; m++) {
        sqlite3_bind_int64(st[4], 1, id);
        sqlite3_bind_int64(st[4], 2, c);
        sqlite3_bind_int64(st[4], 3, m);
        sqlite3_bind_double(st[4], 4, (double)(c * m));
        RF_STEP(st[4]);
      }
    }
    for (int t = 0; t < f->trace && err == 0; t++) {
      sqlite3_bind_int64(st[5], 1, id);
      sqlite3_bind_int64(st[5], 2, t * 1000);
      RF_STEP(st[5]);
    }
    char s[256];
    snprintf(s, sizeof s, "INSERT INTO string VALUES(%lld,1,1,'kernel_a'),(%lld,2,1,'kernel_b');", (long long)id,
             (long long)id);
    if (err == 0)
      err = fx_exec(db, s);
  }
#undef RF_STEP
  for (int i = 0; i < 6; i++)
    sqlite3_finalize(st[i]);
  if (fx_exec(db, err == 0 ? "COMMIT" : "ROLLBACK") < 0)
    err = GPD_ESTORE;
  sqlite3_close(db);
  return err;
}

int gpd_store_fixture_drop_retain_indexes(const char *path) {
  sqlite3 *db = NULL;
  if (fx_open(path, &db) < 0)
    return GPD_ESTORE;
  sqlite3_exec(db,
               "DROP INDEX IF EXISTS metric_context; DROP INDEX IF EXISTS cct_local_context;"
               " DROP INDEX IF EXISTS context_parent; DROP INDEX IF EXISTS profile_end;"
               " DROP INDEX IF EXISTS profile_uid_age;",
               NULL, NULL, NULL);
  sqlite3_close(db);
  return 0;
}

/* ------------------------------------------------- the old statements */

static int64_t q1(sqlite3 *db, const char *sql) {
  sqlite3_stmt *st = NULL;
  int64_t v = -1;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
    v = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  return v;
}

static int64_t db_bytes(sqlite3 *db) {
  return (q1(db, "PRAGMA page_count") - q1(db, "PRAGMA freelist_count")) * q1(db, "PRAGMA page_size");
}

/* sqlite3_exec(sql); the longest into o->hold_max_ns */
static int old_exec(sqlite3 *db, const char *sql, gpd_store_fixture_old_t *o) {
  uint64_t t = gpd_clock_ns();
  int rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
  uint64_t dt = gpd_clock_ns() - t;
  if (dt > o->hold_max_ns)
    o->hold_max_ns = dt;
  return rc == SQLITE_OK ? 0 : -1;
}

static int old_retain(sqlite3 *db, uint64_t max_bytes, uint64_t deadline, gpd_store_fixture_old_t *o) {
  static const char *tabs[] = {"metric", "cct_local", "string", "module", "backend", "pending",
                               "ring_cursor", "cpu_counter", "pcsample", "pcsample_cubin",
                               "pcsample_stat", "cpu_sample_stat", "trace_event", "trace_launch",
                               "trace_stat", "trace_duty", "trace_duty_launch", "trace_window"};
  for (int round = 0; round < 4096; round++) {
    if (gpd_clock_ns() > deadline) {
      o->timed_out = 1;
      return 0;
    }
    if ((uint64_t)db_bytes(db) <= max_bytes)
      return 0;
    int64_t victim = q1(db, "SELECT id FROM profile WHERE state != 'running'"
                            " ORDER BY COALESCE(end_ns, start_ns, 0), id LIMIT 1");
    if (victim < 0)
      return 0;
    char sql[4096];
    int n = snprintf(sql, sizeof sql, "BEGIN IMMEDIATE;");
    for (size_t i = 0; i < sizeof tabs / sizeof tabs[0]; i++)
      n += snprintf(sql + n, sizeof sql - (size_t)n, "DELETE FROM %s WHERE profile_id=%lld;", tabs[i],
                    (long long)victim);
    snprintf(sql + n, sizeof sql - (size_t)n,
             "DELETE FROM trace_cpu_sample WHERE profile=%lld; DELETE FROM profile WHERE id=%lld;"
             " COMMIT;",
             (long long)victim, (long long)victim);
    if (old_exec(db, sql, o) < 0) {
      fprintf(stderr, "store fixture: old retention: delete profile: %s\n", sqlite3_errmsg(db));
      return GPD_ESTORE;
    }
    o->removed++;
    for (int k = 0; k < 256; k++) {
      if (gpd_clock_ns() > deadline) {
        o->timed_out = 1;
        return 0;
      }
      if (old_exec(db,
                   "DELETE FROM context AS x WHERE parent != 0 AND NOT EXISTS"
                   " (SELECT 1 FROM metric m JOIN profile p ON p.id=m.profile_id"
                   "  WHERE m.context_id=x.id AND p.uid=x.uid)"
                   " AND NOT EXISTS (SELECT 1 FROM cct_local l JOIN profile p ON p.id=l.profile_id"
                   "  WHERE l.context_id=x.id AND p.uid=x.uid)"
                   " AND NOT EXISTS (SELECT 1 FROM context y WHERE y.uid=x.uid AND y.parent=x.id);",
                   o) < 0) {
        fprintf(stderr, "store fixture: old retention: contexts: %s\n", sqlite3_errmsg(db));
        return GPD_ESTORE;
      }
      if (sqlite3_changes(db) == 0)
        break;
    }
    old_exec(db, "DELETE FROM frame AS f WHERE NOT EXISTS (SELECT 1 FROM context c"
                 " WHERE c.uid=f.uid AND c.id=f.context_id);", o);
    old_exec(db, "PRAGMA incremental_vacuum;", o);
  }
  return 0;
}

int gpd_store_fixture_old_retain(const char *path, uint64_t max_bytes, uint64_t deadline_ns,
                                 gpd_store_fixture_old_t *o) {
  sqlite3 *db = NULL;
  memset(o, 0, sizeof *o);
  if (fx_open(path, &db) < 0)
    return GPD_ESTORE;
  int err = old_retain(db, max_bytes, deadline_ns, o);
  sqlite3_close(db);
  return err;
}

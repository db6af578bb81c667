/* fixture.c - synthetic profile files for benchmarks (store-fixture.h):
 * library gpd_store_fixture, linked by bench/ only; the daemon and the
 * merge write through their own writers. */
#include "store-fixture.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <sqlite3.h>

#include "gpuprof/error.h"
#include "gpuprof/metric.h"
#include "store-schema.h"

struct gpd_store_fixture_s {
  sqlite3 *db;
  sqlite3_stmt *ctx, *metric, *profile, *backend; /* gpd_store_fixture_create's */
  sqlite3_stmt *tev, *tla;                         /* gpd_store_fixture_open's */
};

static int fail(gpd_store_fixture_t *fx, const char *what) {
  fprintf(stderr, "store fixture: %s: %s\n", what, sqlite3_errmsg(fx->db));
  return GPD_ESTORE;
}

static void fx_free(gpd_store_fixture_t *fx) {
  sqlite3_finalize(fx->ctx);
  sqlite3_finalize(fx->metric);
  sqlite3_finalize(fx->profile);
  sqlite3_finalize(fx->backend);
  sqlite3_finalize(fx->tev);
  sqlite3_finalize(fx->tla);
  sqlite3_close(fx->db);
  free(fx);
}

int gpd_store_fixture_create(const char *path, gpd_store_fixture_t **out) {
  gpd_store_fixture_t *fx = calloc(1, sizeof *fx);
  *out = NULL;
  if (!fx)
    return -ENOMEM;
  unlink(path);
  int err = 0;
  if (sqlite3_open(path, &fx->db) != SQLITE_OK) {
    err = fail(fx, path);
    goto out;
  }
  if (sqlite3_exec(fx->db,
                   "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;" GPD_STORE_SCHEMA
                   "PRAGMA user_version=2; BEGIN;"
                   "INSERT INTO meta VALUES('format','gpuprof'),('format_version','2'),('host','synthetic'),"
                   "('clock','CLOCK_MONOTONIC_RAW');",
                   NULL, NULL, NULL) != SQLITE_OK) {
    err = fail(fx, "schema");
    goto out;
  }
  for (unsigned i = 0; i < GPD_M__COUNT; i++) {
    char *q = sqlite3_mprintf("INSERT INTO metric_desc VALUES(%u,%Q,%Q,%Q)", i, gpd_metric_desc(i)->name,
                              gpd_metric_unit_name(gpd_metric_desc(i)->unit), gpd_metric_desc(i)->desc);
    sqlite3_exec(fx->db, q, NULL, NULL, NULL);
    sqlite3_free(q);
  }
  if (sqlite3_prepare_v2(fx->db, "INSERT INTO context VALUES(?1,?2,?3,?4,?5,NULL,?6,?7,NULL)", -1, &fx->ctx,
                         NULL) ||
      sqlite3_prepare_v2(fx->db, "INSERT INTO metric VALUES(?1,?2,?3,?4)", -1, &fx->metric, NULL) ||
      sqlite3_prepare_v2(fx->db,
                         "INSERT INTO profile(id,pid,uid,gid,exe,hostname,job_id,rank,local_rank,start_ns,end_ns,"
                         "state,records) VALUES(?1,?2,1000,1000,'/opt/app/bin/solver',?3,'4242',?4,?5,1,2,'exited',1)",
                         -1, &fx->profile, NULL) ||
      sqlite3_prepare_v2(fx->db, "INSERT INTO backend VALUES(?1,'cuda',1,0,NULL)", -1, &fx->backend, NULL))
    err = fail(fx, "prepare");
out:
  if (err < 0) {
    fx_free(fx);
    return err;
  }
  *out = fx;
  return 0;
}

static int step(gpd_store_fixture_t *fx, sqlite3_stmt *st, const char *what) {
  int rc = sqlite3_step(st);
  sqlite3_reset(st);
  return rc == SQLITE_DONE ? 0 : fail(fx, what);
}

int gpd_store_fixture_context(gpd_store_fixture_t *fx, int64_t uid, uint64_t id, uint64_t parent, int kind,
                              const char *module, int64_t offset, const char *label) {
  sqlite3_bind_int64(fx->ctx, 1, uid);
  sqlite3_bind_int64(fx->ctx, 2, (int64_t)id);
  sqlite3_bind_int64(fx->ctx, 3, (int64_t)parent);
  sqlite3_bind_int(fx->ctx, 4, kind);
  sqlite3_bind_text(fx->ctx, 5, module, -1, SQLITE_TRANSIENT);
  sqlite3_bind_int64(fx->ctx, 6, offset);
  sqlite3_bind_text(fx->ctx, 7, label, -1, SQLITE_TRANSIENT);
  return step(fx, fx->ctx, "context");
}

int gpd_store_fixture_process(gpd_store_fixture_t *fx, int64_t id, int pid, const char *host, int rank,
                              int local_rank) {
  sqlite3_bind_int64(fx->profile, 1, id);
  sqlite3_bind_int(fx->profile, 2, pid);
  sqlite3_bind_text(fx->profile, 3, host, -1, SQLITE_TRANSIENT);
  sqlite3_bind_int(fx->profile, 4, rank);
  sqlite3_bind_int(fx->profile, 5, local_rank);
  int err = step(fx, fx->profile, "profile");
  if (err < 0)
    return err;
  sqlite3_bind_int64(fx->backend, 1, id);
  (void)sqlite3_step(fx->backend); /* a row that is there already is fine */
  sqlite3_reset(fx->backend);
  return 0;
}

int gpd_store_fixture_metric(gpd_store_fixture_t *fx, int64_t profile, uint64_t ctx, unsigned metric, double v) {
  sqlite3_bind_int64(fx->metric, 1, profile);
  sqlite3_bind_int64(fx->metric, 2, (int64_t)ctx);
  sqlite3_bind_int(fx->metric, 3, (int)metric);
  sqlite3_bind_double(fx->metric, 4, v);
  return step(fx, fx->metric, "metric");
}

int gpd_store_fixture_close(gpd_store_fixture_t *fx) {
  int err = sqlite3_exec(fx->db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK ? 0 : fail(fx, "commit");
  fx_free(fx);
  return err;
}

int gpd_store_fixture_open(const char *path, gpd_store_fixture_t **out) {
  gpd_store_fixture_t *fx = calloc(1, sizeof *fx);
  *out = NULL;
  if (!fx)
    return -ENOMEM;
  int err = 0;
  if (sqlite3_open(path, &fx->db) != SQLITE_OK)
    err = fail(fx, path);
  else if (sqlite3_prepare_v2(fx->db,
                              "INSERT OR IGNORE INTO trace_event(profile_id, start_ns, stream, corr, end_ns,"
                              " device, op, subkind, node, name, bytes) VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11)",
                              -1, &fx->tev, NULL) ||
           sqlite3_prepare_v2(fx->db,
                              "INSERT OR IGNORE INTO trace_launch(profile_id, ts_ns, tid, corr, node, op)"
                              " VALUES(?1,?2,?3,?4,?5,?6)",
                              -1, &fx->tla, NULL))
    err = fail(fx, "prepare");
  if (err < 0) {
    fx_free(fx);
    return err;
  }
  *out = fx;
  return 0;
}

int gpd_store_fixture_begin(gpd_store_fixture_t *fx) {
  return sqlite3_exec(fx->db, "BEGIN;", NULL, NULL, NULL) == SQLITE_OK ? 0 : GPD_ESTORE;
}

int gpd_store_fixture_commit(gpd_store_fixture_t *fx) {
  return sqlite3_exec(fx->db, "COMMIT;", NULL, NULL, NULL) == SQLITE_OK ? 0 : GPD_ESTORE;
}

int gpd_store_fixture_trace_gpu(gpd_store_fixture_t *fx, uint64_t profile, uint64_t start, int64_t stream,
                                uint64_t corr, uint64_t end, int64_t device, int op, int subkind, uint64_t node,
                                int64_t name, uint64_t bytes) {
  sqlite3_stmt *s = fx->tev;
  sqlite3_bind_int64(s, 1, (int64_t)profile);
  sqlite3_bind_int64(s, 2, (int64_t)start);
  sqlite3_bind_int64(s, 3, stream);
  sqlite3_bind_int64(s, 4, (int64_t)corr);
  sqlite3_bind_int64(s, 5, (int64_t)end);
  sqlite3_bind_int64(s, 6, device);
  sqlite3_bind_int(s, 7, op);
  sqlite3_bind_int(s, 8, subkind);
  sqlite3_bind_int64(s, 9, (int64_t)node);
  sqlite3_bind_int64(s, 10, name);
  sqlite3_bind_int64(s, 11, (int64_t)bytes);
  int rc = sqlite3_step(s);
  sqlite3_reset(s);
  return rc == SQLITE_DONE ? 0 : GPD_ESTORE;
}

int gpd_store_fixture_trace_launch(gpd_store_fixture_t *fx, uint64_t profile, uint64_t ts, int64_t tid,
                                   uint64_t corr, uint64_t node, int op) {
  sqlite3_stmt *s = fx->tla;
  sqlite3_bind_int64(s, 1, (int64_t)profile);
  sqlite3_bind_int64(s, 2, (int64_t)ts);
  sqlite3_bind_int64(s, 3, tid);
  sqlite3_bind_int64(s, 4, (int64_t)corr);
  sqlite3_bind_int64(s, 5, (int64_t)node);
  sqlite3_bind_int(s, 6, op);
  int rc = sqlite3_step(s);
  sqlite3_reset(s);
  return rc == SQLITE_DONE ? 0 : GPD_ESTORE;
}

void gpd_store_fixture_free(gpd_store_fixture_t *fx) { fx_free(fx); }

double gpd_store_fixture_bytes(const char *path) {
  sqlite3 *db;
  double b = 0;
  if (sqlite3_open(path, &db) != SQLITE_OK)
    return 0;
  sqlite3_exec(db, "PRAGMA wal_checkpoint(TRUNCATE);", NULL, NULL, NULL);
  sqlite3_stmt *q;
  if (sqlite3_prepare_v2(db, "SELECT (SELECT page_count FROM pragma_page_count) * (SELECT page_size"
                             " FROM pragma_page_size) - (SELECT freelist_count FROM"
                             " pragma_freelist_count) * (SELECT page_size FROM pragma_page_size)",
                         -1, &q, NULL) == SQLITE_OK) {
    if (sqlite3_step(q) == SQLITE_ROW)
      b = (double)sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
  }
  sqlite3_close(db);
  return b;
}

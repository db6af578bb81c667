/* profile-read.c - the `profile` rows of a saved profile (one per
 * process) and their `backend` rows (store-read.h). */
#include <errno.h>
#include <string.h>

#include "read-internal.h"
#include "store-id.h"
#include "store-read.h"

typedef struct prof_ctx_s {
  int (*fn)(void *c, const gpd_store_profile_t *p);
  int (*backend)(void *c, const gpd_store_backend_t *b);
  void *c;
  sqlite3_stmt *bq;
} prof_ctx_t;

static int prof_row(sqlite3_stmt *st, void *arg) {
  prof_ctx_t *pc = arg;
  gpd_store_profile_t p = {
      .id = (uint64_t)sqlite3_column_int64(st, 0),
      .pid = sqlite3_column_int(st, 1),
      .uid = (uint32_t)sqlite3_column_int64(st, 2),
      .gid = (uint32_t)sqlite3_column_int64(st, 3),
      .exe = gpd__store_text(st, 4),
      .hostname = gpd__store_text(st, 5),
      .job_id = gpd__store_text(st, 6),
      .step_id = gpd__store_text(st, 7),
      .rank = sqlite3_column_type(st, 8) == SQLITE_NULL ? -1 : sqlite3_column_int(st, 8),
      .local_rank = sqlite3_column_type(st, 9) == SQLITE_NULL ? -1 : sqlite3_column_int(st, 9),
      .start_ns = (uint64_t)sqlite3_column_int64(st, 10),
      .end_ns = (uint64_t)sqlite3_column_int64(st, 11),
      .state = gpd__store_text(st, 12),
      .records = (uint64_t)sqlite3_column_int64(st, 13),
      .drops = (uint64_t)sqlite3_column_int64(st, 14),
      .error = gpd__store_text(st, 15),
      .used_gpu = sqlite3_column_int(st, 16) != 0,
  };
  int r = pc->fn(pc->c, &p), rc;
  if (r != 0 || !pc->bq) return r < 0 ? r : 0;
  sqlite3_reset(pc->bq);
  sqlite3_bind_int64(pc->bq, 1, (sqlite3_int64)p.id);
  while ((rc = sqlite3_step(pc->bq)) == SQLITE_ROW) {
    gpd_store_backend_t b = {gpd__store_text(pc->bq, 0), gpd__store_text(pc->bq, 3), sqlite3_column_int(pc->bq, 1) != 0,
                             sqlite3_column_int(pc->bq, 2)};
    if ((r = pc->backend(pc->c, &b)) < 0) return r;
  }
  return rc == SQLITE_DONE ? 0 : -EIO;
}

int gpd_store_profile_each(sqlite3 *db, int pid, int (*fn)(void *c, const gpd_store_profile_t *p),
                           int (*backend)(void *c, const gpd_store_backend_t *b), void *c, const char *label,
                           char *err, size_t errn) {
  prof_ctx_t pc = {fn, backend, c, NULL};
  int64_t a = pid;
  int r;
  if (backend && (r = gpd__store_prep(db, "SELECT api, enabled, code, reason FROM backend WHERE profile_id = ?1 "
                                          "ORDER BY api", &pc.bq, label, err, errn)) < 0)
    return r;
  /* "used a GPU API": a back end reported its state (the shim does at the
   * first call into that API) or some metric was recorded */
  r = gpd__store_each(db,
                          "SELECT id, pid, uid, gid, exe, hostname, job_id, step_id, rank, local_rank, start_ns, "
                          "end_ns, state, records, drops, error, "
                          "EXISTS(SELECT 1 FROM backend b WHERE b.profile_id = profile.id) OR "
                          "EXISTS(SELECT 1 FROM metric m WHERE m.profile_id = profile.id) "
                          "FROM profile WHERE (?1 = 0 OR pid = ?1) ORDER BY " GPD_STORE_ID_ORDER,
                          &a, 1, prof_row, &pc, 0, label, err, errn);
  sqlite3_finalize(pc.bq);
  return r;
}

int gpd_store_profile_has_cuda(const char *path) {
  sqlite3 *db = NULL;
  char err[256];
  int yes = 0;
  unsigned wal = gpd_store_file_wal_before(path);
  if (gpd_store_file_open(path, &db, err, sizeof err) == 0)
    yes = gpd__store_int(db, "SELECT 1 FROM backend WHERE api = 'cuda' AND enabled = 1 LIMIT 1", 0) == 1;
  sqlite3_close(db);
  gpd_store_file_wal_after(path, wal);
  return yes;
}

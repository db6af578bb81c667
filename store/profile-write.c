/* profile-write.c - a flush's rows of the profile, its CCT and its
 * exactly-once state (store-write.h; docs/FORMATS.md). */
#include "store-write.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "gpuprof/error.h"

#include "store-db.h"
#include "store-sql.h"

enum { ST_PROFILE, ST_BACKEND, ST_MODULE, ST_STRING, ST_CONTEXT, ST_FRAME, ST_LOCAL, ST_METRIC,
       ST_PEND_CLEAR, ST_PEND_DEL, ST_PEND, ST_CURSOR, ST_CTX_LABEL, ST_GPUBIN, ST_GPUBIN_REF, ST__N };

static const char *const ST_SQL[ST__N] = {
    "INSERT INTO profile(id,pid,ppid,uid,gid,exe,argv,hostname,job_id,step_id,rank,local_rank,"
    "start_ns,end_ns,state,records,drops,error,proc_start) VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,"
    "?10,?11,?12,?13,?14,?15,?16,?17,?18,?19) ON CONFLICT(id) DO UPDATE SET pid=?2,ppid=?3,"
    "uid=?4,gid=?5,exe=?6,argv=?7,hostname=?8,job_id=?9,step_id=?10,rank=?11,local_rank=?12,"
    "start_ns=?13,end_ns=?14,state=?15,records=?16,drops=?17,error=?18,proc_start=?19",
    "INSERT OR REPLACE INTO backend VALUES(?1,?2,?3,?4,?5)",
    "INSERT OR REPLACE INTO module VALUES(?1,?2,?3,?4,?5,?6)",
    "INSERT OR REPLACE INTO string VALUES(?1,?2,?3,?4)",
    "INSERT OR IGNORE INTO context(uid,id,parent,kind,module,build_id,offset,label,raw_name)"
    " VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9)",
    "INSERT OR IGNORE INTO frame(uid,context_id,depth,function,file,line,inlined)"
    " VALUES(?1,?2,?3,?4,?5,?6,?7)",
    "INSERT OR REPLACE INTO cct_local VALUES(?1,?2,?3)",
    "INSERT OR REPLACE INTO metric VALUES(?1,?2,?3,?4)",
    "DELETE FROM pending WHERE profile_id=?1",
    "DELETE FROM pending WHERE profile_id=?1 AND seq=?2",
    "INSERT OR REPLACE INTO pending VALUES(?1,?2,?3)",
    "INSERT OR REPLACE INTO ring_cursor VALUES(?1,?2,?3)",
    "UPDATE context SET label=?3 WHERE uid=?1 AND id=?2",
    "INSERT OR IGNORE INTO gpubin VALUES(?1,?2,?3,?4,?5)",
    "INSERT OR IGNORE INTO gpubin_ref VALUES(?1,?2,?3)",
};

int gpd_store_write_open(sqlite3 *db, gpd_store_write_t **w) {
  return (*w = gpd_store_stmts_new(db, "flush", ST_SQL, ST__N)) ? 0 : GPD_ESTORE;
}

void gpd_store_write_close(gpd_store_write_t *w) { gpd_store_stmts_free(w); }

int gpd_store_write_profile(gpd_store_write_t *w, const gpd_store_profile_row_t *r) {
  sqlite3_stmt *q = w->st[ST_PROFILE];
  sqlite3_bind_int64(q, 1, (int64_t)r->id);
  sqlite3_bind_int64(q, 2, r->pid);
  sqlite3_bind_int64(q, 3, r->ppid);
  sqlite3_bind_int64(q, 4, r->uid);
  sqlite3_bind_int64(q, 5, r->gid);
  gpd_store_db_text(q, 6, r->exe);
  gpd_store_db_text(q, 7, r->argv);
  gpd_store_db_text(q, 8, r->hostname);
  gpd_store_db_text(q, 9, r->job);
  gpd_store_db_text(q, 10, r->step);
  sqlite3_bind_int64(q, 11, r->rank);
  sqlite3_bind_int64(q, 12, r->local_rank);
  sqlite3_bind_int64(q, 13, (int64_t)r->start_ns);
  sqlite3_bind_int64(q, 14, (int64_t)r->end_ns);
  gpd_store_db_text(q, 15, r->state);
  sqlite3_bind_int64(q, 16, (int64_t)r->records);
  sqlite3_bind_int64(q, 17, (int64_t)r->drops);
  gpd_store_db_text(q, 18, r->error);
  sqlite3_bind_int64(q, 19, (int64_t)r->proc_start);
  return gpd_store_db_run(q);
}

int gpd_store_write_backend(gpd_store_write_t *w, uint64_t profile, const gpd_store_backend_row_t *r) {
  sqlite3_stmt *q = w->st[ST_BACKEND];
  sqlite3_bind_int64(q, 1, (int64_t)profile);
  gpd_store_db_text(q, 2, r->api);
  sqlite3_bind_int(q, 3, r->enabled);
  sqlite3_bind_int(q, 4, r->code);
  gpd_store_db_text(q, 5, r->reason);
  return gpd_store_db_run(q);
}

int gpd_store_write_module(gpd_store_write_t *w, uint64_t profile, const gpd_store_module_row_t *r) {
  sqlite3_stmt *q = w->st[ST_MODULE];
  sqlite3_bind_int64(q, 1, (int64_t)profile);
  sqlite3_bind_int64(q, 2, r->id);
  gpd_store_db_text(q, 3, r->path);
  gpd_store_db_text(q, 4, r->build_id);
  sqlite3_bind_int64(q, 5, (int64_t)r->base);
  sqlite3_bind_int64(q, 6, (int64_t)r->size);
  return gpd_store_db_run(q);
}

int gpd_store_write_string(gpd_store_write_t *w, uint64_t profile, const gpd_store_string_row_t *r) {
  sqlite3_stmt *q = w->st[ST_STRING];
  sqlite3_bind_int64(q, 1, (int64_t)profile);
  sqlite3_bind_int64(q, 2, r->id);
  sqlite3_bind_int64(q, 3, r->kind);
  gpd_store_db_text(q, 4, r->text);
  return gpd_store_db_run(q);
}

int gpd_store_write_context(gpd_store_write_t *w, int64_t uid, const gpd_store_context_row_t *r) {
  sqlite3_stmt *q = w->st[ST_CONTEXT];
  sqlite3_bind_int64(q, 1, uid);
  sqlite3_bind_int64(q, 2, (int64_t)r->id);
  sqlite3_bind_int64(q, 3, (int64_t)r->parent);
  sqlite3_bind_int(q, 4, r->kind);
  gpd_store_db_text(q, 5, r->module);
  gpd_store_db_text(q, 6, r->build_id);
  sqlite3_bind_int64(q, 7, (int64_t)r->offset);
  gpd_store_db_text(q, 8, r->label);
  gpd_store_db_text(q, 9, r->raw);
  return gpd_store_db_run(q);
}

int gpd_store_write_frame(gpd_store_write_t *w, int64_t uid, uint64_t ctx, unsigned depth,
                          const gpd_store_frame_row_t *f) {
  sqlite3_stmt *q = w->st[ST_FRAME];
  sqlite3_bind_int64(q, 1, uid);
  sqlite3_bind_int64(q, 2, (int64_t)ctx);
  sqlite3_bind_int(q, 3, (int)depth);
  gpd_store_db_text(q, 4, f->function);
  gpd_store_db_text(q, 5, f->file);
  sqlite3_bind_int(q, 6, (int)f->line);
  sqlite3_bind_int(q, 7, f->inlined);
  return gpd_store_db_run(q);
}

int gpd_store_write_label(gpd_store_write_t *w, int64_t uid, uint64_t ctx, const char *label) {
  sqlite3_stmt *q = w->st[ST_CTX_LABEL];
  sqlite3_bind_int64(q, 1, uid);
  sqlite3_bind_int64(q, 2, (int64_t)ctx);
  gpd_store_db_text(q, 3, label);
  return gpd_store_db_run(q);
}

int gpd_store_write_local(gpd_store_write_t *w, uint64_t profile, uint32_t local, uint64_t ctx) {
  sqlite3_stmt *q = w->st[ST_LOCAL];
  sqlite3_bind_int64(q, 1, (int64_t)profile);
  sqlite3_bind_int64(q, 2, local);
  sqlite3_bind_int64(q, 3, (int64_t)ctx);
  return gpd_store_db_run(q);
}

int gpd_store_write_metric(gpd_store_write_t *w, uint64_t profile, uint64_t ctx, unsigned metric, double v) {
  sqlite3_stmt *q = w->st[ST_METRIC];
  sqlite3_bind_int64(q, 1, (int64_t)profile);
  sqlite3_bind_int64(q, 2, (int64_t)ctx);
  sqlite3_bind_int64(q, 3, metric);
  sqlite3_bind_double(q, 4, v);
  return gpd_store_db_run(q);
}

int gpd_store_write_pending_del(gpd_store_write_t *w, uint64_t profile, int64_t seq) {
  sqlite3_stmt *q = w->st[seq < 0 ? ST_PEND_CLEAR : ST_PEND_DEL];
  sqlite3_bind_int64(q, 1, (int64_t)profile);
  if (seq >= 0)
    sqlite3_bind_int64(q, 2, seq);
  return gpd_store_db_run(q);
}

int gpd_store_write_pending(gpd_store_write_t *w, uint64_t profile, uint64_t seq, const void *rec, size_t len) {
  sqlite3_stmt *q = w->st[ST_PEND];
  sqlite3_bind_int64(q, 1, (int64_t)profile);
  sqlite3_bind_int64(q, 2, (int64_t)seq);
  sqlite3_bind_blob(q, 3, rec, (int)len, SQLITE_STATIC);
  return gpd_store_db_run(q);
}

int gpd_store_write_cursor(gpd_store_write_t *w, uint64_t profile, uint32_t ring, uint64_t pos) {
  sqlite3_stmt *q = w->st[ST_CURSOR];
  sqlite3_bind_int64(q, 1, (int64_t)profile);
  sqlite3_bind_int64(q, 2, ring);
  sqlite3_bind_int64(q, 3, (int64_t)pos);
  return gpd_store_db_run(q);
}

int gpd_store_write_gpubins(gpd_store_write_t *w, const gpd_store_gpubin_row_t *rows) {
  int e = 0;
  for (const gpd_store_gpubin_row_t *g = rows; g && e == 0; g = g->next) {
    char path[64];
    snprintf(path, sizeof path, "gpubins/%s.gpubin", g->hash);
    sqlite3_stmt *q = w->st[ST_GPUBIN];
    sqlite3_bind_text(q, 1, g->hash, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(q, 2, g->kind, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(q, 3, (int64_t)g->size);
    sqlite3_bind_text(q, 4, path, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(q, 5, g->profile_id);
    if ((e = gpd_store_db_run(q)) < 0)
      break;
    q = w->st[ST_GPUBIN_REF];
    sqlite3_bind_int64(q, 1, g->profile_id);
    sqlite3_bind_text(q, 2, g->hash, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(q, 3, g->uid);
    e = gpd_store_db_run(q);
  }
  return e;
}

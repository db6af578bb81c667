/* merge-read.c - what `gpuprof merge` reads of one input (a saved or
 * merged profile): the statements over the profiles of one selection
 * (job id, uid), table by table (store-read.h; analyzer/minput.c reads
 * their rows into a part). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "gpuprof/error.h"
#include "read-internal.h"
#include "store-id.h"
#include "store-read.h"

/* profiles an input contributes (?1 job id or NULL, ?2 uid or -1) */
#define FILT "(?1 IS NULL OR job_id = ?1) AND (?2 < 0 OR uid = ?2)"
#define SEL_PROFILES "SELECT id FROM profile WHERE " FILT

static int prep(const gpd_store_merge_t *m, const char *sql, sqlite3_stmt **st) {
  int r = gpd__store_prep(m->db, sql, st, m->label, m->err, m->errn);
  if (r < 0) return r;
  if (sqlite3_bind_parameter_count(*st) >= 2) {
    if (m->job_id)
      sqlite3_bind_text(*st, 1, m->job_id, -1, SQLITE_STATIC);
    else
      sqlite3_bind_null(*st, 1);
    sqlite3_bind_int64(*st, 2, m->uid);
  }
  return 0;
}

/* sql from fmt, cut at 1 KiB (column lists are short) */
static int prepf(const gpd_store_merge_t *m, sqlite3_stmt **st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int prepf(const gpd_store_merge_t *m, sqlite3_stmt **st, const char *fmt, ...) {
  char sql[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(sql, sizeof sql, fmt, ap);
  va_end(ap);
  return prep(m, sql, st);
}

int gpd_store_merge_profiles(const gpd_store_merge_t *m, const char *cols, sqlite3_stmt **st) {
  return prepf(m, st, "SELECT %s FROM profile WHERE " FILT " ORDER BY " GPD_STORE_ID_ORDER, cols);
}

int gpd_store_merge_rows(const gpd_store_merge_t *m, const char *table, const char *cols, sqlite3_stmt **st) {
  int plen = (int)strcspn(cols, ","); /* the profile column: the first (trace_cpu_sample's is `profile`) */
  return prepf(m, st, "SELECT %s FROM %s WHERE %.*s IN (" SEL_PROFILES ")", cols, table, plen, cols);
}

int gpd_store_merge_gpubins(const gpd_store_merge_t *m, int with_pcs, sqlite3_stmt **st) {
  if (!with_pcs)
    return prep(m, "SELECT hash, kind, size, path, profile_id FROM gpubin WHERE profile_id IN (" SEL_PROFILES ")", st);
  return prep(m,
              "SELECT hash, kind, size, path, COALESCE(CASE WHEN profile_id IN (" SEL_PROFILES
              ") THEN profile_id END, (SELECT MIN(c.profile_id) FROM pcsample_cubin c WHERE c.hash = gpubin.hash "
              "AND c.profile_id IN (" SEL_PROFILES "))) FROM gpubin WHERE profile_id IN (" SEL_PROFILES
              ") OR hash IN (SELECT hash FROM pcsample_cubin WHERE profile_id IN (" SEL_PROFILES "))",
              st);
}

int gpd_store_merge_contexts(const gpd_store_merge_t *m, const char *cols, sqlite3_stmt **st) {
  /* +uid: a scan in table order, not the (uid, id) index and a table seek
   * per row */
  return prepf(m, st, "SELECT %s FROM context WHERE +uid IN (SELECT uid FROM profile WHERE " FILT ")", cols);
}

int gpd_store_merge_frames(const gpd_store_merge_t *m, const char *cols, sqlite3_stmt **st) {
  return prepf(m, st,
               "SELECT %s FROM frame WHERE uid IN (SELECT uid FROM profile WHERE " FILT ") "
               "ORDER BY uid, context_id, depth",
               cols);
}

int gpd_store_merge_metrics(const gpd_store_merge_t *m, int merged, sqlite3_stmt **st) {
  return prep(m,
              merged ? "SELECT profile_id, vals FROM pmetric WHERE profile_id IN (" SEL_PROFILES
                       ") ORDER BY profile_id"
                     : "SELECT profile_id, context_id, metric_id, value FROM metric WHERE profile_id IN "
                       "(" SEL_PROFILES ") ORDER BY profile_id, context_id, metric_id",
              st);
}

int gpd_store_merge_has_cols(sqlite3 *db, const char *table, const char *cols) {
  char sql[1024];
  sqlite3_stmt *st = NULL;
  snprintf(sql, sizeof(sql), "SELECT %s FROM %s LIMIT 0", cols, table);
  int yes = sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK;
  sqlite3_finalize(st);
  return yes;
}

int gpd_store_merge_step(const gpd_store_merge_t *m, sqlite3_stmt *st) {
  int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) return 1;
  return rc == SQLITE_DONE ? 0 : gpd__store_step_fail(m->db, rc, m->label, m->err, m->errn);
}

void gpd_store_merge_done(sqlite3_stmt *st) { sqlite3_finalize(st); }

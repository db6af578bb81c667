/* context-read.c - the calling contexts of a saved profile (`context`)
 * and their source frames (`frame`), store-read.h. */
#include "read-internal.h"
#include "store-read.h"

typedef struct ctx_cb_s {
  int (*ctx)(void *c, const gpd_store_context_t *x);
  int (*frame)(void *c, const gpd_store_frame_t *f);
  void *c;
} ctx_cb_t;

static int ctx_row(sqlite3_stmt *st, void *arg) {
  ctx_cb_t *cb = arg;
  gpd_store_context_t x = {(uint64_t)sqlite3_column_int64(st, 0), (uint64_t)sqlite3_column_int64(st, 1),
                           (uint64_t)sqlite3_column_int64(st, 4),  sqlite3_column_int(st, 2),
                           gpd__store_text(st, 3),                 gpd__store_text(st, 5),
                           gpd__store_text(st, 6)};
  return cb->ctx(cb->c, &x);
}

static int frame_row(sqlite3_stmt *st, void *arg) {
  ctx_cb_t *cb = arg;
  gpd_store_frame_t f = {(uint64_t)sqlite3_column_int64(st, 0), (uint32_t)sqlite3_column_int(st, 1),
                         (uint32_t)sqlite3_column_int(st, 4),   sqlite3_column_int(st, 5),
                         gpd__store_text(st, 2),                gpd__store_text(st, 3)};
  return cb->frame(cb->c, &f);
}

/* Per-user labels (context.uid, frame.uid): the rows of the users whose
 * profiles are read; older files have one label per context. */
static int per_uid(sqlite3 *db) {
  return gpd_store_file_has_column(db, "context", "uid") && gpd_store_file_has_column(db, "frame", "uid");
}

int gpd_store_context_each(sqlite3 *db, int pid, int (*fn)(void *c, const gpd_store_context_t *x), void *c,
                           const char *label, char *err, size_t errn) {
  ctx_cb_t cb = {fn, NULL, c};
  int64_t a = pid;
  return gpd__store_each(db,
                         per_uid(db) ? "SELECT id, parent, kind, module, offset, label, raw_name FROM context "
                                       "WHERE uid IN (SELECT uid FROM profile WHERE (?1 = 0 OR pid = ?1)) "
                                       "ORDER BY uid, id"
                                     : "SELECT id, parent, kind, module, offset, label, raw_name FROM context",
                         &a, 1, ctx_row, &cb, 0, label, err, errn);
}

int gpd_store_context_frames(sqlite3 *db, int pid, int (*fn)(void *c, const gpd_store_frame_t *f), void *c,
                             const char *label, char *err, size_t errn) {
  ctx_cb_t cb = {NULL, fn, c};
  int64_t a = pid;
  return gpd__store_each(db,
                         per_uid(db) ? "SELECT context_id, depth, function, file, line, inlined FROM frame "
                                       "WHERE uid IN (SELECT uid FROM profile WHERE (?1 = 0 OR pid = ?1)) "
                                       "ORDER BY uid, context_id, depth"
                                     : "SELECT context_id, depth, function, file, line, inlined FROM frame "
                                       "ORDER BY context_id, depth",
                         &a, 1, frame_row, &cb, 0, label, err, errn);
}

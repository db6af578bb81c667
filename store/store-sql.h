/* store-sql.h - what store/'s files share to run their statements (db.c);
 * not for the callers of store/, which never see SQL text.
 * Errors are logged unless the thread is quiet (gpd_store_db_quiet). */
#ifndef GPD_STORE_SQL_H
#define GPD_STORE_SQL_H

#include <stdint.h>

#include <sqlite3.h>

/** The prepared statements of one connection, st[0..n): what the
 *  handles gpd_store_write_t, gpd_store_purge_t, gpd_store_trace_t and
 *  gpd_store_device_t are. */
struct gpd_store_stmts_s {
  sqlite3 *db;
  int n;
  sqlite3_stmt *st[];
};
/** Prepare sql[0..n) on db: a new set, or NULL when a statement does not
 *  prepare or there is no memory (logged, naming what). */
struct gpd_store_stmts_s *gpd_store_stmts_new(sqlite3 *db, const char *what, const char *const *sql, int n);
/** Finalize and free (NULL: nothing); the connection stays open. */
void gpd_store_stmts_free(struct gpd_store_stmts_s *s);
/** Prepare n statements sql[0..n-1] into st[0..n-1] (st zeroed by the
 *  caller; gpd_store_db_finalize frees them in any case).  0 or
 *  GPD_ESTORE (logged with what). */
int gpd_store_db_prepare(sqlite3 *db, const char *what, const char *const *sql, sqlite3_stmt **st, int n);
void gpd_store_db_finalize(sqlite3_stmt **st, int n);
/** sqlite3_exec, logged unless quiet.  0 or GPD_ESTORE. */
int gpd_store_db_exec(sqlite3 *db, const char *sql);
/** Step a bound INSERT / UPDATE / DELETE once, reset it and clear its
 *  bindings.  0 or GPD_ESTORE (logged unless quiet). */
int gpd_store_db_run(sqlite3_stmt *st);
/** Bind text or NULL. */
void gpd_store_db_text(sqlite3_stmt *st, int i, const char *s);
/** First column of the first row of sql (no parameters); dflt when there
 *  is no row, a NULL or an error. */
int64_t gpd_store_db_int(sqlite3 *db, const char *sql, int64_t dflt);

#endif

/* read-internal.h - what store/'s readers share (not for other folders). */
#ifndef GPD_STORE_READ_INTERNAL_H
#define GPD_STORE_READ_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <sqlite3.h>

/** A row callback of gpd__store_each: 0 to go on, < 0 to stop (returned). */
typedef int (*gpd__store_row_fn)(sqlite3_stmt *st, void *c);

/** Prepare sql on db, bind args[0..nargs) to ?1.. (as many as it has),
 *  call row for each row.  0; row's error (err: "label: <strerror>");
 *  GPD_ESTORE with err naming label when sql does not prepare ("not a
 *  gpuprof profile") or a step fails; optional = 1: a statement that
 *  does not prepare (a table an older file lacks) reads nothing: 0.
 *  err may be NULL (no message). */
int gpd__store_each(sqlite3 *db, const char *sql, const int64_t *args, int nargs, gpd__store_row_fn row, void *c,
                    int optional, const char *label, char *err, size_t errn);
/** Prepare sql on db into *st: 0, or GPD_ESTORE with err naming label ("not
 *  a gpuprof profile"). */
int gpd__store_prep(sqlite3 *db, const char *sql, sqlite3_stmt **st, const char *label, char *err, size_t errn);
/** GPD_ESTORE with err naming label: a step of db failed with rc. */
int gpd__store_step_fail(sqlite3 *db, int rc, const char *label, char *err, size_t errn);
/** sqlite3_column_text as a C string, "" for NULL. */
const char *gpd__store_text(sqlite3_stmt *st, int col);
/** The first integer column of the first row of sql with ?1 = a (0 when
 *  none or on error). */
int64_t gpd__store_int(sqlite3 *db, const char *sql, int64_t a);

#endif

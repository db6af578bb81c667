/* store-open.h - opening a .gpdb that may be hostile.
 *
 * A profile file is data from whoever wrote it: a user can hand root a
 * file whose `context` is a view over an endless recursive CTE, a trigger,
 * or a virtual table, and every reader (report, merge in a Slurm epilog)
 * would run it.  gpd_store_open_readonly() is the one way a reader opens
 * such a file:
 *   - read-only, never through a symbolic link (SQLITE_OPEN_NOFOLLOW);
 *   - PRAGMA trusted_schema=OFF, defensive mode, views and triggers of the
 *     file disabled (SQLITE_DBCONFIG_ENABLE_VIEW / _TRIGGER: TEMP views,
 *     which the reader makes itself for shards, still work);
 *   - its schema checked (gpd_store_check_schema): only tables and
 *     indexes, no view, trigger or virtual table;
 *   - a deadline: a progress handler stops every statement once the
 *     connection has been open longer than GPUPROF_READ_TIMEOUT seconds
 *     (default GPD_STORE_READ_TIMEOUT_S, 0: none) and prints one message
 *     naming the file; the statement fails with SQLITE_INTERRUPT.
 * One connection per thread; the functions themselves are thread-safe.
 */
#ifndef GPD_STORE_OPEN_H
#define GPD_STORE_OPEN_H

#include <stddef.h>
#include <sqlite3.h>

/** Default deadline of a reading connection, seconds. */
#define GPD_STORE_READ_TIMEOUT_S 300.0

/** Open `name` (a path, or a file: URI when flags has SQLITE_OPEN_URI)
 *  read-only with the guards above; `label` names the file in messages.
 *  flags: extra SQLITE_OPEN_* flags (URI, NOMUTEX).  0 with *db open, or
 *  GPD_ESTORE / -EINVAL (not a profile: a view, trigger or virtual table)
 *  with a message in err and *db NULL. */
int gpd_store_open_readonly(const char *name, const char *label, int flags, sqlite3 **db, char *err, size_t errn);
/** Check the schema `schema` ("main", or an attached file's name) of db:
 *  0, or -EINVAL with err naming label and the first view, trigger or
 *  virtual table; GPD_ESTORE when it cannot be read. */
int gpd_store_check_schema(sqlite3 *db, const char *schema, const char *label, char *err, size_t errn);
/** The deadline in seconds from $GPUPROF_READ_TIMEOUT (0: none). */
double gpd_store_read_timeout(void);

#endif

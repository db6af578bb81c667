/* store-db.h - read-write connections to a .gpdb (db.c) and its schema
 * (schema.c): the one place that opens a profile store for writing,
 * creates its tables, upgrades an older format and runs its transactions.
 *
 * Errors are logged (gpuprof/log.h) unless the calling thread made them
 * quiet (gpd_store_db_quiet: a disk that stays full is reported once by
 * the caller, not at every statement).  A connection belongs to one
 * thread (SQLITE_OPEN_NOMUTEX); the functions themselves are thread-safe.
 */
#ifndef GPD_STORE_DB_H
#define GPD_STORE_DB_H

#include <stdint.h>

#include <sqlite3.h>

/** On-disk format (PRAGMA user_version; docs/FORMATS.md). */
#define GPD_STORE_FORMAT 2

/** Busy timeout of a read-write connection, ms. */
#define GPD_STORE_BUSY_MS 10000

/** The -wal file's bound, bytes: a commit of a read-write connection
 *  (gpd_store_db_open) that leaves the file at least this long
 *  checkpoints it to zero length (TRUNCATE), waiting for readers and
 *  writers up to GPD_STORE_BUSY_MS.  So after each commit the file is
 *  shorter than this, and during one it exceeds it by at most that
 *  transaction's pages (+ 24 bytes each), unless a reader or writer held
 *  the file for longer than the busy timeout (docs/STORE.md). */
#define GPD_STORE_WAL_MAX (4ll << 20)
/** A restarted -wal file is cut back to this at its first commit
 *  (journal_size_limit), bytes; gpd_store_db_wal_truncate leaves a file up
 *  to this long alone. */
#define GPD_STORE_WAL_KEEP (1ll << 20)
/** Frames in the -wal after which a commit checkpoints passively (what
 *  wal_autocheckpoint does), unless gpd_store_db_autocheckpoint said
 *  otherwise. */
#define GPD_STORE_WAL_PASSIVE 256u

/** Make the database file `path` and its -wal and -shm private: each must
 *  be a regular file of the caller's euid with one link, never a symbolic
 *  link; a readable one is made 0600.  create: the database itself may be
 *  created (0600); -wal and -shm that do not exist are fine.  0 or
 *  GPD_ESTORE (logged). */
int gpd_store_db_private(const char *path, int create);
/** Open path read-write (create: may create it), never through a link,
 *  with a busy timeout of GPD_STORE_BUSY_MS.  0 or GPD_ESTORE (logged);
 *  *db NULL on error. */
int gpd_store_db_open(const char *path, int create, sqlite3 **db);
/** Close db (NULL: nothing); statements of db must be finalized. */
void gpd_store_db_close(sqlite3 *db);
/** Open path read-only for a short read (busy timeout busy_ms), never
 *  through a link: the daemon's own file, not a user's (for those see
 *  store-open.h).  0 or GPD_ESTORE (logged as a warning). */
int gpd_store_db_open_read(const char *path, int busy_ms, sqlite3 **db);

/** Errors of the calling thread's statements are not logged while on
 *  (a disk that stays full).  Returns the previous value. */
int gpd_store_db_quiet(int on);
/** BEGIN IMMEDIATE (write), BEGIN (one read snapshot), COMMIT, ROLLBACK
 *  (always quiet: SQLite may have rolled back already).  0 or GPD_ESTORE. */
int gpd_store_db_begin(sqlite3 *db);
int gpd_store_db_begin_read(sqlite3 *db);
int gpd_store_db_commit(sqlite3 *db);
void gpd_store_db_rollback(sqlite3 *db);
/** Bytes of the file in use: (pages - free pages) x page size. */
int64_t gpd_store_db_size(sqlite3 *db);
/** Bytes of the file's free pages (freelist_count x page size). */
int64_t gpd_store_db_free(sqlite3 *db);
/** Give up to `pages` free pages back to the file system (auto_vacuum
 *  INCREMENTAL); *left: free pages that remain.  0 or GPD_ESTORE. */
int gpd_store_db_vacuum(sqlite3 *db, unsigned pages, int64_t *left);
/** A commit of db with `pages` frames or more in the -wal checkpoints
 *  passively (0: GPD_STORE_WAL_PASSIVE); the bound GPD_STORE_WAL_MAX stays.
 *  db must come from gpd_store_db_open.  Returns 0. */
int gpd_store_db_autocheckpoint(sqlite3 *db, unsigned pages);
/** Bytes of db's -wal file now (stat; 0 when there is none). */
int64_t gpd_store_db_wal_size(sqlite3 *db);
/** Outside a transaction: a -wal longer than GPD_STORE_WAL_KEEP is
 *  checkpointed and cut to zero length (TRUNCATE) if readers and writers
 *  allow it now (no wait).  0 (done, or nothing to do), 1 (busy: try
 *  later) or GPD_ESTORE (logged unless quiet). */
int gpd_store_db_wal_truncate(sqlite3 *db);

/** Write connection, in the caller's open write transaction: refuse a
 *  newer format, create every table, upgrade an older format (per-uid
 *  contexts, new columns, retention tables and their work lists), set
 *  user_version and the meta rows (format, host, created_ns, clock) and
 *  metric_desc.  label names the file in messages.  0 or GPD_ESTORE. */
int gpd_store_schema_upgrade(sqlite3 *db, const char *label);
/** Connection pragmas of the daemon's file, before the first table:
 *  auto_vacuum INCREMENTAL, WAL, synchronous NORMAL.  0 or GPD_ESTORE. */
int gpd_store_schema_pragmas(sqlite3 *db);

/** Profile ids (table meta, key next_profile_id): the first id a new
 *  daemon may hand out, above every stored profile and every id reserved
 *  before (at least 1). */
uint64_t gpd_store_meta_first_id(sqlite3 *db);
/** Raise next_profile_id to at least hw (in the caller's transaction).
 *  0, GPD_ESTORE or -ENOMEM. */
int gpd_store_meta_reserve(sqlite3 *db, uint64_t hw);

#endif

/* schema.c - the tables of a .gpdb, the upgrades of older formats and the
 * meta rows (store-db.h; docs/FORMATS.md).  The tables `gpuprof merge`
 * writes too come from store-schema.h. */
#include "store-db.h"
#include "store-sql.h"

#include <errno.h>
#include <unistd.h>

#include "gpuprof/clock.h"
#include "gpuprof/error.h"
#include "gpuprof/log.h"
#include "gpuprof/metric.h"

#include "store-schema.h"

#define GPD_STR_(x) #x
#define GPD_STR(x) GPD_STR_(x)

static const char *SCHEMA = GPD_STORE_SCHEMA
    /* device monitoring series (store/device.c, docs/FORMATS.md) */
    "CREATE TABLE IF NOT EXISTS device(id INTEGER PRIMARY KEY, api TEXT NOT NULL,"
    "  idx INTEGER NOT NULL, name TEXT, uuid TEXT NOT NULL, UNIQUE(api, uuid));"
    "CREATE TABLE IF NOT EXISTS device_sample(device INTEGER NOT NULL, t_ns INTEGER NOT NULL,"
    "  util_gpu REAL, util_mem REAL, mem_used INTEGER, mem_total INTEGER, power_w REAL,"
    "  temp_c REAL, clock_sm_mhz INTEGER, clock_mem_mhz INTEGER, pcie_tx_bps INTEGER,"
    "  pcie_rx_bps INTEGER, ecc_corrected INTEGER, ecc_uncorrected INTEGER, xid_events INTEGER,"
    "  nvlink_tx_bps INTEGER, nvlink_rx_bps INTEGER,"
    "  PRIMARY KEY(device, t_ns)) WITHOUT ROWID;"
    "CREATE INDEX IF NOT EXISTS device_sample_t ON device_sample(t_ns);"
    "CREATE TABLE IF NOT EXISTS device_proc(device INTEGER NOT NULL, t_ns INTEGER NOT NULL,"
    "  pid INTEGER NOT NULL, uid INTEGER, profile_id INTEGER, job_id TEXT, mem_used INTEGER,"
    "  sm_util REAL, mem_util REAL, PRIMARY KEY(device, t_ns, pid)) WITHOUT ROWID;"
    "CREATE INDEX IF NOT EXISTS device_proc_t ON device_proc(t_ns);"
    "CREATE TABLE IF NOT EXISTS cpu_counter(profile_id INTEGER NOT NULL, t_ns INTEGER NOT NULL,"
    "  event TEXT NOT NULL, value INTEGER NOT NULL, PRIMARY KEY(profile_id, event, t_ns))"
    "  WITHOUT ROWID;"
    "CREATE INDEX IF NOT EXISTS cpu_counter_t ON cpu_counter(t_ns);"
    /* GPU PC samples (store/batch.c, docs/FORMATS.md) */
    GPD_PCSAMPLE_SCHEMA
    /* traces (store/trace-write.c, docs/TRACE.md) and CPU-time samples
     * (store/batch.c): docs/FORMATS.md */
    GPD_TRACE_SCHEMA
    /* tracing windows (store/batch.c, docs/FORMATS.md) */
    GPD_TRACEWIN_SCHEMA;

/* Retention's indexes and bookkeeping (store/purge.c, docs/FORMATS.md
 * "Retention"): the orphan checks look up metric and cct_local by context,
 * context by (uid, parent); victims come by age and by uid; gpubin_ref
 * says which profiles (of which uid) sent a binary; profile_size caches a
 * profile's estimated bytes; retain_drop, retain_ctx and retain_bin are the
 * work lists that let a removal span many short transactions and survive
 * a restart.  Made after the format upgrades (one of them rebuilds
 * context). */
static const char *RETAIN_SCHEMA =
    "CREATE INDEX IF NOT EXISTS metric_context ON metric(context_id, profile_id);"
    "CREATE INDEX IF NOT EXISTS cct_local_context ON cct_local(context_id, profile_id);"
    "CREATE INDEX IF NOT EXISTS context_parent ON context(uid, parent);"
    "CREATE INDEX IF NOT EXISTS profile_end ON profile(end_ns);"
    "CREATE INDEX IF NOT EXISTS profile_uid_age ON profile(uid, COALESCE(end_ns, start_ns, 0), id);"
    "CREATE TABLE IF NOT EXISTS gpubin_ref(profile_id INTEGER NOT NULL, hash TEXT NOT NULL,"
    "  uid INTEGER NOT NULL, PRIMARY KEY(profile_id, hash)) WITHOUT ROWID;"
    "CREATE INDEX IF NOT EXISTS gpubin_ref_hash ON gpubin_ref(hash);"
    "CREATE INDEX IF NOT EXISTS gpubin_ref_uid ON gpubin_ref(uid, hash);"
    "CREATE TABLE IF NOT EXISTS profile_size(profile_id INTEGER PRIMARY KEY, uid INTEGER NOT NULL,"
    "  bytes INTEGER NOT NULL, final INTEGER NOT NULL, t_ns INTEGER NOT NULL);"
    "CREATE INDEX IF NOT EXISTS profile_size_uid ON profile_size(uid);"
    "CREATE TABLE IF NOT EXISTS retain_drop(profile_id INTEGER PRIMARY KEY, uid INTEGER NOT NULL);"
    "CREATE TABLE IF NOT EXISTS retain_ctx(uid INTEGER NOT NULL, id INTEGER NOT NULL,"
    "  PRIMARY KEY(uid, id)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS retain_bin(hash TEXT PRIMARY KEY) WITHOUT ROWID;";

/* Files from before the retention lists: each binary is referred to by
 * the profile that sent it first (the only one recorded); every binary
 * and every context is checked by the next retention passes (none
 * referred to: removed; older daemons left such rows behind). */
static const char *MIGRATE_RETAIN =
    "INSERT OR IGNORE INTO gpubin_ref SELECT g.profile_id, g.hash, p.uid FROM gpubin g"
    "  JOIN profile p ON p.id = g.profile_id;"
    "INSERT OR IGNORE INTO retain_bin SELECT hash FROM gpubin;"
    "INSERT OR IGNORE INTO retain_ctx SELECT uid, id FROM context WHERE parent != 0;";

/* Old databases (user_version 1): context and frame were one table for
 * all users.  Each row is copied to every uid that owns a profile, so
 * what each user saw stays what it was, and from now on writes of one
 * uid never change another's rows. */
static const char *MIGRATE_1_2 =
    "CREATE TABLE context_v2(uid INTEGER NOT NULL, id INTEGER NOT NULL,"
    "  parent INTEGER NOT NULL, kind INTEGER NOT NULL, module TEXT, build_id TEXT,"
    "  offset INTEGER, label TEXT, raw_name TEXT, PRIMARY KEY(uid, id));"
    "INSERT INTO context_v2 SELECT u.uid, c.id, c.parent, c.kind, c.module, c.build_id,"
    "  c.offset, c.label, c.raw_name FROM context c, (SELECT DISTINCT uid FROM profile) u;"
    "DROP TABLE context; ALTER TABLE context_v2 RENAME TO context;"
    "CREATE TABLE frame_v2(uid INTEGER NOT NULL, context_id INTEGER NOT NULL,"
    "  depth INTEGER NOT NULL, function TEXT, file TEXT, line INTEGER, inlined INTEGER NOT NULL,"
    "  PRIMARY KEY(uid, context_id, depth));"
    "INSERT INTO frame_v2 SELECT u.uid, f.context_id, f.depth, f.function, f.file, f.line,"
    "  f.inlined FROM frame f, (SELECT DISTINCT uid FROM profile) u;"
    "DROP TABLE frame; ALTER TABLE frame_v2 RENAME TO frame;";

int gpd_store_schema_pragmas(sqlite3 *db) {
  /* auto_vacuum must precede the first table */
  return gpd_store_db_exec(db, "PRAGMA auto_vacuum=INCREMENTAL; PRAGMA journal_mode=WAL;"
                               " PRAGMA synchronous=NORMAL;");
}

/* The format's identity and the metric descriptions. */
static int schema_meta(sqlite3 *db) {
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  char *sql = sqlite3_mprintf("INSERT OR REPLACE INTO meta VALUES('format_version','" GPD_STR(GPD_STORE_FORMAT) "');"
                              "INSERT OR IGNORE INTO meta VALUES('format','gpuprof'),"
                              "('host',%Q),('created_ns','%llu'),('clock','CLOCK_MONOTONIC_RAW');",
                              host, (unsigned long long)gpd_clock_ns());
  int e = sql ? gpd_store_db_exec(db, sql) : -ENOMEM;
  sqlite3_free(sql);
  for (unsigned i = 0; i < GPD_M__COUNT && e == 0; i++) {
    const gpd_metric_desc_t *md = gpd_metric_desc(i);
    if (md == NULL)
      continue;
    sql = sqlite3_mprintf("INSERT OR REPLACE INTO metric_desc VALUES(%u,%Q,%Q,%Q);", i, md->name,
                          gpd_metric_unit_name(md->unit), md->desc);
    e = sql ? gpd_store_db_exec(db, sql) : -ENOMEM;
    sqlite3_free(sql);
  }
  return e < 0 ? GPD_ESTORE : 0;
}

int gpd_store_schema_upgrade(sqlite3 *db, const char *label) {
  int64_t ver = gpd_store_db_int(db, "PRAGMA user_version", 0);
  if (ver > GPD_STORE_FORMAT) {
    GPD_ERR("store: %s has format version %lld, newer than this daemon's (%d); refused", label, (long long)ver,
            GPD_STORE_FORMAT);
    return GPD_ESTORE;
  }
  if (gpd_store_db_exec(db, SCHEMA) < 0)
    return GPD_ESTORE;
  if (gpd_store_db_int(db, "SELECT COUNT(*) FROM pragma_table_info('context') WHERE name='uid'", 0) == 0) {
    GPD_INFO("store: %s: upgrading contexts and frames to per-user rows (format 2)", label);
    if (gpd_store_db_exec(db, MIGRATE_1_2) < 0)
      return GPD_ESTORE;
  }
  if (gpd_store_db_int(db, "SELECT COUNT(*) FROM pragma_table_info('profile') WHERE name='proc_start'", 0) == 0 &&
      gpd_store_db_exec(db, "ALTER TABLE profile ADD COLUMN proc_start INTEGER;") < 0)
    return GPD_ESTORE;
  /* device series written before NVLink was read */
  if (gpd_store_db_int(db, "SELECT COUNT(*) FROM pragma_table_info('device_sample') WHERE name='nvlink_tx_bps'",
                       0) == 0 &&
      gpd_store_db_exec(db, "ALTER TABLE device_sample ADD COLUMN nvlink_tx_bps INTEGER;"
                            "ALTER TABLE device_sample ADD COLUMN nvlink_rx_bps INTEGER;") < 0)
    return GPD_ESTORE;
  int had_ref = gpd_store_db_int(db, "SELECT COUNT(*) FROM sqlite_master WHERE name='gpubin_ref'", 0) > 0;
  if (gpd_store_db_int(db, "SELECT COUNT(*) FROM sqlite_master WHERE name='metric_context'", 0) == 0)
    GPD_INFO("store: %s: adding the retention indexes (once; large files take a while)", label);
  if (gpd_store_db_exec(db, RETAIN_SCHEMA) < 0 || (!had_ref && gpd_store_db_exec(db, MIGRATE_RETAIN) < 0))
    return GPD_ESTORE;
  if (gpd_store_db_exec(db, "PRAGMA user_version=" GPD_STR(GPD_STORE_FORMAT) ";") < 0)
    return GPD_ESTORE;
  return schema_meta(db);
}

uint64_t gpd_store_meta_first_id(sqlite3 *db) {
  /* sequential ids of an older daemon count; permuted ids (>= 2^52,
   * store-id.h) are above the count by construction */
  int64_t maxid = gpd_store_db_int(db, "SELECT MAX(id) FROM profile WHERE id < 4503599627370496", 0);
  int64_t hw = gpd_store_db_int(db, "SELECT CAST(value AS INTEGER) FROM meta WHERE key='next_profile_id'", 1);
  uint64_t first = (uint64_t)(maxid + 1 > hw ? maxid + 1 : hw);
  return first ? first : 1;
}

int gpd_store_meta_reserve(sqlite3 *db, uint64_t hw) {
  char *sql = sqlite3_mprintf("INSERT INTO meta VALUES('next_profile_id','%llu') ON CONFLICT(key) DO UPDATE SET"
                              " value=MAX(CAST(value AS INTEGER), CAST(excluded.value AS INTEGER));",
                              (unsigned long long)hw);
  int e = sql ? gpd_store_db_exec(db, sql) : -ENOMEM;
  sqlite3_free(sql);
  return e;
}

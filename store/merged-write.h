/* merged-write.h - the SQL side of writing a merged file (format 3,
 * docs/FORMATS.md "Merged profiles"; `gpuprof merge`, analyzer/mout.c)
 * and of its in-memory shards (the MPI merge).  store/merged-write.c,
 * names gpd_store_merged_* (store-read.h says how store/ is laid out).
 *
 * The caller (analyzer/mout.c, gpd_mout_t) keeps the file's name, the
 * counts and the shard files; this keeps the connection, the schema and
 * the prepared inserts.  The copied tables are the caller's: it numbers
 * them 0..ntables-1 and gives each one's name and columns; their rows
 * are bound by the caller's row codec to gpd_store_merged_insert(w, t).
 * One thread per writer.  Functions return 0 or a negative code (-ENOMEM,
 * -EINVAL, GPD_ESTORE) with a message in the err given at open.
 */
#ifndef GPD_STORE_MERGED_WRITE_H
#define GPD_STORE_MERGED_WRITE_H

#include <stddef.h>
#include <stdint.h>

struct sqlite3;
struct sqlite3_stmt;

/** Most copied tables a writer prepares inserts for. */
#define GPD_STORE_MERGED_MAXT 32

/** One table copied row by row: name, column list, columns. */
typedef struct gpd_store_mtable_s {
  const char *name, *cols;
  int ncols;
} gpd_store_mtable_t;

/** One stat row's statistics (docs/ANALYZER.md). */
typedef struct gpd_store_mstat_s {
  uint64_t n, nz;
  double sum, min, mean, max, stddev, cv;
  int64_t min_profile, max_profile;
} gpd_store_mstat_t;

typedef struct gpd_store_merged_s {
  struct sqlite3 *db;
  struct sqlite3_stmt *ins[GPD_STORE_MERGED_MAXT], *pm, *stq;
  unsigned char *img; /* a shard's copied image (sqlite3_free), or NULL */
  char *err;
  size_t errn;
} gpd_store_merged_t;

/** Open the new private file `tmp` (created by the caller) for writing
 *  without a journal (it is renamed into place only when complete),
 *  create the merged schema, meta (format 3, next_profile_id = nprof + 1,
 *  merged_inputs = ninputs, this host and time) and metric_desc, prepare
 *  an insert per table of tables[0..ntables) (`OR IGNORE` for
 *  ignore_dups, its index, or -1), and begin the transaction.  On error w
 *  is closed. */
int gpd_store_merged_open(gpd_store_merged_t *w, const char *tmp, uint32_t nprof, uint32_t ninputs,
                          const gpd_store_mtable_t *tables, int ntables, int ignore_dups, char *err, size_t errn);
/** Open an in-memory shard (SQLite's memdb: one contiguous image) with
 *  only the context, frame, stat and pmetric tables; tables ctx_t and
 *  frame_t get the context and frame inserts.  On error w is closed. */
int gpd_store_merged_open_shard(gpd_store_merged_t *w, int ctx_t, int frame_t, char *err, size_t errn);
/** The prepared insert of table t (?1.. its columns), for the caller's
 *  row codec to bind; then gpd_store_merged_step. */
struct sqlite3_stmt *gpd_store_merged_insert(gpd_store_merged_t *w, int t);
/** Run a bound insert, then reset it and clear its bindings. */
int gpd_store_merged_step(gpd_store_merged_t *w, struct sqlite3_stmt *st);
/** Insert profile profile_id's pmetric blob (n bytes). */
int gpd_store_merged_pmetric(gpd_store_merged_t *w, int64_t profile_id, const uint8_t *blob, size_t n);
/** Insert the stat row of (uid, ctx, metric): s and its encoded values
 *  vals[0..n) (bytes). */
int gpd_store_merged_stat(gpd_store_merged_t *w, int64_t uid, int64_t ctx, uint32_t metric,
                          const gpd_store_mstat_t *s, const uint8_t *vals, size_t n);
/** Tag shard w as shard `ord` of the merge `nonce` (its shard_of row). */
int gpd_store_merged_shard_tag(gpd_store_merged_t *w, const char *nonce, uint32_t ord);
/** Commit shard w and point *img at its image of *n bytes (w's, valid
 *  until gpd_store_merged_close). */
int gpd_store_merged_image(gpd_store_merged_t *w, const uint8_t **img, size_t *n);
/** Append the context, frame and stat rows of shard image img[0..n)
 *  (read-only, the caller's until this returns): ATTACH, INSERT ...
 *  SELECT, DETACH.  A malformed image fails with GPD_ESTORE. */
int gpd_store_merged_shard_add(gpd_store_merged_t *w, uint8_t *img, size_t n);
/** Create the main file's `shard` table (docs/FORMATS.md "Sharded merged
 *  files"). */
int gpd_store_merged_shard_table(gpd_store_merged_t *w);
/** One row of it. */
typedef struct gpd_store_shard_row_s {
  int64_t ord;
  const char *name, *nonce;
  uint64_t bytes, xxh64, contexts, keys, profiles;
} gpd_store_shard_row_t;
int gpd_store_merged_shard_row(gpd_store_merged_t *w, const gpd_store_shard_row_t *r);
/** Commit and close the file (the caller renames it).  w stays to be
 *  closed. */
int gpd_store_merged_commit(gpd_store_merged_t *w, const char *label);
/** Release w (any state; a closed one: nothing). */
void gpd_store_merged_close(gpd_store_merged_t *w);

#endif

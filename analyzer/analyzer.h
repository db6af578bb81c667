/* analyzer.h - offline aggregation of saved profiles (`gpuprof merge`,
 * docs/ANALYZER.md).
 *
 * A merge runs in three steps, the same with threads and with MPI ranks:
 *
 *   1. read: each worker (thread or rank) reads a contiguous slice of the
 *      inputs into one part (gpd_mpart_t): its profiles, numbered 1..n in
 *      input order, their side rows, the union of their calling contexts
 *      (deduplicated per uid by Merkle id), and their metric values twice
 *      (profile-major and grouped per (uid, context, metric)).
 *   2. reduce: the parts are folded, in input order, into one result
 *      (mout.c, gpd_mout_write): profile ids are offset by the profiles of earlier
 *      parts, contexts are matched by (uid, Merkle id) -- no consensus on
 *      ids is needed because equal call paths hash to equal ids on every
 *      node (Zhou et al., "Scalable Analysis of GPU-accelerated
 *      Applications with HPCToolkit", sec. 6.1; the DCCG slides' hash ids)
 *      -- and the per-context value lists are concatenated.
 *   3. write: statistics per (uid, context, metric) over the n profiles of
 *      that uid (absent = 0), then one new .gpdb (format 3).
 *
 * Under MPI the reduction is partitioned by context-id range (mshard.c):
 * each rank reduces one range into an in-memory shard, and rank 0 appends
 * the shards to the file it writes.  Every call here is single-threaded
 * on its own part; parts are never shared between threads while being
 * built.
 *
 * Files, one noun each, named as their prefix: cluster.c (gpd_cluster_*:
 * options, the threaded driver; cluster-mpi.c the MPI program), minput.c,
 * mpart.c, mtable.c, mstat.c, mout.c, mshard.c, mbins.c, mstore.c, buf.c;
 * profile.c opens saved profiles.  The GPU analysis (gpu-analysis.h) and
 * the advisor (advisor.h) are separate libraries in this folder.
 */
#ifndef GPD_ANALYZER_H
#define GPD_ANALYZER_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <sqlite3.h>

#include "gpuprof/metric.h"
#include "gpuprof/outfile.h"
#include "merged-write.h"
#include "store-read.h"

/** Format of a merged file (store-read.h). */
#define GPD_MERGE_FORMAT GPD_STORE_FORMAT_MERGED

/** Bytes of one pmetric / stat.vals record (store-read.h). */
#define GPD_PMETRIC_REC GPD_STORE_PMETRIC_REC
#define GPD_CVAL_REC GPD_STORE_CVAL_REC

/* ---- buf.c: growable byte buffer ---- */

typedef struct gpd_buf_s {
  uint8_t *p;
  size_t n, cap;
} gpd_buf_t;

/** Append n bytes. 0 or -ENOMEM. */
int gpd_buf_put(gpd_buf_t *b, const void *d, size_t n);
/** Make room for n more bytes after b->n.  0 or -ENOMEM. */
int gpd_buf_reserve(gpd_buf_t *b, size_t n);
/** Fault in bytes [from, to) of the array at p now, in one system call
 *  (madvise MADV_POPULATE_WRITE), for large arrays about to be filled,
 *  instead of a page fault per 4 KiB page (what that costs a merge:
 *  docs/PERFORMANCE.md).  Only ranges of 1 MiB or more; a kernel without
 *  it (before Linux 5.14) is left to fault as usual. */
void gpd_buf_prefault(void *p, size_t from, size_t to);
void gpd_buf_free(gpd_buf_t *b);

/** Tables copied row by row from inputs to the output. */
typedef enum gpd_mtable_e {
  GPD_MT_PROFILE,
  GPD_MT_BACKEND,
  GPD_MT_MODULE,
  GPD_MT_STRING,
  GPD_MT_GPUBIN,
  GPD_MT_PCSAMPLE, /* the PC-sample tables: only from inputs that have them */
  GPD_MT_PCSAMPLE_CUBIN,
  GPD_MT_PCSAMPLE_STAT,
  GPD_MT_TRACE_EVENT, /* the trace tables (GPD_TRACE_SCHEMA): from inputs that have them */
  GPD_MT_TRACE_LAUNCH,
  GPD_MT_TRACE_STAT,
  GPD_MT_TRACE_CPU_SAMPLE,
  GPD_MT_CPU_SAMPLE_STAT,
  GPD_MT_TRACE_DUTY, /* the tracing windows (GPD_TRACEWIN_SCHEMA): from inputs that have them */
  GPD_MT_TRACE_WINDOW,
  GPD_MT_TRACE_DUTY_LAUNCH, /* the last of the trace tables (has_trace bits) */
  GPD_MT_CONTEXT,
  GPD_MT_FRAME,
  GPD_MT__COUNT
} gpd_mtable_t;

/** Name, column list (as in docs/FORMATS.md) and the index of the column
 *  holding a profile id (-1: none) of table t. */
const char *gpd_mtable_name(gpd_mtable_t t);
const char *gpd_mtable_cols(gpd_mtable_t t);
int gpd_mtable_pcol(gpd_mtable_t t);
int gpd_mtable_ncols(gpd_mtable_t t);

/** Encode the current row of st (all its columns) into b.  Column pcol
 *  (>= 0), an integer profile id, is replaced by pid_local.  0, -ENOMEM or
 *  -E2BIG (a row over 64 MiB). */
int gpd_mtable_row_encode(gpd_buf_t *b, sqlite3_stmt *st, int pcol, int64_t pid_local);
/** Decode one row at p[*off..n) and bind it to ins (?1..?ncols); an
 *  integer in column pcol gets poff added.  Advances *off.  0 or -EINVAL
 *  (malformed). */
int gpd_mtable_row_bind(const uint8_t *p, size_t n, size_t *off, sqlite3_stmt *ins, int pcol, int64_t poff);

/* ---- mpart.c: what one worker read ---- */

/** One profile-major value: (context, metric) -> value. */
typedef struct gpd_mval_rec_s {
  int64_t ctx;
  uint32_t metric;
  uint32_t pad;
  double v;
} gpd_mval_rec_t;

/** One context-major value: profile (part-local, 1-based) -> value. */
typedef struct gpd_cval_rec_s {
  uint32_t prof;
  uint32_t pad;
  double v;
} gpd_cval_rec_t;

/** One profile of a part: its uid and its rows in gpd_mpart_t.pm (the
 *  daemon's node merge has its own gpd_mprof_t). */
typedef struct gpd_mpart_prof_s {
  int64_t uid;
  uint64_t pm_off, pm_n; /* slice of gpd_mpart_t.pm */
} gpd_mpart_prof_t;

typedef struct gpd_mctx_s {
  int64_t uid, id;
  uint64_t off, len;   /* encoded context row in ctxrows */
  uint64_t foff, flen; /* encoded frame rows in framerows */
  uint32_t src;        /* input (part-local index) that brought it */
  uint32_t pad;
} gpd_mctx_t;

typedef struct gpd_mkey_s {
  int64_t uid, ctx;
  uint32_t metric, pad;
  uint64_t off, n; /* slice of gpd_mpart_t.cv */
} gpd_mkey_t;

/** Open-addressing index: 64-bit hash -> element index + 1. */
typedef struct gpd_mpart_index_s {
  uint32_t *slot;
  size_t cap; /* power of two, 0 when empty */
} gpd_mpart_index_t;

typedef struct gpd_mpart_s {
  /* profile, backend, module, string, gpubin, pcsample* and trace rows,
   * profile ids local */
  gpd_buf_t rows;
  /* GPU binaries the selected profiles refer to, where they lie: records
   * of the 32-character hash, u32 length, the input's folder (bytes) */
  gpd_buf_t bins;
  gpd_mpart_prof_t *prof;
  size_t nprof, capprof;
  gpd_mval_rec_t *pm; /* per profile, sorted by (ctx, metric) */
  size_t npm, cappm;
  gpd_mctx_t *ctx;
  size_t nctx, capctx;
  gpd_mpart_index_t ctx_ix;
  gpd_buf_t ctxrows, framerows;
  gpd_mkey_t *key; /* after gpd_mpart_group */
  size_t nkey;
  gpd_cval_rec_t *cv;
  size_t ncv;
  uint64_t in_bytes; /* size of the inputs read */
  uint32_t ninputs;  /* inputs read (not counting skipped ones) */
  uint8_t *wire;     /* adopted byte form the arrays point into (read-only), or NULL */
} gpd_mpart_t;

void gpd_mpart_init(gpd_mpart_t *p);
void gpd_mpart_free(gpd_mpart_t *p);
/** Build key/cv (context-major grouping of pm) after the last input.
 *  0 or -ENOMEM. */
int gpd_mpart_group(gpd_mpart_t *p);
/** Byte form of a part (mpart.c): a head of GPD_MPART_HEAD bytes (magic,
 *  counts of the GPD_MPART_NARR arrays), then each array padded to 8. */
#define GPD_MPART_NARR 9
#define GPD_MPART_HEAD (24 + 8 * GPD_MPART_NARR)
typedef struct gpd_mseg_s {
  const void *p;
  size_t n;
} gpd_mseg_t;
/** Head of p's byte form into head, and its arrays (p's own memory, to be
 *  sent as they are; each followed by zeros to a multiple of 8 bytes).
 *  Returns the byte form's total size. */
size_t gpd_mpart_segs(const gpd_mpart_t *p, uint8_t head[GPD_MPART_HEAD], gpd_mseg_t seg[GPD_MPART_NARR]);
/** From a received head: offset and length of each array in the byte form
 *  and its total size.  0 or -EINVAL (not a part head, absurd sizes). */
int gpd_mpart_layout(const uint8_t head[GPD_MPART_HEAD], uint64_t off[GPD_MPART_NARR], uint64_t len[GPD_MPART_NARR],
                     uint64_t *total);
/** Serialize a grouped part into out (appended) / rebuild it from bytes
 *  (copied once) / from a malloc'd, 8-aligned buffer b that p then owns
 *  (its arrays point into it; freed by gpd_mpart_free, also on failure).
 *  Validated: -EINVAL on anything out of range.  0 or -errno.  A part
 *  rebuilt so is read-only and has no context index (it is only folded:
 *  gpd_mout_write). */
int gpd_mpart_pack(const gpd_mpart_t *p, gpd_buf_t *out);
int gpd_mpart_unpack(gpd_mpart_t *p, const uint8_t *b, size_t n);
int gpd_mpart_adopt(gpd_mpart_t *p, uint8_t *b, size_t n);
/** Rebuild p's context index from p->ctx[0..nctx).  0 or -ENOMEM. */
int gpd_mpart_reindex(gpd_mpart_t *p);
/** Append context (uid, id) whose encoded row is ctxrows[off, off+len)
 *  (no frames yet), brought by part-local input src.  0 or -ENOMEM. */
int gpd_mpart_ctx_add(gpd_mpart_t *p, int64_t uid, int64_t id, uint64_t off, uint64_t len, uint32_t src);
/** Index of context (uid, id) in p, or -1. */
long gpd_mpart_ctx_find(const gpd_mpart_t *p, int64_t uid, int64_t id);
/** 64-bit mix of up to three keys (the indexes' hash). */
uint64_t gpd_mpart_hash(int64_t a, int64_t b, int64_t c);
/** Make room for element nelem (load <= 1/2), rehashing the elements
 *  0..nelem-1 with hash_of.  0 or -ENOMEM. */
int gpd_mpart_index_reserve(gpd_mpart_index_t *ix, size_t nelem, uint64_t (*hash_of)(const void *c, size_t i), const void *c);
/** Insert element idx with hash h (after gpd_mpart_index_reserve). */
void gpd_mpart_index_insert(gpd_mpart_index_t *ix, uint64_t h, size_t idx);
void gpd_mpart_index_free(gpd_mpart_index_t *ix);

/* ---- minput.c: reading one .gpdb ---- */

/** Which profiles of an input are merged: all (job_id NULL, uid < 0), or
 *  only those of job `job_id` and/or owner `uid`. */
typedef struct gpd_minput_filter_s {
  const char *job_id;
  int64_t uid;
} gpd_minput_filter_t;

/** Read input `path` (format 2 or 3, opened read-only; a regular file
 *  only) into part p.  On error nothing of it stays in p, the result is
 *  < 0 and err holds a message that names the file.  Errors: -ENOENT ...
 *  (open), GPD_EBADVERSION (format newer than 3 or older than 2),
 *  GPD_ESTORE (not a profile, truncated, corrupt), -ENOMEM. */
int gpd_minput_read(gpd_mpart_t *p, const char *path, const gpd_minput_filter_t *f, char *err, size_t errn);

/* ---- mstat.c: summary statistics over profiles ---- */

/** Statistics of one (uid, context, metric) over the n profiles of that
 *  uid, absent values counting as 0 (the summary statistics of the
 *  HPCToolkit manual, "Metrics" chapter: Sum, Min, Mean, Max, StdDev,
 *  CoefVar).  stddev is the population standard deviation
 *  sqrt(sum((x - mean)^2) / n); cv = stddev / mean (0 when mean is 0).
 *  min_profile / max_profile: the lowest profile id holding min / max. */
typedef struct gpd_mstat_s {
  uint64_t n, nz;
  double sum, min, mean, max, stddev, cv;
  uint32_t min_profile, max_profile;
} gpd_mstat_t;

/** Statistics of the nz values vals (sorted by profile id) over the n
 *  profiles `profs` (sorted) of the same uid: profiles absent from vals
 *  hold 0.  Two passes (mean, then squared deviations).  nz <= n. */
void gpd_mstat_compute(gpd_mstat_t *s, const gpd_cval_rec_t *vals, size_t nz, const uint32_t *profs, size_t n);

/* ---- mout.c: folding parts and writing the output ---- */


/** Fold parts[0..nparts) (in input order; they stay owned by the caller
 *  and must outlive the call) and write the merged file `out`: written
 *  to a private temporary file beside it (0600) and renamed over it only
 *  when complete.  stats_out (may be NULL) receives counts for reports.
 *  0 or -errno / GPD_ESTORE with err set. */
typedef struct gpd_mout_info_s {
  uint64_t profiles, contexts, keys, values;
  uint64_t sparse_bytes; /* pmetric + stat.vals blobs */
  uint64_t dense_bytes;  /* profiles x contexts x metrics with a value x 8 bytes (one array
                            serves both orders) */
  uint64_t dense_all_bytes; /* the same over every metric gpuprof defines */
  uint64_t bins, bins_copied, bins_missing; /* GPU binaries referred to; copied now; not found or bad */
} gpd_mout_info_t;
int gpd_mout_write(gpd_mpart_t *parts, size_t nparts, const char *out, uint32_t ninputs,
                      gpd_mout_info_t *info, char *err, size_t errn);

/** The merged file being written (mout.c): a private temporary file
 *  beside `out` (gpuprof/outfile.h), no journal, one transaction, renamed over
 *  `out` only by gpd_mout_finish.  The threaded merge and rank 0 of the
 *  MPI merge write through it, so both give the same rows.  Single thread. */
typedef struct gpd_mout_s {
  gpd_store_merged_t w; /* the connection and its inserts (store/merged-write.h) */
  gpd_outfile_t of; /* the temporary file; renamed over out by gpd_mout_finish */
  const char *out;
  char *err;
  size_t errn;
  gpd_mout_info_t *info;        /* counts: contexts, keys, values, sparse bytes as rows go in */
  uint8_t used[GPD_M__COUNT];     /* metrics with a value (set by gpd_mout_pmetric_blob; for dense_bytes) */
  uint32_t nshards;               /* shard files out names (gpd_mout_shards) */
} gpd_mout_t;

/** Create the temporary file, its schema, meta (next_profile_id =
 *  nprof + 1, merged_inputs) and metric_desc, and begin the transaction.
 *  info is zeroed and then counts what is written.  0 or -errno /
 *  GPD_ESTORE with err set (nothing is left behind). */
int gpd_mout_open(gpd_mout_t *o, const char *out, uint32_t nprof, uint32_t ninputs, gpd_mout_info_t *info,
                  char *err, size_t errn);
/** Insert encoded side rows p[0..n) (gpd_mtable_row_encode with a table byte
 *  before each); profile ids get poff added.  0, -EINVAL or GPD_ESTORE. */
int gpd_mout_rows(gpd_mout_t *o, const uint8_t *p, size_t n, int64_t poff);
/** Insert one context (its encoded row) and its encoded frame rows. */
int gpd_mout_context(gpd_mout_t *o, const uint8_t *row, size_t rn, const uint8_t *frames, size_t fn);
/** Build profile i of p's pmetric blob (GPD_PMETRIC_REC records) into
 *  blob (replacing its content); marks the metrics seen in used.  0 or
 *  -ENOMEM. */
int gpd_mout_pmetric_blob(const gpd_mpart_t *p, size_t i, gpd_buf_t *blob, uint8_t used[GPD_M__COUNT]);
/** Insert profile profile_id's pmetric blob of n bytes. */
int gpd_mout_pmetric(gpd_mout_t *o, int64_t profile_id, const uint8_t *blob, size_t n);
/** Encode n context-major values as stat.vals records (GPD_CVAL_REC
 *  bytes each) at dst. */
void gpd_mout_cval_encode(uint8_t *dst, const gpd_cval_rec_t *v, size_t n);
/** Insert the stat row of (uid, ctx, metric) with statistics s and its
 *  encoded values vals[0..n) (bytes). */
int gpd_mout_stat(gpd_mout_t *o, int64_t uid, int64_t ctx, uint32_t metric, const gpd_mstat_t *s,
                  const uint8_t *vals, size_t n);
/** Commit, close, copy the GPU binaries the parts refer to
 *  (gpd_mbins_copy), fsync and rename over `out`, then remove the shard
 *  files an earlier merge left under out's name beyond the ones out
 *  names (out.shard-NNN from NNN = nshards + 1 on, until one is missing); info->profiles and the
 *  dense sizes are set from nprof and the counts.  0 or < 0 with err
 *  set; gpd_mout_close is still to be called. */
int gpd_mout_finish(gpd_mout_t *o, uint32_t nprof, const gpd_mpart_t *parts, size_t nparts);
/** A shard: an in-memory database (SQLite's memdb) with only the
 *  context, frame and stat tables of a merged file, written through
 *  gpd_mout_context / gpd_mout_stat (gpd_mshard_write) by an owner rank of
 *  the MPI merge, in parallel with the other owners.  0 or GPD_ESTORE. */
int gpd_mout_open_shard(gpd_mout_t *o, gpd_mout_info_t *info, char *err, size_t errn);
/** Commit shard o and point *img at its database image of *n bytes
 *  (owned by o, valid until gpd_mout_close).  0 or < 0. */
int gpd_mout_image(gpd_mout_t *o, const uint8_t **img, size_t *n);
/** Append the rows of shard image img[0..n) (gpd_mout_image; read-only,
 *  the caller's, kept until this returns) to o's context, frame and stat
 *  tables: ATTACH, INSERT ... SELECT, DETACH.  Shards come in range order,
 *  so each appends to the B-trees.  0 or GPD_ESTORE (a malformed image
 *  included) with err set. */
int gpd_mout_shard_add(gpd_mout_t *o, uint8_t *img, size_t n);
/** Release o; the temporary file is removed unless finished. */
void gpd_mout_close(gpd_mout_t *o);
/** A shard file of a sharded merged file, as its writer reports it to
 *  rank 0 (sent as bytes between ranks of one program). */
typedef struct gpd_mout_shard_rec_s {
  int32_t ok;                 /* 1: written and renamed into place */
  char name[212];             /* its name beside the output (gpd_mout_shard_name) */
  uint64_t bytes, xxh64;      /* file size; XXH3-64 of its bytes */
  uint64_t contexts, keys, profiles, values, sparse_bytes;
  uint8_t used[GPD_M__COUNT]; /* metrics with a value in its pmetric blobs */
  double wall_s, cpu_s;       /* the rank's seconds from its start to the shard in place */
} gpd_mout_shard_rec_t;
/** Name of shard ord (1..) of output out: basename(out) + ".shard-NNN"
 *  into name[n].  0, or -EINVAL when the name would not pass
 *  gpd_shard_name_ok (then the merge writes one file). */
int gpd_mout_shard_name(const char *out, uint32_t ord, char *name, size_t n);
/** Save shard o (gpd_mout_open_shard, rows written) as shard ord of
 *  output out: tags it (shard_of: nonce, ord), commits, writes its image
 *  to a private temporary file beside out (mkstemp), fsyncs it and
 *  renames it to its name; rec gets name, size, hash and o's counts.  On
 *  failure nothing is left.  0 or < 0 with o's err set. */
int gpd_mout_shard_save(gpd_mout_t *o, const char *out, uint32_t ord, const char *nonce, gpd_mout_shard_rec_t *rec);
/** Record shards rec[0..n) (ord 1..n) with nonce in o's `shard` table and
 *  add their counts to o's info and used metrics. */
int gpd_mout_shards(gpd_mout_t *o, const gpd_mout_shard_rec_t *rec, size_t n, const char *nonce);
/** Remove the shard files rec[0..n) beside out that were written (ok). */
void gpd_mout_shards_remove(const char *out, const gpd_mout_shard_rec_t *rec, size_t n);


/* ---- shard.c: the partitioned reduction of the MPI merge ---- */

/** Owner (0..nown-1) of context id ctx: consecutive ranges of the signed
 *  64-bit id order, so that owners' sorted outputs follow each other in
 *  key order.  even: nown equal ranges (a sharded output, where every
 *  owner writes its own file); else owner 0 (the writer, which also
 *  appends the other shards) gets half the range of each other owner. */
uint32_t gpd_mshard_owner(int64_t ctx, uint32_t nown, int even);
/** Append part p's contexts (with their encoded rows and frames) and keys
 *  (with their values, profile ids made global: local + base) to out[j],
 *  j = the owner of the context (out has nown buffers).  0, -ENOMEM or
 *  -E2BIG (a context's rows over 4 GiB). */
int gpd_mshard_split(const gpd_mpart_t *p, uint32_t base, uint32_t nown, int even, gpd_buf_t *out);
/** Reduce the split buffers in[0..nin) an owner received, in rank order
 *  (= input order), into a write stream appended to out: its contexts
 *  once each (the first rank's rows), sorted by (uid, id), then one stat
 *  row per (uid, context, metric), sorted, with the statistics of
 *  gpd_mstat_compute over the uid's profiles and the values in profile
 *  order.  uids[i] is the uid of global profile i + 1 (nprof of them).
 *  Counts go to *nctx, *nkey.  0, -ENOMEM or -EINVAL (malformed). */
int gpd_mshard_reduce(const gpd_buf_t *in, size_t nin, const int64_t *uids, uint32_t nprof, gpd_buf_t *out,
                      uint64_t *nctx, uint64_t *nkey);
/** Insert write stream p[0..n) (gpd_mshard_reduce) into o.  0, -EINVAL
 *  or GPD_ESTORE (err of o set). */
int gpd_mshard_write(gpd_mout_t *o, const uint8_t *p, size_t n);
/** What gpd_mshard_early puts in its stream. */
enum { GPD_EARLY_ALL = 0,   /* side rows, GPU-binary records, pmetric blobs */
       GPD_EARLY_SIDE = 1,  /* no blobs: a sharded output keeps them in a shard */
       GPD_EARLY_BLOBS = 2 /* only the blobs: a reader rank's for its owner's shard */ };
/** A rank's profile-major side for the writer, appended to out: its side
 *  rows and GPU-binary records, and its pmetric blobs with the metrics
 *  they use, as `what` says (GPD_EARLY_*).  0 or -ENOMEM. */
int gpd_mshard_early(const gpd_mpart_t *p, int what, gpd_buf_t *out);
/** Insert an early stream p[0..n) of the rank whose profiles start after
 *  global id base; *bins is pointed at its GPU-binary records (inside p,
 *  not owned) for gpd_mout_finish.  0, -EINVAL or GPD_ESTORE. */
int gpd_mshard_early_write(gpd_mout_t *o, const uint8_t *p, size_t n, uint32_t base, gpd_buf_t *bins);

/* ---- mbins.c: the GPU binaries beside a merged file ---- */

/** Copy each GPU binary the parts refer to (gpd_mpart_t.bins) from
 *  gpubins/<hash>.gpubin beside its input into gpubins/ beside `out`
 *  (made 0700 if missing; used only when it is the caller's own and not
 *  writable by others), once per hash, only when the content hashes to
 *  the name (XXH3-128), with its saved <hash>.nvdisasm text when there is
 *  one.  A binary already there is kept.  Each binary that cannot be
 *  copied is a note on stderr.  Counts go to info->bins, bins_copied,
 *  bins_missing.  0 or -ENOMEM. */
int gpd_mbins_copy(const gpd_mpart_t *parts, size_t nparts, const char *out, gpd_mout_info_t *info);

/* ---- cluster.c: the threaded driver (cluster-mpi.c: the MPI one) ---- */

typedef struct gpd_cluster_opts_s {
  const char *out;
  const char *const *inputs;
  size_t ninputs;
  gpd_minput_filter_t filter;
  int keep_going; /* skip unreadable inputs (reported) instead of failing */
  int threads;    /* 0: one per online CPU, at most the inputs */
  int quiet;
  int single_file; /* MPI: rank 0 writes every row into out (no shard files) */
} gpd_cluster_opts_t;

/** Read inputs [lo, hi) of o into part p (single thread).  Each failing
 *  input is reported on stderr; without keep_going the first one stops
 *  the read and is returned (< 0).  *skipped counts inputs left out. */
int gpd_cluster_read_slice(gpd_mpart_t *p, const gpd_cluster_opts_t *o, size_t lo, size_t hi, size_t *skipped);

/** Usage text of `gpuprof merge`. */
extern const char gpd_cluster_usage[];
/** Parse `merge` arguments (argv[0] is "merge").  0, 1 (--help), or
 *  -EINVAL with err set.  o points into argv. */
int gpd_cluster_parse(int argc, char **argv, gpd_cluster_opts_t *o, char *err, size_t errn);
/** Seconds of clock id (CLOCK_MONOTONIC, CLOCK_PROCESS_CPUTIME_ID). */
double gpd_cluster_clock(clockid_t id);
/** One line on stderr (unless o->quiet): wall and CPU seconds of the read
 *  phase (t[0]..t[1]) and of the reduce + write phase (t[1]..t[2]). */
void gpd_cluster_phases(const gpd_cluster_opts_t *o, const char *who, const double t[3], const double c[3]);
/** One line on stderr (unless o->quiet): counts and sizes of the result. */
void gpd_cluster_summary(const gpd_cluster_opts_t *o, const gpd_mout_info_t *s, double secs, uint64_t in_bytes);

/** `gpuprof merge` on one machine: o->threads workers read slices, the
 *  main thread folds and writes.  Returns 0 (all merged), 1 (--keep-going
 *  left some out; output written), or < 0 (nothing written). */
int gpd_cluster_run(const gpd_cluster_opts_t *o, gpd_mout_info_t *info);
/** Bytes of the inputs the last gpd_cluster_run read. */
extern uint64_t gpd_cluster_in_bytes;

#endif

/* cluster-mpi.c - gpuprof-merge-mpi: `gpuprof merge` across MPI ranks
 * (`mpirun -np N gpuprof merge -o OUT INPUT...`; gpuprof execs this
 * program when it finds itself started by mpirun).  docs/ANALYZER.md.
 *
 * Rank r reads inputs [n*r/N, n*(r+1)/N) into a part and groups it by
 * (uid, context, metric), all ranks at once; then every rank hears every
 * rank's outcome (a failure without --keep-going stops all, and nothing is
 * written) and the profile counts and uids.  The reduction is partitioned
 * (Zhou et al., "Scalable Analysis of GPU-accelerated Applications with
 * HPCToolkit", sec. 6.1-6.2; mshard.c): the context-id space is cut into
 * consecutive ranges, owner j owning range j (--single-file: rank 0's
 * half as wide, it is also the writer); every rank sends each owner its
 * contexts and (context, metric) values in that range (all-to-all), and
 * its profile-major side (side rows; pmetric blobs with --single-file)
 * straight to rank 0.  Each
 * owner matches contexts by (uid, Merkle id), concatenates values in rank
 * order -- which is input order, so profile ids and statistics equal
 * those of the threaded merge -- computes the statistics and writes its
 * rows, sorted, into a shard: an in-memory SQLite database (memdb), built
 * by all owners at once.  By default (a sharded output, docs/ANALYZER.md)
 * the ranges are equal and each owner k > 0 adds the pmetric blobs of the
 * processes it read and saves its shard as OUT.shard-00k, reporting it to
 * rank 0, which writes the profiles, side rows, its own blobs and range
 * and the `shard` table, and renames OUT into place last.  With
 * --single-file each owner sends rank 0 its shard's image and its blobs
 * instead; rank 0 writes the profile-major side and its own range while
 * the owners work, then appends the shards in range order (ATTACH,
 * INSERT ... SELECT: B-tree appends, no bind per value).
 * With a core per rank, waits are MPI's own (it progresses transfers as
 * fast as it can); on an oversubscribed node waiting ranks sleep between
 * polls (wait_idle, xfer_wait) instead of spinning in MPI, so that they
 * leave the cores to the others.
 * Calling contexts are matched by their Merkle ids, so ranks never agree
 * on ids with each other first.
 */
#include <errno.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "analyzer.h"
#include "gpuprof/error.h"

#define CHUNK ((size_t)1 << 30) /* bytes per MPI message (int counts) */
#define TAG_XCHG 1               /* rank k -> owner j: k's contexts and values in j's range */
#define TAG_ESIZE 2              /* rank k -> 0: bytes of its profile-major side */
#define TAG_EARLY 3              /* rank k -> 0: the side (gpd_mshard_early) */
#define TAG_WSIZE 4              /* owner -> 0: bytes of its write stream */
#define TAG_WRITE 5              /* owner -> 0: the stream (gpd_mshard_reduce) */
#define TAG_SHARD 6              /* owner -> 0: its shard file written (gpd_mout_shard_rec_t) */
#define TAG_BSIZE 7              /* reader -> its owner: bytes of its pmetric blobs */
#define TAG_BLOBS 8              /* reader -> its owner: the blobs (gpd_mshard_early, blobs only) */

static void need(int e, const char *what) {
  if (e < 0) {
    fprintf(stderr, "gpuprof: %s: %s\n", what, gpd_strerror(e));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

/* 1: a core per rank on this node, so waits spin in MPI.  0: more ranks
 * than cores; waits sleep POLL_NS between tests.  A sleep between tests
 * also stops the progress of transfers that move in fragments (no
 * single-copy mechanism), so it is short (what longer sleeps cost:
 * docs/PERFORMANCE.md). */
static int spin;
#define POLL_NS 200000

static void choose_wait(void) {
  MPI_Comm node;
  int local = 1;
  if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
    MPI_Comm_size(node, &local);
    MPI_Comm_free(&node);
  }
  spin = local <= sysconf(_SC_NPROCESSORS_ONLN);
}

/* Wait for a request; oversubscribed, without spinning: a rank that waits
 * for the others sleeps between tests, so that the waiting ranks leave
 * the cores to those still reading. */
static void wait_idle(MPI_Request *rq) {
  int done = 0;
  struct timespec ts = {0, POLL_NS};
  if (spin) {
    MPI_Wait(rq, MPI_STATUS_IGNORE);
    return;
  }
  for (;;) {
    MPI_Test(rq, &done, MPI_STATUS_IGNORE);
    if (done) return;
    nanosleep(&ts, NULL);
  }
}

/* Transfers: every chunk (<= 1 GiB) of every buffer is posted at once and
 * the requests are waited for like the small messages (oversubscribed:
 * sleeping between tests; blocking MPI_Send/MPI_Recv spin or yield until
 * the peer is scheduled, which on an oversubscribed node doubled the CPU
 * time of a 2-rank merge).  All of a rank's receives and sends of the exchange are
 * posted before it waits for any (no order between ranks to deadlock on). */
typedef struct xfer_s {
  MPI_Request *rq;
  int n, cap;
} xfer_t;

static void xfer_wait(xfer_t *x) {
  struct timespec ts = {0, POLL_NS};
  if (spin && x->n) MPI_Waitall(x->n, x->rq, MPI_STATUSES_IGNORE);
  for (int done = 0; x->n && !spin;) {
    MPI_Testall(x->n, x->rq, &done, MPI_STATUSES_IGNORE);
    if (done) break;
    nanosleep(&ts, NULL);
  }
  x->n = 0;
}

static MPI_Request *xfer_slot(xfer_t *x) {
  if (x->n == x->cap) {
    int nc = x->cap ? x->cap * 2 : 16;
    MPI_Request *n = realloc(x->rq, (size_t)nc * sizeof(*n));
    if (!n) need(-ENOMEM, "requests");
    x->rq = n;
    x->cap = nc;
  }
  return &x->rq[x->n++];
}

static void xfer_free(xfer_t *x) {
  free(x->rq);
  memset(x, 0, sizeof(*x));
}

static void xfer_send(xfer_t *x, const void *p, size_t n, int peer, int tag) {
  for (size_t o = 0; o < n; o += CHUNK) {
    size_t c = n - o < CHUNK ? n - o : CHUNK;
    MPI_Isend((const uint8_t *)p + o, (int)c, MPI_BYTE, peer, tag, MPI_COMM_WORLD, xfer_slot(x));
  }
}

/* Post the receive of n bytes into a new buffer (returned). */
static uint8_t *xfer_recv(xfer_t *x, uint64_t n, int peer, int tag) {
  uint8_t *b = malloc(n ? n : 1);
  if (!b) need(-ENOMEM, "receive buffer");
  gpd_buf_prefault(b, 0, n);
  for (size_t o = 0; o < n; o += CHUNK) {
    size_t c = n - o < CHUNK ? n - o : CHUNK;
    MPI_Irecv(b + o, (int)c, MPI_BYTE, peer, tag, MPI_COMM_WORLD, xfer_slot(x));
  }
  return b;
}

/* Post a sized send to rank 0: *size (which must live until the wait)
 * with tag_size, then the bytes with tag. */
static void send_sized(xfer_t *x, const gpd_buf_t *b, uint64_t *size, int tag_size, int tag) {
  *size = b->n;
  MPI_Isend(size, 1, MPI_UINT64_T, 0, tag_size, MPI_COMM_WORLD, xfer_slot(x));
  xfer_send(x, b->p, b->n, 0, tag);
}

/* Receive rank k's sized message into a new buffer. */
static uint8_t *recv_sized(int k, int tag_size, int tag, uint64_t *n) {
  xfer_t x = {0};
  MPI_Irecv(n, 1, MPI_UINT64_T, k, tag_size, MPI_COMM_WORLD, xfer_slot(&x));
  xfer_wait(&x);
  uint8_t *b = xfer_recv(&x, *n, k, tag);
  xfer_wait(&x);
  xfer_free(&x);
  return b;
}

/* SQLite's bound on attached files: readers attach every shard.
 * GPD_MERGE_MAX_SHARDS lowers it (tests: more ranks than shards). */
static int attach_limit(void) {
  int n = gpd_store_shard_max();
  const char *e = getenv("GPD_MERGE_MAX_SHARDS");
  if (e && atoi(e) >= 1 && atoi(e) < n) n = atoi(e);
  return n;
}

/* 32 hex digits that tie the shards to this merge's main file */
static void make_nonce(char nonce[40]) {
  uint8_t b[16] = {0};
  if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b)) {
    uint64_t t = (uint64_t)gpd_cluster_clock(CLOCK_REALTIME) * 1000000000u ^ (uint64_t)getpid() << 32;
    memcpy(b, &t, 8);
    t = (uint64_t)(gpd_cluster_clock(CLOCK_MONOTONIC) * 1e9);
    memcpy(b + 8, &t, 8);
  }
  for (int i = 0; i < 16; i++) snprintf(nonce + 2 * i, 3, "%02x", b[i]);
}

int main(int argc, char **argv) {
  int rank, size, rc = 1;
  gpd_cluster_opts_t o;
  char err[512];
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  choose_wait();
  double t[3], c[3];
  t[0] = gpd_cluster_clock(CLOCK_MONOTONIC);
  c[0] = gpd_cluster_clock(CLOCK_PROCESS_CPUTIME_ID);
  int r = gpd_cluster_parse(argc, argv, &o, err, sizeof(err));
  if (r != 0) {
    if (rank == 0) {
      if (r < 0) fprintf(stderr, "gpuprof: %s\n", err);
      fputs(gpd_cluster_usage, r < 0 ? stderr : stdout);
    }
    MPI_Finalize();
    return r < 0 ? 64 : 0;
  }
  if (size == 1) { /* one rank: the threaded merge, one thread */
    gpd_mout_info_t info;
    o.threads = 1;
    r = gpd_cluster_run(&o, &info);
    if (r >= 0) gpd_cluster_summary(&o, &info, gpd_cluster_clock(CLOCK_MONOTONIC) - t[0], gpd_cluster_in_bytes);
    MPI_Finalize();
    return r < 0 ? 1 : r ? 3 : 0;
  }
  gpd_mpart_t mine;
  size_t skipped = 0;
  gpd_mpart_init(&mine);
  size_t lo = o.ninputs * (size_t)rank / (size_t)size, hi = o.ninputs * (size_t)(rank + 1) / (size_t)size;
  int e = gpd_cluster_read_slice(&mine, &o, lo, hi, &skipped);
  /* every rank's outcome, profile count, skipped inputs, bytes read, inputs read */
  uint64_t my[5] = {e >= 0, mine.nprof, skipped, mine.in_bytes, mine.ninputs};
  uint64_t(*all)[5] = calloc((size_t)size, sizeof(*all));
  uint32_t *base = calloc((size_t)size + 1, sizeof(*base));
  if (!all || !base) need(-ENOMEM, "ranks");
  MPI_Request rq;
  MPI_Iallgather(my, 5, MPI_UINT64_T, all, 5, MPI_UINT64_T, MPI_COMM_WORLD, &rq);
  wait_idle(&rq);
  t[1] = gpd_cluster_clock(CLOCK_MONOTONIC);
  c[1] = gpd_cluster_clock(CLOCK_PROCESS_CPUTIME_ID);
  int all_ok = 1;
  unsigned long long sk_all = 0, inb_all = 0, nin_all = 0;
  for (int k = 0; k < size; k++) {
    all_ok &= all[k][0] == 1;
    sk_all += all[k][2];
    inb_all += all[k][3];
    nin_all += all[k][4];
    if (all[k][1] > (uint64_t)INT32_MAX - base[k]) need(-EOVERFLOW, "too many profiles");
    base[k + 1] = base[k] + (uint32_t)all[k][1];
  }
  if (!all_ok || nin_all == 0) {
    if (rank == 0 && !all_ok && !o.quiet)
      fprintf(stderr, "gpuprof: nothing written (--keep-going merges the other inputs)\n");
    if (rank == 0 && all_ok) fprintf(stderr, "gpuprof: no input could be read; nothing written\n");
    gpd_mpart_free(&mine);
    free(all);
    free(base);
    MPI_Finalize();
    return rank == 0 || e < 0 ? 1 : 0;
  }
  uint32_t nprof = base[size];
  /* a sharded output: owner k > 0 writes shard k of the file beside it
   * (docs/ANALYZER.md).  Readers attach at most attach_limit() shards:
   * with more ranks only the first limit + 1 own ranges (the others read
   * and hand their rows to the owners, their pmetric blobs to rank 0).
   * One file when asked or when the output's name makes no shard name. */
  char sname[256], nonce[40] = "";
  int lim = attach_limit();
  uint32_t nown = (uint32_t)(size - 1 <= lim ? size : lim + 1);
  int shards = !o.single_file && lim > 0 && gpd_mout_shard_name(o.out, nown - 1, sname, sizeof(sname)) == 0;
  if (!shards) nown = (uint32_t)size;
  int owner = rank < (int)nown;
  if (shards) {
    if (rank == 0) make_nonce(nonce);
    MPI_Ibcast(nonce, sizeof(nonce), MPI_CHAR, 0, MPI_COMM_WORLD, &rq);
    wait_idle(&rq);
  }
  /* the uid of every profile, in global id order (statistics per uid) */
  int64_t *uids = malloc(((size_t)nprof + 1) * sizeof(*uids)), *myu = malloc((mine.nprof + 1) * sizeof(*myu));
  int *cnt = malloc((size_t)size * sizeof(int)), *dsp = malloc((size_t)size * sizeof(int));
  if (!uids || !myu || !cnt || !dsp) need(-ENOMEM, "profiles");
  for (size_t i = 0; i < mine.nprof; i++) myu[i] = mine.prof[i].uid;
  for (int k = 0; k < size; k++) cnt[k] = (int)all[k][1], dsp[k] = (int)base[k];
  MPI_Iallgatherv(myu, (int)mine.nprof, MPI_INT64_T, uids, cnt, dsp, MPI_INT64_T, MPI_COMM_WORLD, &rq);
  wait_idle(&rq);
  /* split by owner: rank j owns context range j */
  gpd_buf_t *to = calloc(nown, sizeof(*to)), early = {0};
  uint64_t *ssz = calloc((size_t)size, sizeof(*ssz)), *rsz = calloc((size_t)size, sizeof(*rsz));
  if (!to || !ssz || !rsz) need(-ENOMEM, "split");
  need(gpd_mshard_split(&mine, base[rank], nown, shards, to), "split");
  for (uint32_t j = 0; j < nown; j++) ssz[j] = to[j].n;
  MPI_Ialltoall(ssz, 1, MPI_UINT64_T, rsz, 1, MPI_UINT64_T, MPI_COMM_WORLD, &rq);
  wait_idle(&rq);
  /* the exchange: every rank's range-j values to owner j, at once */
  xfer_t x = {0}, xe = {0};
  gpd_buf_t *from = calloc((size_t)size, sizeof(*from));
  if (!from) need(-ENOMEM, "exchange");
  for (int k = 0; k < size; k++)
    if (rsz[k] && k != rank) from[k].p = xfer_recv(&x, rsz[k], k, TAG_XCHG), from[k].n = rsz[k];
  for (int k = 0; k < size; k++)
    if (ssz[k] && k != rank) xfer_send(&x, to[k].p, to[k].n, k, TAG_XCHG);
  if (owner) { /* own range from itself: no copy */
    from[rank] = to[rank];
    to[rank] = (gpd_buf_t){0};
  }
  int ret = 0;
  gpd_buf_t ws = {0};
  uint64_t nc, nk;
  if (!owner) {
    /* a reader only (sharded, more ranks than shards): its side rows to
     * rank 0, its ranges' rows to their owners, its pmetric blobs to
     * owner rank % nown (the blobs are half the bytes: spread, not all
     * on rank 0) */
    uint64_t esz, bsz;
    uint32_t my_owner = (uint32_t)rank % nown;
    gpd_buf_t blobs = {0};
    need(gpd_mshard_early(&mine, my_owner == 0 ? GPD_EARLY_ALL : GPD_EARLY_SIDE, &early), "profile-major side");
    send_sized(&xe, &early, &esz, TAG_ESIZE, TAG_EARLY);
    if (my_owner != 0) {
      need(gpd_mshard_early(&mine, GPD_EARLY_BLOBS, &blobs), "pmetric blobs");
      bsz = blobs.n;
      MPI_Isend(&bsz, 1, MPI_UINT64_T, (int)my_owner, TAG_BSIZE, MPI_COMM_WORLD, xfer_slot(&xe));
      xfer_send(&xe, blobs.p, blobs.n, (int)my_owner, TAG_BLOBS);
    }
    xfer_wait(&x);
    xfer_wait(&xe);
    gpd_buf_free(&early);
    gpd_buf_free(&blobs);
  } else if (rank != 0) {
    /* the profile-major side to the writer (not waited for), then the
     * owned range once every rank's part of it is here */
    uint64_t esz, wsz;
    need(gpd_mshard_early(&mine, shards ? GPD_EARLY_SIDE : GPD_EARLY_ALL, &early), "profile-major side");
    send_sized(&xe, &early, &esz, TAG_ESIZE, TAG_EARLY);
    xfer_wait(&x);
    need(gpd_mshard_reduce(from, (size_t)size, uids, nprof, &ws, &nc, &nk), "reduce");
    for (int k = 0; k < size; k++) gpd_buf_free(&from[k]);
    /* its rows into a shard (in memory), whose image goes to rank 0 */
    gpd_mout_t sh;
    gpd_mout_info_t si;
    const uint8_t *img;
    size_t imgn;
    gpd_buf_t msg = {0};
    if (shards) {
      /* its range and the pmetric blobs of its profiles into its own file */
      gpd_mout_shard_rec_t rec = {0};
      gpd_buf_t blob = {0};
      if ((e = gpd_mout_open_shard(&sh, &si, err, sizeof(err))) < 0 || (e = gpd_mshard_write(&sh, ws.p, ws.n)) < 0)
        goto shfail;
      gpd_buf_free(&ws);
      for (size_t i = 0; i < mine.nprof; i++)
        if ((e = gpd_mout_pmetric_blob(&mine, i, &blob, sh.used)) < 0 ||
            (e = gpd_mout_pmetric(&sh, (int64_t)base[rank] + (int64_t)i + 1, blob.p, blob.n)) < 0)
          goto shfail;
      /* and those of the readers it serves (rank % nown == its rank) */
      uint64_t served = 0;
      for (int r = (int)nown + rank; r < size && e >= 0; r += (int)nown) {
        uint64_t n;
        gpd_buf_t nb = {0};
        uint8_t *b = recv_sized(r, TAG_BSIZE, TAG_BLOBS, &n);
        e = gpd_mshard_early_write(&sh, b, n, base[r], &nb);
        served += all[r][1];
        free(b);
      }
      if (e >= 0) e = gpd_mout_shard_save(&sh, o.out, (uint32_t)rank, nonce, &rec);
      rec.profiles = served;
    shfail:
      if (e < 0) {
        fprintf(stderr, "gpuprof: rank %d: %s\n", rank,
                e == -EINVAL ? "malformed data from a rank" : e == -ENOMEM ? "out of memory" : err);
        rec.ok = 0;
      }
      rec.profiles += mine.nprof;
      rec.wall_s = gpd_cluster_clock(CLOCK_MONOTONIC) - t[0];
      rec.cpu_s = gpd_cluster_clock(CLOCK_PROCESS_CPUTIME_ID) - c[0];
      gpd_buf_free(&blob);
      gpd_buf_free(&ws);
      gpd_mout_close(&sh); /* a shard not renamed into place is removed */
      MPI_Isend(&rec, sizeof(rec), MPI_BYTE, 0, TAG_SHARD, MPI_COMM_WORLD, xfer_slot(&xe));
      xfer_wait(&xe);
      gpd_buf_free(&early);
    } else if ((e = gpd_mout_open_shard(&sh, &si, err, sizeof(err))) < 0 ||
               (e = gpd_mshard_write(&sh, ws.p, ws.n)) < 0 || (e = gpd_mout_image(&sh, &img, &imgn)) < 0) {
      fprintf(stderr, "gpuprof: rank %d: %s\n", rank, e == -EINVAL ? "malformed data from a rank" : err);
      MPI_Abort(MPI_COMM_WORLD, 1);
    } else {
    gpd_buf_free(&ws);
    uint64_t counts[3] = {si.contexts, si.keys, si.sparse_bytes};
    need(gpd_buf_put(&msg, counts, sizeof(counts)), "shard");
    need(gpd_buf_put(&msg, img, imgn), "shard");
    gpd_mout_close(&sh);
    send_sized(&xe, &msg, &wsz, TAG_WSIZE, TAG_WRITE);
    xfer_wait(&xe);
    gpd_buf_free(&msg);
    gpd_buf_free(&early);
    }
  } else {
    /* rank 0: the writer.  Its own profile-major side while the sends go */
    gpd_mout_info_t info;
    gpd_mout_t out;
    gpd_mpart_t *bins = calloc((size_t)size, sizeof(*bins)); /* only .bins, pointing into early streams */
    uint8_t **eb = calloc((size_t)size, sizeof(*eb));
    gpd_buf_t blob = {0};
    gpd_mout_shard_rec_t *recs = calloc((size_t)size, sizeof(*recs)); /* recs[k - 1]: rank k's shard */
    if (!bins || !eb || !recs) need(-ENOMEM, "writer");
    if ((ret = gpd_mout_open(&out, o.out, nprof, (uint32_t)nin_all, &info, err, sizeof(err))) < 0) goto wfail;
    if ((ret = gpd_mout_rows(&out, mine.rows.p, mine.rows.n, 0)) < 0) goto wfail;
    for (size_t i = 0; i < mine.nprof; i++)
      if ((ret = gpd_mout_pmetric_blob(&mine, i, &blob, out.used)) < 0 ||
          (ret = gpd_mout_pmetric(&out, (int64_t)i + 1, blob.p, blob.n)) < 0)
        goto wfail;
    bins[0].bins = mine.bins;
    /* the other ranks' profile-major sides, all posted at once */
    uint64_t *esz = calloc((size_t)size, sizeof(*esz));
    if (!esz) need(-ENOMEM, "writer");
    for (int k = 1; k < size; k++) MPI_Irecv(&esz[k], 1, MPI_UINT64_T, k, TAG_ESIZE, MPI_COMM_WORLD, xfer_slot(&xe));
    xfer_wait(&xe);
    for (int k = 1; k < size; k++) eb[k] = xfer_recv(&xe, esz[k], k, TAG_EARLY);
    xfer_wait(&xe);
    for (int k = 1; k < size; k++)
      if ((ret = gpd_mshard_early_write(&out, eb[k], esz[k], base[k], &bins[k].bins)) < 0) break;
    free(esz);
    if (ret < 0) goto wfail;
    /* range 0, its own: straight into the file, first (the lowest ids) */
    xfer_wait(&x);
    if ((ret = gpd_mshard_reduce(from, (size_t)size, uids, nprof, &ws, &nc, &nk)) < 0) goto wfail;
    for (int k = 0; k < size; k++) gpd_buf_free(&from[k]);
    if ((ret = gpd_mshard_write(&out, ws.p, ws.n)) < 0) goto wfail;
    gpd_buf_free(&ws);
    if (shards) {
      /* the owners' reports: every shard in place, or none is kept */
      for (int k = 1; k < (int)nown; k++)
        MPI_Irecv(&recs[k - 1], sizeof(*recs), MPI_BYTE, k, TAG_SHARD, MPI_COMM_WORLD, xfer_slot(&xe));
      xfer_wait(&xe);
      for (int k = 1; k < (int)nown && ret >= 0; k++)
        if (recs[k - 1].ok != 1 || !gpd_store_shard_name_ok(recs[k - 1].name)) {
          recs[k - 1].ok = 0;
          snprintf(err, sizeof(err), "rank %d could not write its shard; nothing written", k);
          ret = -EIO;
        }
      if (ret >= 0) ret = gpd_mout_shards(&out, recs, nown - 1, nonce);
      if (ret >= 0) ret = gpd_mout_finish(&out, nprof, bins, (size_t)size);
      if (ret < 0) gpd_mout_shards_remove(o.out, recs, nown - 1);
      goto wfail;
    }
    /* the owners' rows, in range order, each as it comes */
    for (int k = 1; k < size; k++) {
      uint64_t n;
      uint8_t *w = recv_sized(k, TAG_WSIZE, TAG_WRITE, &n);
      if (n < 24) {
        ret = -EINVAL;
      } else {
        uint64_t counts[3];
        memcpy(counts, w, sizeof(counts));
        info.contexts += counts[0];
        info.keys += counts[1];
        info.sparse_bytes += counts[2];
        ret = gpd_mout_shard_add(&out, w + 24, n - 24);
      }
      free(w);
      if (ret < 0) goto wfail;
    }
    ret = gpd_mout_finish(&out, nprof, bins, (size_t)size);
  wfail:
    if (ret == -EINVAL) snprintf(err, sizeof(err), "malformed data from a rank");
    if (ret == -ENOMEM) snprintf(err, sizeof(err), "out of memory");
    gpd_mout_close(&out);
    gpd_buf_free(&blob);
    gpd_buf_free(&ws);
    for (int k = 0; k < size; k++) free(eb[k]);
    free(eb);
    free(bins); /* its .bins point into mine and eb: not freed through it */
    if (ret < 0) {
      fprintf(stderr, "gpuprof: %s\n", err);
      MPI_Abort(MPI_COMM_WORLD, 1); /* the other ranks may wait on rank 0 */
    }
    char who[64];
    t[2] = gpd_cluster_clock(CLOCK_MONOTONIC);
    c[2] = gpd_cluster_clock(CLOCK_PROCESS_CPUTIME_ID);
    gpd_cluster_summary(&o, &info, t[2] - t[0], inb_all);
    char sh[48] = "";
    if (shards) snprintf(sh, sizeof(sh), " (sharded: %u files)", nown);
    snprintf(who, sizeof(who), "%d ranks%s, rank 0", size, sh);
    gpd_cluster_phases(&o, who, t, c);
    if (shards && !o.quiet) { /* the other ranks' critical paths: each writes its own file */
      int sl = 1;
      for (int k = 2; k < (int)nown; k++)
        if (recs[k - 1].cpu_s > recs[sl - 1].cpu_s) sl = k;
      fprintf(stderr, "gpuprof: shard ranks: slowest %d: %.2f s (CPU %.2f s) until its shard was written\n", sl,
              recs[sl - 1].wall_s, recs[sl - 1].cpu_s);
    }
    if (sk_all)
      fprintf(stderr, "gpuprof: %llu of %zu inputs skipped; %s holds the other %llu\n", sk_all, o.ninputs, o.out,
              nin_all);
    rc = sk_all ? 3 : 0;
    free(recs);
  }
  for (uint32_t j = 0; j < nown; j++) gpd_buf_free(&to[j]);
  free(to);
  free(from);
  xfer_free(&x);
  xfer_free(&xe);
  free(ssz);
  free(rsz);
  free(uids);
  free(myu);
  free(cnt);
  free(dsp);
  free(all);
  free(base);
  gpd_mpart_free(&mine);
  MPI_Finalize();
  return rank == 0 ? rc : 0;
}

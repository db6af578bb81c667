/* merge-mpi.c - gpuprof-merge-mpi: `gpuprof merge` across MPI ranks
 * (`mpirun -np N gpuprof merge -o OUT INPUT...`; gpuprof execs this
 * program when it finds itself started by mpirun).  docs/ANALYZER.md.
 *
 * Rank r reads inputs [n*r/N, n*(r+1)/N) into a part and groups it by
 * (uid, context, metric), all ranks at once.  The reduction is a stream to
 * rank 0 (Zhou et al., "Scalable Analysis of GPU-accelerated Applications
 * with HPCToolkit", sec. 6.1): each rank sends its packed part, rank 0
 * folds the parts in rank order -- which is input order, so profile ids
 * and statistics equal those of the threaded merge -- and writes OUT.
 * Waiting ranks sleep between polls (wait_idle) instead of spinning in
 * MPI, so that oversubscribed ranks leave the cores to the readers; so do
 * the bulk transfers (xfer_wait).
 * Calling contexts are matched by their Merkle ids, so ranks never agree
 * on ids with each other first.  A rank's failure (without --keep-going)
 * stops all: rank 0 hears every rank's outcome before it asks for any
 * part, and then nothing is written.
 */
#include <errno.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analyzer.h"
#include "gpuprof/error.h"

#define CHUNK ((size_t)1 << 30) /* bytes per MPI message (int counts) */
#define TAG_HDR 1                /* rank k -> 0: part size, skipped inputs, bytes read; or failed */
#define TAG_GO 2                 /* 0 -> rank k: send your part (1) or give up (0) */
#define TAG_DATA 3
#define FAILED UINT64_MAX

/* Wait for a request without spinning: a rank that waits for rank 0 (or
 * rank 0 for a slow reader) sleeps between tests, so that on an
 * oversubscribed node the waiting ranks leave the cores to those still
 * reading.  Large transfers use blocking calls once both sides are there. */
static void wait_idle(MPI_Request *rq) {
  int done = 0;
  struct timespec ts = {0, 2000000};
  for (;;) {
    MPI_Test(rq, &done, MPI_STATUS_IGNORE);
    if (done) return;
    nanosleep(&ts, NULL);
  }
}

static void send_idle(const void *b, int n, MPI_Datatype t, int to, int tag) {
  MPI_Request rq;
  MPI_Isend(b, n, t, to, tag, MPI_COMM_WORLD, &rq);
  wait_idle(&rq);
}

static void recv_idle(void *b, int n, MPI_Datatype t, int from, int tag) {
  MPI_Request rq;
  MPI_Irecv(b, n, t, from, tag, MPI_COMM_WORLD, &rq);
  wait_idle(&rq);
}

/* Bulk transfers: every chunk (<= 1 GiB) of every segment is posted at
 * once and the requests are waited for by sleeping between tests, like
 * the small messages: blocking MPI_Send/MPI_Recv spin (or yield) until
 * the peer is scheduled, which on an oversubscribed node doubled the CPU
 * time of a 2-rank merge. */
typedef struct xfer_s {
  MPI_Request rq[64];
  int n;
} xfer_t;

static void xfer_wait(xfer_t *x) {
  struct timespec ts = {0, 2000000};
  for (int done = 0; x->n;) {
    MPI_Testall(x->n, x->rq, &done, MPI_STATUSES_IGNORE);
    if (done) break;
    nanosleep(&ts, NULL);
  }
  x->n = 0;
}

static void xfer_post(xfer_t *x, void *p, size_t n, int peer, int send) {
  for (size_t o = 0; o < n; o += CHUNK) {
    size_t c = n - o < CHUNK ? n - o : CHUNK;
    if (x->n == 64) xfer_wait(x);
    if (send)
      MPI_Isend((uint8_t *)p + o, (int)c, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD, &x->rq[x->n++]);
    else
      MPI_Irecv((uint8_t *)p + o, (int)c, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD, &x->rq[x->n++]);
  }
}

/* A part goes as its head and then its arrays straight from the sender's
 * memory into their places in one buffer on rank 0, which uses them there
 * (gpd_mpart_adopt): no packing or unpacking copy. */
static void send_part(const uint8_t head[GPD_MPART_HEAD], const gpd_mseg_t seg[GPD_MPART_NARR]) {
  xfer_t x = {.n = 0};
  xfer_post(&x, (void *)head, GPD_MPART_HEAD, 0, 1);
  for (int i = 0; i < GPD_MPART_NARR; i++) xfer_post(&x, (void *)seg[i].p, seg[i].n, 0, 1);
  xfer_wait(&x);
}

static int recv_part(int from, uint64_t n, gpd_mpart_t *p) {
  uint8_t head[GPD_MPART_HEAD];
  uint64_t off[GPD_MPART_NARR], len[GPD_MPART_NARR], total;
  xfer_t x = {.n = 0};
  xfer_post(&x, head, sizeof(head), from, 0);
  xfer_wait(&x);
  /* the sender's own layout: a mismatch is a bug, not data to trust */
  if (gpd_mpart_layout(head, off, len, &total) < 0 || total != n) MPI_Abort(MPI_COMM_WORLD, 1);
  uint8_t *b = malloc(n);
  if (!b) MPI_Abort(MPI_COMM_WORLD, 1); /* the sender is blocked in MPI_Send */
  gpd_mprefault(b, 0, n);
  memcpy(b, head, sizeof(head));
  for (int i = 0; i < GPD_MPART_NARR; i++) {
    xfer_post(&x, b + off[i], len[i], from, 0);
    memset(b + off[i] + len[i], 0, (8 - (len[i] & 7)) & 7);
  }
  xfer_wait(&x);
  return gpd_mpart_adopt(p, b, n);
}

int main(int argc, char **argv) {
  int rank, size, rc = 1;
  gpd_mopts_t o;
  char err[512];
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  double t[3], c[3];
  t[0] = gpd_merge_clock(CLOCK_MONOTONIC);
  c[0] = gpd_merge_clock(CLOCK_PROCESS_CPUTIME_ID);
  int r = gpd_merge_parse(argc, argv, &o, err, sizeof(err));
  if (r != 0) {
    if (rank == 0) {
      if (r < 0) fprintf(stderr, "gpuprof: %s\n", err);
      fputs(gpd_merge_usage, r < 0 ? stderr : stdout);
    }
    MPI_Finalize();
    return r < 0 ? 64 : 0;
  }
  gpd_mpart_t mine;
  size_t skipped = 0;
  gpd_mpart_init(&mine);
  size_t lo = o.ninputs * (size_t)rank / (size_t)size, hi = o.ninputs * (size_t)(rank + 1) / (size_t)size;
  int e = gpd_merge_read_slice(&mine, &o, lo, hi, &skipped);
  if (rank != 0) {
    /* header, then the part when rank 0 says go */
    uint8_t head[GPD_MPART_HEAD];
    gpd_mseg_t seg[GPD_MPART_NARR];
    uint64_t hdr[3] = {FAILED, skipped, mine.in_bytes};
    int go = 0;
    if (e >= 0) hdr[0] = gpd_mpart_segs(&mine, head, seg);
    send_idle(hdr, 3, MPI_UINT64_T, 0, TAG_HDR);
    recv_idle(&go, 1, MPI_INT, 0, TAG_GO);
    if (go) send_part(head, seg);
    gpd_mpart_free(&mine);
    MPI_Finalize();
    return e < 0 ? 1 : 0;
  }
  /* rank 0: every rank's outcome first; a failure anywhere (without
   * --keep-going) means nothing is written */
  uint64_t(*hdr)[3] = calloc((size_t)size, sizeof(*hdr));
  gpd_mpart_t *parts = calloc((size_t)size, sizeof(*parts));
  if (!hdr || !parts) MPI_Abort(MPI_COMM_WORLD, 1);
  int all_ok = e >= 0;
  unsigned long long sk_all = skipped, inb_all = mine.in_bytes;
  for (int k = 1; k < size; k++) {
    recv_idle(hdr[k], 3, MPI_UINT64_T, k, TAG_HDR);
    all_ok &= hdr[k][0] != FAILED;
    sk_all += hdr[k][1];
    inb_all += hdr[k][2];
  }
  t[1] = gpd_merge_clock(CLOCK_MONOTONIC);
  c[1] = gpd_merge_clock(CLOCK_PROCESS_CPUTIME_ID);
  parts[0] = mine;
  for (int k = 1; k < size; k++) {
    int go = all_ok;
    send_idle(&go, 1, MPI_INT, k, TAG_GO);
    if (go && (e = recv_part(k, hdr[k][0], &parts[k])) < 0) {
      fprintf(stderr, "gpuprof: part of rank %d: %s\n", k, gpd_strerror(e));
      all_ok = 0;
    }
  }
  if (!all_ok) {
    if (!o.quiet) fprintf(stderr, "gpuprof: nothing written (--keep-going merges the other inputs)\n");
  } else {
    gpd_mwrite_info_t info;
    uint32_t ninputs = 0;
    for (int k = 0; k < size; k++) ninputs += parts[k].ninputs;
    if (ninputs == 0) {
      fprintf(stderr, "gpuprof: no input could be read; nothing written\n");
      e = GPD_ESTORE;
    } else if ((e = gpd_mresult_write(parts, (size_t)size, o.out, ninputs, &info, err, sizeof(err))) < 0) {
      fprintf(stderr, "gpuprof: %s\n", err);
    } else {
      char who[64];
      t[2] = gpd_merge_clock(CLOCK_MONOTONIC);
      c[2] = gpd_merge_clock(CLOCK_PROCESS_CPUTIME_ID);
      gpd_merge_summary(&o, &info, t[2] - t[0], inb_all);
      snprintf(who, sizeof(who), "%d ranks, rank 0", size);
      gpd_merge_phases(&o, who, t, c);
      if (sk_all)
        fprintf(stderr, "gpuprof: %llu of %zu inputs skipped; %s holds the other %u\n", sk_all, o.ninputs, o.out,
                ninputs);
    }
    rc = e < 0 ? 1 : sk_all ? 3 : 0;
  }
  for (int k = 0; k < size; k++) gpd_mpart_free(&parts[k]);
  free(parts);
  free(hdr);
  MPI_Finalize();
  return rc;
}

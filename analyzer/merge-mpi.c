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
 * Calling contexts are matched by their Merkle ids, so ranks never agree
 * on ids with each other first.  A rank's failure (without --keep-going)
 * stops all: nothing is written.
 */
#include <errno.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer.h"
#include "gpuprof/error.h"

#define CHUNK ((size_t)1 << 30) /* bytes per MPI message (int counts) */
#define TAG_SIZE 1
#define TAG_DATA 2

static int send_part(const gpd_buf_t *b) {
  uint64_t n = b->n;
  MPI_Send(&n, 1, MPI_UINT64_T, 0, TAG_SIZE, MPI_COMM_WORLD);
  for (size_t o = 0; o < b->n; o += CHUNK) {
    size_t c = b->n - o < CHUNK ? b->n - o : CHUNK;
    MPI_Send(b->p + o, (int)c, MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD);
  }
  return 0;
}

static int recv_part(int from, gpd_mpart_t *p) {
  uint64_t n;
  MPI_Recv(&n, 1, MPI_UINT64_T, from, TAG_SIZE, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  uint8_t *b = malloc(n ? n : 1);
  if (!b) return -ENOMEM;
  for (size_t o = 0; o < n; o += CHUNK) {
    size_t c = n - o < CHUNK ? n - o : CHUNK;
    MPI_Recv(b + o, (int)c, MPI_BYTE, from, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  int err = gpd_mpart_unpack(p, b, n);
  free(b);
  return err;
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
  /* all ranks learn whether any failed: then nothing is written */
  int ok = e >= 0, all_ok = 0;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  unsigned long long sk = skipped, sk_all = 0, inb = mine.in_bytes, inb_all = 0;
  MPI_Reduce(&sk, &sk_all, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  MPI_Reduce(&inb, &inb_all, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (!all_ok) {
    if (rank == 0 && !o.quiet)
      fprintf(stderr, "gpuprof: nothing written (--keep-going merges the other inputs)\n");
    gpd_mpart_free(&mine);
    MPI_Finalize();
    return 1;
  }
  t[1] = gpd_merge_clock(CLOCK_MONOTONIC);
  c[1] = gpd_merge_clock(CLOCK_PROCESS_CPUTIME_ID);
  if (rank != 0) {
    gpd_buf_t b = {0};
    int pe = gpd_mpart_pack(&mine, &b);
    gpd_mpart_free(&mine);
    if (pe < 0) {
      fprintf(stderr, "gpuprof: rank %d: %s\n", rank, gpd_strerror(pe));
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    send_part(&b);
    gpd_buf_free(&b);
  } else {
    gpd_mpart_t *parts = calloc((size_t)size, sizeof(*parts));
    gpd_mwrite_info_t info;
    uint32_t ninputs = 0;
    if (!parts) MPI_Abort(MPI_COMM_WORLD, 1);
    parts[0] = mine;
    for (int k = 1; k < size; k++)
      if ((e = recv_part(k, &parts[k])) < 0) {
        fprintf(stderr, "gpuprof: part of rank %d: %s\n", k, gpd_strerror(e));
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
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
    for (int k = 0; k < size; k++) gpd_mpart_free(&parts[k]);
    free(parts);
    rc = e < 0 ? 1 : sk_all ? 3 : 0;
  }
  MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Finalize();
  return rc;
}

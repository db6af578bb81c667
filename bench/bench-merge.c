/* bench-merge - `gpuprof merge` throughput (MB of input per second per
 * core) with threads and MPI ranks, rank efficiency, and the size of the
 * sparse storage against a dense layout (docs/PERFORMANCE.md, "Cluster
 * merge").
 *
 *   bench-merge --gpuprof BIN/gpuprof [--mpirun mpirun] [--nodes 64]
 *               [--contexts 100000] [--procs 4] [--dir DIR] [--ranks 2,4] [--repeat 3]
 *
 * Synthetic node profiles (format 2, the store's schema): each node file
 * holds --procs processes (ranks) and --contexts calling contexts, of which
 * 80 % are the job's common code (the same Merkle ids on every node) and
 * 20 % are the node's own (data-dependent paths); each process has
 * non-zero GPUOP, GKER and GKER:COUNT on 30 % of the contexts (kernels),
 * with a per-rank imbalance.  Files are made once per parameter set in
 * --dir and reused.  The baseline of the table is the 1-rank run.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gpuprof/metric.h"
#include "store-fixture.h"

static uint64_t mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const char *what) {
  fprintf(stderr, "bench-merge: %s\n", what);
  exit(1);
}

/* ids as SQLite orders them (signed) */
static int cmp_signed(const void *a, const void *b) {
  int64_t x = (int64_t) * (const uint64_t *)a, y = (int64_t) * (const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* context i of node n: ids of common contexts do not depend on n */
static uint64_t ctx_id(long i, long shared, int node) {
  return mix((uint64_t)i * 2654435761u + (i < shared ? 0 : (uint64_t)(node + 1) << 40)) | 1;
}

static void gen_node(const char *path, int node, long nctx, int procs) {
  gpd_store_fixture_t *fx;
  long shared = nctx * 8 / 10;
  if (gpd_store_fixture_create(path, &fx) < 0) die(path);
  char label[64], host[32];
  snprintf(host, sizeof(host), "node%04d", node);
  for (long i = 0; i < nctx; i++) {
    /* parent: an earlier context (a bushy tree, depth ~ log) */
    long par = i ? (long)(mix((uint64_t)i) % (uint64_t)i) : -1;
    if (i >= shared && par >= 0 && par >= shared && mix((uint64_t)i ^ 7) % 4 == 0) par = par % shared;
    int kernel = mix((uint64_t)i ^ 0x55) % 10 < 3;
    snprintf(label, sizeof(label), kernel ? "void solver::kernel_%ld<float>(float*, int)" : "solver::step_%ld", i);
    if (gpd_store_fixture_context(fx, 1000, ctx_id(i, shared, node), par < 0 ? 0 : ctx_id(par, shared, node),
                                  kernel ? 3 : 1, "/opt/app/lib/libsolver.so", i * 16, label) < 0)
      die("context");
  }
  for (int r = 0; r < procs; r++) {
    int rank = node * procs + r;
    if (gpd_store_fixture_process(fx, r + 1, 10000 + r, host, rank, r) < 0) die("profile");
  }
  /* metric rows in primary-key order: profile, context id, metric */
  uint64_t *ids = malloc((size_t)nctx * sizeof(*ids));
  long nk = 0;
  for (long i = 0; i < nctx; i++)
    if (mix((uint64_t)i ^ 0x55) % 10 < 3) ids[nk++] = ctx_id(i, shared, node);
  qsort(ids, (size_t)nk, sizeof(*ids), cmp_signed);
  static const int mids[3] = {GPD_M_GPUOP, GPD_M_GKER, GPD_M_GKER_COUNT};
  for (int r = 0; r < procs; r++) {
    int rank = node * procs + r;
    for (long k = 0; k < nk; k++) {
      double base = (double)(mix(ids[k]) % 1000000 + 1000);
      double imb = 1.0 + 0.05 * (rank % 7) + ((ids[k] & 63) == 0 ? 0.5 * (rank % 3) : 0);
      double cnt = (double)(mix(ids[k] ^ 3) % 100 + 1);
      for (int j = 0; j < 3; j++)
        if (gpd_store_fixture_metric(fx, r + 1, ids[k], (unsigned)mids[j], j == 2 ? cnt : base * imb) < 0)
          die("metric");
    }
  }
  free(ids);
  if (gpd_store_fixture_close(fx) < 0) die("commit");
}

typedef struct res_s {
  double secs, read_s, write_s, read_cpu, write_cpu; /* phases: of rank 0 under MPI */
  double shard_s, shard_cpu; /* sharded output: the slowest other rank, start to its shard written */
  double sparse_kib, dense_kib, ratio, ratio_all;
  int nmetrics;
  double cpu; /* user + system seconds of the command and its children */
} res_t;

/* run cmd, stderr to a file, parse gpuprof's summary lines */
static int run(const char *cmd, res_t *r) {
  static char full[(1 << 17) + 256];
  char line[2048];
  snprintf(full, sizeof(full), "%s 2>/tmp/bench-merge.%d.err", cmd, (int)getpid());
  struct rusage u0, u1;
  getrusage(RUSAGE_CHILDREN, &u0);
  double t0 = now();
  int rc = system(full);
  r->secs = now() - t0;
  getrusage(RUSAGE_CHILDREN, &u1);
  r->cpu = (double)(u1.ru_utime.tv_sec - u0.ru_utime.tv_sec + u1.ru_stime.tv_sec - u0.ru_stime.tv_sec) +
           (double)(u1.ru_utime.tv_usec - u0.ru_utime.tv_usec + u1.ru_stime.tv_usec - u0.ru_stime.tv_usec) / 1e6;
  snprintf(full, sizeof(full), "/tmp/bench-merge.%d.err", (int)getpid());
  FILE *f = fopen(full, "r");
  while (f && fgets(line, sizeof(line), f)) {
    char *s;
    if ((s = strstr(line, "values stored ")))
      sscanf(s, "values stored %lf KiB sparse (both orders) vs %lf KiB dense (%lfx; %lfx against all %d metrics)",
             &r->sparse_kib, &r->dense_kib, &r->ratio, &r->ratio_all, &r->nmetrics);
    if ((s = strstr(line, ": reading ")))
      sscanf(s, ": reading %lf s (CPU %lf s), reduce + write %lf s (CPU %lf s)", &r->read_s, &r->read_cpu,
             &r->write_s, &r->write_cpu);
    if ((s = strstr(line, "shard ranks: slowest "))) {
      int k;
      sscanf(s, "shard ranks: slowest %d: %lf s (CPU %lf s)", &k, &r->shard_s, &r->shard_cpu);
    }
    if (rc != 0) fputs(line, stderr);
  }
  if (f) fclose(f);
  unlink(full);
  return rc;
}

int main(int argc, char **argv) {
  const char *gpuprof = NULL, *mpirun = "mpirun", *dir = "/tmp/gpd-bench-merge", *ranks = "2,4";
  int nodes = 64, procs = 4, repeat = 3;
  long nctx = 100000;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--gpuprof")) gpuprof = argv[i + 1];
    else if (!strcmp(argv[i], "--mpirun")) mpirun = argv[i + 1];
    else if (!strcmp(argv[i], "--dir")) dir = argv[i + 1];
    else if (!strcmp(argv[i], "--ranks")) ranks = argv[i + 1];
    else if (!strcmp(argv[i], "--nodes")) nodes = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--procs")) procs = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--contexts")) nctx = atol(argv[i + 1]);
    else if (!strcmp(argv[i], "--repeat")) repeat = atoi(argv[i + 1]);
    else {
      fprintf(stderr, "bench-merge: unknown option %s\n", argv[i]);
      return 64;
    }
  }
  if (!gpuprof || nodes < 1 || procs < 1 || nctx < 10) {
    fprintf(stderr, "usage: bench-merge --gpuprof PATH [--mpirun P] [--nodes N] [--contexts C] [--procs P] "
                    "[--dir D] [--ranks 2,4] [--repeat R]\n");
    return 64;
  }
  char sub[4096], path[4300], inputs[1 << 16] = "";
  setvbuf(stdout, NULL, _IOLBF, 0);
  snprintf(sub, sizeof(sub), "%s/n%d-c%ld-p%d", dir, nodes, nctx, procs);
  mkdir(dir, 0700);
  mkdir(sub, 0700);
  double tg = now();
  int made = 0;
  uint64_t in_bytes = 0;
  for (int n = 0; n < nodes; n++) {
    struct stat sb;
    snprintf(path, sizeof(path), "%s/node%04d.gpdb", sub, n);
    if (stat(path, &sb) != 0 || sb.st_size == 0) {
      char tmp[4400];
      snprintf(tmp, sizeof(tmp), "%s.tmp", path); /* complete files only: renamed when done */
      gen_node(tmp, n, nctx, procs);
      if (rename(tmp, path) < 0) return perror(path), 1;
      made++;
      stat(path, &sb);
    }
    in_bytes += (uint64_t)sb.st_size;
    if (strlen(inputs) + strlen(path) + 2 < sizeof(inputs)) {
      strcat(inputs, " ");
      strcat(inputs, path);
    }
  }
  printf("inputs: %d node files x %ld contexts (80 %% common), %d processes each: %.1f MB (%d generated in %.1f s)\n",
         nodes, nctx, procs, in_bytes / 1e6, made, now() - tg);
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  printf("machine: %ld cores; load %s", ncpu, "");
  {
    FILE *f = fopen("/proc/loadavg", "r");
    char l[128] = "?\n";
    if (f && fgets(l, sizeof(l), f)) fclose(f);
    printf("%s", l);
  }
  printf("\n%-22s %8s %8s %8s %10s %10s %13s %10s %15s %15s\n", "run", "wall s", "CPU s", "MB/s", "MB/s/core",
         "MB/CPU-s", "efficiency", "E (model)", "read wall/CPU", "write wall/CPU");
  char cmd[1 << 17], out[4400];
  snprintf(out, sizeof(out), "%s/merged.gpdb", sub);
  /* runs: -j 1 (the baseline), -j 2, then mpirun -np N for each of --ranks;
   * --repeat rounds, interleaved, so that a burst of load hits every run
   * alike; each row is the round with the median wall time */
  enum { MAXRUN = 16, MAXREP = 15 };
  int np[MAXRUN], nrun = 0;
  np[nrun++] = -1;
  if (ncpu >= 2) np[nrun++] = -2;
  for (const char *s = ranks; s && *s && nrun < MAXRUN;) {
    np[nrun++] = atoi(s);
    s = strchr(s, ',');
    if (s) s++;
  }
  if (repeat < 1) repeat = 1;
  if (repeat > MAXREP) repeat = MAXREP;
  static res_t all[MAXRUN][MAXREP];
  for (int rep = 0; rep < repeat; rep++)
    for (int k = 0; k < nrun; k++) {
      res_t *r = &all[k][rep];
      memset(r, 0, sizeof(*r));
      if (np[k] < 0)
        snprintf(cmd, sizeof(cmd), "%s merge -j %d -o %s %s", gpuprof, -np[k], out, inputs);
      else
        /* -j 1 as ranks: 1 rank = the -j 1 run (gpuprof runs the threaded path for one rank) */
        snprintf(cmd, sizeof(cmd),
                 "OMPI_MCA_btl=self,vader OMPI_ALLOW_RUN_AS_ROOT=1 "
                 "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 %s --oversubscribe -np %d %s merge -j 1 -o %s %s",
                 mpirun, np[k], gpuprof, out, inputs);
      if (run(cmd, r) != 0) return 1;
    }
  res_t med[MAXRUN];
  for (int k = 0; k < nrun; k++) {
    /* the round with the median wall time */
    int idx[MAXREP];
    for (int i = 0; i < repeat; i++) idx[i] = i;
    for (int i = 1; i < repeat; i++)
      for (int j = i; j > 0 && all[k][idx[j]].secs < all[k][idx[j - 1]].secs; j--) {
        int t = idx[j];
        idx[j] = idx[j - 1];
        idx[j - 1] = t;
      }
    med[k] = all[k][idx[repeat / 2]];
  }
  res_t base = med[0];
  for (int k = 0; k < nrun; k++) {
    const res_t *r = &med[k];
    int n = np[k] < 0 ? -np[k] : np[k];
    double cores = n < ncpu ? n : (double)ncpu;
    char name[64];
    if (np[k] < 0)
      snprintf(name, sizeof(name), "threads -j %d%s", n, k == 0 ? " (base)" : "");
    else
      snprintf(name, sizeof(name), "mpirun -np %d%s", n, n > ncpu ? " (oversub.)" : "");
    /* E (model): on n dedicated cores the run takes about rank 0's read
     * plus its reduce + write (CPU seconds, which the load does not
     * stretch); threads: the read's CPU over n threads plus the write */
    double tmodel = np[k] < 0 ? r->read_cpu / n + r->write_cpu : r->read_cpu + r->write_cpu;
    if (r->shard_cpu > tmodel) tmodel = r->shard_cpu; /* sharded: another rank may be the longest */
    printf("%-22s %8.2f %8.2f %8.1f %10.1f %10.1f %5.0f%% (%3.0f%%) %9.0f%% %7.2f/%-7.2f %7.2f/%-7.2f\n", name,
           r->secs, r->cpu, in_bytes / 1e6 / r->secs, in_bytes / 1e6 / r->secs / cores, in_bytes / 1e6 / r->cpu,
           100.0 * base.secs / (n * r->secs), 100.0 * base.secs / (cores * r->secs),
           tmodel > 0 ? 100.0 * base.cpu / (n * tmodel) : 0.0, r->read_s, r->read_cpu, r->write_s, r->write_cpu);
  }
  for (int k = 0; k < nrun; k++)
    if (med[k].shard_s > 0)
      printf("mpirun -np %d (sharded): slowest other rank %.2f s wall / %.2f CPU-s from its start to its shard "
             "written\n", np[k], med[k].shard_s, med[k].shard_cpu);
  struct stat sb;
  stat(out, &sb);
  printf("\n%d round%s, interleaved; each row is the round with the median wall time.\n", repeat,
         repeat == 1 ? "" : "s");
  printf("efficiency: T(1 rank) / (N x T(N ranks)); in parentheses per core used (min(N, %ld cores)).\n", ncpu);
  printf("E (model): CPU s of the base / (N x rank 0's read + reduce + write CPU s): what N dedicated cores\n"
         "would give, from this run's own phase CPU times (threads: read CPU / N + write CPU); a sharded output:\n"
         "the longer of rank 0 and the slowest other rank (start to its shard written, CPU s).\n");
  printf("MB/CPU-s: input MB per CPU second (user + system, all processes): the per-core rate a loaded machine\n"
         "does not distort.  mpirun times include MPI start-up.  read: reading + grouping (threads: all of them;\n"
         "MPI: rank 0's own reading, until every rank is done); write: reduce (receive, fold) + statistics + SQLite\n"
         "write, which rank 0 does alone.  1 rank = the -j 1 row (gpuprof execs the MPI program only for > 1 rank).\n");
  printf("\nstorage: values %.1f MB sparse (profile-major + context-major blobs) vs %.1f MB dense "
         "(processes x contexts x metrics with a value x 8 B): %.1fx smaller; %.1fx against a dense array of all %d "
         "metrics; merged file %.1f MB, inputs %.1f MB\n",
         base.sparse_kib / 1024, base.dense_kib / 1024, base.ratio, base.ratio_all, base.nmetrics, sb.st_size / 1e6,
         in_bytes / 1e6);
  return 0;
}

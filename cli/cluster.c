/* cluster.c - `gpuprof merge`: options, then the analyzer's threaded merge
 * (analyzer/cluster.c), or, when started by mpirun with more than one rank,
 * the MPI program gpuprof-merge-mpi installed beside gpuprof (the CLI
 * itself does not link MPI).  docs/ANALYZER.md.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "analyzer.h"
#include "cli.h"

#define GPD_EXIT_PARTIAL 3 /* written, some inputs skipped (--keep-going) */

/* Ranks of this job as the MPI launcher says (Open MPI, PMI, PMIx). */
static long mpi_size(void) {
  const char *v = getenv("OMPI_COMM_WORLD_SIZE");
  if (!v) v = getenv("PMI_SIZE");
  if (!v) v = getenv("PMIX_SIZE");
  return v ? strtol(v, NULL, 10) : 0;
}

static int exec_mpi(char **argv) {
  char self[PATH_MAX], helper[PATH_MAX + 32];
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) return -errno;
  self[n] = 0;
  char *slash = strrchr(self, '/');
  if (slash) *slash = 0;
  snprintf(helper, sizeof(helper), "%s/gpuprof-merge-mpi", self);
  argv[0] = helper;
  execv(helper, argv);
  return -errno;
}

int gpd_cmd_merge(int argc, char **argv) {
  gpd_cluster_opts_t o;
  gpd_mout_info_t info;
  char err[512];
  int r = gpd_cluster_parse(argc, argv, &o, err, sizeof(err));
  if (r == 1) {
    fputs(gpd_cluster_usage, stdout);
    return GPD_EXIT_OK;
  }
  if (r < 0) return gpd_cli_usage(gpd_cluster_usage, "%s", err);
  if (mpi_size() > 1) {
    r = exec_mpi(argv);
    fprintf(stderr, "gpuprof: started by mpirun but cannot run gpuprof-merge-mpi (%s): gpuprof was %s\n",
            strerror(-r), r == -ENOENT ? "built without MPI" : "installed incompletely");
    return GPD_EXIT_FAIL;
  }
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  r = gpd_cluster_run(&o, &info);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  if (r < 0) return GPD_EXIT_FAIL;
  gpd_cluster_summary(&o, &info, (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9, gpd_cluster_in_bytes);
  return r ? GPD_EXIT_PARTIAL : GPD_EXIT_OK;
}

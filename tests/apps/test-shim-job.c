/* test-shim-job - job tags from the environment (shim job.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define CHECK(c)                                                   \
  do {                                                             \
    if (!(c)) {                                                    \
      fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #c); \
      return 1;                                                    \
    }                                                              \
  } while (0)

int main(void) {
  static const char *vars[] = {"GPUPROF_JOB_ID", "SLURM_JOB_ID", "PBS_JOBID", "LSB_JOBID", "SLURM_STEP_ID",
                               "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID",
                               "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID", NULL};
  for (int i = 0; vars[i]; i++)
    unsetenv(vars[i]);
  gpd_shim_job_env_t j;
  gpd_shim__job_read(&j);
  CHECK(j.job_id[0] == 0 && j.rank == -1 && j.local_rank == -1);
  setenv("SLURM_JOB_ID", "1234", 1);
  setenv("SLURM_STEP_ID", "7", 1);
  setenv("SLURM_PROCID", "5", 1);
  setenv("SLURM_LOCALID", "1", 1);
  gpd_shim__job_read(&j);
  CHECK(strcmp(j.job_id, "1234") == 0 && strcmp(j.step_id, "7") == 0 && j.rank == 5 && j.local_rank == 1);
  setenv("OMPI_COMM_WORLD_RANK", "9", 1);
  setenv("OMPI_COMM_WORLD_LOCAL_RANK", "3", 1);
  setenv("GPUPROF_JOB_ID", "override", 1);
  gpd_shim__job_read(&j);
  CHECK(strcmp(j.job_id, "override") == 0 && j.rank == 9 && j.local_rank == 3);
  unsetenv("OMPI_COMM_WORLD_RANK");
  setenv("PMIX_RANK", "11", 1);
  setenv("SLURM_PROCID", "junk", 1);
  gpd_shim__job_read(&j);
  CHECK(j.rank == 11);
  unsetenv("PMIX_RANK");
  gpd_shim__job_read(&j);
  CHECK(j.rank == -1); /* "junk" is not a rank */
  printf("test-shim-job: ok\n");
  return 0;
}

/* job-env.c - job tags of this process, from the batch system / MPI launcher
 * environment.  Precedence (first set wins):
 *   job_id     GPUPROF_JOB_ID, SLURM_JOB_ID, PBS_JOBID, LSB_JOBID
 *   step_id    SLURM_STEP_ID
 *   rank       OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK, SLURM_PROCID
 *   local_rank OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID, SLURM_LOCALID
 * Unknown rank / local_rank: -1.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static const char *job_env_first(const char *const *names) {
  for (; *names; names++) {
    const char *v = getenv(*names);
    if (v && *v)
      return v;
  }
  return NULL;
}

static int job_env_int(const char *const *names) {
  const char *v = job_env_first(names);
  if (!v)
    return -1;
  char *end;
  errno = 0;
  long x = strtol(v, &end, 10);
  if (errno || end == v || *end || x < 0 || x > 0x7fffffff)
    return -1;
  return (int)x;
}

void gpd_shim_job_env_read(gpd_shim_job_env_t *j) {
  static const char *const job_names[] = {"GPUPROF_JOB_ID", "SLURM_JOB_ID", "PBS_JOBID", "LSB_JOBID", NULL};
  static const char *const step_names[] = {"SLURM_STEP_ID", NULL};
  static const char *const rank_names[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID",
                                           NULL};
  static const char *const local_names[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID",
                                            NULL};
  memset(j, 0, sizeof *j);
  const char *v = job_env_first(job_names);
  snprintf(j->job_id, sizeof j->job_id, "%s", v ? v : "");
  v = job_env_first(step_names);
  snprintf(j->step_id, sizeof j->step_id, "%s", v ? v : "");
  j->rank = job_env_int(rank_names);
  j->local_rank = job_env_int(local_names);
}

GPD_EXPORT void gpd_shim__job_read(gpd_shim_job_env_t *j) { gpd_shim_job_env_read(j); }

/* job.h - which batch job a process belongs to, from a source its user
 * cannot write.
 *
 * A Hello's job_id is what the process says (SLURM_JOB_ID from its
 * environment): anyone can claim any job.  The daemon (root) reads the
 * process's cgroup path instead (/proc/PID/cgroup, PID from SO_PEERCRED):
 * Slurm's cgroup plugins put every task in a job's cgroup that only root
 * (slurmstepd) can create or join:
 *   cgroup v1:  /slurm/uid_U/job_J/step_S/...  (also /slurm_NODE/...)
 *   cgroup v2:  /system.slice/slurmstepd.scope/job_J/step_S/...
 *               (also /system.slice/NODE_slurmstepd.scope/...)
 * J is decimal; U must be the process's uid.  A job found there is
 * verified; a job only claimed in the Hello is kept as a claim: shown as
 * "J (claimed)", and it selects processes for `--job J` only when the
 * asker is the process's own user (gpd_job_selects).
 * Any thread; no locks.
 */
#ifndef GPD_JOB_H
#define GPD_JOB_H

#include <stddef.h>
#include <sys/types.h>

/** Parse the text of a /proc/PID/cgroup file (NUL-terminated) for a Slurm
 *  job of uid: 1 with the job id in job[jn] and the step ("" when none)
 *  in step[sn], 0 when there is none (or it names another uid). */
int gpd_job_parse_cgroup(const char *text, uid_t uid, char *job, size_t jn, char *step, size_t sn);
/** Read PID's cgroup file (under $GPUPROFD_PROC_DIR, default /proc: tests
 *  point it at recorded files) and parse it: 1, 0, or -errno. */
int gpd_job_read(pid_t pid, uid_t uid, char *job, size_t jn, char *step, size_t sn);
/** 1 if `--job job` by a peer of uid peer_uid selects a process of uid
 *  uid whose job is pjob (verified: 1 when from its cgroup). */
int gpd_job_selects(const char *job, uid_t peer_uid, const char *pjob, int verified, uid_t uid);

#endif

/* job.c - a process's batch job from its cgroup path (job.h). */
#include "job.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The cgroup file of a process: a few lines; more is not a cgroup file. */
#define JOB_CGROUP_MAX 8192

/* If s starts with prefix followed by a decimal number ending at '/' or
 * the end: that number's text into out[n], the position after it.  Else
 * NULL. */
static const char *job_number(const char *s, const char *prefix, char *out, size_t n) {
  size_t lp = strlen(prefix), k = 0;
  if (strncmp(s, prefix, lp) != 0) return NULL;
  s += lp;
  while (s[k] >= '0' && s[k] <= '9') k++;
  if (k == 0 || k >= n || (s[k] != '/' && s[k] != 0)) return NULL;
  memcpy(out, s, k);
  out[k] = 0;
  return s + k;
}

/* "step_S" at s (S: letters, digits, '_' for Slurm's batch, extern,
 * interactive and numbered steps) into out[n]. */
static void job_step(const char *s, char *out, size_t n) {
  size_t k = 0;
  out[0] = 0;
  if (strncmp(s, "/step_", 6) != 0) return;
  s += 6;
  while ((s[k] >= '0' && s[k] <= '9') || (s[k] >= 'a' && s[k] <= 'z') || s[k] == '_') k++;
  if (k == 0 || k >= n || (s[k] != '/' && s[k] != 0)) return;
  memcpy(out, s, k);
  out[k] = 0;
}

/* One cgroup path: 1 with job and step when it is a Slurm job's. */
static int job_path(const char *path, uid_t uid, char *job, size_t jn, char *step, size_t sn) {
  char num[32];
  const char *s;
  if (!strncmp(path, "/slurm/", 7) || !strncmp(path, "/slurm_", 7)) { /* v1 */
    s = strchr(path + 1, '/');
    if (!s || !(s = job_number(s, "/uid_", num, sizeof num)) || strtoull(num, NULL, 10) != (unsigned long long)uid)
      return 0;
  } else if (!strncmp(path, "/system.slice/", 14)) { /* v2 */
    s = path + 14;
    const char *e = strchr(s, '/');
    size_t l = e ? (size_t)(e - s) : strlen(s);
    if (l < 16 || strncmp(s + l - 16, "slurmstepd.scope", 16) != 0 || (l > 16 && s[l - 17] != '_')) return 0;
    s = e;
    if (!s) return 0;
  } else {
    return 0;
  }
  if (!(s = job_number(s, "/job_", job, jn))) return 0;
  job_step(s, step, sn);
  return 1;
}

int gpd_job_parse_cgroup(const char *text, uid_t uid, char *job, size_t jn, char *step, size_t sn) {
  char line[1024];
  while (text && *text) {
    const char *nl = strchr(text, '\n');
    size_t l = nl ? (size_t)(nl - text) : strlen(text);
    if (l < sizeof line) {
      memcpy(line, text, l);
      line[l] = 0;
      /* hierarchy-ID:controllers:path; the path may hold ':' */
      char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
      if (c2 && job_path(c2 + 1, uid, job, jn, step, sn)) return 1;
    }
    text = nl ? nl + 1 : NULL;
  }
  job[0] = 0;
  step[0] = 0;
  return 0;
}

int gpd_job_read(pid_t pid, uid_t uid, char *job, size_t jn, char *step, size_t sn) {
  const char *dir = getenv("GPUPROFD_PROC_DIR");
  char path[4200], buf[JOB_CGROUP_MAX + 1];
  size_t n = 0;
  snprintf(path, sizeof path, "%s/%d/cgroup", dir && *dir ? dir : "/proc", (int)pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return -errno;
  for (;;) {
    ssize_t r = read(fd, buf + n, JOB_CGROUP_MAX - n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    n += (size_t)r;
    if (n == JOB_CGROUP_MAX) break;
  }
  close(fd);
  buf[n] = 0;
  return gpd_job_parse_cgroup(buf, uid, job, jn, step, sn);
}

int gpd_job_selects(const char *job, uid_t peer_uid, const char *pjob, int verified, uid_t uid) {
  if (!job || !job[0]) return 1;
  if (!pjob || strcmp(job, pjob) != 0) return 0;
  return verified || peer_uid == uid;
}

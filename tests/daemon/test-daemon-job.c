/* test-daemon-job.c - a process's job from recorded /proc/PID/cgroup
 * contents (daemon/job.c): Slurm's cgroup v1 and v2 layouts are verified
 * jobs; a user's own cgroup named like a job, another uid's path, a
 * malformed number, are not.  And who a claimed job selects. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "job.h"

static int parse(const char *text, uid_t uid, char *job, char *step) {
  return gpd_job_parse_cgroup(text, uid, job, 64, step, 64);
}

static void test_v1(void **state) {
  (void)state;
  char job[64], step[64];
  /* Slurm's cgroup/v1 plugin (task/cgroup), as read on a compute node */
  const char *rec = "12:pids:/slurm/uid_1000/job_4242/step_0/task_1\n"
                    "11:memory:/slurm/uid_1000/job_4242/step_0/task_1\n"
                    "7:freezer:/slurm/uid_1000/job_4242/step_0\n"
                    "1:name=systemd:/system.slice/slurmd.service\n"
                    "0::/system.slice/slurmd.service\n";
  assert_int_equal(parse(rec, 1000, job, step), 1);
  assert_string_equal(job, "4242");
  assert_string_equal(step, "0");
  /* the path names uid 1000: a process of uid 1001 there is not its job */
  assert_int_equal(parse(rec, 1001, job, step), 0);
  assert_string_equal(job, "");
  /* multiple-slurmd: /slurm_NODE */
  assert_int_equal(parse("4:cpuset:/slurm_node07/uid_5/job_77/step_batch\n", 5, job, step), 1);
  assert_string_equal(job, "77");
  assert_string_equal(step, "batch");
  assert_int_equal(parse("4:cpuset:/slurm/uid_5/job_77\n", 5, job, step), 1);
  assert_string_equal(step, "");
}

static void test_v2(void **state) {
  (void)state;
  char job[64], step[64];
  assert_int_equal(parse("0::/system.slice/slurmstepd.scope/job_123/step_4/user/task_0\n", 1000, job, step), 1);
  assert_string_equal(job, "123");
  assert_string_equal(step, "4");
  assert_int_equal(parse("0::/system.slice/node7_slurmstepd.scope/job_9/step_extern\n", 0, job, step), 1);
  assert_string_equal(job, "9");
  assert_string_equal(step, "extern");
}

static void test_forged(void **state) {
  (void)state;
  char job[64], step[64];
  const char *forged[] = {
      /* a user's delegated systemd subtree, named like Slurm's */
      "0::/user.slice/user-1000.slice/user@1000.service/app.slice/slurmstepd.scope/job_4242/step_0\n",
      "0::/user.slice/user-1000.slice/user@1000.service/slurm/uid_1000/job_4242\n",
      "0::/system.slice/notslurmstepd.scope/job_4242\n",
      "0::/system.slice/slurmstepd.scope.x/job_4242\n",
      "0::/system.slice/slurmstepd.scope/job_42x/step_0\n",
      "0::/system.slice/slurmstepd.scope/job_/step_0\n",
      "0::/system.slice/slurmstepd.scope\n",
      "4:cpuset:/slurm/uid_1000x/job_1\n",
      "4:cpuset:/slurm/job_1\n",
      "garbage without colons /slurm/uid_1000/job_1\n",
      "",
  };
  for (size_t i = 0; i < sizeof forged / sizeof *forged; i++) {
    strcpy(job, "x");
    assert_int_equal(parse(forged[i], 1000, job, step), 0);
    assert_string_equal(job, "");
  }
}

static void test_read(void **state) {
  (void)state;
  char dir[] = "/tmp/gpd-job-XXXXXX", path[128], job[64], step[64];
  assert_non_null(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/4711", dir);
  assert_int_equal(mkdir(path, 0755), 0);
  snprintf(path, sizeof path, "%s/4711/cgroup", dir);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs("0::/system.slice/slurmstepd.scope/job_55/step_1/user/task_0\n", f);
  fclose(f);
  setenv("GPUPROFD_PROC_DIR", dir, 1);
  assert_int_equal(gpd_job_read(4711, 1000, job, sizeof job, step, sizeof step), 1);
  assert_string_equal(job, "55");
  assert_string_equal(step, "1");
  assert_true(gpd_job_read(4712, 1000, job, sizeof job, step, sizeof step) < 0); /* no such file */
  unsetenv("GPUPROFD_PROC_DIR");
  unlink(path);
  snprintf(path, sizeof path, "%s/4711", dir);
  rmdir(path);
  rmdir(dir);
}

static void test_selects(void **state) {
  (void)state;
  /* no --job: everything */
  assert_true(gpd_job_selects(NULL, 0, "7", 0, 1000));
  assert_true(gpd_job_selects("", 0, "7", 0, 1000));
  /* a verified job selects for anyone who may see the process */
  assert_true(gpd_job_selects("7", 0, "7", 1, 1000));
  /* a claimed one: not for root asking about uid 1000's process */
  assert_false(gpd_job_selects("7", 0, "7", 0, 1000));
  /* its own user sees it */
  assert_true(gpd_job_selects("7", 1000, "7", 0, 1000));
  assert_false(gpd_job_selects("8", 1000, "7", 1, 1000));
  assert_false(gpd_job_selects("7", 1000, NULL, 0, 1000));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_v1),     cmocka_unit_test(test_v2),      cmocka_unit_test(test_forged),
      cmocka_unit_test(test_read),   cmocka_unit_test(test_selects),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

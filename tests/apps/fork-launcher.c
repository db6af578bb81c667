/* fork-launcher - forks W workers (default 4) that each do OpenCL work
 * (ocl-threads-like: K launches) and then either exit or exec another
 * program.  The launcher sets GPUPROF_JOB_ID (default "fork-test") and
 * OMPI_COMM_WORLD_RANK=<worker index> before forking each worker, so
 * the shim of each worker reports a job and a rank.  It does no OpenCL
 * itself before forking (OpenCL state does not survive fork).
 *
 * Usage: fork-launcher [W K [exec-path args...]]
 *   exec-path given: each worker, after its work, execs it (the exec'd
 *   image gets the shim again through LD_PRELOAD).
 * Exit 0 when every worker exited 0; 77 without a device. */
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ocl-common.h"

static const char *src = "__kernel void inc(__global int *y) { y[get_global_id(0)] += 1; }\n";

__attribute__((noinline)) static int worker(int idx, int K) {
  ocl_env_t e;
  if (ocl_env_open(&e, src))
    return OCL_SKIP;
  cl_int err;
  cl_mem b = clCreateBuffer(e.ctx, CL_MEM_READ_WRITE, 1024 * sizeof(int), NULL, &err);
  OCL_CHECK(err);
  int zero = 0;
  OCL_CHECK(clEnqueueFillBuffer(e.q, b, &zero, sizeof zero, 0, 1024 * sizeof(int), 0, NULL, NULL));
  cl_kernel k = clCreateKernel(e.prog, "inc", &err);
  OCL_CHECK(err);
  OCL_CHECK(clSetKernelArg(k, 0, sizeof b, &b));
  size_t g = 1024;
  for (int i = 0; i < K; i++)
    OCL_CHECK(clEnqueueNDRangeKernel(e.q, k, 1, NULL, &g, NULL, 0, NULL, NULL));
  int h[1024];
  OCL_CHECK(clEnqueueReadBuffer(e.q, b, CL_TRUE, 0, sizeof h, h, 0, NULL, NULL));
  OCL_CHECK(clFinish(e.q));
  clReleaseKernel(k);
  clReleaseMemObject(b);
  ocl_env_close(&e);
  printf("worker %d pid %d sum %d\n", idx, (int)getpid(), h[0] * 1024);
  fflush(stdout);
  return h[0] == K ? 0 : 1;
}

int main(int argc, char **argv) {
  int W = argc > 1 ? atoi(argv[1]) : 4;
  int K = argc > 2 ? atoi(argv[2]) : 20;
  if (!getenv("GPUPROF_JOB_ID") && !getenv("SLURM_JOB_ID"))
    setenv("GPUPROF_JOB_ID", "fork-test", 1);
  pid_t *pids = calloc((size_t)W, sizeof *pids);
  for (int i = 0; i < W; i++) {
    /* Set in the parent before fork: the shim's atfork handler registers
     * the child at once, with the environment it inherits. */
    char r[16];
    snprintf(r, sizeof r, "%d", i);
    setenv("OMPI_COMM_WORLD_RANK", r, 1);
    pid_t p = fork();
    if (p < 0) {
      perror("fork");
      return 1;
    }
    if (p == 0) {
      int rc = worker(i, K);
      if (rc == 0 && argc > 3) {
        execv(argv[3], &argv[3]);
        perror("execv");
        _exit(1);
      }
      _exit(rc);
    }
    pids[i] = p;
  }
  int bad = 0, skip = 0;
  for (int i = 0; i < W; i++) {
    int st;
    waitpid(pids[i], &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      if (WIFEXITED(st) && WEXITSTATUS(st) == OCL_SKIP)
        skip++;
      else
        bad++;
    }
  }
  free(pids);
  if (skip == W)
    return OCL_SKIP;
  printf("workers %d failed %d\n", W, bad);
  return bad ? 1 : 0;
}

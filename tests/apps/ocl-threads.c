/* ocl-threads - T threads, each with its own queue, each doing K kernel
 * launches from its own function (worker_<t % 4>, so the call paths
 * differ), then clFinish.  Usage: ocl-threads [T K] (defaults 4 50).
 * Prints "launches <T*K> checksum <v>".  Exit 77 without a device. */
#include <pthread.h>
#include <string.h>

#include "ocl-common.h"

#define NOINLINE __attribute__((noinline))
#define N 4096

static const char *src = "__kernel void inc(__global int *y) { y[get_global_id(0)] += 1; }\n";
static ocl_env_t env;
static int K = 50;

typedef struct job_s {
  cl_command_queue q;
  cl_mem buf;
  cl_kernel k;
  long sum;
} job_t;

NOINLINE static void launch_loop(job_t *j) {
  size_t g = N;
  for (int i = 0; i < K; i++)
    OCL_CHECK(clEnqueueNDRangeKernel(j->q, j->k, 1, NULL, &g, NULL, 0, NULL, NULL));
  OCL_CHECK(clFinish(j->q));
  int *h = malloc(N * sizeof *h);
  OCL_CHECK(clEnqueueReadBuffer(j->q, j->buf, CL_TRUE, 0, N * sizeof *h, h, 0, NULL, NULL));
  for (int i = 0; i < N; i++)
    j->sum += h[i];
  free(h);
}

NOINLINE static void worker_0(job_t *j) { launch_loop(j); }
NOINLINE static void worker_1(job_t *j) { launch_loop(j); }
NOINLINE static void worker_2(job_t *j) { launch_loop(j); }
NOINLINE static void worker_3(job_t *j) { launch_loop(j); }
static void (*const workers[4])(job_t *) = {worker_0, worker_1, worker_2, worker_3};

static void *thread_main(void *arg) {
  job_t *j = arg;
  workers[j->sum % 4](j);
  return NULL;
}

int main(int argc, char **argv) {
  int T = argc > 1 ? atoi(argv[1]) : 4;
  K = argc > 2 ? atoi(argv[2]) : 50;
  if (ocl_env_open(&env, src)) {
    fprintf(stderr, "ocl-threads: no OpenCL device\n");
    return OCL_SKIP;
  }
  job_t *jobs = calloc((size_t)T, sizeof *jobs);
  pthread_t *th = calloc((size_t)T, sizeof *th);
  cl_int err;
  for (int t = 0; t < T; t++) {
    jobs[t].q = clCreateCommandQueueWithProperties(env.ctx, env.dev, NULL, &err);
    OCL_CHECK(err);
    jobs[t].buf = clCreateBuffer(env.ctx, CL_MEM_READ_WRITE, N * sizeof(int), NULL, &err);
    OCL_CHECK(err);
    int zero = 0;
    OCL_CHECK(clEnqueueFillBuffer(jobs[t].q, jobs[t].buf, &zero, sizeof zero, 0, N * sizeof(int), 0, NULL, NULL));
    OCL_CHECK(clFinish(jobs[t].q));
    jobs[t].k = clCreateKernel(env.prog, "inc", &err);
    OCL_CHECK(err);
    OCL_CHECK(clSetKernelArg(jobs[t].k, 0, sizeof(cl_mem), &jobs[t].buf));
    jobs[t].sum = t; /* selects the worker function */
  }
  for (int t = 0; t < T; t++)
    pthread_create(&th[t], NULL, thread_main, &jobs[t]);
  long total = 0;
  for (int t = 0; t < T; t++) {
    pthread_join(th[t], NULL);
    total += jobs[t].sum - t;
    clReleaseKernel(jobs[t].k);
    clReleaseMemObject(jobs[t].buf);
    clReleaseCommandQueue(jobs[t].q);
  }
  printf("launches %d checksum %ld\n", T * K, total);
  ocl_env_close(&env);
  free(jobs);
  free(th);
  return total == (long)T * K * N ? 0 : 1;
}

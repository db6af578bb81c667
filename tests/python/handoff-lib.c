/* handoff-lib.c - a "framework" whose worker thread launches the GPU work
 * that a Python caller hands over (tests/python/handoff.py through ctypes;
 * docs/PYTHON.md "Work handed to a worker thread").
 *
 * hl_run(n, want) starts a native thread that runs gpd_hl_dispatch, the
 * dispatch function (GPUPROF_TEST_HANDOFF names it), and waits for it:
 * the calling Python thread stays blocked in its ctypes call, GIL
 * released, as PyTorch's caller of run_backward does.  The worker waits
 * until `want` callers are inside hl_run, launches n OpenCL kernels
 * (PoCL), and waits until every worker of the round is done, so that the
 * callers stay blocked while any of them launches.  hl_start / hl_join:
 * the same work with the caller free in between; hl_direct: n kernels
 * from the calling thread.  Every call returns 0 or an OpenCL / errno
 * error (negative).
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <errno.h>
#include <pthread.h>
#include <time.h>

static cl_context ctx;
static cl_command_queue q;
static cl_kernel kern;
static cl_mem buf;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int in_run, done;

static const char *src = "__kernel void hk(__global int *a) { a[get_global_id(0)] += 1; }";

int hl_setup(void) {
  cl_platform_id p;
  cl_device_id d;
  cl_int e;
  if ((e = clGetPlatformIDs(1, &p, NULL)) || (e = clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 1, &d, NULL)))
    return e;
  if (!(ctx = clCreateContext(NULL, 1, &d, NULL, NULL, &e)) || !(q = clCreateCommandQueue(ctx, d, 0, &e)))
    return e;
  cl_program prog = clCreateProgramWithSource(ctx, 1, &src, NULL, &e);
  if (!prog || (e = clBuildProgram(prog, 1, &d, "", NULL, NULL)))
    return e ? e : -1;
  if (!(kern = clCreateKernel(prog, "hk", &e)) ||
      !(buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 64 * sizeof(int), NULL, &e)))
    return e;
  return clSetKernelArg(kern, 0, sizeof buf, &buf);
}

static int launch(int n) {
  size_t g = 64;
  for (int i = 0; i < n; i++) {
    cl_int e = clEnqueueNDRangeKernel(q, kern, 1, NULL, &g, NULL, 0, NULL, NULL);
    if (e)
      return e;
  }
  return clFinish(q);
}

/* Wait (10 s at most) until *c >= want; mu held. */
static int wait_for(int *c, int want) {
  struct timespec dl;
  clock_gettime(CLOCK_REALTIME, &dl);
  dl.tv_sec += 10;
  while (*c < want)
    if (pthread_cond_timedwait(&cv, &mu, &dl) == ETIMEDOUT)
      return -ETIMEDOUT;
  return 0;
}

typedef struct job_s {
  int n, want, err;
  pthread_t th;
} job_t;

/* The dispatch function: the worker's native frame that says "this work
 * was handed over" (exported: the shim finds it in .dynsym). */
__attribute__((noinline, visibility("default"))) void *gpd_hl_dispatch(void *arg) {
  job_t *j = arg;
  pthread_mutex_lock(&mu);
  j->err = wait_for(&in_run, j->want);
  pthread_mutex_unlock(&mu);
  if (!j->err)
    j->err = launch(j->n);
  pthread_mutex_lock(&mu);
  done++;
  pthread_cond_broadcast(&cv);
  int e = wait_for(&done, j->want);
  pthread_mutex_unlock(&mu);
  if (!j->err)
    j->err = e;
  return NULL;
}

static void *worker(void *arg) { return gpd_hl_dispatch(arg); }

static job_t async_job;

int hl_start(int n) {
  async_job = (job_t){.n = n, .want = 0};
  return -pthread_create(&async_job.th, NULL, worker, &async_job);
}

int hl_join(void) {
  pthread_join(async_job.th, NULL);
  return async_job.err;
}

int hl_run(int n, int want) {
  job_t j = {.n = n, .want = want};
  pthread_mutex_lock(&mu);
  in_run++;
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
  int e = -pthread_create(&j.th, NULL, worker, &j);
  if (!e)
    pthread_join(j.th, NULL);
  return e ? e : j.err;
}

/* Between rounds (no hl_run running). */
void hl_reset(void) {
  pthread_mutex_lock(&mu);
  in_run = done = 0;
  pthread_mutex_unlock(&mu);
}

int hl_direct(int n) { return launch(n); }

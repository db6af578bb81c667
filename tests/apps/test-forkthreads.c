/* test-forkthreads - fork while other threads are inside the shim.
 *
 * Usage: test-forkthreads [FORKS]   (default 20; run under test-withdaemon)
 * Three threads loop on OpenCL calls (clEnqueueFillBuffer + clFinish on
 * their own queue: the shim's wrappers, callback slabs and rings) and on
 * the shim calls that take its locks (gpd_shim_backend_status: the status
 * lock; gpd_shim_gpubin: the connection lock; gpd_shim_string), while the
 * main thread forks FORKS times.  Each child, with only the forking thread
 * left, asks gpd_shim_active() (which starts its connection lazily) until
 * it is registered with the daemon as itself (deadline 20 s, else exit 2),
 * takes the same locks (status, gpubin, string) and exits 0.  The parent
 * waits for each child with a deadline of 30 s (a deadlocked child is
 * killed: fail; a child takes ~10 ms, ~2 s under ASan on a loaded VM).  Exit 0 = pass, 1 = fail, 77 = no OpenCL device.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ocl-common.h"

#define NTHREADS 3

static int (*s_active)(void);
static void (*s_status)(unsigned, int, int, const char *);
static int (*s_gpubin)(const void *, size_t, const char *);
static uint32_t (*s_string)(const char *, unsigned);

static ocl_env_t E;
static atomic_int stop, errors;
static atomic_long calls;

static uint64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void *worker(void *arg) {
  long idx = (long)arg;
  cl_int err;
  cl_command_queue q = clCreateCommandQueueWithProperties(E.ctx, E.dev, NULL, &err);
  cl_mem b = clCreateBuffer(E.ctx, CL_MEM_READ_WRITE, 4096, NULL, &err);
  if (!q || !b) {
    atomic_fetch_add(&errors, 1);
    return NULL;
  }
  char name[32];
  unsigned char bin[64];
  for (long i = 0; !atomic_load(&stop); i++) {
    int v = (int)i;
    if (clEnqueueFillBuffer(q, b, &v, sizeof v, 0, 4096, 0, NULL, NULL) != CL_SUCCESS ||
        clFinish(q) != CL_SUCCESS)
      atomic_fetch_add(&errors, 1);
    s_status(0, 1, 0, "forkthreads");
    snprintf(name, sizeof name, "k%ld-%ld", idx, i % 64);
    s_string(name, 1);
    memset(bin, (int)(i % 4), sizeof bin);
    bin[0] = (unsigned char)idx;
    s_gpubin(bin, sizeof bin, "test"); /* 4 contents per thread: sent once, then deduplicated */
    atomic_fetch_add(&calls, 1);
  }
  clReleaseMemObject(b);
  clReleaseCommandQueue(q);
  return NULL;
}

static int child(void) {
  uint64_t end = now_ms() + 20000;
  while (!s_active() && now_ms() < end) {
    struct timespec ts = {0, 10000000};
    nanosleep(&ts, NULL);
  }
  if (!s_active())
    return 2;
  unsigned char bin[16] = {0xc1, 0xd0};
  s_status(0, 1, 0, "child");
  s_string("child", 1);
  s_gpubin(bin, sizeof bin, "test");
  return 0;
}

int main(int argc, char **argv) {
  int forks = argc > 1 ? atoi(argv[1]) : 20;
  s_active = (int (*)(void))dlsym(RTLD_DEFAULT, "gpd_shim_active");
  s_status = (void (*)(unsigned, int, int, const char *))dlsym(RTLD_DEFAULT, "gpd_shim_backend_status");
  s_gpubin = (int (*)(const void *, size_t, const char *))dlsym(RTLD_DEFAULT, "gpd_shim_gpubin");
  s_string = (uint32_t (*)(const char *, unsigned))dlsym(RTLD_DEFAULT, "gpd_shim_string");
  if (!s_active || !s_status || !s_gpubin || !s_string) {
    fprintf(stderr, "FAIL test-forkthreads: the shim is not preloaded\n");
    return 1;
  }
  if (ocl_env_open(&E, "__kernel void k(void) {}\n"))
    return OCL_SKIP;
  pthread_t th[NTHREADS];
  for (long i = 0; i < NTHREADS; i++)
    pthread_create(&th[i], NULL, worker, (void *)i);
  while (atomic_load(&calls) < 10)
    sched_yield();
  int bad = 0;
  double sum = 0, worst = 0;
  for (int i = 0; i < forks && !bad; i++) {
    uint64_t t0 = now_ms();
    pid_t p = fork();
    if (p < 0) {
      perror("fork");
      bad = 1;
      break;
    }
    if (p == 0)
      exit(child());
    int st = 0;
    pid_t r;
    while ((r = waitpid(p, &st, WNOHANG)) == 0 && now_ms() - t0 < 30000) {
      struct timespec ts = {0, 1000000};
      nanosleep(&ts, NULL);
    }
    if (r != p) {
      kill(p, SIGKILL);
      waitpid(p, NULL, 0);
      fprintf(stderr, "FAIL test-forkthreads: child %d of fork %d deadlocked (killed after 30 s)\n",
              (int)p, i);
      bad = 1;
    } else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      fprintf(stderr, "FAIL test-forkthreads: child of fork %d ended with status 0x%x%s\n", i, st,
              WIFEXITED(st) && WEXITSTATUS(st) == 2 ? " (never registered with the daemon)" : "");
      bad = 1;
    }
    double dt = (double)(now_ms() - t0);
    sum += dt;
    worst = dt > worst ? dt : worst;
  }
  atomic_store(&stop, 1);
  for (int i = 0; i < NTHREADS; i++)
    pthread_join(th[i], NULL);
  ocl_env_close(&E);
  if (atomic_load(&errors)) {
    fprintf(stderr, "FAIL test-forkthreads: %d OpenCL calls failed in the parent\n", atomic_load(&errors));
    bad = 1;
  }
  if (!s_active()) {
    fprintf(stderr, "FAIL test-forkthreads: the parent's shim is no longer active\n");
    bad = 1;
  }
  printf("test-forkthreads: %d forks with %d threads in the shim (%ld calls): child fork..exit mean %.1f ms, "
         "max %.0f ms\n",
         forks, NTHREADS, atomic_load(&calls), sum / forks, worst);
  return bad;
}

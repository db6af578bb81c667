/* test-ocl-pending - the OpenCL back end's pending lists (shim/opencl/
 * opencl-pending.c): every command yields exactly one ACTIVITY with device
 * times, whichever way it leaves its list.
 *
 * The parent makes a local region and starts itself again (posix_spawn,
 * not fork: the shim's connection thread may hold ASan's allocator lock)
 * with the region's descriptor; the child attaches it (no daemon), runs
 * OpenCL and exits; the parent drains the region after the child's exit,
 * so the ACTIVITYs pushed by the child's exit harvest count.
 * The child:
 *   q0  made before the region is attached, with no daemon listening: the
 *       shim does not force CL_QUEUE_PROFILING_ENABLE on it; after the
 *       attach 5 kernels on it take the callback (host times, flagged)
 *   q1  300 kernels without an event and without a wait (more than a
 *       list holds: harvest of the completed at the bound, or callbacks),
 *       20 with the application's own events and CL_COMPLETE callbacks,
 *       then clReleaseCommandQueue without a clFinish
 *   q2  2 threads x 100 kernels, clFinish from the main thread
 *   q3  10 kernels, clWaitForEvents on the last; 5 kernels and a blocking
 *       read
 *   -   waits (deadline) until nothing is pending and the application's 20
 *       callbacks ran; each of its events then has reference count 1
 *   q4  50 kernels, the last with an event polled (clGetEventInfo, not
 *       intercepted) until complete: all 50 still pending; exit without a
 *       clFinish (the exit harvest pushes them)
 * The parent checks: 590 kernel INVOKEs and ACTIVITYs, each ACTIVITY
 * matching one INVOKE, per queue 320 / 200 / 15 / 50 with device times
 * and 5 with host times (q0).
 * Exit 77 without an OpenCL device. */
#include <pthread.h>
#include <time.h>

#include "drain.h"
#include "ocl-common.h"

long gpd_shim__ocl_pending(void);
#define OCL_HOST_TIME 0x01u /* GPD_ACTIVITY_HOST_TIME (shim/internal.h) */

static const char *src = "__kernel void tiny(__global int *y) { y[get_global_id(0)] += 1; }\n";

static ocl_env_t E;
static cl_kernel K;
static _Atomic int user_cb;

static void launch(cl_command_queue q, int n, cl_event *last) {
  size_t g = 64;
  for (int i = 0; i < n; i++)
    OCL_CHECK(clEnqueueNDRangeKernel(q, K, 1, NULL, &g, NULL, 0, NULL, i == n - 1 ? last : NULL));
}

static void CL_CALLBACK on_user_event(cl_event e, cl_int st, void *arg) {
  (void)e;
  (void)arg;
  if (st == CL_COMPLETE)
    atomic_fetch_add(&user_cb, 1);
}

static void *thread_main(void *q) {
  launch(q, 100, NULL);
  return NULL;
}

static cl_command_queue new_queue(void) {
  cl_int err;
  cl_command_queue q = clCreateCommandQueueWithProperties(E.ctx, E.dev, NULL, &err);
  OCL_CHECK(err);
  return q;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static cl_command_queue_properties queue_props(cl_command_queue q) {
  cl_command_queue_properties p = 0;
  OCL_CHECK(clGetCommandQueueInfo(q, CL_QUEUE_PROPERTIES, sizeof p, &p, NULL));
  return p;
}

static int child(int fd) {
  if (ocl_env_open(&E, src)) /* E.q is q0 */
    return 77;
  DR_CHECK(!(queue_props(E.q) & CL_QUEUE_PROFILING_ENABLE), "profiling forced with no daemon listening");
  if (gpd_shim__attach_region(fd) != 0) {
    fprintf(stderr, "child: attach failed\n");
    return 1;
  }
  cl_int err;
  cl_mem b = clCreateBuffer(E.ctx, CL_MEM_READ_WRITE, 64 * sizeof(int), NULL, &err);
  OCL_CHECK(err);
  K = clCreateKernel(E.prog, "tiny", &err);
  OCL_CHECK(err);
  OCL_CHECK(clSetKernelArg(K, 0, sizeof b, &b));
  OCL_CHECK(clFinish(E.q)); /* nothing enqueued on the env's queue */

  cl_command_queue q1 = new_queue(), q2 = new_queue(), q3 = new_queue(), q4 = new_queue();
  DR_CHECK(queue_props(q1) & CL_QUEUE_PROFILING_ENABLE, "profiling not forced while recording");
  launch(E.q, 5, NULL);
  launch(q1, 300, NULL);
  cl_event uev[20];
  for (int i = 0; i < 20; i++) {
    launch(q1, 1, &uev[i]);
    OCL_CHECK(clSetEventCallback(uev[i], CL_COMPLETE, on_user_event, NULL));
  }
  OCL_CHECK(clReleaseCommandQueue(q1));

  pthread_t t[2];
  for (int i = 0; i < 2; i++)
    if (pthread_create(&t[i], NULL, thread_main, q2) != 0)
      return 1;
  for (int i = 0; i < 2; i++)
    pthread_join(t[i], NULL);
  OCL_CHECK(clFinish(q2));

  cl_event ev;
  launch(q3, 10, &ev);
  OCL_CHECK(clWaitForEvents(1, &ev));
  OCL_CHECK(clReleaseEvent(ev));
  launch(q3, 5, NULL);
  int host[64];
  OCL_CHECK(clEnqueueReadBuffer(q3, b, CL_TRUE, 0, sizeof host, host, 0, NULL, NULL));

  double end = now_s() + 30;
  while ((gpd_shim__ocl_pending() > 0 || atomic_load(&user_cb) < 20) && now_s() < end) {
    struct timespec ts = {0, 5 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  DR_CHECK(gpd_shim__ocl_pending() == 0, "%ld commands still pending", gpd_shim__ocl_pending());
  DR_CHECK(atomic_load(&user_cb) == 20, "the application's callbacks ran %d times", atomic_load(&user_cb));
  for (int i = 0; i < 20; i++) {
    cl_uint rc = 0;
    OCL_CHECK(clGetEventInfo(uev[i], CL_EVENT_REFERENCE_COUNT, sizeof rc, &rc, NULL));
    DR_CHECK(rc == 1, "event %d: reference count %u after its ACTIVITY (the shim's retain kept?)", i, rc);
    OCL_CHECK(clReleaseEvent(uev[i]));
  }

  launch(q4, 50, &ev);
  OCL_CHECK(clFlush(q4));
  cl_int st = CL_QUEUED;
  end = now_s() + 30;
  while (st != CL_COMPLETE && now_s() < end) {
    OCL_CHECK(clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL));
    struct timespec ts = {0, 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  DR_CHECK(st == CL_COMPLETE, "q4 did not complete");
  DR_CHECK(gpd_shim__ocl_pending() == 50, "%ld pending before exit, not 50", gpd_shim__ocl_pending());
  return 0; /* exit: the 50 are harvested by the shim's atexit handler */
}

static dr_t D;

int main(int argc, char **argv) {
  if (dr_start(&D, argc, argv, child, "test-ocl-pending"))
    return 77;

  int ninv = 0, nact = 0, nhost = 0;
  for (int i = 0; i < D.ninv; i++)
    ninv += D.inv[i].op == GPD_OP_KERNEL;
  uint32_t streams[8] = {0};
  int per[8] = {0}, ns = 0;
  for (int i = 0; i < D.nact; i++) {
    const gpd_rec_activity_t *a = &D.act[i];
    if (a->op != GPD_OP_KERNEL)
      continue;
    nact++;
    DR_CHECK(a->end >= a->start && a->start > 0, "times");
    if (a->h.flags == OCL_HOST_TIME) { /* q0's */
      nhost++;
      continue;
    }
    DR_CHECK(a->h.flags == 0, "kernel %d: flags %#x", i, a->h.flags);
    int match = 0;
    for (int j = 0; j < D.ninv; j++)
      match += D.inv[j].corr == a->corr && D.inv[j].op == GPD_OP_KERNEL;
    DR_CHECK(match == 1, "corr %llx matched %d invokes", (unsigned long long)a->corr, match);
    int s = 0;
    while (s < ns && streams[s] != a->stream)
      s++;
    DR_CHECK(s < 8, "too many streams");
    if (s == ns)
      streams[ns++] = a->stream;
    per[s]++;
  }
  DR_CHECK(ninv == 590, "kernel invokes %d", ninv);
  DR_CHECK(nact == 590, "kernel activities %d", nact);
  DR_CHECK(nhost == 5, "%d kernels with host times, not q0's 5", nhost);
  DR_CHECK(ns == 4, "%d queues seen", ns);
  /* streams are numbered in creation order: q1 < q2 < q3 < q4 */
  int want[4] = {320, 200, 15, 50}, order[4] = {0, 1, 2, 3};
  for (int i = 0; i < 4; i++)
    for (int j = i + 1; j < 4; j++)
      if (streams[order[j]] < streams[order[i]]) {
        int t = order[i];
        order[i] = order[j];
        order[j] = t;
      }
  for (int i = 0; i < 4; i++)
    DR_CHECK(per[order[i]] == want[i], "queue %d: %d kernels, not %d", i + 1, per[order[i]], want[i]);
  printf("test-ocl-pending: 590 kernels, one ACTIVITY each (320 / 200 / 15 / 50 per queue, 5 host-timed)\n");
  return 0;
}

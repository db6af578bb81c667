/* test-ocl-longjmp - a longjmp out of an OpenCL wrapper must not switch
 * capture off for the thread: the capture hook raises a signal inside the
 * wrapper of clEnqueueWriteBuffer and the handler longjmps out (the
 * wrapper never reaches its leave); the next call on the thread, from the
 * same depth, must still be profiled (an INVOKE with a node).  Real
 * OpenCL (PoCL); SKIP without a platform. */
#include <setjmp.h>
#include <signal.h>

#include "drain.h"
#include "ocl-common.h"
#include "shim.h"

extern void (*volatile gpd_shim__capture_hook)(void);

static dr_t D;
static sigjmp_buf jb;
static volatile int jumped;
static ocl_env_t E;
static cl_mem buf;
static volatile int n_calls = 3; /* volatile: the loop keeps one call site */

static void on_usr2(int sig) {
  (void)sig;
  jumped++;
  siglongjmp(jb, 1);
}
static void hook_raise(void) {
  gpd_shim__capture_hook = NULL;
  raise(SIGUSR2);
}

__attribute__((noinline)) static cl_int write_buf(void) {
  int v = 42;
  cl_int rc = clEnqueueWriteBuffer(E.q, buf, CL_TRUE, 0, sizeof v, &v, 0, NULL, NULL);
  __asm__ volatile("" ::: "memory");
  return rc;
}

int main(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_usr2;
  sigaction(SIGUSR2, &sa, NULL);
  dr_attach(&D, 8, 4096);
  if (ocl_env_open(&E, "kernel void k(global int *a) { a[0] = 1; }") == OCL_SKIP) {
    printf("SKIP: no OpenCL platform\n");
    return 77;
  }
  cl_int err;
  buf = clCreateBuffer(E.ctx, CL_MEM_READ_WRITE, 64, NULL, &err);
  OCL_CHECK(err);
  dr_drain(&D);
  long inv[3];
  for (int i = 0; i < n_calls; i++) {
    if (i == 1 && sigsetjmp(jb, 1) == 0) {
      gpd_shim__capture_hook = hook_raise;
      (void)write_buf(); /* leaves through the handler's longjmp */
      DR_FAIL("the handler did not longjmp");
    }
    long before = D.ninv_all;
    OCL_CHECK(write_buf());
    OCL_CHECK(clFinish(E.q));
    dr_drain(&D);
    inv[i] = D.ninv_all - before;
  }
  DR_CHECK(jumped == 1, "longjmp handler ran %d times", jumped);
  DR_CHECK(inv[0] >= 1, "no INVOKE before the longjmp (%ld)", inv[0]);
  DR_CHECK(inv[1] == inv[0], "after the longjmp: %ld INVOKEs per call, before %ld", inv[1], inv[0]);
  DR_CHECK(inv[2] == inv[0], "second call after the longjmp: %ld INVOKEs", inv[2]);
  for (int i = 0; i < D.ninv; i++)
    DR_CHECK(D.inv[i].node != 0, "INVOKE %d without a node", i);
  DR_CHECK(D.bad == 0, "%d bad records", D.bad);
  clReleaseMemObject(buf);
  ocl_env_close(&E);
  printf("test-ocl-longjmp: ok (%ld INVOKEs per call)\n", inv[0]);
  return 0;
}

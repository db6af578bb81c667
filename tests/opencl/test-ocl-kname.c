/* test-ocl-kname - kernel names through the shim's per-kernel name cache
 * (shim/opencl/opencl-api.c): a kernel handle released and made again
 * for another kernel must not keep the old kernel's name.
 *
 * The parent makes a local region and starts itself again (posix_spawn,
 * as test-ocl-pending) with the region's descriptor; the child attaches
 * it (no daemon) and runs 10 rounds: round r makes kernel "alpha" (r
 * even) or "beta" (r odd) of one program, launches it r + 1 times,
 * finishes the queue and releases the kernel, so the runtime may hand the
 * same handle out again in the next round (PoCL does: the child prints
 * how many rounds got the previous round's handle back).  The parent
 * drains the region after the child's exit and checks: 55 kernel
 * ACTIVITYs, each named, 25 named "alpha" and 30 "beta"; and each one's
 * name the one its round's kernel has (ACTIVITYs carry their INVOKE's
 * correlation id, taken in launch order).
 * Exit 77 without an OpenCL device. */

#include "drain.h"
#include "ocl-common.h"

static const char *src = "__kernel void alpha(__global int *y) { y[get_global_id(0)] += 1; }\n"
                         "__kernel void beta(__global int *y) { y[get_global_id(0)] += 2; }\n";

#define ROUNDS 10

/* global, and not closed (as test-ocl-pending's): the runtime's context and
 * program stay reachable at exit, not reported by LeakSanitizer */
static ocl_env_t e;

static int child(int fd) {
  if (ocl_env_open(&e, src))
    return 77;
  if (gpd_shim__attach_region(fd) != 0) {
    fprintf(stderr, "child: attach failed\n");
    return 1;
  }
  cl_int err;
  cl_mem b = clCreateBuffer(e.ctx, CL_MEM_READ_WRITE, 64 * sizeof(int), NULL, &err);
  OCL_CHECK(err);
  cl_command_queue q = clCreateCommandQueueWithProperties(e.ctx, e.dev, NULL, &err);
  OCL_CHECK(err);
  cl_kernel prev = NULL;
  int reused = 0;
  size_t g = 64;
  for (int r = 0; r < ROUNDS; r++) {
    cl_kernel k = clCreateKernel(e.prog, r % 2 ? "beta" : "alpha", &err);
    OCL_CHECK(err);
    reused += k == prev;
    OCL_CHECK(clSetKernelArg(k, 0, sizeof b, &b));
    for (int i = 0; i <= r; i++)
      OCL_CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &g, NULL, 0, NULL, NULL));
    OCL_CHECK(clFinish(q));
    OCL_CHECK(clReleaseKernel(k));
    prev = k;
  }
  OCL_CHECK(clReleaseCommandQueue(q));
  OCL_CHECK(clReleaseMemObject(b));
  printf("child: %d of %d rounds got the released kernel's handle again\n", reused, ROUNDS - 1);
  return 0;
}

static dr_t D;

int main(int argc, char **argv) {
  if (dr_start(&D, argc, argv, child, "test-ocl-kname"))
    return 77;

  /* the kernel INVOKEs in launch order (correlation ids grow per call) */
  uint64_t corr[64];
  int ninv = 0;
  for (int i = 0; i < D.ninv; i++)
    if (D.inv[i].op == GPD_OP_KERNEL) {
      DR_CHECK(ninv < 64, "more than 55 kernel invokes");
      corr[ninv++] = D.inv[i].corr;
    }
  DR_CHECK(ninv == 55, "%d kernel invokes, not 55", ninv);
  for (int i = 1; i < ninv; i++)
    DR_CHECK(corr[i] > corr[i - 1], "invokes out of launch order");
  int nact = 0, nalpha = 0, nbeta = 0;
  for (int i = 0; i < D.nact; i++) {
    const gpd_rec_activity_t *a = &D.act[i];
    if (a->op != GPD_OP_KERNEL)
      continue;
    nact++;
    const char *name = a->name ? dr_string(&D, a->name) : NULL;
    DR_CHECK(name, "kernel activity %d (corr %llx) has no name (id %u)", i, (unsigned long long)a->corr, a->name);
    int launch = 0;
    while (launch < ninv && corr[launch] != a->corr)
      launch++;
    DR_CHECK(launch < ninv, "activity corr %llx matches no invoke", (unsigned long long)a->corr);
    /* launch L belongs to round r with r (r + 1) / 2 <= L < (r + 1) (r + 2) / 2 */
    int r = 0;
    while ((r + 1) * (r + 2) / 2 <= launch)
      r++;
    const char *want = r % 2 ? "beta" : "alpha";
    DR_CHECK(strcmp(name, want) == 0, "launch %d (round %d): named %s, not %s", launch, r, name, want);
    nalpha += strcmp(name, "alpha") == 0;
    nbeta += strcmp(name, "beta") == 0;
  }
  DR_CHECK(nact == 55, "%d kernel activities, not 55", nact);
  DR_CHECK(nalpha == 25 && nbeta == 30, "alpha %d (want 25), beta %d (want 30)", nalpha, nbeta);
  printf("test-ocl-kname: 55 kernels in 10 rounds, every one named after its own kernel (25 alpha, 30 beta)\n");
  return 0;
}

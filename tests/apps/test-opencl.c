/* test-opencl - the OpenCL back end without a daemon: attach a local
 * region, run the ocl-known workload in-process through the interposed
 * entry points, drain, and check exact INVOKE / ACTIVITY counts per
 * operation, exact bytes per copy direction, kernel names, correlation
 * matching, device timestamps and the CPU context of the kernel launches.
 * Usage: test-opencl [S N M].  Exit 77 without an OpenCL device. */
#include <dlfcn.h>
#include <time.h>

#include "drain.h"
#include "shim.h"

int ocl_known_run(int s, int n, int m, double *checksum);
long gpd_shim__ocl_pending(void);

static dr_t D;

static int count_inv(unsigned op) {
  int n = 0;
  for (int i = 0; i < D.ninv; i++)
    n += D.inv[i].op == op;
  return n;
}

static int count_act(unsigned op, int subkind, uint64_t *bytes) {
  int n = 0;
  *bytes = 0;
  for (int i = 0; i < D.nact; i++)
    if (D.act[i].op == op && (subkind < 0 || D.act[i].subkind == subkind)) {
      n++;
      *bytes += D.act[i].bytes;
    }
  return n;
}

static const char *node_fn(uint32_t id) {
  const gpd_rec_node_t *n = dr_node(&D, id);
  if (!n)
    return NULL;
  const gpd_rec_module_t *m = dr_module(&D, n->module, NULL);
  Dl_info info;
  if (!dladdr((void *)(uintptr_t)(n->offset + (m ? m->base : 0)), &info) || !info.dli_sname)
    return "?";
  return info.dli_sname;
}

int main(int argc, char **argv) {
  int S = argc > 1 ? atoi(argv[1]) : 5, N = argc > 2 ? atoi(argv[2]) : 3, M = argc > 3 ? atoi(argv[3]) : 2;
  dr_attach(&D, 16, 1u << 14);
  double sum = 0;
  int rc = ocl_known_run(S, N, M, &sum);
  if (rc == 77) {
    fprintf(stderr, "test-opencl: no OpenCL device: SKIP\n");
    return 77;
  }
  DR_CHECK(rc == 0, "workload failed");
  /* Callbacks run on runtime threads, possibly after clFinish returned. */
  for (int i = 0; i < 1000 && gpd_shim__ocl_pending() > 0; i++) {
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  DR_CHECK(gpd_shim__ocl_pending() == 0, "%ld callbacks never ran", gpd_shim__ocl_pending());
  dr_drain(&D);

  const uint64_t MiB = 1u << 20, KiB = 1u << 10;
  uint64_t b;
  int K = S * (N + M);
  /* INVOKE per op */
  DR_CHECK(count_inv(GPD_OP_KERNEL) == K, "kernel invokes %d", count_inv(GPD_OP_KERNEL));
  DR_CHECK(count_inv(GPD_OP_COPY) == 6, "copy invokes %d", count_inv(GPD_OP_COPY));
  DR_CHECK(count_inv(GPD_OP_MEMSET) == 1, "memset invokes %d", count_inv(GPD_OP_MEMSET));
  DR_CHECK(count_inv(GPD_OP_ALLOC) == 4, "alloc invokes %d", count_inv(GPD_OP_ALLOC));
  DR_CHECK(count_inv(GPD_OP_FREE) == 4, "free invokes %d", count_inv(GPD_OP_FREE));
  DR_CHECK(count_inv(GPD_OP_SYNC) == S + 2, "sync invokes %d", count_inv(GPD_OP_SYNC));
  DR_CHECK(D.ninv == K + 6 + 1 + 4 + 4 + S + 2, "total invokes %d", D.ninv);
  /* ACTIVITY per op, bytes per direction */
  DR_CHECK(count_act(GPD_OP_KERNEL, -1, &b) == K, "kernel activities %d", count_act(GPD_OP_KERNEL, -1, &b));
  DR_CHECK(count_act(GPD_OP_COPY, GPD_COPY_H2D, &b) == 3 && b == 3 * MiB, "H2D %llu", (unsigned long long)b);
  DR_CHECK(count_act(GPD_OP_COPY, GPD_COPY_D2H, &b) == 2 && b == 128 * KiB, "D2H %llu", (unsigned long long)b);
  DR_CHECK(count_act(GPD_OP_COPY, GPD_COPY_D2D, &b) == 1 && b == 256 * KiB, "D2D %llu", (unsigned long long)b);
  DR_CHECK(count_act(GPD_OP_COPY, -1, &b) == 6, "copies");
  DR_CHECK(count_act(GPD_OP_MEMSET, GPD_MEM_DEV, &b) == 1 && b == 4 * KiB, "memset %llu", (unsigned long long)b);
  DR_CHECK(count_act(GPD_OP_ALLOC, GPD_MEM_DEV, &b) == 4 && b == 3 * MiB + 256 * KiB, "alloc %llu",
           (unsigned long long)b);
  DR_CHECK(count_act(GPD_OP_FREE, GPD_MEM_DEV, &b) == 4 && b == 3 * MiB + 256 * KiB, "free %llu",
           (unsigned long long)b);
  DR_CHECK(count_act(GPD_OP_SYNC, GPD_SYNC_STR, &b) == S + 1, "clFinish syncs");
  DR_CHECK(count_act(GPD_OP_SYNC, GPD_SYNC_EVT, &b) == 1, "clWaitForEvents syncs");
  DR_CHECK(D.nact == D.ninv, "activities %d != invokes %d", D.nact, D.ninv);

  /* Each activity matches exactly one invoke of the same op; device
   * times for device commands; kernel names. */
  int axpy = 0, scale = 0;
  for (int i = 0; i < D.nact; i++) {
    const gpd_rec_activity_t *a = &D.act[i];
    int match = 0;
    for (int j = 0; j < D.ninv; j++)
      if (D.inv[j].corr == a->corr) {
        match++;
        DR_CHECK(D.inv[j].op == a->op, "op mismatch");
        DR_CHECK(D.inv[j].ts <= a->end, "invoke after activity end");
      }
    DR_CHECK(match == 1, "corr %llx matched %d invokes", (unsigned long long)a->corr, match);
    DR_CHECK(GPD_CORR_API(a->corr) == GPD_API_OPENCL, "corr api");
    DR_CHECK(a->end >= a->start && a->start > 0, "times");
    if (a->op == GPD_OP_KERNEL || a->op == GPD_OP_COPY || a->op == GPD_OP_MEMSET) {
      DR_CHECK(a->h.flags == 0, "device command with host times (profiling not enabled?)");
      DR_CHECK(a->stream != 0, "no stream");
    }
    if (a->op == GPD_OP_KERNEL) {
      const char *nm = dr_string(&D, a->name);
      DR_CHECK(nm, "kernel name %u not announced", a->name);
      axpy += strcmp(nm, "axpy") == 0;
      scale += strcmp(nm, "scale") == 0;
    }
  }
  DR_CHECK(axpy == S * N && scale == S * M, "axpy %d scale %d", axpy, scale);

  /* Calling contexts: kernel launches in step(), allocs in init(). */
  for (int j = 0; j < D.ninv; j++) {
    const char *fn = node_fn(D.inv[j].node);
    DR_CHECK(fn, "invoke node %u unannounced", D.inv[j].node);
    if (D.inv[j].op == GPD_OP_KERNEL)
      DR_CHECK(strcmp(fn, "step") == 0, "kernel launched from %s", fn);
    if (D.inv[j].op == GPD_OP_ALLOC)
      DR_CHECK(strcmp(fn, "init") == 0, "alloc from %s", fn);
    if (D.inv[j].op == GPD_OP_FREE)
      DR_CHECK(strcmp(fn, "finish") == 0, "free from %s", fn);
  }
  printf("test-opencl: ok (%d invokes, %d activities, %d nodes, checksum %.6f)\n", D.ninv, D.nact, D.nnodes, sum);
  return 0;
}

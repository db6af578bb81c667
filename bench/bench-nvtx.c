/* bench-nvtx - what NVTX ranges cost under the shim (docs/NVTX.md), with
 * the no-injection baseline in the same run.
 *
 * The program is built with the real NVTX v3 headers and linked with the
 * shim (a region of its own, drained by a consumer thread, as
 * bench-capture).  It runs itself twice: with GPUPROF_NVTX=0 (the shim does
 * not become the NVTX injection: NVTX's calls are its own no-op stubs, what
 * a program pays with no tool) and with the injection.  At call depth 16,
 * each child times (median over batches, ns):
 *   push+pop  : nvtxRangePushA + nvtxRangePop (the push records its site:
 *               a capture without interning, and interns its label);
 *   op        : a GPU operation's capture + INVOKE push, no range open;
 *   op in 2   : the same inside two nested open ranges (the steady state:
 *               the node cache keyed by the ranges' contents);
 *   step      : push, 4 operations from 4 call sites, pop (a loop step).
 * A second table gives the 10th percentile of the same batches (on a
 * loaded machine the median moves with other processes' time slices).
 * Usage: bench-nvtx [batches [iterations per batch]]
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nvtx3/nvToolsExt.h>

#include "gpuprof/clock.h"
#include "gpuprof/region.h"
#include "shim.h"
#include "bench-drain.h"

int gpd_shim__attach_region(int fd);

enum { B_PUSHPOP, B_OP, B_OP2, B_STEP, B_N };
static const char *const names[B_N] = {"push+pop", "op", "op in 2 ranges", "step (push, 4 ops, pop)"};
static int nbatches = 101, batch = 1000;
static double res[2 * B_N]; /* medians, then 10th percentiles */

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

__attribute__((noinline)) static void op(void) {
  uint32_t node = gpd_shim_capture();
  gpd_shim_push_invoke(gpd_shim_corr_next(GPD_API_OPENCL), node, GPD_API_OPENCL, GPD_OP_KERNEL, 0, 0);
  __asm__ volatile("" ::: "memory");
}
#define SITE(k) \
  __attribute__((noinline)) static void site##k(void) { op(); __asm__ volatile("" ::: "memory"); }
SITE(0) SITE(1) SITE(2) SITE(3)

__attribute__((noinline)) static void one(int m) {
  switch (m) {
  case B_PUSHPOP:
    nvtxRangePushA("bench");
    nvtxRangePop();
    break;
  case B_OP:
  case B_OP2:
    op();
    break;
  case B_STEP:
    nvtxRangePushA("step");
    site0();
    site1();
    site2();
    site3();
    nvtxRangePop();
    break;
  }
  __asm__ volatile("" ::: "memory");
}

static double measure(int m, double *p10) {
  double *v = malloc(sizeof(double) * (size_t)nbatches);
  if (m == B_OP2) {
    nvtxRangePushA("outer");
    nvtxRangePushA("inner");
  }
  for (int i = 0; i < batch; i++) /* warm */
    one(m);
  for (int b = 0; b < nbatches; b++) {
    uint64_t t0 = gpd_clock_ns();
    for (int i = 0; i < batch; i++)
      one(m);
    v[b] = (double)(gpd_clock_ns() - t0) / batch;
  }
  if (m == B_OP2) {
    nvtxRangePop();
    nvtxRangePop();
  }
  qsort(v, (size_t)nbatches, sizeof *v, cmp);
  double med = v[nbatches / 2];
  *p10 = v[nbatches / 10];
  free(v);
  return med;
}

__attribute__((noinline)) static void recurse(int depth) {
  if (depth > 0) {
    recurse(depth - 1);
    __asm__ volatile("" ::: "memory"); /* not a tail call */
    return;
  }
  for (int m = 0; m < B_N; m++)
    res[m] = measure(m, &res[B_N + m]);
}

/* One measuring child: prints the B_N figures on one line. */
static int child(void) {
  static gpd_region_t R;
  static atomic_int stop;
  if (gpd_region_create(&R, 8, 1u << 16, (int32_t)getpid(), 1) != 0 || gpd_shim__attach_region(dup(R.fd)) != 0) {
    fprintf(stderr, "bench-nvtx: cannot set up a region\n");
    return 1;
  }
  pthread_t th;
  bench_drain_t drain = {&R, &stop};
  pthread_create(&th, NULL, bench_drain, &drain);
  recurse(16);
  atomic_store(&stop, 1);
  pthread_join(th, NULL);
  for (int m = 0; m < 2 * B_N; m++)
    printf("%.1f%c", res[m], m + 1 < 2 * B_N ? ' ' : '\n');
  return 0;
}

/* Run this program as a child with GPUPROF_NVTX=off; its figures into r. */
static int run(const char *self, const char *off, double *r) {
  int p[2];
  if (pipe(p) != 0)
    return -1;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(p[1], 1);
    close(p[0]);
    setenv("GPUPROF_NVTX", off, 1);
    setenv("GPUPROF_LOG", "error", 0); /* no daemon: the children use their own region */
    unsetenv("NVTX_INJECTION64_PATH");
    char b1[16], b2[16];
    snprintf(b1, sizeof b1, "%d", nbatches);
    snprintf(b2, sizeof b2, "%d", batch);
    execl(self, self, b1, b2, "--child", (char *)NULL);
    _exit(127);
  }
  close(p[1]);
  FILE *f = fdopen(p[0], "r");
  int n = 0;
  for (int m = 0; m < 2 * B_N && f; m++)
    n += fscanf(f, "%lf", &r[m]) == 1;
  if (f)
    fclose(f);
  int st = 0;
  waitpid(pid, &st, 0);
  return n == 2 * B_N && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

int main(int argc, char **argv) {
  if (argc > 1)
    nbatches = atoi(argv[1]) | 1;
  if (argc > 2 && atoi(argv[2]) > 0)
    batch = atoi(argv[2]);
  if (argc > 3 && strcmp(argv[3], "--child") == 0)
    return child();
  double base[2 * B_N], shim[2 * B_N];
  if (run("/proc/self/exe", "0", base) != 0 || run("/proc/self/exe", "1", shim) != 0) {
    fprintf(stderr, "bench-nvtx: a measuring child failed\n");
    return 1;
  }
  printf("# bench-nvtx: median ns per iteration, %d batches x %d, call depth 16\n", nbatches, batch);
  printf("%-26s %14s %10s %10s\n", "what", "no injection", "shim", "shim-base");
  for (int m = 0; m < B_N; m++)
    printf("%-26s %14.1f %10.1f %10.1f\n", names[m], base[m], shim[m], shim[m] - base[m]);
  printf("# 10th percentile of the same batches (ns per iteration)\n");
  for (int m = 0; m < B_N; m++)
    printf("%-26s %14.1f %10.1f %10.1f\n", names[m], base[B_N + m], shim[B_N + m], shim[B_N + m] - base[B_N + m]);
  printf("# no injection: GPUPROF_NVTX=0, NVTX's calls are its no-op stubs (op in 2 ranges: none open)\n");
  return 0;
}

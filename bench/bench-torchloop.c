/* bench-torchloop - the capture cost per GPU operation of a training loop,
 * on the CPU (bench/bench-torchloop.py drives it; docs/PERFORMANCE-CUDA.md).
 *
 * What a PyTorch step looks like to the shim (measured on an H100 with
 * GPUPROF_SHIM_STATS=1: ~65 GPU operations per step, each reached through
 * its own deep native stack under the interpreter, so a per-thread cache
 * of a few stacks never hits): Python calls bt_op(k, depth) through
 * ctypes; bt_op descends `depth` native frames (compiled without frame
 * pointers, as libtorch is) and reaches the capture through one of 64
 * distinct call sites, then pushes an INVOKE, as the CUDA callback does.
 * The ns spent in gpd_shim_capture() + gpd_shim_push_invoke() are summed
 * here (bt_take() returns and clears the sum and the count).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <unistd.h>

#include "gpuprof/clock.h"
#include "gpuprof/region.h"
#include "shim.h"
#include "bench-drain.h"

int gpd_shim__attach_region(int fd);

static gpd_region_t R;
static uint64_t acc_ns, acc_n;
static atomic_int stop; /* never set: the consumer runs until exit */
static bench_drain_t drain = {&R, &stop};
static volatile uint32_t last_node;

/** Attach a region created here and start its consumer: 0 or -1. */
int bt_setup(void) {
  pthread_t th;
  if (gpd_region_create(&R, 8, 1u << 16, (int32_t)getpid(), 1) != 0 || gpd_shim__attach_region(dup(R.fd)) != 0)
    return -1;
  return pthread_create(&th, NULL, bench_drain, &drain) == 0 ? 0 : -1;
}

__attribute__((noinline)) static void op_leaf(unsigned k) {
  uint64_t t0 = gpd_clock_ns();
  uint32_t node = gpd_shim_capture();
  gpd_shim_push_invoke(gpd_shim_corr_next(GPD_API_CUDA), node, GPD_API_CUDA, GPD_OP_KERNEL, t0, 0);
  acc_ns += gpd_clock_ns() - t0;
  acc_n++;
  last_node = node;
  __asm__ volatile("" ::: "memory");
  (void)k;
}

#define SITE(i) \
  __attribute__((noinline)) static void site##i(unsigned k) { op_leaf(k); __asm__ volatile("" ::: "memory"); }
#define SITE8(a) SITE(a##0) SITE(a##1) SITE(a##2) SITE(a##3) SITE(a##4) SITE(a##5) SITE(a##6) SITE(a##7)
SITE8(1) SITE8(2) SITE8(3) SITE8(4) SITE8(5) SITE8(6) SITE8(7) SITE8(8)
#define REF8(a) site##a##0, site##a##1, site##a##2, site##a##3, site##a##4, site##a##5, site##a##6, site##a##7
static void (*const sites[64])(unsigned) = {REF8(1), REF8(2), REF8(3), REF8(4), REF8(5), REF8(6), REF8(7), REF8(8)};

/* Two kinds of frames, as in a C++ dispatcher: with a local array (a
 * frame whose CFA rule is rsp + a larger constant) and without. */
__attribute__((noinline)) static void descend(unsigned d, unsigned k);
__attribute__((noinline)) static void descend_big(unsigned d, unsigned k) {
  char pad[96];
  pad[d % 96] = (char)k;
  __asm__ volatile("" : : "r"(pad) : "memory");
  descend(d - 1, k);
  __asm__ volatile("" ::: "memory");
}
__attribute__((noinline)) static void descend(unsigned d, unsigned k) {
  if (d == 0)
    sites[k & 63](k);
  else if (d % 3 == 0)
    descend_big(d, k);
  else
    descend(d - 1, k);
  __asm__ volatile("" ::: "memory");
}

/** One GPU operation: through `depth` native frames to call site k. */
void bt_op(unsigned k, unsigned depth) { descend(depth, k); }

/** ns spent capturing + pushing since the last call, and how many ops;
 *  *node = the last capture's node (0: none). */
double bt_take(uint64_t *n, uint32_t *node) {
  double ns = (double)acc_ns;
  *n = acc_n;
  *node = last_node;
  acc_ns = acc_n = 0;
  return ns;
}

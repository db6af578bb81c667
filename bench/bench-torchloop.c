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
 *
 * Cold caches (bt_evict_set): between two GPU operations PyTorch's own
 * work (dispatcher, allocator, interpreter, the CUDA driver: ~30 us of
 * CPU per operation on the H100 run) evicts the shim's per-thread walks,
 * memo lines, Python frames and ring lines from L1/L2, and each one is
 * reused only once per step (64 operations later).  With KB > 0 each
 * operation first writes one byte per cache line of KB of other memory
 * (a moving window over a buffer 4x that size, so that it is not the same
 * lines each time), outside the timed part.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpuprof/clock.h"
#include "gpuprof/region.h"
#include "shim.h"
#include "bench-drain.h"

int gpd_shim__attach_region(int fd);
/* weak: an older libgpuprof.so (before/after runs) lacks it */
void gpd_shim__stats_reset(void) __attribute__((weak));

static gpd_region_t R;
static uint64_t acc_ns, acc_n, acc_push_ns;
static int split; /* BENCH_TL_SPLIT=1: time the push alone too (one more clock read) */
static atomic_int stop; /* never set: the consumer runs until exit */
static bench_drain_t drain = {&R, &stop};
static volatile uint32_t last_node;

/** Attach a region created here and start its consumer: 0 or -1. */
int bt_setup(void) {
  pthread_t th;
  split = getenv("BENCH_TL_SPLIT") != NULL;
  if (gpd_region_create(&R, 8, 1u << 16, (int32_t)getpid(), 1) != 0 || gpd_shim__attach_region(dup(R.fd)) != 0)
    return -1;
  return pthread_create(&th, NULL, bench_drain, &drain) == 0 ? 0 : -1;
}

__attribute__((noinline)) static void op_leaf(unsigned k) {
  uint64_t t0 = gpd_clock_ns();
  uint32_t node = gpd_shim_capture();
  uint64_t t1 = split ? gpd_clock_ns() : 0;
  gpd_shim_push_invoke(gpd_shim_corr_next(GPD_API_CUDA), node, GPD_API_CUDA, GPD_OP_KERNEL, t0, 0);
  uint64_t t2 = gpd_clock_ns();
  acc_ns += t2 - t0;
  if (split)
    acc_push_ns += t2 - t1;
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

static uint8_t *ev_buf;
static size_t ev_len, ev_bytes, ev_off;

/** Cold-cache mode: each bt_op first writes one byte per 64-byte line
 *  of kb KB of other memory (0: off).  0 or -1 (no memory). */
int bt_evict_set(unsigned kb) {
  ev_bytes = (size_t)kb * 1024;
  if (!kb)
    return 0;
  ev_len = ev_bytes * 4;
  free(ev_buf);
  if (!(ev_buf = aligned_alloc(64, ev_len)))
    return -1;
  memset(ev_buf, 1, ev_len);
  ev_off = 0;
  return 0;
}

static void evict(void) {
  size_t off = ev_off;
  for (size_t i = 0; i < ev_bytes; i += 64) {
    ev_buf[off]++;
    off += 64;
    if (off >= ev_len)
      off = 0;
  }
  ev_off = off;
}

/** One GPU operation: through `depth` native frames to call site k. */
void bt_op(unsigned k, unsigned depth) {
  if (ev_bytes)
    evict();
  descend(depth, k);
}

/** Zero the shim's per-phase counters (GPUPROF_SHIM_STATS=1) after the
 *  warm-up, so that its exit table shows the steady loop only. */
void bt_stats_reset(void) {
  if (gpd_shim__stats_reset)
    gpd_shim__stats_reset();
}

/** ns spent pushing since the last call (BENCH_TL_SPLIT=1; else 0). */
double bt_take_push(void) {
  double ns = (double)acc_push_ns;
  acc_push_ns = 0;
  return ns;
}

/** ns spent capturing + pushing since the last call, and how many ops;
 *  *node = the last capture's node (0: none). */
double bt_take(uint64_t *n, uint32_t *node) {
  double ns = (double)acc_ns;
  *n = acc_n;
  *node = last_node;
  acc_ns = acc_n = 0;
  return ns;
}

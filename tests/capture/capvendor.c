/* capvendor.c - libcapvendor.so: stands in for a GPU runtime.  Its API
 * runs vendor code, libc (qsort) and vendor code again before the capture
 * (as CUDA's first cudaMalloc runs the driver and CUPTI below the API),
 * or calls back into the user, who captures there. */
#include <stdint.h>
#include <stdlib.h>

uint32_t gpd_shim_capture(void);

static uint32_t captured;

__attribute__((noinline)) static int vendor_cmp(const void *a, const void *b) {
  if (!captured)
    captured = gpd_shim_capture();
  __asm__ volatile("" ::: "memory");
  return *(const int *)a - *(const int *)b;
}

__attribute__((noinline)) static void vendor_inner(void) {
  int v[2] = {2, 1};
  qsort(v, 2, sizeof v[0], vendor_cmp);
  __asm__ volatile("" ::: "memory");
}

/* mode 0: capture below the API through vendor -> libc -> vendor frames;
 * mode 1: call the user's callback (which captures itself). */
__attribute__((noinline)) uint32_t capvendor_api(int mode, uint32_t (*user_cb)(void)) {
  uint32_t r;
  captured = 0;
  if (mode == 0) {
    vendor_inner();
    r = captured;
  } else {
    r = user_cb();
  }
  __asm__ volatile("" ::: "memory");
  return r;
}

/* duty-app.c - a "CUDA program" on fake-cupti.c for test-cupti-duty.sh:
 * launch_loop() calls cudaLaunchKernel N times (argv[1]), one every 1 ms;
 * prints "launches N".  Each launch runs one kernel "gpd_fake_rt" of
 * FAKE_CUPTI_KERNEL_MS ms (fake-cupti.c).  Exit 0, or 1 when a launch
 * failed. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <cuda_runtime_api.h>

static void kernel(void) {}

__attribute__((noinline)) int launch_loop(int n) {
  int bad = 0;
  for (int i = 0; i < n; i++) {
    bad |= cudaLaunchKernel((const void *)kernel, (dim3){1, 1, 1}, (dim3){32, 1, 1}, NULL, 0, NULL) != cudaSuccess;
    nanosleep(&(struct timespec){0, 1000000}, NULL);
  }
  return bad;
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 1000;
  int bad = launch_loop(n);
  printf("launches %d\n", n);
  return bad;
}

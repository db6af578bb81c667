/* omp-loop.c - an offload loop of small target regions (bench/ompt-overhead.sh):
 * N iterations of one target region that maps 16 doubles to and from the
 * device and adds the iteration to them.  Prints the loop's wall time and
 * the process's CPU time (all threads) per region, ns, and a checksum.
 * Argument: N (default 20000). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double x[16];

__attribute__((noinline)) static void step(int it) {
#pragma omp target map(tofrom : x)
  for (int i = 0; i < 16; i++)
    x[i] += it;
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 20000;
  step(0); /* the runtime's and the device's start-up: not timed */
  struct timespec t0, t1, c0, c1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
  for (int k = 0; k < n; k++)
    step(k);
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double ns = ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / n;
  double cpu = ((c1.tv_sec - c0.tv_sec) * 1e9 + (c1.tv_nsec - c0.tv_nsec)) / n;
  printf("ns_per_region %.0f cpu_ns_per_region %.0f checksum %.0f\n", ns, cpu, x[3]);
  return 0;
}

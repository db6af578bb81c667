/* omp-host.c - a host-only OpenMP program (no target construct, no
 * libomptarget): the shim's OMPT tool must not register with its runtime
 * (tests/ompt, mode known).  Prints the sum of 0..999. */
#include <stdio.h>

int main(void) {
  double s = 0;
#pragma omp parallel for reduction(+ : s)
  for (int i = 0; i < 1000; i++)
    s += i;
  printf("sum %.0f\n", s);
  return 0;
}

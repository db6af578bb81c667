/* omp-known.c - an OpenMP offload program of known structure (tests/ompt,
 * bench/): two target regions in different functions, one of them in a
 * loop, and map / target update / enter and exit data constructs in a
 * third function.  Built with clang -fopenmp -fopenmp-targets=... (the
 * host offload plugin on CI).  Argument: the loop's iterations (default
 * 5).  Prints a checksum that does not depend on the profiler.
 *
 * Per run with LOOP iterations (8-byte doubles):
 *   region_one  1 kernel; H2D 8000 (a), D2H 8000 (b); 2 allocs, 2 deletes
 *   region_two  LOOP kernels; H2D and D2H 4096 each (c); 1 alloc, 1 delete each
 *   refresh     enter data: 1 alloc + H2D 4096; update to: H2D 4096;
 *               update from: D2H 4096; exit data (delete): 1 delete
 */
#include <stdio.h>
#include <stdlib.h>

#define NA 1000
#define NC 512

static double a[NA], b[NA], c[NC];

__attribute__((noinline)) void region_one(void) {
#pragma omp target map(to : a) map(from : b)
  for (int i = 0; i < NA; i++)
    b[i] = 2.0 * a[i];
}

__attribute__((noinline)) void region_two(int it) {
#pragma omp target map(tofrom : c)
  for (int i = 0; i < NC; i++)
    c[i] += it;
}

__attribute__((noinline)) void refresh(void) {
#pragma omp target enter data map(to : c)
  c[0] = 1.0;
#pragma omp target update to(c)
#pragma omp target update from(c)
#pragma omp target exit data map(delete : c)
}

int main(int argc, char **argv) {
  int loop = argc > 1 ? atoi(argv[1]) : 5;
  for (int i = 0; i < NA; i++)
    a[i] = i;
  region_one();
  for (int k = 0; k < loop; k++)
    region_two(k);
  refresh();
  double s = 0;
  for (int i = 0; i < NA; i++)
    s += b[i];
  for (int i = 0; i < NC; i++)
    s += c[i];
  printf("checksum %.1f\n", s);
  return 0;
}

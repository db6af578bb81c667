/* busy-app.c - a "CUDA program" on fake-cupti.c's driver for
 * test-cupti-busy.sh: creates its CUDA context (fakecu_context_create),
 * then launches kernel gpd_fake_busy (fakecu_launch) every 2 ms and adds up 1..n as it goes, until the file argv[1] exists (or
 * argv[2] seconds pass: exit 2).  Prints "ready" after its first launch,
 * then "launches N sum S" at the end; exit 0 when S is n(n+1)/2 (the
 * application's own result came out right), 1 otherwise. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

void fakecu_launch(void);
void fakecu_context_create(void);

int main(int argc, char **argv) {
  if (argc < 3)
    return 2;
  time_t end = time(NULL) + atol(argv[2]);
  uint64_t n = 0, sum = 0;
  fakecu_context_create();
  for (;;) {
    fakecu_launch();
    n++;
    sum += n;
    if (n == 1) {
      printf("ready\n");
      fflush(stdout);
    }
    if (access(argv[1], F_OK) == 0)
      break;
    if (time(NULL) > end)
      return 2;
    nanosleep(&(struct timespec){0, 2000000}, NULL);
  }
  printf("launches %llu sum %llu\n", (unsigned long long)n, (unsigned long long)sum);
  return sum == n * (n + 1) / 2 ? 0 : 1;
}

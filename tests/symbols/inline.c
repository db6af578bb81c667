/* inline.c - call sites inside inlined code, built at -O2 and -O3 by
 * tests/symbols.cmake.  Each sink_* is called from exactly one source line
 * (marked "@name"), never inlined, with a distinct body (no identical-code
 * folding), and its result is used afterwards (no tail call), so that the
 * return address of every call to it lies in the marked inline chain.
 * tests/symbols/check_inline.py holds the expected chains. */
#include <stdio.h>

__attribute__((noinline)) int sink_helper(int x) { __asm__ volatile("" ::: "memory"); return x + 1; }
__attribute__((noinline)) int sink_chain(int x) { __asm__ volatile("" ::: "memory"); return x + 2; }
__attribute__((noinline)) int sink_main(int x) { __asm__ volatile("" ::: "memory"); return x + 3; }

static inline int helper(int x) {
  int r = sink_helper(x * 3); /* @helper */
  return r * 2;
}

__attribute__((noinline)) int phase_c(int x) {
  int a = helper(x); /* @phase_c */
  return a + 7;
}

static inline __attribute__((always_inline)) int chain_c(int x) {
  return sink_chain(x) * 5; /* @chain_c */
}
static inline __attribute__((always_inline)) int chain_b(int x) {
  return chain_c(x + 1) - 1; /* @chain_b */
}
static inline __attribute__((always_inline)) int chain_a(int x) {
  return chain_b(x * 2) + 3; /* @chain_a */
}

__attribute__((noinline)) int stage_two(int n) {
  int s = 0;
  for (int k = 0; k < n; k++)
    s += chain_a(k); /* @stage_two */
  return s;
}

int main(int argc, char **argv) {
  (void)argv;
  int r = phase_c(argc) + stage_two(argc + 2);
  r += sink_main(r); /* @main */
  printf("%d\n", r);
  return 0;
}

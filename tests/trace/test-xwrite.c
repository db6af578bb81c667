/* test-xwrite.c - the trace writers' string table (cli/xwrite.c):
 * ids are 1, 2, ... in first-seen order, a string seen again gets its old
 * id, and a pointer returned for an id stays valid and unchanged while
 * 200 000 later strings (about 5 MB, many 64 KiB blocks, one string larger
 * than a block) are added. The Perfetto writer keeps such pointers in one
 * packet's interned data while it interns more names; a table that moved
 * its bytes made that a use after free (trace.offline under ASan, CI of
 * 2026-12-02, where longer source paths crossed a block). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "xwrite.h"

#define N 200000

static void test_stable(void **state) {
  (void)state;
  gpd_xwrite_t c;
  memset(&c, 0, sizeof c);
  char s[64];
  assert_int_equal(gpd__xwrite_intern(&c, "first"), 1);
  const char *first = gpd__xwrite_str(&c, 1);
  char *big = malloc(100001);
  assert_non_null(big);
  memset(big, 'k', 100000);
  big[100000] = '\0';
  for (int i = 0; i < N; i++) {
    snprintf(s, sizeof s, "name-%d-of-a-longer-frame", i);
    assert_int_equal(gpd__xwrite_intern(&c, s), (uint64_t)i + 2 + (i > N / 2));
    if (i == N / 2)
      assert_int_equal(gpd__xwrite_intern(&c, big), (uint64_t)N / 2 + 3);
  }
  assert_int_equal(c.err, 0);
  assert_ptr_equal(gpd__xwrite_str(&c, 1), first);
  assert_string_equal(first, "first");
  assert_int_equal(gpd__xwrite_intern(&c, "first"), 1);
  assert_int_equal(gpd__xwrite_intern(&c, big), (uint64_t)N / 2 + 3);
  assert_string_equal(gpd__xwrite_str(&c, N / 2 + 3), big);
  assert_string_equal(gpd__xwrite_str(&c, 2), "name-0-of-a-longer-frame");
  snprintf(s, sizeof s, "name-%d-of-a-longer-frame", N - 1);
  assert_string_equal(gpd__xwrite_str(&c, N + 2), s); /* ids 1..N+2 */
  free(big);
  gpd__xwrite_free(&c);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_stable)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}

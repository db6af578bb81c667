/* check.h - the Python tests' non-fatal check: prints the failing file,
 * line and message and counts the failure in the test's `fails`. */
#ifndef GPD_TESTS_PYTHON_CHECK_H
#define GPD_TESTS_PYTHON_CHECK_H
#include <stdio.h>

static int fails;
#define CHECK(c, ...)                                                                              \
  do {                                                                                             \
    if (!(c)) {                                                                                    \
      printf("FAIL %s:%d: ", __FILE__, __LINE__);                                                  \
      printf(__VA_ARGS__);                                                                         \
      printf("\n");                                                                                \
      fails++;                                                                                     \
    }                                                                                              \
  } while (0)

#endif

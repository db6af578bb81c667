/* test-pathfit.c - gpd_cli_path_fit (cli/opts.c), the calling-context
 * column of report's idleness blame: a path "outer > ... > inner" is
 * shown innermost first ("inner < ... < outer"), cut to the width after
 * the innermost frames that fit (" < ..."), and an innermost frame longer
 * than the width keeps its start and its end (the call site's line)
 * around "..." without splitting a UTF-8 character; width 0 (--wide)
 * keeps it whole.  Exact expected strings. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "cli.h"

#define P "_start > main (a.c:10) > burst (/work/src/tests/trace/ocl-gap.c:50)"
#define LEAF "burst (/work/src/tests/trace/ocl-gap.c:50)"
#define WHOLE LEAF " < main (a.c:10) < _start"

static const char *fit(const char *path, unsigned width) {
  static char buf[512];
  snprintf(buf, sizeof buf, "%s", path);
  gpd_cli_path_fit(buf, width);
  assert_true(width == 0 || strlen(buf) <= width);
  return buf;
}

static void test_leaf_first(void **state) {
  (void)state;
  assert_string_equal(fit(P, 0), WHOLE);
  assert_string_equal(fit(P, sizeof WHOLE - 1), WHOLE);
  assert_string_equal(fit(P, 200), WHOLE);
  /* one byte short: the call sites lose their directories, all fits */
  assert_string_equal(fit(P, sizeof WHOLE - 2), "burst (ocl-gap.c:50) < main (a.c:10) < _start");
  assert_string_equal(fit(P, 45), "burst (ocl-gap.c:50) < main (a.c:10) < _start");
  /* then the outermost frames go */
  assert_string_equal(fit(P, 44), "burst (ocl-gap.c:50) < main (a.c:10) < ...");
  assert_string_equal(fit(P, 42), "burst (ocl-gap.c:50) < main (a.c:10) < ...");
  /* room for the innermost frame and the mark only */
  assert_string_equal(fit(P, 41), "burst (ocl-gap.c:50) < ...");
  assert_string_equal(fit(P, 26), "burst (ocl-gap.c:50) < ...");
  /* two rows that differ only in the innermost frame's line still differ */
  assert_string_equal(fit("_start > main (a.c:10) > burst (/work/src/tests/trace/ocl-gap.c:51)", 30),
                      "burst (ocl-gap.c:51) < ...");
  /* only a frame's last parenthesized group is a call site; frames
   * without one, and '/' outside it, stay */
  assert_string_equal(fit("a/b > operator/(x) (/s/t.cc:9) > k", 20), "k < ...");
  assert_string_equal(fit("a/b > operator/(x) (/s/t.cc:9) > k", 31), "k < operator/(x) (t.cc:9) < a/b");
  assert_string_equal(fit("a/b > f (/s/t.cc:9) > k", 20), "k < f (t.cc:9) < a/b");
}

static void test_long_frame(void **state) {
  (void)state;
  /* the innermost frame alone too long even without directories: 20
   * bytes: 8 of the start, "...", 9 of the end; 40: 18, "...", 19 */
  assert_string_equal(fit(P, 20), "burst (ocl-gap.c:50)");
  assert_string_equal(fit(P, 19), "burst (o...ap.c:50)");
#define LONGF "_start > a_rather_long_function_name_for_the_test (/work/src/tests/trace/ocl-gap.c:50)"
  assert_string_equal(fit(LONGF, 20), "a_rather...gap.c:50)");
  assert_string_equal(fit(LONGF, 40), "a_rather_long_func...test (ocl-gap.c:50)");
  assert_string_equal(fit(LEAF, 20), "burst (ocl-gap.c:50)");
  /* 2-byte characters are not split: 9 bytes leave "ë" + "..." + "ë" */
  assert_string_equal(fit("x > \xc3\xab\xc3\xab\xc3\xab\xc3\xab\xc3\xab\xc3\xab\xc3\xab\xc3\xab\xc3\xab\xc3\xab", 9),
                      "\xc3\xab...\xc3\xab");
}

static void test_short(void **state) {
  (void)state;
  assert_string_equal(fit("", 40), "");
  assert_string_equal(fit("", 0), "");
  assert_string_equal(fit("main", 40), "main");
  assert_string_equal(fit("a > b", 0), "b < a");
  assert_string_equal(fit("a > b > c", 9), "c < b < a");
}

/* gpd_render_short_name (cli/render.c): kernels' short names keep
 * anonymous namespaces and lambdas (PyTorch's names, seen on an H200:
 * docs/VALIDATION.md) and drop the return type, template arguments and
 * the argument list. */
static const char *shortn(const char *name, size_t n) {
  static char buf[512];
  gpd_render_short_name(buf, n, name);
  return buf;
}

static void test_short_name(void **state) {
  (void)state;
  assert_string_equal(shortn("void at::native::(anonymous namespace)::reduce_kernel<128, 4, at::native::ReduceOp<float, "
                             "at::native::func_wrapper_t<float, f> > >(at::native::ReduceOp<float, f>)",
                             512),
                      "at::native::(anonymous namespace)::reduce_kernel");
  assert_string_equal(shortn("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
                             "std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)",
                             512),
                      "at::native::vectorized_elementwise_kernel");
  assert_string_equal(shortn("void at::native::(anonymous namespace)::foo<{lambda(int)#2}>::operator()(int)", 512),
                      "at::native::(anonymous namespace)::foo::operator()");
  assert_string_equal(shortn("at::native::{lambda(float)#1}::run(float*)", 512), "at::native::{lambda(float)#1}::run");
  assert_string_equal(shortn("axpy_kernel(float*)", 512), "axpy_kernel");
  assert_string_equal(shortn("fmha_cutlassB_f32_aligned_64x64_k64_dropout_sm80", 512),
                      "fmha_cutlassB_f32_aligned_64x64_k64_dropout_sm80");
  /* bounded by the buffer */
  assert_string_equal(shortn("void at::native::(anonymous namespace)::k(int)", 16), "at::native::(an");
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_leaf_first), cmocka_unit_test(test_long_frame),
                                     cmocka_unit_test(test_short), cmocka_unit_test(test_short_name)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}

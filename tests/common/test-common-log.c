/* test-common-log.c - log levels, GPUPROF_LOG, line format, log-once,
 * control bytes of a message escaped. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include <cmocka.h>

#include "gpuprof/log.h"

static int pfd[2];

static size_t drain(char *buf, size_t cap) {
  ssize_t n = read(pfd[0], buf, cap - 1);
  if (n < 0)
    n = 0;
  buf[n] = '\0';
  return (size_t)n;
}

static void test_levels(void **state) {
  (void)state;
  char buf[4096], want[128];
  assert_int_equal(pipe2(pfd, O_NONBLOCK), 0);
  gpd_log_set_fd(pfd[1]);
  setenv("GPUPROF_LOG", "info", 1);
  gpd_log_init("gpdtest");
  assert_int_equal(gpd_log_level, GPD_LOG_INFO);
  GPD_INFO("hello %d", 42);
  GPD_DEBUG("not shown %d", 1);
  drain(buf, sizeof buf);
  snprintf(want, sizeof want, "gpdtest[%d] INFO: hello 42\n", (int)getpid());
  assert_string_equal(buf, want);
  setenv("GPUPROF_LOG", "bogus", 1);
  gpd_log_init(NULL);
  assert_int_equal(gpd_log_level, GPD_LOG_INFO); /* unknown value: unchanged */
  setenv("GPUPROF_LOG", "ERROR", 1);
  gpd_log_init(NULL);
  assert_int_equal(gpd_log_level, GPD_LOG_ERROR);
  GPD_WARN("hidden");
  assert_int_equal(drain(buf, sizeof buf), 0);
  static int once;
  for (int i = 0; i < 3; i++)
    GPD_LOG_ONCE(once, GPD_LOG_ERROR, "only once %d", i);
  drain(buf, sizeof buf);
  assert_non_null(strstr(buf, "ERROR: only once 0\n"));
  assert_null(strstr(buf, "only once 1"));
  /* one line even for a huge message, ending in a newline */
  char big[3000];
  memset(big, 'x', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  GPD_ERR("%s", big);
  size_t n = drain(buf, sizeof buf);
  assert_true(n <= 1024 && n > 100);
  assert_int_equal(buf[n - 1], '\n');
  assert_ptr_equal(strchr(buf, '\n'), buf + n - 1);
  /* what a client sent, quoted in a message: its control bytes escaped,
   * still one line */
  GPD_ERR("exe %s", "/bin/x\033[2J\r\n    1 root forged\a");
  drain(buf, sizeof buf);
  snprintf(want, sizeof want, "gpdtest[%d] ERROR: exe /bin/x\\x1b[2J\\x0d\\x0a    1 root forged\\x07\n", (int)getpid());
  assert_string_equal(buf, want);
  gpd_log_signal("sig");
  drain(buf, sizeof buf);
  assert_string_equal(buf, "gpdtest: sig\n");
  gpd_log_set_fd(2);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_levels)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test-frame.c - frame decoder and blocking send/recv over a socketpair. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "gpuprof/error.h"
#include "gpuprof/frame.h"

/* stream of frames with payload i of length lens[i], bytes = i+j */
static size_t mk_stream(uint8_t *out, const uint32_t *lens, int n) {
  size_t o = 0;
  for (int i = 0; i < n; i++) {
    gpd_frame_put_header(out + o, lens[i]);
    o += 4;
    for (uint32_t j = 0; j < lens[i]; j++)
      out[o++] = (uint8_t)(i + j);
  }
  return o;
}

static int check_payload(const uint8_t *p, size_t n, int i, uint32_t len) {
  if (n != len)
    return 0;
  for (uint32_t j = 0; j < len; j++)
    if (p[j] != (uint8_t)(i + j))
      return 0;
  return 1;
}

static void test_header(void **state) {
  (void)state;
  uint8_t h[4];
  gpd_frame_put_header(h, 0x01020304);
  assert_int_equal(h[0], 4);
  assert_int_equal(h[3], 1);
}

static void test_bytewise(void **state) {
  (void)state;
  static const uint32_t lens[] = {0, 1, 5, 300, 0, 4000, 7};
  const int n = sizeof lens / sizeof lens[0];
  static uint8_t s[8192];
  size_t len = mk_stream(s, lens, n);
  gpd_frame_dec_t d;
  gpd_frame_dec_init(&d, 0);
  assert_int_equal(d.max, GPD_FRAME_MAX);
  int got = 0;
  for (size_t i = 0; i < len; i++) {
    assert_int_equal(gpd_frame_dec_feed(&d, s + i, 1), 0);
    const uint8_t *p;
    size_t pn;
    int rc;
    while ((rc = gpd_frame_dec_next(&d, &p, &pn)) == 1) {
      assert_true(check_payload(p, pn, got, lens[got]));
      got++;
    }
    assert_int_equal(rc, 0);
  }
  assert_int_equal(got, n);
  gpd_frame_dec_free(&d);
}

static void test_many_in_one_feed(void **state) {
  (void)state;
  static const uint32_t lens[] = {10, 20, 0, 30, 1000, 3};
  const int n = sizeof lens / sizeof lens[0];
  static uint8_t s[8192];
  size_t len = mk_stream(s, lens, n);
  gpd_frame_dec_t d;
  gpd_frame_dec_init(&d, 2000);
  /* all but the last 2 bytes, then the rest */
  assert_int_equal(gpd_frame_dec_feed(&d, s, len - 2), 0);
  const uint8_t *p[8];
  size_t pn[8];
  int got = 0;
  while (gpd_frame_dec_next(&d, &p[got], &pn[got]) == 1)
    got++;
  assert_int_equal(got, n - 1);
  /* payloads stay valid across next calls until the next feed */
  for (int i = 0; i < got; i++)
    assert_true(check_payload(p[i], pn[i], i, lens[i]));
  assert_int_equal(gpd_frame_dec_feed(&d, s + len - 2, 2), 0);
  assert_int_equal(gpd_frame_dec_next(&d, &p[0], &pn[0]), 1);
  assert_true(check_payload(p[0], pn[0], n - 1, lens[n - 1]));
  assert_int_equal(gpd_frame_dec_next(&d, &p[0], &pn[0]), 0);
  gpd_frame_dec_free(&d);
}

static void test_too_big(void **state) {
  (void)state;
  gpd_frame_dec_t d;
  uint8_t h[4];
  gpd_frame_dec_init(&d, 1000);
  gpd_frame_put_header(h, 1001);
  /* byte by byte: the error comes with the 4th header byte */
  assert_int_equal(gpd_frame_dec_feed(&d, h, 3), 0);
  assert_int_equal(gpd_frame_dec_feed(&d, h + 3, 1), GPD_EFRAMETOOBIG);
  assert_true(d.cap < 1001); /* nothing allocated for the payload */
  assert_int_equal(gpd_frame_dec_next(&d, &(const uint8_t *){0}, &(size_t){0}), GPD_EFRAMETOOBIG);
  gpd_frame_dec_free(&d);
  /* 4 GiB declared in a big feed, after a valid frame */
  static uint8_t s[70000];
  gpd_frame_put_header(s, 10);
  gpd_frame_put_header(s + 14, 0xffffffffu);
  gpd_frame_dec_init(&d, 0);
  assert_int_equal(gpd_frame_dec_feed(&d, s, sizeof s), GPD_EFRAMETOOBIG);
  assert_true(d.cap <= 1024);
  gpd_frame_dec_free(&d);
  /* exactly max is fine */
  gpd_frame_dec_init(&d, 1000);
  gpd_frame_put_header(s, 1000);
  assert_int_equal(gpd_frame_dec_feed(&d, s, 1004), 0);
  size_t n;
  const uint8_t *pl;
  assert_int_equal(gpd_frame_dec_next(&d, &pl, &n), 1);
  assert_int_equal(n, 1000);
  gpd_frame_dec_free(&d);
}

static void test_send_recv_fd(void **state) {
  (void)state;
  int sv[2];
  assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  int pfd[2];
  assert_int_equal(pipe(pfd), 0);
  const char msg[] = "hello frame";
  assert_int_equal(gpd_frame_send(sv[0], msg, sizeof msg, pfd[1], 1000), 0);
  assert_int_equal(gpd_frame_send(sv[0], "", 0, -1, 1000), 0);
  uint8_t *out;
  size_t n;
  int fd;
  assert_int_equal(gpd_frame_recv(sv[1], &out, &n, &fd, 1000), 0);
  assert_int_equal(n, sizeof msg);
  assert_memory_equal(out, msg, sizeof msg);
  assert_true(fd >= 0);
  assert_int_not_equal(fd, pfd[1]);
  assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
  /* the received fd is the pipe's write end */
  assert_int_equal(write(fd, "x", 1), 1);
  char c;
  assert_int_equal(read(pfd[0], &c, 1), 1);
  assert_int_equal(c, 'x');
  close(fd);
  free(out);
  /* second frame: empty, no fd */
  assert_int_equal(gpd_frame_recv(sv[1], &out, &n, &fd, 1000), 0);
  assert_int_equal(n, 0);
  assert_int_equal(fd, -1);
  free(out);
  /* nothing more: timeout */
  assert_int_equal(gpd_frame_recv(sv[1], &out, &n, &fd, 50), -ETIMEDOUT);
  assert_null(out);
  /* oversized header from the peer */
  uint8_t h[4];
  gpd_frame_put_header(h, GPD_FRAME_MAX + 1);
  assert_int_equal(write(sv[0], h, 4), 4);
  assert_int_equal(gpd_frame_recv(sv[1], &out, &n, &fd, 1000), GPD_EFRAMETOOBIG);
  assert_int_equal(gpd_frame_send(sv[0], msg, GPD_FRAME_MAX + 1, -1, 1000), GPD_EFRAMETOOBIG);
  /* EOF in the middle of a frame */
  gpd_frame_put_header(h, 100);
  assert_int_equal(write(sv[0], h, 4), 4);
  assert_int_equal(write(sv[0], "abc", 3), 3);
  close(sv[0]);
  assert_int_equal(gpd_frame_recv(sv[1], &out, &n, &fd, 1000), -ECONNRESET);
  assert_int_equal(gpd_frame_recv(sv[1], &out, &n, &fd, 1000), -ECONNRESET);
  /* send to a closed peer: an error, no SIGPIPE */
  assert_int_equal(gpd_frame_send(sv[1], msg, sizeof msg, -1, 1000), -ECONNRESET);
  close(sv[1]);
  close(pfd[0]);
  close(pfd[1]);
}

/* A 3 MiB frame through a socket buffer much smaller than it: partial
 * writes and reads on both sides (the reader is a child process). */
static void test_large_partial(void **state) {
  (void)state;
  int sv[2];
  assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  int small = 4096;
  setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
  setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  size_t big = 3u << 20;
  uint8_t *buf = malloc(big);
  for (size_t i = 0; i < big; i++)
    buf[i] = (uint8_t)(i * 31);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    uint8_t *out;
    size_t n;
    int fd;
    close(sv[0]);
    if (gpd_frame_recv(sv[1], &out, &n, &fd, 10000) != 0 || n != big || memcmp(out, buf, big) != 0)
      _exit(1);
    _exit(0);
  }
  close(sv[1]);
  assert_int_equal(gpd_frame_send(sv[0], buf, (uint32_t)big, -1, 10000), 0);
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  close(sv[0]);
  free(buf);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_header),
    cmocka_unit_test(test_bytewise),
    cmocka_unit_test(test_many_in_one_feed),
    cmocka_unit_test(test_too_big),
    cmocka_unit_test(test_send_recv_fd),
    cmocka_unit_test(test_large_partial),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

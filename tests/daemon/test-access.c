/* test-access.c - daemon/access.c: the may_see matrix, SO_PEERCRED over a
 * socketpair, and (as root, argument "admin-group") admin resolution
 * against a real group created for the test.
 *
 *   test-access               policy + peer credentials (any user)
 *   test-access admin-group   needs root: creates group gpdtestadm and user
 *                             gpdtest1 if missing; exits 77 when not root
 *                             or when groupadd/useradd are missing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "access.h"

static void test_may_see_matrix(void **state) {
  (void)state;
  gpd_peer_t root = {.pid = 1, .uid = 0, .gid = 0, .admin = 1};
  gpd_peer_t alice = {.pid = 2, .uid = 1000, .gid = 1000, .admin = 0};
  gpd_peer_t bob = {.pid = 3, .uid = 1001, .gid = 1001, .admin = 0};
  gpd_peer_t ops = {.pid = 4, .uid = 1002, .gid = 1002, .admin = 1}; /* admin group */
  gpd_peer_t bob_same_gid = {.pid = 5, .uid = 1001, .gid = 1000, .admin = 0};

  /* viewer x owner -> expected */
  const struct {
    const gpd_peer_t *v;
    uid_t owner;
    int want;
  } m[] = {
      {&root, 0, 1},      {&root, 1000, 1},  {&root, 1001, 1},
      {&alice, 1000, 1},  {&alice, 1001, 0}, {&alice, 0, 0},
      {&bob, 1001, 1},    {&bob, 1000, 0},   {&bob, 0, 0},
      {&ops, 1000, 1},    {&ops, 1001, 1},   {&ops, 0, 1},
      {&bob_same_gid, 1000, 0}, /* sharing a gid is not enough */
      {NULL, 0, 0},       {NULL, 1000, 0},
  };
  for (size_t i = 0; i < sizeof m / sizeof m[0]; i++)
    if (gpd_access_may_see(m[i].v, m[i].owner) != m[i].want)
      fail_msg("row %zu: viewer uid %d owner %d: want %d", i, m[i].v ? (int)m[i].v->uid : -1,
               (int)m[i].owner, m[i].want);
}

static void test_peer_socketpair(void **state) {
  (void)state;
  int sv[2];
  gpd_peer_t p;
  assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  assert_int_equal(gpd_access_peer(sv[0], NULL, &p), 0);
  assert_int_equal(p.pid, getpid());
  assert_int_equal(p.uid, geteuid());
  assert_int_equal(p.gid, getegid());
  assert_int_equal(p.admin, geteuid() == 0);
  /* A group that does not exist makes nobody but root an admin. */
  assert_int_equal(gpd_access_peer(sv[0], "gpd-no-such-group-xyz", &p), 0);
  assert_int_equal(p.admin, geteuid() == 0);
  close(sv[0]);
  close(sv[1]);
}

/* The split used on accept: credentials first (no NSS), admin later. */
static void test_cred_then_admin(void **state) {
  (void)state;
  int sv[2];
  gpd_peer_t p;
  assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  memset(&p, 0x5a, sizeof p);
  assert_int_equal(gpd_access_cred(sv[0], &p), 0);
  assert_int_equal(p.pid, getpid());
  assert_int_equal(p.uid, geteuid());
  assert_int_equal(p.gid, getegid());
  assert_int_equal(p.admin, geteuid() == 0);
  /* A non-root peer whose gid is the admin group's is an admin; root is
   * one whatever the group. */
  gpd_peer_t q = {.pid = 1, .uid = 12345, .gid = 0, .admin = 1};
  assert_int_equal(gpd_access_resolve_admin(&q, "gpd-no-such-group-xyz"), 0);
  assert_int_equal(q.admin, 0);
  assert_int_equal(gpd_access_resolve_admin(&q, "root"), 0);
  assert_int_equal(q.admin, 1);
  q.gid = 12345;
  assert_int_equal(gpd_access_resolve_admin(&q, ""), 0);
  assert_int_equal(q.admin, 0);
  q.uid = 0;
  assert_int_equal(gpd_access_resolve_admin(&q, NULL), 0);
  assert_int_equal(q.admin, 1);
  assert_int_equal(gpd_access_cred(-1, &p), -EINVAL);
  assert_int_equal(gpd_access_resolve_admin(NULL, NULL), -EINVAL);
  close(sv[0]);
  close(sv[1]);
}

static void test_bad_args(void **state) {
  (void)state;
  gpd_peer_t p;
  int fds[2];
  assert_int_equal(gpd_access_peer(-1, NULL, &p), -EINVAL);
  assert_int_equal(pipe(fds), 0);
  assert_int_equal(gpd_access_peer(fds[0], NULL, &p), -ENOTSOCK);
  close(fds[0]);
  close(fds[1]);
}

/* ------------------------------------------------ root: a real group */

#define ADM_GROUP "gpdtestadm"
#define ADM_USER "gpdtest1"
#define OTHER_USER "gpdtest2"

static int run(const char *cmd) {
  int st = system(cmd);
  return (st != -1 && WIFEXITED(st)) ? WEXITSTATUS(st) : -1;
}

/* Credentials of a child running as uid/gid with no supplementary groups,
 * seen through a socketpair it made. */
static int peer_as(uid_t uid, gid_t gid, const char *group, gpd_peer_t *out,
                   pid_t *child_out) {
  int ctl[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, ctl) != 0) return -errno;
  pid_t child = fork();
  if (child < 0) return -errno;
  if (child == 0) {
    close(ctl[0]);
    int fds[2];
    if (uid != geteuid() && (setgroups(0, NULL) || setgid(gid) || setuid(uid))) _exit(2);
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) _exit(3);
    char b = 'x';
    struct iovec iov = {.iov_base = &b, .iov_len = 1};
    union {
      struct cmsghdr h;
      char buf[CMSG_SPACE(sizeof(int))];
    } u;
    memset(&u, 0, sizeof u);
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
                         .msg_controllen = sizeof u.buf};
    struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cm), &fds[0], sizeof(int));
    if (sendmsg(ctl[1], &msg, 0) != 1) _exit(4);
    _exit(0);
  }
  close(ctl[1]);
  char b;
  struct iovec iov = {.iov_base = &b, .iov_len = 1};
  union {
    struct cmsghdr h;
    char buf[CMSG_SPACE(sizeof(int))];
  } u;
  struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
                       .msg_controllen = sizeof u.buf};
  ssize_t n = recvmsg(ctl[0], &msg, 0);
  close(ctl[0]);
  int st;
  waitpid(child, &st, 0);
  struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
  if (n != 1 || !cm) return -EIO;
  int fd;
  memcpy(&fd, CMSG_DATA(cm), sizeof fd);
  if (child_out) *child_out = child;
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    close(fd);
    return -ECHILD;
  }
  int err = gpd_access_peer(fd, group, out);
  close(fd);
  return err;
}

/* Credentials of another process (a forked child, as nobody when we are
 * root): pid and uid are the child's, taken when it made the pair. */
static void test_peer_other_process(void **state) {
  (void)state;
  gpd_peer_t p;
  pid_t child = 0;
  uid_t uid = geteuid() == 0 ? 65534 : geteuid();
  gid_t gid = geteuid() == 0 ? 65534 : getegid();
  assert_int_equal(peer_as(uid, gid, NULL, &p, &child), 0);
  assert_int_equal(p.pid, child);
  assert_true(p.pid != getpid());
  assert_int_equal(p.uid, uid);
  assert_int_equal(p.gid, gid);
  assert_int_equal(p.admin, uid == 0);
  assert_int_equal(gpd_access_may_see(&p, uid), 1);
  assert_int_equal(gpd_access_may_see(&p, uid + 1), uid == 0);
}

static void test_admin_group(void **state) {
  (void)state;
  struct group *gr = getgrnam(ADM_GROUP);
  assert_non_null(gr);
  gid_t agid = gr->gr_gid;
  struct passwd *pw = getpwnam(ADM_USER);
  assert_non_null(pw);
  uid_t u1 = pw->pw_uid;
  gid_t g1 = pw->pw_gid;
  pw = getpwnam(OTHER_USER);
  assert_non_null(pw);
  uid_t u2 = pw->pw_uid;
  gid_t g2 = pw->pw_gid;
  gpd_peer_t p;

  /* gpdtest1 is a supplementary member (getgrouplist), even though the
   * connecting process carries no supplementary groups. */
  assert_int_equal(peer_as(u1, g1, ADM_GROUP, &p, NULL), 0);
  assert_int_equal(p.uid, u1);
  assert_int_equal(p.admin, 1);
  assert_int_equal(gpd_access_may_see(&p, u2), 1);
  /* Without an admin group configured it is an ordinary user. */
  assert_int_equal(peer_as(u1, g1, "", &p, NULL), 0);
  assert_int_equal(p.admin, 0);
  assert_int_equal(gpd_access_may_see(&p, u2), 0);
  /* gpdtest2 is not a member ... */
  assert_int_equal(peer_as(u2, g2, ADM_GROUP, &p, NULL), 0);
  assert_int_equal(p.admin, 0);
  assert_int_equal(gpd_access_may_see(&p, u1), 0);
  /* ... unless its process runs with the admin gid (sg/newgrp). */
  assert_int_equal(peer_as(u2, agid, ADM_GROUP, &p, NULL), 0);
  assert_int_equal(p.admin, 1);
  /* Root is always admin. */
  assert_int_equal(peer_as(0, 0, ADM_GROUP, &p, NULL), 0);
  assert_int_equal(p.admin, 1);
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "admin-group") == 0) {
    if (geteuid() != 0) {
      fprintf(stderr, "SKIP: admin-group needs root\n");
      return 77;
    }
    if (run("command -v groupadd >/dev/null && command -v useradd >/dev/null") != 0) {
      fprintf(stderr, "SKIP: groupadd/useradd missing\n");
      return 77;
    }
    if (!getgrnam(ADM_GROUP) && run("groupadd " ADM_GROUP) != 0) return 1;
    if (!getpwnam(ADM_USER) && run("useradd -M " ADM_USER) != 0) return 1;
    if (!getpwnam(OTHER_USER) && run("useradd -M " OTHER_USER) != 0) return 1;
    if (run("usermod -a -G " ADM_GROUP " " ADM_USER) != 0) return 1;
    if (run("gpasswd -d " OTHER_USER " " ADM_GROUP " >/dev/null 2>&1; true") != 0) return 1;
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_admin_group)};
    return cmocka_run_group_tests_name("access-admin-group", tests, NULL, NULL);
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_may_see_matrix),
      cmocka_unit_test(test_peer_socketpair),
      cmocka_unit_test(test_peer_other_process),
      cmocka_unit_test(test_cred_then_admin),
      cmocka_unit_test(test_bad_args),
  };
  return cmocka_run_group_tests_name("access", tests, NULL, NULL);
}

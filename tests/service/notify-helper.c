/* notify-helper.c - test-only stand-in daemon for daemon/notify.c.
 *
 *   notify-helper PATH
 *
 * Gets its listening socket from gpd_notify_listen(PATH) (socket
 * activation or bind), prints "listening activated=A" on stdout, sends
 * STATUS + READY=1, then answers each connection with "ok activated=A\n".
 * SIGHUP: RELOADING=1 then READY=1.  SIGTERM: STOPPING=1, exit 0.
 * A gpd_notify_listen error is printed as "listen: <strerror>" with exit 2.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "notify.h"

int main(int argc, char **argv) {
  int fd, activated, err;
  if (argc != 2) {
    fprintf(stderr, "usage: notify-helper PATH\n");
    return 64;
  }
  err = gpd_notify_listen(argv[1], &fd, &activated);
  if (err) {
    fprintf(stderr, "listen: %s\n", strerror(-err));
    return 2;
  }
  /* The liveness probe of a second instance connects and hangs up at
   * once; writing to it must not kill us (a real daemon ignores it too). */
  signal(SIGPIPE, SIG_IGN);
  sigset_t ss;
  sigemptyset(&ss);
  sigaddset(&ss, SIGTERM);
  sigaddset(&ss, SIGHUP);
  sigaddset(&ss, SIGINT);
  sigprocmask(SIG_BLOCK, &ss, NULL);
  int sfd = signalfd(-1, &ss, SFD_CLOEXEC);
  if (sfd < 0) return 3;
  printf("listening activated=%d\n", activated);
  fflush(stdout);
  gpd_notify_status("listening on fd %d\n(activated=%d)", fd, activated);
  gpd_notify_ready();
  for (;;) {
    struct pollfd p[2] = {{.fd = fd, .events = POLLIN}, {.fd = sfd, .events = POLLIN}};
    if (poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return 4;
    }
    if (p[1].revents & POLLIN) {
      struct signalfd_siginfo si;
      if (read(sfd, &si, sizeof si) != sizeof si) return 5;
      if (si.ssi_signo == SIGHUP) {
        gpd_notify_reloading();
        gpd_notify_ready();
        continue;
      }
      gpd_notify_stopping();
      return 0;
    }
    if (p[0].revents & POLLIN) {
      int c = accept4(fd, NULL, NULL, SOCK_CLOEXEC);
      if (c < 0) {
        if (errno == EAGAIN || errno == EINTR) continue; /* non-blocking listener */
        return 6;
      }
      char msg[64];
      int n = snprintf(msg, sizeof msg, "ok activated=%d\n", activated);
      if (write(c, msg, (size_t)n) != n && errno != EPIPE && errno != ECONNRESET) return 7;
      close(c);
    }
  }
}

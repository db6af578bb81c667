/* server.c - the listening control socket (main thread, libuv).
 * The socket comes from gpd_notify_listen (systemd socket activation or a
 * fresh bind); accept4 runs in a uv_poll_t callback. */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <uv.h>

#include "gpuprof/log.h"

#include "daemon.h"
#include "notify.h"

static uv_poll_t server_poll;
static int server_fd = -1;
static int server_activated;

static void on_accept(uv_poll_t *h, int status, int events) {
  gpd_daemon_t *d = h->data;
  (void)events;
  if (status < 0)
    return;
  for (int i = 0; i < 64; i++) {
    int fd = accept4(server_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
        GPD_WARN("accept: %s", strerror(errno));
      return;
    }
    gpd_client_accept(d, fd);
  }
}

int gpd_server_start(gpd_daemon_t *d, int *activated) {
  int err = gpd_notify_listen(d->cfg.socket, &server_fd, &server_activated);
  if (err < 0)
    return err;
  *activated = server_activated;
  uv_poll_init(d->loop, &server_poll, server_fd);
  server_poll.data = d;
  uv_poll_start(&server_poll, UV_READABLE, on_accept);
  return 0;
}

void gpd_server_stop(gpd_daemon_t *d) {
  (void)d;
  if (server_fd < 0)
    return;
  uv_poll_stop(&server_poll);
  uv_close((uv_handle_t *)&server_poll, NULL);
  close(server_fd);
  server_fd = -1;
  if (!server_activated)
    unlink(d->cfg.socket);
}

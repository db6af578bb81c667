/* server.c - the listening control socket (main thread, libuv).
 * The socket comes from gpd_notify_listen (systemd socket activation or a
 * fresh bind); accept4 runs in a uv_poll_t callback.
 *
 * Out of file descriptors (EMFILE/ENFILE) or kernel memory, accept4 fails
 * for as long as the condition lasts while the pending connection keeps the
 * socket readable: retrying at once would spin a core and log without end.
 * Instead the listening watcher is stopped for a back-off (50 ms, doubling
 * to 1 s while accepts keep failing, reset by a successful accept);
 * pending peers wait in the backlog, existing clients keep being served,
 * and the failure is logged once per limit_log_interval_s with a count.
 * A sweep timer (1 s) reports counted events (gpd_client_sweep). */
#include <errno.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <uv.h>

#include "gpuprof/log.h"

#include "daemon.h"
#include "notify.h"

#define SERVER_BACKOFF_MIN_MS 50u
#define SERVER_BACKOFF_MAX_MS 1000u
#define SERVER_SWEEP_MS 1000u

static uv_poll_t server_poll;
static uv_timer_t server_backoff, server_sweep;
static int server_fd = -1;
static int server_activated;
static unsigned backoff_ms;
static uint64_t accept_fail_ms, accept_fail_held;

static void on_accept(uv_poll_t *h, int status, int events);

static uint64_t interval_ms(const gpd_daemon_t *d) {
  return (uint64_t)d->cfg.limit_log_interval_s * 1000u;
}

static void on_backoff(uv_timer_t *t) {
  (void)t;
  if (server_fd >= 0)
    uv_poll_start(&server_poll, UV_READABLE, on_accept);
}

/* accept4 failed with `err` (not EAGAIN): pause the watcher, log once per
 * interval. */
static void accept_pause(gpd_daemon_t *d, int err) {
  backoff_ms = backoff_ms ? backoff_ms * 2 : SERVER_BACKOFF_MIN_MS;
  if (backoff_ms > SERVER_BACKOFF_MAX_MS)
    backoff_ms = SERVER_BACKOFF_MAX_MS;
  uv_poll_stop(&server_poll);
  uv_timer_start(&server_backoff, on_backoff, backoff_ms, 0);
  uint64_t now = uv_now(d->loop);
  if (accept_fail_ms && now - accept_fail_ms < interval_ms(d)) {
    accept_fail_held++;
    return;
  }
  struct rlimit rl = {0};
  getrlimit(RLIMIT_NOFILE, &rl);
  GPD_WARN("accept: %s (fd limit %llu); new connections wait, retried every %u..%u ms "
           "(logged once per %u s, with a count)",
           strerror(err), (unsigned long long)rl.rlim_cur, SERVER_BACKOFF_MIN_MS,
           SERVER_BACKOFF_MAX_MS, d->cfg.limit_log_interval_s);
  accept_fail_ms = now ? now : 1;
  accept_fail_held = 0;
}

static void on_accept(uv_poll_t *h, int status, int events) {
  gpd_daemon_t *d = h->data;
  (void)events;
  if (status < 0)
    return;
  for (int i = 0; i < 64; i++) {
    int fd = accept4(server_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      int err = errno;
      if (err == EAGAIN || err == EWOULDBLOCK || err == ECONNABORTED)
        return;
      if (err == EINTR)
        continue;
      accept_pause(d, err); /* EMFILE, ENFILE, ENOBUFS, ENOMEM, anything else */
      return;
    }
    backoff_ms = 0;
    gpd_client_accept(d, fd);
  }
}

static void on_sweep(uv_timer_t *t) {
  gpd_daemon_t *d = t->data;
  gpd_client_sweep(d);
  uint64_t now = uv_now(d->loop);
  if (accept_fail_held && now - accept_fail_ms >= interval_ms(d)) {
    GPD_WARN("accept failed %llu more times in the last %u s",
             (unsigned long long)accept_fail_held, d->cfg.limit_log_interval_s);
    accept_fail_ms = now ? now : 1;
    accept_fail_held = 0;
  }
}

int gpd_server_start(gpd_daemon_t *d, int *activated) {
  struct rlimit rl;
  int err = gpd_notify_listen(d->cfg.socket, &server_fd, &server_activated);
  if (err < 0)
    return err;
  *activated = server_activated;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
      rl.rlim_cur < (rlim_t)d->cfg.max_clients + 64)
    GPD_WARN("fd limit %llu is below max_clients %u + 64: accepts will fail with EMFILE before "
             "the connection limits refuse anyone (raise LimitNOFILE or lower max_clients)",
             (unsigned long long)rl.rlim_cur, d->cfg.max_clients);
  backoff_ms = 0;
  uv_poll_init(d->loop, &server_poll, server_fd);
  server_poll.data = d;
  uv_timer_init(d->loop, &server_backoff);
  server_backoff.data = d;
  uv_timer_init(d->loop, &server_sweep);
  server_sweep.data = d;
  uv_timer_start(&server_sweep, on_sweep, SERVER_SWEEP_MS, SERVER_SWEEP_MS);
  uv_unref((uv_handle_t *)&server_sweep);
  uv_poll_start(&server_poll, UV_READABLE, on_accept);
  return 0;
}

void gpd_server_stop(gpd_daemon_t *d) {
  if (server_fd < 0)
    return;
  uv_poll_stop(&server_poll);
  uv_timer_stop(&server_backoff);
  uv_timer_stop(&server_sweep);
  uv_close((uv_handle_t *)&server_poll, NULL);
  uv_close((uv_handle_t *)&server_backoff, NULL);
  uv_close((uv_handle_t *)&server_sweep, NULL);
  close(server_fd);
  server_fd = -1;
  if (!server_activated)
    unlink(d->cfg.socket);
}

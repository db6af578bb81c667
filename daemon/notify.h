/* notify.h - systemd integration through libsystemd (sd_notify,
 * sd_listen_fds).  Without systemd (no NOTIFY_SOCKET / LISTEN_FDS) every
 * function degrades to a no-op or to creating the socket itself.
 */
#ifndef GPD_DAEMON_NOTIFY_H
#define GPD_DAEMON_NOTIFY_H

/** The listening Unix socket: the first fd passed by socket activation if
 *  there is one (*activated = 1), else a new socket bound at `path`
 *  (parent directory created 0755, stale socket unlinked, mode 0666 so any
 *  user may register; access is enforced per request by peer credentials).
 *  Non-blocking, close-on-exec.  Returns 0 or -errno. */
int gpd_notify_listen(const char *path, int *fd_out, int *activated);

void gpd_notify_ready(void);                 /* READY=1 */
void gpd_notify_reloading(void);             /* RELOADING=1 */
void gpd_notify_stopping(void);              /* STOPPING=1 */
void gpd_notify_status(const char *fmt, ...) /* STATUS=... */
    __attribute__((format(printf, 1, 2)));

#endif

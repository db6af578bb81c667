/* notify.c - systemd integration: socket activation and sd_notify.
 *
 * gpd_notify_listen() takes the first socket passed by systemd
 * (LISTEN_FDS, from gpuprofd.socket or systemd-socket-activate) or, when
 * there is none, binds the socket itself.  It never takes the socket of a
 * live daemon: an existing socket file is unlinked only if connect() to it
 * is refused.  The sd_notify wrappers are no-ops without NOTIFY_SOCKET.
 * Main thread only (sd_listen_fds unsets the environment).
 */
#include "notify.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>

/* Make a directory this daemon just created 0755 whatever the umask
 * (main.c sets 077): opened without following a link, checked to be ours,
 * then fchmod - no window in which a path swap changes another file. */
static int notify_dir_public(const char *dir) {
  struct stat st;
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), err = 0;
  if (fd < 0) return -errno;
  if (fstat(fd, &st) < 0) err = -errno;
  else if (st.st_uid != geteuid()) err = -EPERM;
  else if ((st.st_mode & 07777) != 0755 && fchmod(fd, 0755) < 0) err = -errno;
  close(fd);
  return err;
}

/* mkdir -p of the directory part of `path`: directories it creates are
 * 0755 (any user must reach the socket).  The socket's own directory,
 * made now or found, must be a real directory (not a link) owned by this
 * daemon's user or root: another user who owns it could swap the socket
 * (-EPERM, -ENOTDIR). */
static int notify_mkdir_parents(const char *path) {
  char buf[sizeof(((struct sockaddr_un *)0)->sun_path)];
  size_t n = strlen(path);
  if (n >= sizeof buf) return -ENAMETOOLONG;
  memcpy(buf, path, n + 1);
  char *slash = strrchr(buf, '/');
  if (!slash || slash == buf) return 0;
  *slash = '\0';
  for (char *p = buf + 1;; p++) {
    if (*p != '/' && *p != '\0') continue;
    char c = *p;
    *p = '\0';
    if (mkdir(buf, 0755) == 0) {
      int err = notify_dir_public(buf);
      if (err < 0) return err;
    } else if (errno != EEXIST) {
      return -errno;
    }
    *p = c;
    if (c == '\0') break;
  }
  struct stat st;
  if (lstat(buf, &st) < 0) return -errno;
  if (!S_ISDIR(st.st_mode)) return -ENOTDIR;
  if (st.st_uid != geteuid() && st.st_uid != 0) return -EPERM;
  return 0;
}

/* 1 if a daemon accepts connections at `sa`, 0 if the file is stale. */
static int notify_socket_alive(const struct sockaddr_un *sa) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 1; /* cannot tell: do not steal */
  int rc = connect(fd, (const struct sockaddr *)sa, sizeof *sa);
  int e = errno;
  close(fd);
  if (rc == 0) return 1;
  /* ECONNREFUSED: nobody listening; ENOENT: gone meanwhile. EAGAIN (full
   * backlog) means somebody is listening. */
  return !(e == ECONNREFUSED || e == ENOENT);
}

static int notify_fd_nonblock(int fd) {
  int fl = fcntl(fd, F_GETFL);
  if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) return -errno;
  fl = fcntl(fd, F_GETFD);
  if (fl < 0 || fcntl(fd, F_SETFD, fl | FD_CLOEXEC) < 0) return -errno;
  return 0;
}

int gpd_notify_listen(const char *path, int *fd_out, int *activated) {
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  struct stat st;
  int fd = -1, err, n;

  if (!fd_out) return -EINVAL;
  *fd_out = -1;
  if (activated) *activated = 0;

  n = sd_listen_fds(1);
  if (n < 0) return n;
  if (n > 0) {
    fd = SD_LISTEN_FDS_START;
    /* Only the first socket is ours; close any extras so they do not leak. */
    for (int i = 1; i < n; i++) close(SD_LISTEN_FDS_START + i);
    err = sd_is_socket_unix(fd, SOCK_STREAM, 1, NULL, 0);
    if (err <= 0) {
      err = err < 0 ? err : -ENOTSOCK;
      goto fail;
    }
    if ((err = notify_fd_nonblock(fd))) goto fail;
    *fd_out = fd;
    if (activated) *activated = 1;
    return 0;
  }

  if (!path || !*path) return -EINVAL;
  if (strlen(path) >= sizeof sa.sun_path) return -ENAMETOOLONG;
  memcpy(sa.sun_path, path, strlen(path) + 1);
  if ((err = notify_mkdir_parents(path))) return err;

  if (lstat(path, &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) return -EEXIST; /* never unlink a non-socket */
    if (notify_socket_alive(&sa)) return -EADDRINUSE;
    if (unlink(path) < 0 && errno != ENOENT) return -errno;
  }

  fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -errno;
  if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
    err = -errno;
    goto fail;
  }
  /* 0666: any user may register; each request is checked by peer creds. */
  if (chmod(path, 0666) < 0 || listen(fd, SOMAXCONN) < 0) {
    err = -errno;
    unlink(path);
    goto fail;
  }
  *fd_out = fd;
  return 0;

fail:
  if (fd >= 0) close(fd);
  return err;
}

static unsigned long long notify_monotonic_usec(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (unsigned long long)ts.tv_sec * 1000000ull + (unsigned long long)ts.tv_nsec / 1000;
}

void gpd_notify_ready(void) { sd_notify(0, "READY=1\nSTATUS=ready"); }

void gpd_notify_reloading(void) {
  /* MONOTONIC_USEC is required by Type=notify-reload (systemd >= 253) and
   * harmless before. */
  sd_notifyf(0, "RELOADING=1\nMONOTONIC_USEC=%llu\nSTATUS=reloading configuration",
             notify_monotonic_usec());
}

void gpd_notify_stopping(void) { sd_notify(0, "STOPPING=1\nSTATUS=stopping"); }

void gpd_notify_status(const char *fmt, ...) {
  char msg[512];
  va_list ap;
  if (!fmt) return;
  va_start(ap, fmt);
  int n = vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  /* A newline would start a new assignment; keep STATUS one line. */
  for (char *p = msg; *p; p++)
    if (*p == '\n') *p = ' ';
  sd_notifyf(0, "STATUS=%s", msg);
}

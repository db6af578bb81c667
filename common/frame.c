/* frame.c - length-prefixed frames on the control socket (frame.h).
 *
 * Decoder: buf[off, len) holds unread bytes; payloads handed out by
 * gpd_frame_dec_next lie before `off` and stay valid until the next feed,
 * which compacts.  Feed copies bytes only up to the end of the element
 * being completed (a header, then its payload), so a header that declares
 * more than `max` is rejected before anything is allocated for it.
 *
 * Blocking helpers: non-blocking I/O (MSG_DONTWAIT) plus poll() against a
 * deadline, EINTR retried, partial writes continued, EOF = -ECONNRESET,
 * MSG_NOSIGNAL so that a closed peer never raises SIGPIPE in the host.
 */
#include "gpuprof/frame.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "gpuprof/error.h"

#define DEC_MIN_CAP 256u
#define DEC_KEEP_CAP (64u << 10) /* idle buffers above this are freed */
#define RECV_MAX_FDS 4

static uint32_t get_le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

void gpd_frame_put_header(uint8_t hdr[GPD_FRAME_HDR], uint32_t n) {
  hdr[0] = (uint8_t)n;
  hdr[1] = (uint8_t)(n >> 8);
  hdr[2] = (uint8_t)(n >> 16);
  hdr[3] = (uint8_t)(n >> 24);
}

/* ------------------------------------------------------------- decoder */

/** `max` 0 or above GPD_FRAME_MAX means GPD_FRAME_MAX. */
void gpd_frame_dec_init(gpd_frame_dec_t *d, uint32_t max) {
  memset(d, 0, sizeof *d);
  d->max = (max == 0 || max > GPD_FRAME_MAX) ? GPD_FRAME_MAX : max;
}

void gpd_frame_dec_free(gpd_frame_dec_t *d) {
  free(d->buf);
  d->buf = NULL;
  d->len = d->cap = d->off = 0;
}

static int dec_reserve(gpd_frame_dec_t *d, size_t want) {
  if (want <= d->cap)
    return 0;
  size_t ncap = d->cap ? d->cap : DEC_MIN_CAP;
  while (ncap < want)
    ncap *= 2;
  uint8_t *nb = realloc(d->buf, ncap);
  if (!nb)
    return -ENOMEM;
  d->buf = nb;
  d->cap = ncap;
  return 0;
}

int gpd_frame_dec_feed(gpd_frame_dec_t *d, const void *data, size_t n) {
  const uint8_t *src = data;
  int err;

  /* Compact: drop payloads already handed out. */
  if (d->off) {
    memmove(d->buf, d->buf + d->off, d->len - d->off);
    d->len -= d->off;
    d->off = 0;
  }
  if (d->len == 0 && d->cap > DEC_KEEP_CAP)
    gpd_frame_dec_free(d);

  /* Skip complete frames already buffered; find the element in progress. */
  size_t scan = 0;
  for (;;) {
    if (d->len - scan < GPD_FRAME_HDR)
      break;
    uint32_t plen = get_le32(d->buf + scan);
    if (plen > d->max)
      return GPD_EFRAMETOOBIG;
    if (d->len - scan - GPD_FRAME_HDR < plen)
      break;
    scan += GPD_FRAME_HDR + plen;
  }

  while (n > 0) {
    size_t have = d->len - scan, need;
    if (have < GPD_FRAME_HDR) {
      need = GPD_FRAME_HDR - have;
    } else {
      uint32_t plen = get_le32(d->buf + scan);
      need = GPD_FRAME_HDR + (size_t)plen - have;
    }
    size_t take = need < n ? need : n;
    err = dec_reserve(d, d->len + take);
    if (err)
      return err;
    memcpy(d->buf + d->len, src, take);
    d->len += take;
    src += take;
    n -= take;
    have += take;
    if (have >= GPD_FRAME_HDR) {
      uint32_t plen = get_le32(d->buf + scan);
      if (plen > d->max)
        return GPD_EFRAMETOOBIG;
      if (have == GPD_FRAME_HDR + (size_t)plen)
        scan += have; /* frame complete; next element starts here */
    }
  }
  return 0;
}

int gpd_frame_dec_next(gpd_frame_dec_t *d, const uint8_t **payload, size_t *n) {
  size_t have = d->len - d->off;
  if (have < GPD_FRAME_HDR)
    return 0;
  uint32_t plen = get_le32(d->buf + d->off);
  if (plen > d->max)
    return GPD_EFRAMETOOBIG;
  if (have - GPD_FRAME_HDR < plen)
    return 0;
  *payload = d->buf + d->off + GPD_FRAME_HDR;
  *n = plen;
  d->off += GPD_FRAME_HDR + plen;
  return 1;
}

/* ----------------------------------------------------- blocking helpers */

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait for `events` on sock until deadline (< 0: forever). */
static int wait_fd(int sock, short events, int64_t deadline) {
  for (;;) {
    int t = -1;
    if (deadline >= 0) {
      int64_t left = deadline - now_ms();
      if (left <= 0)
        return -ETIMEDOUT;
      t = left > 1000000 ? 1000000 : (int)left;
    }
    struct pollfd pfd = {.fd = sock, .events = events};
    int rc = poll(&pfd, 1, t);
    if (rc > 0)
      return 0; /* ready, or error/hangup: the next I/O call reports it */
    if (rc == 0)
      continue; /* re-check the deadline */
    if (errno != EINTR)
      return -errno;
  }
}

static int64_t deadline_of(int timeout_ms) { return timeout_ms < 0 ? -1 : now_ms() + timeout_ms; }

void gpd_frame_cmsg_fd(struct msghdr *msg, void *cbuf, int fd) {
  memset(cbuf, 0, GPD_FRAME_CMSG_SPACE);
  msg->msg_control = cbuf;
  msg->msg_controllen = GPD_FRAME_CMSG_SPACE;
  struct cmsghdr *cm = CMSG_FIRSTHDR(msg);
  cm->cmsg_level = SOL_SOCKET;
  cm->cmsg_type = SCM_RIGHTS;
  cm->cmsg_len = CMSG_LEN(sizeof(int));
  memcpy(CMSG_DATA(cm), &fd, sizeof(int));
}

/* fd < 0: none.  The fd rides on the first byte that is sent. */
int gpd_frame_send(int sock, const void *payload, uint32_t n, int fd, int timeout_ms) {
  uint8_t hdr[GPD_FRAME_HDR];
  union {
    struct cmsghdr align;
    char buf[CMSG_SPACE(sizeof(int))];
  } cbuf;
  int64_t deadline = deadline_of(timeout_ms);
  size_t total = GPD_FRAME_HDR + (size_t)n, sent = 0;
  int err;

  if (n > GPD_FRAME_MAX)
    return GPD_EFRAMETOOBIG;
  if (n && !payload)
    return -EINVAL;
  gpd_frame_put_header(hdr, n);

  while (sent < total) {
    struct iovec iov[2];
    int niov = 0;
    if (sent < GPD_FRAME_HDR) {
      iov[niov++] = (struct iovec){hdr + sent, GPD_FRAME_HDR - sent};
      if (n)
        iov[niov++] = (struct iovec){(void *)payload, n};
    } else {
      size_t po = sent - GPD_FRAME_HDR;
      iov[niov++] = (struct iovec){(uint8_t *)payload + po, n - po};
    }
    struct msghdr msg = {.msg_iov = iov, .msg_iovlen = (size_t)niov};
    if (sent == 0 && fd >= 0)
      gpd_frame_cmsg_fd(&msg, cbuf.buf, fd);
    ssize_t w = sendmsg(sock, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (w >= 0) {
      sent += (size_t)w;
      continue;
    }
    if (errno == EINTR)
      continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      err = wait_fd(sock, POLLOUT, deadline);
      if (err)
        return err;
      continue;
    }
    if (errno == EPIPE)
      return -ECONNRESET;
    return -errno;
  }
  return 0;
}

/* Read exactly len bytes (never more: the next frame stays in the socket),
 * collecting at most one fd into *fd (extra fds are closed). */
static int recv_exact(int sock, uint8_t *dst, size_t len, int *fd, int64_t deadline) {
  size_t got = 0;
  while (got < len) {
    union {
      struct cmsghdr align;
      char buf[CMSG_SPACE(RECV_MAX_FDS * sizeof(int))];
    } cbuf;
    struct iovec iov = {dst + got, len - got};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf.buf,
                         .msg_controllen = sizeof cbuf.buf};
    ssize_t r = recvmsg(sock, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (r < 0) {
      if (errno == EINTR)
        continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        int err = wait_fd(sock, POLLIN, deadline);
        if (err)
          return err;
        continue;
      }
      return -errno;
    }
    for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
      if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
        continue;
      size_t nfd = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t k = 0; k < nfd; k++) {
        int f;
        memcpy(&f, CMSG_DATA(cm) + k * sizeof(int), sizeof f);
        if (*fd < 0)
          *fd = f;
        else
          close(f);
      }
    }
    if (r == 0)
      return -ECONNRESET;
    got += (size_t)r;
  }
  return 0;
}

int gpd_frame_recv(int sock, uint8_t **out, size_t *n, int *fd_out, int timeout_ms) {
  return gpd_frame_recv_max(sock, out, n, fd_out, timeout_ms, GPD_FRAME_MAX);
}

int gpd_frame_recv_max(int sock, uint8_t **out, size_t *n, int *fd_out, int timeout_ms, uint32_t max) {
  uint8_t hdr[GPD_FRAME_HDR];
  uint8_t *buf = NULL;
  int fd = -1;
  int64_t deadline = deadline_of(timeout_ms);
  int err;

  *out = NULL;
  *n = 0;
  if (fd_out)
    *fd_out = -1;
  err = recv_exact(sock, hdr, sizeof hdr, &fd, deadline);
  if (err)
    goto fail;
  uint32_t len = get_le32(hdr);
  if (len > max) {
    err = GPD_EFRAMETOOBIG;
    goto fail;
  }
  buf = malloc(len ? len : 1);
  if (!buf) {
    err = -ENOMEM;
    goto fail;
  }
  err = recv_exact(sock, buf, len, &fd, deadline);
  if (err)
    goto fail;
  *out = buf;
  *n = len;
  if (fd_out)
    *fd_out = fd;
  else if (fd >= 0)
    close(fd);
  return 0;

fail:
  free(buf);
  if (fd >= 0)
    close(fd);
  return err;
}

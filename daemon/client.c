/* client.c - one connection on the control socket (main thread, libuv).
 *
 * A uv_poll_t watches the raw fd because frames may carry SCM_RIGHTS fds
 * (recvmsg / sendmsg).  Incoming bytes go through gpd_frame_dec with the
 * per-client cap GPD_CLIENT_FRAME_MAX; replies are queued and written with
 * sendmsg (a region fd rides on the first byte of HelloReply).  Rules for
 * untrusted peers (STYLE.md, "a daemon that meets bad input"):
 *   - a frame whose length is over the cap, that does not decode, or that
 *     is unexpected gets an Error reply, a one-line sanitized log sample,
 *     and the connection is closed after the reply is written;
 *   - a peer that never completes a frame within GPD_CLIENT_IDLE_MS is
 *     closed (a timer, never blocking other clients);
 *   - a peer that does not read its replies stops being read once
 *     GPD_CLIENT_OUT_MAX bytes are queued.
 * A registered process's EOF ends its process (final drain and flush).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <uv.h>

#include "gpuprof/error.h"
#include "gpuprof/frame.h"
#include "gpuprof/log.h"
#include "gpuprof.pb-c.h"

#include "daemon.h"

#define GPD_CLIENT_FRAME_MAX GPD_FRAME_MAX
#define GPD_CLIENT_IDLE_MS 10000
#define GPD_CLIENT_OUT_MAX (16u << 20)
#define GPD_CLIENT_MAX_FDS 8

typedef struct outbuf_s {
  struct outbuf_s *next;
  uint8_t *data;
  size_t len, off;
  int fd; /* attached with the first byte; owned (a dup) */
} outbuf_t;

typedef struct gpd_client_s {
  uv_poll_t poll;
  uv_timer_t timer;
  int fd;
  gpd_daemon_t *d;
  gpd_peer_t peer;
  gpd_frame_dec_t dec;
  outbuf_t *out_head, *out_tail;
  size_t out_bytes;
  int spoke, closing, closed, nclosed;
  int pending_fd;
  unsigned events;
  gpd_proc_t *proc;
  gpd_gpubin_t gpubin;
  struct gpd_client_s *next, *prev;
} gpd_client_t;

static gpd_client_t *clients;
static unsigned nclients;

const gpd_peer_t *gpd_client_peer(const gpd_client_t *c) { return &c->peer; }
void gpd_client_set_proc(gpd_client_t *c, gpd_proc_t *p) { c->proc = p; }

static void client_close(gpd_client_t *c);
static void client_flush(gpd_client_t *c);
static void on_io(uv_poll_t *h, int status, int events);

static void on_handle_closed(uv_handle_t *h) {
  gpd_client_t *c = h->data;
  if (++c->nclosed < 2)
    return;
  close(c->fd);
  if (c->pending_fd >= 0)
    close(c->pending_fd);
  gpd_frame_dec_free(&c->dec);
  while (c->out_head) {
    outbuf_t *o = c->out_head;
    c->out_head = o->next;
    if (o->fd >= 0)
      close(o->fd);
    free(o->data);
    free(o);
  }
  gpd_gpubin_abort(&c->gpubin);
  free(c);
}

static void client_close(gpd_client_t *c) {
  if (c->closed)
    return;
  c->closed = 1;
  if (c->proc) {
    if (!c->d->shutting_down)
      gpd_registry_eof(c->d, c->proc);
    else {
      pthread_mutex_lock(&c->d->lock);
      c->proc->client = NULL;
      pthread_mutex_unlock(&c->d->lock);
    }
    c->proc = NULL;
  }
  if (c->prev)
    c->prev->next = c->next;
  else
    clients = c->next;
  if (c->next)
    c->next->prev = c->prev;
  nclients--;
  uv_poll_stop(&c->poll);
  uv_timer_stop(&c->timer);
  uv_close((uv_handle_t *)&c->poll, on_handle_closed);
  uv_close((uv_handle_t *)&c->timer, on_handle_closed);
}

void gpd_client_close_all(gpd_daemon_t *d) {
  (void)d;
  while (clients)
    client_close(clients);
}

/* One printable line from untrusted bytes. */
static void sample(const uint8_t *p, size_t n, char *out, size_t outlen) {
  size_t o = 0;
  for (size_t i = 0; i < n && i < 24 && o + 4 < outlen; i++)
    o += (size_t)snprintf(out + o, outlen - o, "%02x", p[i]);
  if (o + 3 < outlen) {
    out[o++] = ' ';
    out[o++] = '|';
  }
  for (size_t i = 0; i < n && i < 24 && o + 2 < outlen; i++)
    out[o++] = (p[i] >= 0x20 && p[i] < 0x7f) ? (char)p[i] : '.';
  if (o + 1 < outlen)
    out[o++] = '|';
  out[o < outlen ? o : outlen - 1] = 0;
}

static void set_events(gpd_client_t *c) {
  if (c->closed)
    return;
  unsigned ev = 0;
  if (!c->closing && c->out_bytes < GPD_CLIENT_OUT_MAX)
    ev |= UV_READABLE;
  if (c->out_head)
    ev |= UV_WRITABLE;
  if (ev != c->events) {
    c->events = ev;
    if (ev)
      uv_poll_start(&c->poll, (int)ev, on_io);
    else
      uv_poll_stop(&c->poll);
  }
}

/* Queue one frame.  Query replies may be up to GPD_REPLY_MAX (a large
 * tree); everything else up to GPD_FRAME_MAX. */
static int client_send(gpd_client_t *c, const Gpuprof__Msg *m, int fd) {
  size_t n = gpuprof__msg__get_packed_size(m);
  int reply = m->body_case == GPUPROF__MSG__BODY_PS || m->body_case == GPUPROF__MSG__BODY_TREE ||
              m->body_case == GPUPROF__MSG__BODY_TOP;
  if (n > (reply ? GPD_REPLY_MAX : GPD_FRAME_MAX))
    return GPD_EFRAMETOOBIG;
  outbuf_t *o = calloc(1, sizeof *o);
  uint8_t *buf = malloc(GPD_FRAME_HDR + n);
  if (o == NULL || buf == NULL) {
    free(o);
    free(buf);
    return -ENOMEM;
  }
  gpd_frame_put_header(buf, (uint32_t)n);
  gpuprof__msg__pack(m, buf + GPD_FRAME_HDR);
  o->data = buf;
  o->len = GPD_FRAME_HDR + n;
  o->fd = fd >= 0 ? dup(fd) : -1;
  if (c->out_tail)
    c->out_tail->next = o;
  else
    c->out_head = o;
  c->out_tail = o;
  c->out_bytes += o->len;
  client_flush(c);
  return 0;
}

static void send_error(gpd_client_t *c, int code, const char *text) {
  Gpuprof__Msg m = GPUPROF__MSG__INIT;
  Gpuprof__Error e = GPUPROF__ERROR__INIT;
  e.code = code;
  e.message = (char *)text;
  m.body_case = GPUPROF__MSG__BODY_ERROR;
  m.error = &e;
  client_send(c, &m, -1);
}

/* Reply Error, log, and close once the reply is out. */
static void reject(gpd_client_t *c, int code, const char *what, const uint8_t *p, size_t n) {
  char s[128];
  sample(p, n, s, sizeof s);
  GPD_WARN("client pid %d uid %u: %s (%s); %zu bytes: %s; closing", (int)c->peer.pid,
           (unsigned)c->peer.uid, what, gpd_strerror(code), n, s);
  char msg[256];
  snprintf(msg, sizeof msg, "%s: %s", what, gpd_strerror(code));
  send_error(c, code, msg);
  c->closing = 1;
  set_events(c);
  if (c->out_head == NULL)
    client_close(c);
}

static void client_flush(gpd_client_t *c) {
  while (c->out_head && !c->closed) {
    outbuf_t *o = c->out_head;
    struct iovec iov = {.iov_base = o->data + o->off, .iov_len = o->len - o->off};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
    union {
      char buf[CMSG_SPACE(sizeof(int))];
      struct cmsghdr align;
    } cm;
    if (o->off == 0 && o->fd >= 0)
      gpd_frame_cmsg_fd(&mh, cm.buf, o->fd);
    ssize_t n = sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR)
        break;
      GPD_INFO("client pid %d: send: %s", (int)c->peer.pid, strerror(errno));
      client_close(c);
      return;
    }
    if (o->fd >= 0) {
      close(o->fd);
      o->fd = -1;
    }
    o->off += (size_t)n;
    if (o->off < o->len)
      break;
    c->out_head = o->next;
    if (c->out_head == NULL)
      c->out_tail = NULL;
    c->out_bytes -= o->len;
    free(o->data);
    free(o);
  }
  if (c->closed)
    return;
  if (c->closing && c->out_head == NULL) {
    client_close(c);
    return;
  }
  set_events(c);
}

static void handle_hello(gpd_client_t *c, const Gpuprof__Msg *m) {
  char err[256] = "";
  uint64_t id = 0;
  int rfd = -1;
  int fd = c->pending_fd;
  c->pending_fd = -1;
  if (c->proc) {
    if (fd >= 0)
      close(fd);
    reject(c, GPD_EPROTO, "second Hello on one connection", NULL, 0);
    return;
  }
  int rc = gpd_registry_hello(c->d, c, m->hello, fd, &id, &rfd, err, sizeof err);
  Gpuprof__Msg r = GPUPROF__MSG__INIT;
  Gpuprof__HelloReply hr = GPUPROF__HELLO_REPLY__INIT;
  hr.proto_version = GPD_PROTO_VERSION;
  hr.profile_id = id;
  hr.error = rc < 0 ? err : "";
  r.body_case = GPUPROF__MSG__BODY_HELLO_REPLY;
  r.hello_reply = &hr;
  client_send(c, &r, rc < 0 ? -1 : rfd);
  if (rc < 0) {
    GPD_WARN("client pid %d uid %u: registration refused: %s", (int)c->peer.pid,
             (unsigned)c->peer.uid, err);
    c->closing = 1;
    if (c->out_head == NULL)
      client_close(c);
    else
      set_events(c);
  }
}

static void handle_frame(gpd_client_t *c, const uint8_t *p, size_t n) {
  Gpuprof__Msg *m = gpuprof__msg__unpack(NULL, n, p);
  if (m == NULL) {
    reject(c, GPD_EBADFRAME, "bad frame", p, n);
    return;
  }
  c->spoke = 1;
  uv_timer_stop(&c->timer);
  switch (m->body_case) {
  case GPUPROF__MSG__BODY_HELLO:
    handle_hello(c, m);
    break;
  case GPUPROF__MSG__BODY_GPUBIN: {
    char err[256];
    if (c->proc == NULL) {
      reject(c, GPD_EPROTO, "GpuBinary before Hello", p, n);
      break;
    }
    if (gpd_store_gpubin(c->d, &c->gpubin, c->proc->profile_id, m->gpubin, err, sizeof err) < 0)
      GPD_WARN("client pid %d: %s", (int)c->peer.pid, err);
    break;
  }
  case GPUPROF__MSG__BODY_PS_REQ:
  case GPUPROF__MSG__BODY_TREE_REQ:
  case GPUPROF__MSG__BODY_TOP_REQ: {
    Gpuprof__Msg *r = NULL;
    if (gpd_query_answer(c->d, &c->peer, m, &r) == 0) {
      if (client_send(c, r, -1) == GPD_EFRAMETOOBIG)
        send_error(c, GPD_EFRAMETOOBIG, "reply too large: filter by pid or use max_depth");
      gpd_query_free_reply(r);
    } else {
      send_error(c, -ENOMEM, "out of memory");
    }
    break;
  }
  default:
    reject(c, GPD_EPROTO, "unexpected message", p, n);
    break;
  }
  gpuprof__msg__free_unpacked(m, NULL);
}

static void client_read(gpd_client_t *c) {
  uint8_t buf[65536];
  for (int iter = 0; iter < 64 && !c->closed && !c->closing; iter++) {
    if (c->out_bytes >= GPD_CLIENT_OUT_MAX)
      break; /* peer does not read its replies */
    union {
      char b[CMSG_SPACE(GPD_CLIENT_MAX_FDS * sizeof(int))];
      struct cmsghdr align;
    } cm;
    struct iovec iov = {.iov_base = buf, .iov_len = sizeof buf};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.b,
                        .msg_controllen = sizeof cm.b};
    ssize_t n = recvmsg(c->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR)
        break;
      GPD_INFO("client pid %d: recv: %s", (int)c->peer.pid, strerror(errno));
      client_close(c);
      return;
    }
    for (struct cmsghdr *ch = CMSG_FIRSTHDR(&mh); ch; ch = CMSG_NXTHDR(&mh, ch)) {
      if (ch->cmsg_level != SOL_SOCKET || ch->cmsg_type != SCM_RIGHTS)
        continue;
      size_t nfd = (ch->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t k = 0; k < nfd; k++) {
        int fd;
        memcpy(&fd, CMSG_DATA(ch) + k * sizeof(int), sizeof fd);
        if (c->pending_fd < 0)
          c->pending_fd = fd;
        else
          close(fd); /* one fd per hand-back; extras are dropped */
      }
    }
    if (n == 0) {
      if (c->dec.len > c->dec.off) {
        char s[128];
        sample(c->dec.buf + c->dec.off, c->dec.len - c->dec.off, s, sizeof s);
        GPD_WARN("client pid %d uid %u: truncated frame at EOF (%zu bytes buffered: %s)",
                 (int)c->peer.pid, (unsigned)c->peer.uid, c->dec.len - c->dec.off, s);
      }
      client_close(c);
      return;
    }
    int err = gpd_frame_dec_feed(&c->dec, buf, (size_t)n);
    for (;;) {
      if (err < 0) {
        reject(c, err, "frame rejected", c->dec.buf, c->dec.len < 8 ? c->dec.len : 8);
        return;
      }
      const uint8_t *payload;
      size_t plen;
      int r = gpd_frame_dec_next(&c->dec, &payload, &plen);
      if (r < 0) {
        err = r;
        continue;
      }
      if (r == 0)
        break;
      handle_frame(c, payload, plen);
      if (c->closed || c->closing)
        return;
    }
  }
}

static void on_io(uv_poll_t *h, int status, int events) {
  gpd_client_t *c = h->data;
  if (status < 0) {
    client_close(c);
    return;
  }
  if (events & UV_WRITABLE)
    client_flush(c);
  if (!c->closed && (events & (UV_READABLE | UV_DISCONNECT)))
    client_read(c);
  if (!c->closed)
    set_events(c);
}

static void on_idle_timeout(uv_timer_t *t) {
  gpd_client_t *c = t->data;
  if (c->spoke || c->closed)
    return;
  GPD_WARN("client pid %d uid %u: no complete frame within %d ms; closing", (int)c->peer.pid,
           (unsigned)c->peer.uid, GPD_CLIENT_IDLE_MS);
  client_close(c);
}

int gpd_client_accept(gpd_daemon_t *d, int fd) {
  int err = 0;
  if (nclients >= d->cfg.max_clients && d->cfg.max_clients) {
    GPD_WARN("too many clients (%u); refusing a connection", nclients);
    close(fd);
    return -EMFILE;
  }
  gpd_client_t *c = calloc(1, sizeof *c);
  if (c == NULL) {
    close(fd);
    return -ENOMEM;
  }
  c->fd = fd;
  c->d = d;
  c->pending_fd = -1;
  c->gpubin.fd = -1;
  gpd_frame_dec_init(&c->dec, GPD_CLIENT_FRAME_MAX);
  err = gpd_access_peer(fd, d->cfg.admin_group, &c->peer);
  if (err < 0) {
    GPD_WARN("SO_PEERCRED failed: %s; closing", gpd_strerror(err));
    gpd_frame_dec_free(&c->dec);
    close(fd);
    free(c);
    return err;
  }
  uv_poll_init(d->loop, &c->poll, fd);
  uv_timer_init(d->loop, &c->timer);
  c->poll.data = c;
  c->timer.data = c;
  c->events = UV_READABLE;
  uv_poll_start(&c->poll, UV_READABLE, on_io);
  uv_timer_start(&c->timer, on_idle_timeout, GPD_CLIENT_IDLE_MS, 0);
  c->next = clients;
  if (clients)
    clients->prev = c;
  clients = c;
  nclients++;
  return 0;
}

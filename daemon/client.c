/* client.c - one connection on the control socket (main thread, libuv).
 *
 * A uv_poll_t watches the raw fd because frames may carry SCM_RIGHTS fds
 * (recvmsg / sendmsg).  Incoming bytes go through gpd_frame_dec with the
 * per-client cap GPD_CLIENT_FRAME_MAX; replies are queued and written with
 * sendmsg (a region fd rides on the first byte of HelloReply).  Rules for
 * untrusted peers (STYLE.md, "a daemon that meets bad input"; docs/SERVICE.md,
 * "Connection limits"):
 *   - admission: a non-root uid holds at most max_clients_per_uid
 *     connections; the last clients_reserve of max_clients are only for
 *     root and for uids holding fewer than clients_reserve_per_uid, so one
 *     greedy uid (or a few) never locks root or a new user out.  A refused
 *     peer gets an Error frame and is closed at once (no state is kept);
 *   - a frame whose length is over the cap, that does not decode, or that
 *     is unexpected gets an Error reply and the connection is closed after
 *     the reply is written;
 *   - idle timeout (one uv_timer per connection, restarted on progress): a
 *     connection is closed when idle_timeout_ms pass with no complete frame
 *     in and no complete reply frame out.  A registered shim connection is
 *     exempt while it has no reply pending (it lives as long as its
 *     process); with a reply pending that it does not read, it is not;
 *   - a peer that does not read its replies stops being read once
 *     client_out_max bytes are queued;
 *   - every refusal, timeout and bad frame is logged at most once per uid
 *     and kind per limit_log_interval_s; the rest are counted and the count
 *     is logged when the interval ends (gpd_client_sweep).
 * A registered process's EOF ends its process (final drain and flush).
 *
 * Queries (docs/DAEMON.md, "Queries off the loop"): gpd_query_start builds
 * the reply under the daemon lock on the loop; one with FRAME nodes is then
 * symbolized and encoded by gpd_query_run in libuv's thread pool
 * (uv_queue_work) and sent from on_query_done, on the loop again.  While a
 * query is in flight (c->q) the connection reads nothing more: frames
 * already decoded wait in c->dec, the rest in the socket (bounded as
 * always), and its idle clock is stopped; only a hang-up is watched
 * (client_peer_hup).  A connection closed meanwhile (peer gone, shutdown)
 * cancels its query and its struct lives until on_query_done has run,
 * which drops the reply.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <uv.h>

#include "gpuprof/error.h"
#include "gpuprof/frame.h"
#include "gpuprof/log.h"
#include "gpuprof.pb-c.h"

#include "client-internal.h"
#include "daemon.h"

#define GPD_CLIENT_FRAME_MAX GPD_FRAME_MAX
#define GPD_CLIENT_MAX_FDS 8

typedef struct outbuf_s {
  struct outbuf_s *next;
  uint8_t *data;
  size_t len, off;
  int fd; /* attached with the first byte; owned (a dup) */
} outbuf_t;

typedef struct gpd_client_s {
  gpd_client_base_t base; /* first: ops, peer, proc (client.h) */
  uv_poll_t poll;
  uv_timer_t timer;
  int fd;
  gpd_daemon_t *d;
  gpd_frame_dec_t dec;
  outbuf_t *out_head, *out_tail;
  size_t out_bytes;
  int spoke, closing, closed, nclosed;
  gpd_client_uid_t *u; /* this peer's uid entry (holds one nconn) */
  int pending_fd;
  unsigned events;
  gpd_gpubin_t gpubin;
  gpd_query_t *q; /* in flight in the thread pool (at most one), or NULL */
  int ctl;        /* a ControlRequest of this peer waits for its shims */
  int ctl_sync;   /* inside gpd_control_request (its answer is not resumed) */
  uv_work_t work; /* its request; data = this client */
  int rdhup;      /* the peer shut down its writing side during a query */
  struct gpd_client_s *next, *prev;
} gpd_client_t;

static gpd_client_t *clients;
static unsigned nclients;


static void client_close(gpd_client_t *c);
static void client_flush(gpd_client_t *c);
static void client_arm(gpd_client_t *c);
static void client_frames(gpd_client_t *c, int err);
static void on_io(uv_poll_t *h, int status, int events);
static void send_error(gpd_client_t *c, int code, const char *text);

/* Free a closed client: both handles closed and no query in flight. */
static void client_free(gpd_client_t *c) {
  close(c->fd);
  if (c->pending_fd >= 0)
    close(c->pending_fd);
  gpd_frame_dec_free(&c->dec);
  while (c->out_head) {
    outbuf_t *o = c->out_head;
    c->out_head = o->next;
    if (o->fd >= 0)
      close(o->fd);
    gpd_query_frame_free(o->data);
    free(o);
  }
  gpd_gpubin_abort(&c->gpubin);
  free(c);
}

static void on_handle_closed(uv_handle_t *h) {
  gpd_client_t *c = h->data;
  if (++c->nclosed < 2 || c->q)
    return; /* on_query_done frees it */
  client_free(c);
}

static void client_close(gpd_client_t *c) {
  if (c->closed)
    return;
  c->closed = 1;
  if (c->base.proc) {
    if (!c->d->shutting_down)
      gpd_registry_eof(c->d, c->base.proc);
    else {
      gpd_registry_lock(c->d);
      c->base.proc->client = NULL;
      pthread_mutex_unlock(&c->d->lock);
    }
    c->base.proc = NULL;
  }
  if (c->prev)
    c->prev->next = c->next;
  else
    clients = c->next;
  if (c->next)
    c->next->prev = c->prev;
  nclients--;
  if (c->u)
    c->u->nconn--;
  gpd_control_client_gone(c);
  c->ctl = 0;
  if (c->q) { /* its reply is dropped in on_query_done */
    gpd_query_cancel(c->q);
    uv_cancel((uv_req_t *)&c->work); /* fails once it started: then it stops early */
  }
  uv_poll_stop(&c->poll);
  uv_timer_stop(&c->timer);
  uv_close((uv_handle_t *)&c->poll, on_handle_closed);
  uv_close((uv_handle_t *)&c->timer, on_handle_closed);
}

/* Shutdown: queries in flight are cancelled; the loop runs until their
 * on_query_done (an active uv_work_t keeps uv_run going), which frees the
 * clients. */
void gpd_client_close_all(gpd_daemon_t *d) {
  (void)d;
  while (clients)
    client_close(clients);
  gpd_control_close_all();
  gpd__client_limits_free_all();
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
  if (!c->closing && c->q == NULL && !c->ctl && c->out_bytes < c->d->cfg.client_out_max)
    ev |= UV_READABLE;
  if ((c->q || c->ctl) && !c->rdhup)
    ev |= UV_DISCONNECT; /* not reading: a peer that leaves is seen so */
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

/* Queue one encoded frame (buf: header + payload, malloc'd; taken, also
 * on failure) and start writing it.  0 or -ENOMEM. */
static int client_queue(gpd_client_t *c, uint8_t *buf, size_t len, int fd) {
  outbuf_t *o = calloc(1, sizeof *o);
  if (o == NULL) {
    gpd_query_frame_free(buf);
    return -ENOMEM;
  }
  o->data = buf;
  o->len = len;
  o->fd = fd >= 0 ? dup(fd) : -1;
  if (c->out_tail)
    c->out_tail->next = o;
  else
    c->out_head = o;
  c->out_tail = o;
  c->out_bytes += o->len;
  if (!uv_is_active((uv_handle_t *)&c->timer))
    client_arm(c); /* a registered peer now has a reply to read */
  client_flush(c);
  return 0;
}

/* Queue one frame (Hello replies, errors; query replies are encoded by
 * gpd_query_run with the same limits).  Up to GPD_FRAME_MAX. */
static int client_send(gpd_client_t *c, const Gpuprof__Msg *m, int fd) {
  size_t n = gpuprof__msg__get_packed_size(m);
  if (n > GPD_FRAME_MAX)
    return GPD_EFRAMETOOBIG;
  uint8_t *buf = malloc(GPD_FRAME_HDR + n);
  if (buf == NULL)
    return -ENOMEM;
  gpd_frame_put_header(buf, (uint32_t)n);
  gpuprof__msg__pack(m, buf + GPD_FRAME_HDR);
  return client_queue(c, buf, GPD_FRAME_HDR + n, fd);
}

static int client_send_msg(gpd_client_t *c, const Gpuprof__Msg *m) {
  if (c->closed)
    return 0;
  return client_send(c, m, -1);
}

static void client_send_error(gpd_client_t *c, int code, const char *text) {
  if (!c->closed)
    send_error(c, code, text);
}

static void client_control_done(gpd_client_t *c) {
  c->ctl = 0;
  if (c->closed || c->ctl_sync)
    return; /* answered inside handle_frame: its loop goes on */
  client_arm(c);
  client_frames(c, 0);
  if (!c->closed)
    set_events(c);
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

/* Reply Error, log (rate-limited per uid and kind), and close once the
 * reply is out; a peer that does not read it is closed by the timer. */
static void reject(gpd_client_t *c, gpd_client_ev_t kind, int code, const char *what, const uint8_t *p,
                   size_t n) {
  char s[128];
  sample(p, n, s, sizeof s);
  gpd__client_limits_note(c->d, c->u, kind, GPD_LOG_WARN, "client pid %d: %s (%s); %zu bytes: %s; closing",
           (int)c->base.peer.pid, what, gpd_strerror(code), n, s);
  char msg[256];
  snprintf(msg, sizeof msg, "%s: %s", what, gpd_strerror(code));
  send_error(c, code, msg);
  c->closing = 1;
  if (c->closed)
    return;
  set_events(c);
  if (c->out_head == NULL)
    client_close(c);
  else
    client_arm(c);
}

static void client_flush(gpd_client_t *c) {
  int progress = 0;
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
      gpd__client_limits_note(c->d, c->u, GPD_CLIENT_EV_IO, GPD_LOG_INFO, "client pid %d: send: %s",
                              (int)c->base.peer.pid, strerror(errno));
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
    gpd_query_frame_free(o->data);
    free(o);
    progress = 1;
  }
  if (c->closed)
    return;
  if (progress)
    client_arm(c); /* a whole reply frame went out */
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
  if (c->base.proc) {
    if (fd >= 0)
      close(fd);
    reject(c, GPD_CLIENT_EV_PROTO, GPD_EPROTO, "second Hello on one connection", NULL, 0);
    return;
  }
  int rc = gpd_registry_hello(c->d, c, m->hello, fd, &id, &rfd, err, sizeof err);
  Gpuprof__Msg r = GPUPROF__MSG__INIT;
  Gpuprof__HelloReply hr = GPUPROF__HELLO_REPLY__INIT;
  hr.proto_version = GPD_PROTO_VERSION;
  hr.profile_id = id;
  hr.error = rc < 0 ? err : "";
  Gpuprof__CollectPolicy pol;
  if (rc >= 0 && c->base.proc && gpd_policy_hello(c->d, c->base.proc, &pol) == 0)
    hr.policy = &pol;
  r.body_case = GPUPROF__MSG__BODY_HELLO_REPLY;
  r.hello_reply = &hr;
  client_send(c, &r, rc < 0 ? -1 : rfd);
  if (rc < 0) {
    gpd__client_limits_note(c->d, c->u, GPD_CLIENT_EV_REGISTER, GPD_LOG_WARN,
                            "client pid %d: registration refused: %s", (int)c->base.peer.pid, err);
    c->closing = 1;
    if (c->out_head == NULL)
      client_close(c);
    else
      set_events(c);
  }
}

/* Send what gpd_query_run made of q: its frame, or an Error (too large, out
 * of memory).  The connection is open. */
static void client_reply(gpd_client_t *c, gpd_query_t *q) {
  uint8_t *buf;
  size_t len;
  int rc = gpd_query_take_frame(q, &buf, &len);
  if (rc == 0)
    rc = client_queue(c, buf, len, -1);
  if (rc == GPD_EFRAMETOOBIG)
    send_error(c, GPD_EFRAMETOOBIG, "reply too large: filter by pid or use max_depth");
  else if (rc < 0)
    send_error(c, -ENOMEM, "out of memory");
}

/* Thread pool: symbolize and encode (no daemon lock, no client state). */
static void on_query_work(uv_work_t *w) {
  gpd_client_t *c = w->data;
  gpd_query_run(c->q);
}

/* Loop thread, once the pool is done with c->q (status UV_ECANCELED when
 * client_close cancelled it before it started).  A closed client's reply
 * is dropped and the client freed if its handles are closed too; an open
 * one gets its reply and goes on with the frames that waited. */
static void on_query_done(uv_work_t *w, int status) {
  gpd_client_t *c = w->data;
  gpd_query_t *q = c->q;
  c->q = NULL;
  if (!c->closed && status == 0)
    client_reply(c, q);
  gpd_query_free(q);
  if (c->closed) {
    if (c->nclosed == 2)
      client_free(c);
    return;
  }
  client_frames(c, 0);
  if (!c->closed)
    set_events(c);
}

/* A Ps/Tree/Top request: built under the daemon lock here; one with frames
 * to symbolize goes to the thread pool (see the top of this file), the
 * others are encoded and sent at once. */
static void handle_query(gpd_client_t *c, const Gpuprof__Msg *m) {
  gpd_query_t *q;
  if (gpd_query_start(c->d, &c->base.peer, m, &q) < 0) {
    send_error(c, -ENOMEM, "out of memory");
    return;
  }
  if (gpd_query_slow(q)) {
    c->q = q;
    c->work.data = c;
    if (uv_queue_work(c->d->loop, &c->work, on_query_work, on_query_done) == 0) {
      uv_timer_stop(&c->timer); /* the peer waits for us, not we for it */
      set_events(c);
      return;
    }
    c->q = NULL; /* cannot happen (bad arguments only): answer here */
  }
  gpd_query_run(q);
  client_reply(c, q);
  gpd_query_free(q);
}

static void handle_frame(gpd_client_t *c, const uint8_t *p, size_t n) {
  Gpuprof__Msg *m = gpuprof__msg__unpack(NULL, n, p);
  if (m == NULL) {
    reject(c, GPD_CLIENT_EV_BADFRAME, GPD_EBADFRAME, "bad frame", p, n);
    return;
  }
  c->spoke = 1;
  switch (m->body_case) {
  case GPUPROF__MSG__BODY_HELLO:
    handle_hello(c, m);
    break;
  case GPUPROF__MSG__BODY_GPUBIN: {
    char err[256];
    if (c->base.proc == NULL) {
      reject(c, GPD_CLIENT_EV_PROTO, GPD_EPROTO, "GpuBinary before Hello", p, n);
      break;
    }
    if (gpd_gpubin_store(c->d, &c->gpubin, c->base.proc->profile_id, (uint32_t)c->base.proc->uid, m->gpubin,
                         err, sizeof err) < 0)
      gpd__client_limits_note(c->d, c->u, GPD_CLIENT_EV_GPUBIN, GPD_LOG_WARN, "client pid %d: %s",
                              (int)c->base.peer.pid, err);
    break;
  }
  case GPUPROF__MSG__BODY_PS_REQ:
  case GPUPROF__MSG__BODY_TREE_REQ:
  case GPUPROF__MSG__BODY_TOP_REQ:
  case GPUPROF__MSG__BODY_TRACE_REQ:
    handle_query(c, m);
    break;
  case GPUPROF__MSG__BODY_CONTROL_REQ: {
    if (c->base.proc) { /* a profiled process does not control others */
      reject(c, GPD_CLIENT_EV_PROTO, GPD_EPROTO, "ControlRequest on a process connection", p, n);
      break;
    }
    /* pending until control.c calls gpd_client_control_done (at once
     * when no process could be sent the Control) */
    c->ctl = 1;
    c->ctl_sync = 1;
    int rc = gpd_control_request(c->d, c, &c->base.peer, m->control_req);
    c->ctl_sync = 0;
    if (rc <= 0)
      c->ctl = 0;
    if (rc < 0)
      send_error(c, rc, "out of memory");
    if (c->ctl && !c->closed) {
      uv_timer_stop(&c->timer); /* the peer waits for us */
      set_events(c);
    }
    break;
  }
  case GPUPROF__MSG__BODY_COLLECT:
    if (c->base.proc == NULL) {
      reject(c, GPD_CLIENT_EV_PROTO, GPD_EPROTO, "CollectReports before Hello", p, n);
      break;
    }
    gpd_policy_report(c->d, c->base.proc, m->collect);
    break;
  case GPUPROF__MSG__BODY_POLICY_REQ:
    if (c->base.proc) {
      reject(c, GPD_CLIENT_EV_PROTO, GPD_EPROTO, "PolicyRequest on a process connection", p, n);
      break;
    }
    gpd_policy_request(c->d, c, &c->base.peer, m->policy_req);
    break;
  case GPUPROF__MSG__BODY_CONTROL_ACK:
    if (c->base.proc == NULL) {
      reject(c, GPD_CLIENT_EV_PROTO, GPD_EPROTO, "ControlAck before Hello", p, n);
      break;
    }
    gpd_control_ack(c->d, c, c->base.proc, m->control_ack);
    break;
  case GPUPROF__MSG__BODY_DEVICES_REQ: { /* from published samples: never waits on a vendor */
    Gpuprof__Msg *r;
    if (gpd_devices_reply(c->d, &c->base.peer, m->devices_req->job_id, &r) < 0) {
      send_error(c, -ENOMEM, "out of memory");
      break;
    }
    client_send(c, r, -1);
    gpd_devices_reply_free(r);
    break;
  }
  default:
    reject(c, GPD_CLIENT_EV_PROTO, GPD_EPROTO, "unexpected message", p, n);
    break;
  }
  gpuprof__msg__free_unpacked(m, NULL);
}

/* Handle the complete frames buffered in c->dec (err: what feeding them
 * returned), until the connection closes or is closing, or a query goes
 * in flight (the rest wait in c->dec for on_query_done). */
static void client_frames(gpd_client_t *c, int err) {
  while (!c->closed && !c->closing && c->q == NULL && !c->ctl) {
    if (err < 0) {
      reject(c, err == GPD_EFRAMETOOBIG ? GPD_CLIENT_EV_TOOBIG : GPD_CLIENT_EV_BADFRAME, err,
             "frame rejected", c->dec.buf, c->dec.len < 8 ? c->dec.len : 8);
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
    client_arm(c); /* a complete frame: the idle clock starts again */
  }
}

static void client_read(gpd_client_t *c) {
  uint8_t buf[65536];
  for (int iter = 0; iter < 64 && !c->closed && !c->closing && c->q == NULL && !c->ctl; iter++) {
    if (c->out_bytes >= c->d->cfg.client_out_max)
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
      gpd__client_limits_note(c->d, c->u, GPD_CLIENT_EV_IO, GPD_LOG_INFO, "client pid %d: recv: %s",
                              (int)c->base.peer.pid, strerror(errno));
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
        gpd__client_limits_note(c->d, c->u, GPD_CLIENT_EV_TRUNCATED, GPD_LOG_WARN,
                 "client pid %d: truncated frame at EOF (%zu bytes buffered: %s)", (int)c->base.peer.pid,
                 c->dec.len - c->dec.off, s);
      }
      client_close(c);
      return;
    }
    client_frames(c, gpd_frame_dec_feed(&c->dec, buf, (size_t)n));
  }
}

/* A query is in flight and the peer shut its side down (EPOLLRDHUP).
 * Closed for good (POLLHUP: nobody will read the reply): cancel the query
 * and close.  Only its writing side (shutdown(SHUT_WR)): it may still read,
 * so the reply goes out and the EOF is read after it, as before; the
 * hang-up is not watched again (it stays readable). */
static void client_peer_hup(gpd_client_t *c) {
  struct pollfd p = {.fd = c->fd, .events = POLLOUT};
  if (poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLERR))) {
    client_close(c);
    return;
  }
  c->rdhup = 1;
}

static void on_io(uv_poll_t *h, int status, int events) {
  gpd_client_t *c = h->data;
  if (status < 0) {
    client_close(c);
    return;
  }
  if ((c->q || c->ctl) && (events & UV_DISCONNECT))
    client_peer_hup(c);
  if (!c->closed && (events & UV_WRITABLE))
    client_flush(c);
  if (!c->closed && (events & (UV_READABLE | UV_DISCONNECT)))
    client_read(c);
  if (!c->closed)
    set_events(c);
}

static void on_timeout(uv_timer_t *t) {
  gpd_client_t *c = t->data;
  if (c->closed || c->q || c->ctl)
    return; /* a query in flight: the clock starts again with its reply */
  if (c->base.proc && c->out_head == NULL)
    return; /* registered and nothing to read: never timed out */
  unsigned ms = c->d->cfg.idle_timeout_ms;
  if (!c->spoke)
    gpd__client_limits_note(c->d, c->u, GPD_CLIENT_EV_TIMEOUT, GPD_LOG_WARN,
             "client pid %d: no complete frame within %u ms of connecting (%zu bytes of a frame "
             "buffered); closing", (int)c->base.peer.pid, ms, c->dec.len - c->dec.off);
  else if (c->out_head)
    gpd__client_limits_note(c->d, c->u, GPD_CLIENT_EV_TIMEOUT, GPD_LOG_WARN,
             "client pid %d: did not read its reply for %u ms (%zu bytes queued); closing",
             (int)c->base.peer.pid, ms, c->out_bytes);
  else
    gpd__client_limits_note(c->d, c->u, GPD_CLIENT_EV_TIMEOUT, GPD_LOG_WARN,
             "client pid %d: no complete frame within %u ms of its last one; closing",
             (int)c->base.peer.pid, ms);
  client_close(c);
}

/* (Re)start the idle clock: from now, idle_timeout_ms until on_timeout.
 * A registered connection with no reply queued has no clock, nor has one
 * with a query in flight. */
static void client_arm(gpd_client_t *c) {
  if (c->closed)
    return;
  if (c->q || c->ctl || (c->base.proc && c->out_head == NULL))
    uv_timer_stop(&c->timer);
  else
    uv_timer_start(&c->timer, on_timeout, c->d->cfg.idle_timeout_ms, 0);
}

/* What control.c, policy.c and registry.c may do with a connection (client.h). */
static const gpd_client_ops_t client_ops = {
    .send_msg = client_send_msg,
    .send_error = client_send_error,
    .control_done = client_control_done,
};

int gpd_client_accept(gpd_daemon_t *d, int fd) {
  static uint64_t cred_fail_ms;
  gpd_peer_t peer;
  gpd_client_ev_t kind = GPD_CLIENT_EV_REFUSED_FULL;
  char why[256];
  int err = gpd_access_cred(fd, &peer);
  if (err < 0) {
    uint64_t now = uv_now(d->loop);
    if (cred_fail_ms == 0 || now - cred_fail_ms >= gpd__client_limits_interval_ms(d)) {
      cred_fail_ms = now ? now : 1;
      GPD_WARN("SO_PEERCRED failed: %s; closing (logged once per %u s)", gpd_strerror(err),
               d->cfg.limit_log_interval_s);
    }
    close(fd);
    return err;
  }
  gpd_client_uid_t *u = gpd__client_limits_uid(peer.uid);
  if (u == NULL) {
    gpd__client_limits_refuse(fd, -ENOMEM, "gpuprofd is out of memory");
    return -ENOMEM;
  }
  err = gpd__client_limits_admit(d, u, nclients, &kind, why, sizeof why);
  if (err < 0) {
    gpd__client_limits_note(d, u, kind, GPD_LOG_WARN, "connection from pid %d refused: %s",
                            (int)peer.pid, why);
    gpd__client_limits_refuse(fd, err, why);
    return err;
  }
  /* Only admitted peers cost a name-service lookup. */
  err = gpd_access_resolve_admin(&peer, d->cfg.admin_group);
  if (err < 0)
    GPD_WARN("uid %u: admin_group lookup failed: %s; treated as not an admin",
             (unsigned)peer.uid, gpd_strerror(err));
  gpd_client_t *c = calloc(1, sizeof *c);
  if (c == NULL) {
    gpd__client_limits_refuse(fd, -ENOMEM, "gpuprofd is out of memory");
    return -ENOMEM;
  }
  c->fd = fd;
  c->d = d;
  c->base.ops = &client_ops;
  c->base.peer = peer;
  c->u = u;
  c->pending_fd = -1;
  c->gpubin.fd = -1;
  gpd_frame_dec_init(&c->dec, GPD_CLIENT_FRAME_MAX);
  uv_poll_init(d->loop, &c->poll, fd);
  uv_timer_init(d->loop, &c->timer);
  c->poll.data = c;
  c->timer.data = c;
  c->events = UV_READABLE;
  uv_poll_start(&c->poll, UV_READABLE, on_io);
  client_arm(c);
  c->next = clients;
  if (clients)
    clients->prev = c;
  clients = c;
  nclients++;
  u->nconn++;
  return 0;
}


/* conn.c - registration client and the shim's connection thread.
 *
 * The thread connects to $GPUPROF_SOCKET, sends Msg{hello}, receives
 * HelloReply + the region memfd and attaches it (gpd_shim__attach).  Then
 * it watches the socket: EOF means the daemon went away; the region stays
 * mapped (application threads keep pushing; full rings drop and count) and
 * the thread reconnects every GPD_SHIM_RETRY_HANDBACK_MS, handing the memfd
 * back with Hello{handback=true, profile_id}.  With no daemon at all it
 * retries every GPD_SHIM_RETRY_NODAEMON_MS (a failed connect(2) on a Unix
 * path costs a few µs).  It also sends queued GPU binaries, and serves the
 * daemon's Control messages (control.c: answered by ControlAck; a window
 * that ends is reported by an unsolicited ControlAck{ended}).  Any other
 * message from the daemon is ignored.
 *
 * The thread blocks all signals, never calls exit, and is never joined
 * (the process may be exiting under it).
 *
 * Descriptors the application may take from us: a program can close every
 * descriptor (close_range(3, ~0U, 0), closefrom, a daemonizing loop) or
 * dup2() over ours, and then open its own files under the same numbers.
 * So the identity (st_dev, st_ino) of the socket and of the region memfd
 * is recorded when they are opened (gpd_fdid_take) and compared before
 * every use (gpd_fdid_owned): a descriptor that is no longer ours is
 * forgotten, never closed, read, written or sent.  A lost socket is
 * replaced (hand-back of the region, with backoff when it keeps being
 * lost); a lost memfd cannot be handed back, and a second region is never
 * started while the first is mapped, so the shim then stays off (one log
 * line).  poll's POLLNVAL (the number is closed, not reused) is handled
 * the same way, so the thread never spins.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "backends.h"
#include "gpuprof.pb-c.h"
#include "gpuprof/clock.h"
#include "gpuprof/error.h"
#include "gpuprof/frame.h"
#include "gpuprof/hash.h"
#include "gpuprof/log.h"
#include "internal.h"

#define CONN_CONNECT_MS 100
#define CONN_REPLY_MS 5000
#define CONN_SEND_MS 5000
#define CONN_CMDLINE_MAX 65536
#define CONN_ARGV_MAX 1024
#define CONN_GPUBIN_CHUNK (1u << 20)
#define CONN_GPUBIN_QUEUE_MAX (256u << 20) /* bytes queued at most */
#define CONN_GPUBIN_SEEN_MAX 4096
/* A socket lost soon after it was made (the application keeps closing
 * descriptors) doubles the wait before the next hand-back, up to this. */
#define CONN_LOST_BACKOFF_MAX_MS 30000
/* A connection that lived this long resets that backoff. */
#define CONN_STABLE_NS (10ull * 1000000000ull)

typedef struct gpubin_s {
  struct gpubin_s *next;
  char hash[33];
  char kind[32];
  size_t len;
  uint8_t *data;
} gpubin_t;

static struct {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  int first_done; /* first attempt finished (registered or failed) */
  int stop;
  int refused;
  int started;    /* the thread was created (this process image) */
  int off;        /* stopped for good (region fd lost): no thread */
  gpd_fdid_t sock; /* owned by the thread; fd -1 = not connected */
  int ever;       /* registered at least once */
  uint32_t lost;  /* sockets lost to the application in a row */
  uint64_t sock_ns; /* when sock was connected (gpuprof clock) */
  uint64_t profile_id;
  uint64_t collect_ns; /* when CollectReports were last sent (0: due) */
  int collect_ok;      /* the daemon sent a policy: it reads CollectReports */
  gpubin_t *q_head, **q_tail;
  int q_inflight; /* a binary taken off the queue is being sent */
  size_t q_bytes;
  char (*seen)[33];
  uint32_t nseen;
} conn = {.lock = PTHREAD_MUTEX_INITIALIZER, .sock = {.fd = -1}};

/* Set on the connection thread: gpd_conn_start never waits on itself. */
static __thread int conn_on_thread;

static int conn_log_nodaemon, conn_log_refused, conn_log_gone, conn_log_gpubin, conn_log_fdlost,
    conn_log_off;

/* ------------------------------------------------------ fd identity */

/* Close fd only if it is still the file we opened; forget it either way. */
static void conn_fd_close(gpd_fdid_t *id) {
  if (gpd_fdid_owned(id))
    close(id->fd);
  id->fd = -1;
}

/* The application took our socket: forget it (not closed: the number
 * may be the application's now) and count the loss for the backoff. */
static void conn_sock_lost(void) {
  GPD_LOG_ONCE(conn_log_fdlost, GPD_LOG_WARN,
               "the application closed or replaced the daemon socket (fd %d); "
               "not touching that descriptor, reconnecting",
               conn.sock.fd);
  pthread_mutex_lock(&conn.lock);
  conn.sock.fd = -1;
  pthread_mutex_unlock(&conn.lock);
  if (gpd_clock_ns() - conn.sock_ns < CONN_STABLE_NS)
    conn.lost++;
  else
    conn.lost = 1;
}

static void conn_first_done(void) {
  pthread_mutex_lock(&conn.lock);
  conn.first_done = 1;
  pthread_cond_broadcast(&conn.cond);
  pthread_mutex_unlock(&conn.lock);
}

/* Sleep up to ms, woken early by gpd_conn_stop. Returns 1 if stopping. */
static int conn_sleep(int ms) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  ts.tv_sec += ms / 1000;
  ts.tv_nsec += (long)(ms % 1000) * 1000000L;
  if (ts.tv_nsec >= 1000000000L) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000L;
  }
  pthread_mutex_lock(&conn.lock);
  while (!conn.stop && pthread_cond_timedwait(&conn.cond, &conn.lock, &ts) != ETIMEDOUT)
    ;
  int stop = conn.stop;
  pthread_mutex_unlock(&conn.lock);
  return stop;
}

/* Connect to the daemon; id records the new socket.  0 or -errno. */
static int conn_connect(const char *path, gpd_fdid_t *id) {
  struct sockaddr_un sa;
  memset(&sa, 0, sizeof sa);
  sa.sun_family = AF_UNIX;
  id->fd = -1;
  if (strlen(path) >= sizeof sa.sun_path)
    return -ENAMETOOLONG;
  strcpy(sa.sun_path, path);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0)
    return -errno;
  int err = gpd_fdid_take(id, fd);
  if (err) {
    close(fd); /* fstat of a descriptor socket(2) just made cannot fail */
    return err;
  }
  if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
    err = -errno;
    if (err != -EINPROGRESS && err != -EAGAIN) {
      conn_fd_close(id);
      return err;
    }
    struct pollfd p = {.fd = fd, .events = POLLOUT};
    int soerr = 0;
    socklen_t sl = sizeof soerr;
    if (poll(&p, 1, CONN_CONNECT_MS) != 1 || (p.revents & POLLNVAL) ||
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0 || soerr) {
      conn_fd_close(id);
      return soerr ? -soerr : -ETIMEDOUT;
    }
  }
  return 0;
}

/* argv from /proc/self/cmdline into a malloc'd buffer + vector. */
static size_t conn_argv(char **buf_out, char ***argv_out) {
  *buf_out = NULL;
  *argv_out = NULL;
  int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return 0;
  char *buf = malloc(CONN_CMDLINE_MAX + 1);
  size_t n = 0;
  ssize_t r;
  while (buf && n < CONN_CMDLINE_MAX && (r = read(fd, buf + n, CONN_CMDLINE_MAX - n)) > 0)
    n += (size_t)r;
  close(fd);
  if (!buf)
    return 0;
  buf[n] = '\0';
  char **argv = calloc(CONN_ARGV_MAX, sizeof *argv);
  size_t argc = 0;
  for (size_t i = 0; argv && i < n && argc < CONN_ARGV_MAX; i += strlen(buf + i) + 1)
    argv[argc++] = buf + i;
  *buf_out = buf;
  *argv_out = argv;
  return argv ? argc : 0;
}

/* Send one message on the socket `sock` (checked to be ours first), with
 * `fd` attached when >= 0.  0, -errno (-EBADF: the socket is not ours). */
static int conn_send_msg(const gpd_fdid_t *sock, Gpuprof__Msg *m, int fd) {
  if (!gpd_fdid_owned(sock))
    return -EBADF;
  size_t n = gpuprof__msg__get_packed_size(m);
  if (n > GPD_FRAME_MAX)
    return GPD_EFRAMETOOBIG;
  uint8_t *buf = malloc(n ? n : 1);
  if (!buf)
    return -ENOMEM;
  gpuprof__msg__pack(m, buf);
  int err = gpd_frame_send(sock->fd, buf, (uint32_t)n, fd, CONN_SEND_MS);
  free(buf);
  return err;
}

/* Send Hello, read HelloReply.  region_fd >= 0: a hand-back of the region
 * we hold (that memfd attached, our current profile id); else a first
 * registration, and the region that comes back is attached.
 * 0, -errno, GPD_EDENIED (refused: do not retry), GPD_EPROTO. */
static int conn_register(const gpd_fdid_t *sock, int region_fd) {
  int handback = region_fd >= 0;
  gpd_shim_state_t *g = &gpd_shim__g;
  gpd_shim_job_env_t job;
  gpd_shim_job_env_read(&job);
  char exe[4096], host[256];
  ssize_t el = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[el > 0 ? el : 0] = '\0';
  if (gethostname(host, sizeof host) < 0)
    host[0] = '\0';
  host[sizeof host - 1] = '\0';
  char *abuf, **argv;
  size_t argc = conn_argv(&abuf, &argv);

  Gpuprof__Hello h = GPUPROF__HELLO__INIT;
  h.proto_version = GPD_PROTO_VERSION; /* gpuprof/region.h */
  h.pid = (int32_t)getpid();
  h.ppid = (int32_t)getppid();
  h.exe = exe;
  h.n_argv = argc;
  h.argv = argv;
  h.job_id = job.job_id;
  h.step_id = job.step_id;
  h.rank = job.rank;
  h.local_rank = job.local_rank;
  h.hostname = host;
  h.start_time_ns = g->start_ns;
  h.handback = handback;
  h.profile_id = handback ? conn.profile_id : 0;
  Gpuprof__Msg m = GPUPROF__MSG__INIT;
  m.body_case = GPUPROF__MSG__BODY_HELLO;
  m.hello = &h;
  int err = conn_send_msg(sock, &m, region_fd);
  free(argv);
  free(abuf);
  if (err)
    return err;

  uint8_t *reply = NULL;
  size_t rn = 0;
  int rfd = -1;
  if (!gpd_fdid_owned(sock))
    return -EBADF;
  err = gpd_frame_recv(sock->fd, &reply, &rn, &rfd, CONN_REPLY_MS);
  if (err)
    return err;
  Gpuprof__Msg *rm = gpuprof__msg__unpack(NULL, rn, reply);
  free(reply);
  if (!rm || rm->body_case != GPUPROF__MSG__BODY_HELLO_REPLY || !rm->hello_reply) {
    err = rm && rm->body_case == GPUPROF__MSG__BODY_ERROR ? GPD_EDENIED : GPD_EPROTO;
    if (err == GPD_EDENIED)
      GPD_LOG_ONCE(conn_log_refused, GPD_LOG_WARN, "daemon at %s refused registration: %s; not profiling",
                   g->socket_path, rm->error && rm->error->message ? rm->error->message : "?");
    goto out;
  }
  Gpuprof__HelloReply *hr = rm->hello_reply;
  if (hr->error && *hr->error) {
    GPD_LOG_ONCE(conn_log_refused, GPD_LOG_WARN, "daemon at %s refused registration: %s; not profiling",
                 g->socket_path, hr->error);
    err = GPD_EDENIED;
    goto out;
  }
  /* a daemon of another release (its rings in another record format):
   * refused like a refusal, not retried */
  if (hr->proto_version != GPD_PROTO_VERSION) {
    GPD_LOG_ONCE(conn_log_refused, GPD_LOG_WARN,
                 "daemon at %s speaks protocol version %u, this shim %u (another gpuprof release); not profiling",
                 g->socket_path, hr->proto_version, GPD_PROTO_VERSION);
    err = GPD_EDENIED;
    goto out;
  }
  /* the node's collection policy: kept for the back ends that start
   * later; those already running switch to it (a new daemon's, on a
   * hand-back or a late first registration) */
  {
    gpd_shim_policy_t sp;
    conn.collect_ok = hr->policy != NULL;
    if (gpd_shim__policy_set(hr->policy, 1, &sp)) {
      gpd_control_t pc = {.kind = GPD_CONTROL_POLICY, .enable = 1, .policy = &sp};
      gpd_control_ack_t ack;
      gpd_shim__control_apply(&pc, &ack);
    }
  }
  if (handback) {
    /* The new daemon saw none of our announcements: announce again on
     * first use (nodes, modules, strings). */
    uint32_t e = atomic_fetch_add(&g->epoch, 1) + 1;
    if (e == GPD_ANN_BUSY || e == 0)
      atomic_store(&g->epoch, 1);
    conn.profile_id = hr->profile_id ? hr->profile_id : conn.profile_id;
    gpd_shim__status_resend();
    GPD_INFO("handed the region back to the daemon (profile %llu)", (unsigned long long)conn.profile_id);
  } else {
    if (rfd < 0) {
      err = GPD_EPROTO;
      goto out;
    }
    gpd_region_t r;
    err = gpd_region_map(&r, rfd);
    if (err == GPD_EBADVERSION) {
      GPD_LOG_ONCE(conn_log_refused, GPD_LOG_WARN,
                   "daemon at %s sent a shared region of another version or slot size (another gpuprof "
                   "release); not profiling", g->socket_path);
      err = GPD_EDENIED;
    }
    if (err)
      goto out;
    rfd = -1;
    err = gpd_shim__attach(&r);
    if (err) {
      gpd_region_close(&r);
      goto out;
    }
    conn.profile_id = hr->profile_id;
    GPD_DEBUG("registered with %s (profile %llu)", g->socket_path, (unsigned long long)hr->profile_id);
  }
out:
  if (rfd >= 0)
    close(rfd);
  if (rm)
    gpuprof__msg__free_unpacked(rm, NULL);
  return err;
}

/* ------------------------------------------------------------- gpubins */

GPD_EXPORT int gpd_shim_gpubin(const void *data, size_t len, const char *kind) {
  if (!gpd_shim_active())
    return -ENOTCONN;
  return gpd_conn_gpubin(data, len, kind);
}

int gpd_conn_gpubin(const void *data, size_t len, const char *kind) {
  if (!data || !len)
    return -EINVAL;
  char hash[33];
  gpd_hash128_hex(data, len, hash);
  int err = 0;
  pthread_mutex_lock(&conn.lock);
  if (!conn.seen)
    conn.seen = calloc(CONN_GPUBIN_SEEN_MAX, sizeof *conn.seen);
  for (uint32_t i = 0; conn.seen && i < conn.nseen; i++)
    if (strcmp(conn.seen[i], hash) == 0)
      goto out; /* already sent or queued */
  if (!conn.seen || conn.nseen >= CONN_GPUBIN_SEEN_MAX || conn.q_bytes + len > CONN_GPUBIN_QUEUE_MAX) {
    err = -ENOSPC;
    goto out;
  }
  gpubin_t *b = calloc(1, sizeof *b);
  uint8_t *copy = b ? malloc(len) : NULL;
  if (!copy) {
    free(b);
    err = -ENOMEM;
    goto out;
  }
  memcpy(copy, data, len);
  b->data = copy;
  b->len = len;
  memcpy(b->hash, hash, sizeof hash);
  snprintf(b->kind, sizeof b->kind, "%s", kind ? kind : "");
  if (!conn.q_tail)
    conn.q_tail = &conn.q_head;
  *conn.q_tail = b;
  conn.q_tail = &b->next;
  conn.q_bytes += len;
  memcpy(conn.seen[conn.nseen++], hash, sizeof hash);
out:
  pthread_mutex_unlock(&conn.lock);
  if (err)
    GPD_LOG_ONCE(conn_log_gpubin, GPD_LOG_WARN, "GPU binary queue full; binaries dropped");
  return err;
}

/* Send the queued GPU binaries.  Returns -EBADF when the socket turned out
 * not to be ours (the binary being sent is dropped), else 0. */
static int conn_gpubin_flush(const gpd_fdid_t *sock) {
  int ret = 0;
  for (;;) {
    pthread_mutex_lock(&conn.lock);
    gpubin_t *b = ret ? NULL : conn.q_head;
    if (b) {
      conn.q_head = b->next;
      if (!conn.q_head)
        conn.q_tail = &conn.q_head;
      conn.q_bytes -= b->len;
    }
    conn.q_inflight = b != NULL;
    pthread_mutex_unlock(&conn.lock);
    if (!b)
      return ret;
    for (size_t off = 0; off < b->len; off += CONN_GPUBIN_CHUNK) {
      Gpuprof__GpuBinary gb = GPUPROF__GPU_BINARY__INIT;
      gb.hash = b->hash;
      gb.kind = b->kind;
      gb.total_size = b->len;
      gb.offset = off;
      gb.data.data = b->data + off;
      gb.data.len = b->len - off < CONN_GPUBIN_CHUNK ? b->len - off : CONN_GPUBIN_CHUNK;
      Gpuprof__Msg m = GPUPROF__MSG__INIT;
      m.body_case = GPUPROF__MSG__BODY_GPUBIN;
      m.gpubin = &gb;
      int err = conn_send_msg(sock, &m, -1);
      if (err) {
        GPD_LOG_ONCE(conn_log_gpubin, GPD_LOG_WARN, "sending a GPU binary failed; dropped");
        if (err == -EBADF)
          ret = -EBADF;
        break;
      }
    }
    free(b->data);
    free(b);
  }
}

/* ------------------------------------------------------------- control */

/* Send a ControlAck.  0, -errno (-EBADF: the socket is not ours). */
static int conn_send_ack(const gpd_fdid_t *sock, const gpd_control_ack_t *a) {
  Gpuprof__ControlAck ca = GPUPROF__CONTROL_ACK__INIT;
  ca.id = a->id;
  ca.code = a->code;
  ca.message = (char *)a->message;
  ca.targets = a->targets;
  ca.ended = a->ended;
  ca.kind = (Gpuprof__ControlKind)a->kind;
  Gpuprof__Msg m = GPUPROF__MSG__INIT;
  m.body_case = GPUPROF__MSG__BODY_CONTROL_ACK;
  m.control_ack = &ca;
  return conn_send_msg(sock, &m, -1);
}

/* Send what the back ends run and cost (CollectReports), at most once per
 * GPD_SHIM_COLLECT_MS and only when it changed (a process that never uses
 * a GPU sends it once per connection).  0, -errno (-EBADF: the socket is
 * not ours). */
#define GPD_SHIM_COLLECT_MS 1000u
enum { CONN_NREP = 8 };
/* The numbers of a CollectReport: named alike in gpd_shim_collect_t and
 * the proto message. */
#define CONN_COLLECT_NUMBERS(X)                                                                  \
  X(can_detach) X(elapsed_ns) X(window_ns) X(windows) X(launches) X(launches_in) X(switch_ns)    \
  X(pc_window_ns) X(pc_launches) X(self_ns) X(timed_out) X(timed_out_ns) X(timed_in) X(timed_in_ns) \
  X(busy_windows)
static struct {
  size_t n;
  unsigned api[CONN_NREP];
  gpd_shim_collect_t rep[CONN_NREP];
} conn_collect_last;
static int conn_send_collect(const gpd_fdid_t *sock) {
  enum { NREP = CONN_NREP };
  gpd_shim_collect_t rep[NREP];
  unsigned api[NREP];
  Gpuprof__CollectReport cr[NREP], *crp[NREP];
  uint64_t now = gpd_clock_ns();
  if (!conn.collect_ok)
    return 0; /* an older daemon: it would take the message for a bad one */
  if (conn.collect_ns && now - conn.collect_ns < GPD_SHIM_COLLECT_MS * 1000000ull)
    return 0;
  int fresh = conn.collect_ns == 0; /* a new connection or a new policy */
  conn.collect_ns = now;
  memset(rep, 0, sizeof rep);
  size_t n = gpd_shim__collect_reports(rep, api, NREP);
  if (!fresh && n == conn_collect_last.n && !memcmp(api, conn_collect_last.api, n * sizeof *api) &&
      !memcmp(rep, conn_collect_last.rep, n * sizeof *rep))
    return 0;
  conn_collect_last.n = n;
  memcpy(conn_collect_last.api, api, sizeof api);
  memcpy(conn_collect_last.rep, rep, sizeof rep);
  for (size_t i = 0; i < n; i++) {
    gpuprof__collect_report__init(&cr[i]);
    cr[i].api = api[i];
    cr[i].source = rep[i].source;
    cr[i].mode = rep[i].mode;
    cr[i].note = rep[i].note;
    cr[i].busy = rep[i].busy;
#define X(f) cr[i].f = rep[i].f;
    CONN_COLLECT_NUMBERS(X)
#undef X
    crp[i] = &cr[i];
  }
  Gpuprof__CollectReports rs = GPUPROF__COLLECT_REPORTS__INIT;
  rs.n_reports = n;
  rs.reports = crp;
  Gpuprof__Msg m = GPUPROF__MSG__INIT;
  m.body_case = GPUPROF__MSG__BODY_COLLECT;
  m.collect = &rs;
  return conn_send_msg(sock, &m, -1);
}

/* One frame from the daemon: a Control is applied and answered; anything
 * else (or what does not decode) is ignored.  -EBADF when the socket
 * turned out not to be ours, else 0. */
static int conn_handle_frame(const gpd_fdid_t *sock, const uint8_t *p, size_t n) {
  Gpuprof__Msg *m = gpuprof__msg__unpack(NULL, n, p);
  int err = 0;
  if (m == NULL)
    return 0;
  if (m->body_case == GPUPROF__MSG__BODY_CONTROL && m->control) {
    gpd_control_ack_t ack;
    gpd_shim__control_msg(m->control, &ack);
    err = conn_send_ack(sock, &ack);
    if (ack.kind == GPD_CONTROL_POLICY)
      conn.collect_ns = 0; /* report the new mode at once */
  }
  gpuprof__msg__free_unpacked(m, NULL);
  return err == -EBADF ? -EBADF : 0;
}

/* -------------------------------------------------------------- thread */

/* Wait before the next attempt: no daemon / registration failed; daemon
 * gone (hand-back); socket taken by the application (backoff). */
static int conn_retry_ms(void) {
  if (!conn.ever)
    return GPD_SHIM_RETRY_NODAEMON_MS;
  uint64_t ms = GPD_SHIM_RETRY_HANDBACK_MS;
  for (uint32_t i = 1; i < conn.lost && ms < CONN_LOST_BACKOFF_MAX_MS; i++)
    ms *= 2;
  return (int)(ms < CONN_LOST_BACKOFF_MAX_MS ? ms : CONN_LOST_BACKOFF_MAX_MS);
}

/* The region's memfd is gone (closed by the application): it cannot be
 * handed back and a second region must not be started while this one is
 * mapped, so stop profiling this process for good.  The mapping stays
 * (threads may be writing into it); captures stop. */
static void conn_go_off(void) {
  GPD_LOG_ONCE(conn_log_off, GPD_LOG_WARN,
               "the application closed the profiling region's descriptor; "
               "profiling of this process stops");
  atomic_store_explicit(&gpd_shim__g.active, 0, memory_order_release);
  pthread_mutex_lock(&conn.lock);
  conn.off = 1;
  pthread_mutex_unlock(&conn.lock);
}

/* One connection attempt: connect, Hello (first registration, or a
 * hand-back of the region we hold).  0 = connected; 1 = stop the thread;
 * -1 = failed, retry later. */
static int conn_attempt(void) {
  gpd_shim_state_t *g = &gpd_shim__g;
  /* Holding a region (registered before, or attached by a test hook):
   * only ever hand it back; a plain Hello would start a second one. */
  int region_fd = -1;
  if (atomic_load_explicit(&g->active, memory_order_acquire)) {
    region_fd = gpd_shim__attach_fd();
    if (region_fd < 0) {
      conn_go_off();
      return 1;
    }
  }
  gpd_fdid_t id;
  int err = conn_connect(g->socket_path, &id);
  atomic_store_explicit(&gpd_shim__g.no_listener, err && !conn.ever && (err == -ENOENT || err == -ECONNREFUSED),
                        memory_order_relaxed);
  if (err) {
    if (!conn.ever)
      GPD_LOG_ONCE(conn_log_nodaemon, GPD_LOG_WARN, "no daemon at %s, not profiling", g->socket_path);
    return -1;
  }
  err = conn_register(&id, region_fd);
  if (err) {
    conn_fd_close(&id);
    if (err == GPD_EDENIED) {
      conn.refused = 1;
      return 1;
    }
    GPD_DEBUG("registration failed: %s", gpd_strerror(err));
    return -1;
  }
  pthread_mutex_lock(&conn.lock); /* gpd_conn_stop reads it */
  conn.sock = id;
  pthread_mutex_unlock(&conn.lock);
  conn.sock_ns = gpd_clock_ns();
  conn.collect_ns = 0; /* report at once on a new connection */
  conn.ever = 1;
  return 0;
}

static void *conn_main(void *arg) {
  (void)arg;
  conn_on_thread = 1;
  for (;;) {
    pthread_mutex_lock(&conn.lock);
    int stop = conn.stop;
    pthread_mutex_unlock(&conn.lock);
    if (stop)
      break;
    /* windows of Control messages that end now (also with no daemon: the
     * ack is then not sent; between reconnection attempts they end up to
     * one retry interval late) */
    gpd_control_ack_t ack;
    while (gpd_shim__control_due(gpd_clock_ns(), &ack))
      if (conn.sock.fd >= 0 && conn_send_ack(&conn.sock, &ack) == -EBADF)
        conn_sock_lost();
    gpd_cpu_sampler_service();
    if (conn.sock.fd < 0) {
      int rc = conn_attempt();
      conn_first_done();
      if (rc > 0)
        break;
      if (rc < 0) {
        if (conn_sleep(conn_retry_ms()))
          break;
        continue;
      }
    }
    if (!gpd_fdid_owned(&conn.sock)) {
      conn_sock_lost();
      continue;
    }
    struct pollfd p = {.fd = conn.sock.fd, .events = POLLIN};
    int rc = poll(&p, 1, 100);
    if (rc < 0 || (rc > 0 && (p.revents & POLLNVAL))) {
      /* The number was closed under us (POLLNVAL) or poll failed: never
       * loop on it. */
      if (!gpd_fdid_owned(&conn.sock)) {
        conn_sock_lost();
        continue;
      }
      if (conn_sleep(100))
        break;
      continue;
    }
    if (rc > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR))) {
      if (!gpd_fdid_owned(&conn.sock)) {
        conn_sock_lost();
        continue;
      }
      uint8_t *msg = NULL;
      size_t n = 0;
      int fd = -1;
      int err = gpd_frame_recv(conn.sock.fd, &msg, &n, &fd, 100);
      if (fd >= 0)
        close(fd);
      if (err == 0 && conn_handle_frame(&conn.sock, msg, n) == -EBADF) {
        free(msg);
        conn_sock_lost();
        continue;
      }
      free(msg);
      if (err && err != -ETIMEDOUT) {
        if (!gpd_fdid_owned(&conn.sock)) {
          conn_sock_lost();
          continue;
        }
        GPD_LOG_ONCE(conn_log_gone, GPD_LOG_WARN,
                     "daemon connection lost (%s); keeping the region, reconnecting", gpd_strerror(err));
        pthread_mutex_lock(&conn.lock);
        conn_fd_close(&conn.sock);
        pthread_mutex_unlock(&conn.lock);
        if (gpd_clock_ns() - conn.sock_ns >= CONN_STABLE_NS)
          conn.lost = 0;
        continue;
      }
    }
    if (conn_send_collect(&conn.sock) == -EBADF) {
      conn_sock_lost();
      continue;
    }
    /* the queue is filled by application threads under conn.lock */
    pthread_mutex_lock(&conn.lock);
    int queued = conn.q_head != NULL;
    pthread_mutex_unlock(&conn.lock);
    if (queued && conn_gpubin_flush(&conn.sock) == -EBADF)
      conn_sock_lost();
  }
  return NULL;
}

int gpd_conn_start(int wait_ms) {
  int err = 0;
  if (conn_on_thread)
    return 0; /* a shim call made by the connection thread itself */
  pthread_mutex_lock(&conn.lock);
  if (!conn.started && !conn.off) {
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&conn.cond, &ca);
    pthread_condattr_destroy(&ca);
    conn.first_done = 0;
    conn.stop = 0;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_t th;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&at, 256 * 1024);
    err = -pthread_create(&th, &at, conn_main, NULL);
    pthread_attr_destroy(&at);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (err) {
      conn.first_done = 1;
      pthread_mutex_unlock(&conn.lock);
      GPD_WARN("cannot start the connection thread: %s; not profiling", gpd_strerror(err));
      return err;
    }
    (void)pthread_setname_np(th, "gpuprof-conn");
    conn.started = 1;
  }
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  ts.tv_nsec += (long)wait_ms * 1000000L;
  ts.tv_sec += ts.tv_nsec / 1000000000L;
  ts.tv_nsec %= 1000000000L;
  while (conn.started && !conn.first_done && pthread_cond_timedwait(&conn.cond, &conn.lock, &ts) != ETIMEDOUT)
    ;
  pthread_mutex_unlock(&conn.lock);
  return err;
}

void gpd_conn_stop(void) {
  /* At exit, give the connection thread a bounded time (2 s) to send the
   * GPU binaries still queued: a short program loads its cubins just
   * before it ends.  Not when no daemon is connected. */
  for (int i = 0; i < 200; i++) {
    pthread_mutex_lock(&conn.lock);
    int busy = conn.started && conn.sock.fd >= 0 && (conn.q_head != NULL || conn.q_inflight);
    pthread_mutex_unlock(&conn.lock);
    if (!busy)
      break;
    struct timespec ts = {0, 10000000};
    nanosleep(&ts, NULL);
  }
  pthread_mutex_lock(&conn.lock);
  conn.stop = 1;
  if (conn.started)
    pthread_cond_broadcast(&conn.cond);
  pthread_mutex_unlock(&conn.lock);
}

void gpd_conn_atfork_prepare(void) { pthread_mutex_lock(&conn.lock); }

void gpd_conn_atfork_parent(void) { pthread_mutex_unlock(&conn.lock); }

void gpd_conn_atfork_child(void) {
  /* Only this thread exists: the parent's connection thread is gone.  Its
   * socket is a copy we must close (else the daemon would not see the
   * parent's EOF), but only if the number is still that socket: the
   * application may have closed it and reused the number. */
  pthread_mutex_unlock(&conn.lock); /* taken in prepare by this thread */
  conn_fd_close(&conn.sock);
  conn.started = 0;
  conn.first_done = 0;
  conn.stop = 0;
  conn.off = 0;
  conn.ever = 0;
  conn.lost = 0;
  conn.refused = 0;
  conn.profile_id = 0;
  gpubin_t *b = conn.q_head;
  while (b) {
    gpubin_t *n = b->next;
    free(b->data);
    free(b);
    b = n;
  }
  conn.q_head = NULL;
  conn.q_tail = &conn.q_head;
  conn.q_bytes = 0;
  conn.q_inflight = 0;
  conn.nseen = 0;
}


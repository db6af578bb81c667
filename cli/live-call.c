/* live-call.c - one request to gpuprofd over its Unix socket and its one
 * reply (proto/gpuprof.proto): the connection every live command uses
 * (live.c, live-devices.c, policy.c, sample.c, trace.c), below all of
 * them.  CLI thread only.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "arena.h"
#include "cli.h"
#include "gpuprof/error.h"
#include "gpuprof/frame.h"

/* Reply timeout: a node-wide tree of many processes can take a while. */
#define GPD_LIVE_TIMEOUT_MS 30000

const char *gpd_live_socket(const char *opt) {
  const char *e;
  if (opt && opt[0]) return opt;
  if ((e = getenv("GPUPROF_SOCKET")) && e[0]) return e;
  return GPD_CLI_DEFAULT_SOCKET;
}

static int nodaemon(const char *sock, int err) {
  if (err == -ENOENT || err == -ECONNREFUSED || err == -ENOTDIR)
    fprintf(stderr, "gpuprof: no gpuprofd at %s (is the service running? set GPUPROF_SOCKET or --socket)\n", sock);
  else
    fprintf(stderr, "gpuprof: cannot connect to gpuprofd at %s: %s (set GPUPROF_SOCKET or --socket)\n", sock,
            gpd_strerror(err));
  return GPD_EXIT_NODAEMON;
}

int gpd_live_quiet;

int gpd_live_call_arena(const char *sock, const Gpuprof__Msg *req, Gpuprof__Msg **reply,
                        gpd_arena_t **arena) {
  struct sockaddr_un sa;
  uint8_t *buf = NULL, *in = NULL;
  size_t n, inn = 0;
  int fd = -1, rfd = -1, r, code = GPD_EXIT_FAIL;

  *reply = NULL;
  memset(&sa, 0, sizeof(sa));
  sa.sun_family = AF_UNIX;
  if (strlen(sock) >= sizeof(sa.sun_path)) {
    fprintf(stderr, "gpuprof: socket path too long: %s\n", sock);
    return GPD_EXIT_USAGE;
  }
  strcpy(sa.sun_path, sock);
  if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0) {
    fprintf(stderr, "gpuprof: socket: %s\n", strerror(errno));
    return GPD_EXIT_FAIL;
  }
  if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
    code = nodaemon(sock, -errno);
    goto done;
  }
  n = gpuprof__msg__get_packed_size(req);
  if (!(buf = malloc(n ? n : 1))) abort();
  gpuprof__msg__pack(req, buf);
  if ((r = gpd_frame_send(fd, buf, (uint32_t)n, -1, GPD_LIVE_TIMEOUT_MS)) < 0) {
    fprintf(stderr, "gpuprof: sending the request to gpuprofd at %s failed: %s\n", sock, gpd_strerror(r));
    code = r == -EPIPE || r == -ECONNRESET ? GPD_EXIT_NODAEMON : GPD_EXIT_FAIL;
    goto done;
  }
  if ((r = gpd_frame_recv_max(fd, &in, &inn, &rfd, GPD_LIVE_TIMEOUT_MS, GPD_REPLY_MAX)) < 0) {
    if (r == -ECONNRESET)
      fprintf(stderr, "gpuprof: gpuprofd at %s closed the connection without a reply\n", sock);
    else if (r == -ETIMEDOUT)
      fprintf(stderr, "gpuprof: no reply from gpuprofd at %s within %d s\n", sock, GPD_LIVE_TIMEOUT_MS / 1000);
    else
      fprintf(stderr, "gpuprof: reading the reply from gpuprofd at %s failed: %s\n", sock, gpd_strerror(r));
    goto done;
  }
  if (rfd >= 0) close(rfd); /* CLI replies carry no fds */
  *reply = arena ? gpd_arena_unpack_msg(inn, in, arena) : gpuprof__msg__unpack(NULL, inn, in);
  if (!*reply) {
    fprintf(stderr, "gpuprof: gpuprofd sent a reply that does not decode (%zu bytes)\n", inn);
    goto done;
  }
  if ((*reply)->body_case == GPUPROF__MSG__BODY_ERROR) {
    const Gpuprof__Error *e = (*reply)->error;
    if (!gpd_live_quiet)
      fprintf(stderr, "gpuprof: %s\n", e->message[0] ? e->message : gpd_strerror(e->code));
    if (arena) {
      gpd_arena_free(*arena);
      *arena = NULL;
    } else {
      gpuprof__msg__free_unpacked(*reply, NULL);
    }
    *reply = NULL;
    goto done;
  }
  code = 0;
done:
  free(buf);
  free(in);
  if (fd >= 0) close(fd);
  return code;
}

int gpd_live_call(const char *sock, const Gpuprof__Msg *req, Gpuprof__Msg **reply) {
  return gpd_live_call_arena(sock, req, reply, NULL);
}

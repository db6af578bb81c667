/* frame.h - length-prefixed frames on the Unix control socket.
 *
 * A frame is a 4-byte little-endian payload length followed by that many
 * bytes of a packed gpuprof.Msg protobuf (proto/gpuprof.proto).  The
 * length is checked against GPD_FRAME_MAX before anything is allocated.
 * A frame may carry file descriptors (SCM_RIGHTS) on its first byte:
 * HelloReply carries the region memfd, a hand-back Hello carries it back.
 */
#ifndef GPUPROF_FRAME_H
#define GPUPROF_FRAME_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define GPD_FRAME_HDR 4u
#define GPD_FRAME_MAX (4u << 20) /* 4 MiB payload */
/** Largest query reply (PsReply, TreeReply, TopReply, TraceReply) the daemon sends and
 *  the CLI accepts: a tree of a large process is bigger than what the
 *  daemon accepts from clients (GPD_FRAME_MAX), and the CLI trusts its
 *  daemon more than the daemon trusts its clients. */
#define GPD_REPLY_MAX (256u << 20)

/** Incremental decoder over a byte stream.  Feed bytes as they arrive;
 *  complete payloads are returned one at a time.  Memory: at most one
 *  incomplete frame (max + GPD_FRAME_HDR bytes) plus the complete frames of
 *  the last feed; drain with gpd_frame_dec_next after each feed.  Not
 *  thread-safe. */
typedef struct gpd_frame_dec_s {
  uint8_t *buf;
  size_t len;  /* bytes buffered */
  size_t cap;
  uint32_t max; /* max payload, <= GPD_FRAME_MAX */
  size_t off;   /* start of unread bytes; payloads already returned lie before it */
} gpd_frame_dec_t;

void gpd_frame_dec_init(gpd_frame_dec_t *d, uint32_t max);
void gpd_frame_dec_free(gpd_frame_dec_t *d);

/** Append n bytes. Returns 0, -ENOMEM, or GPD_EFRAMETOOBIG as soon as a
 *  buffered header declares a payload above max (nothing is allocated for
 *  it; the connection must be dropped). */
int gpd_frame_dec_feed(gpd_frame_dec_t *d, const void *data, size_t n);

/** Take the next complete payload: returns 1 and sets *payload and *n (valid
 *  until the next feed/next call), 0 if none is complete yet, or
 *  GPD_EFRAMETOOBIG. */
int gpd_frame_dec_next(gpd_frame_dec_t *d, const uint8_t **payload, size_t *n);

/** Control-buffer room for one passed fd. */
#define GPD_FRAME_CMSG_SPACE CMSG_SPACE(sizeof(int))

/** Attach `fd` to `msg` as SCM_RIGHTS, using `cbuf` (GPD_FRAME_CMSG_SPACE
 *  bytes, aligned for struct cmsghdr, alive until sendmsg returns).  The
 *  one way shim, daemon and CLI pass the region memfd. */
void gpd_frame_cmsg_fd(struct msghdr *msg, void *cbuf, int fd);

/** Write the 4-byte header for an n-byte payload into hdr. */
void gpd_frame_put_header(uint8_t hdr[GPD_FRAME_HDR], uint32_t n);

/** Blocking helpers for clients (shim registration thread, CLI):
 *  write one whole frame (header + payload) with an optional fd attached
 *  (fd < 0: none); read one whole frame into a malloc'd buffer (*out,
 *  caller frees) receiving at most one fd into *fd_out (-1 if none).
 *  `timeout_ms` < 0 waits forever.  Return 0, -errno (-ETIMEDOUT,
 *  -ECONNRESET on EOF), or GPD_EFRAMETOOBIG. */
int gpd_frame_send(int sock, const void *payload, uint32_t n, int fd, int timeout_ms);
int gpd_frame_recv(int sock, uint8_t **out, size_t *n, int *fd_out, int timeout_ms);
/** gpd_frame_recv with another payload limit (e.g. GPD_REPLY_MAX). */
int gpd_frame_recv_max(int sock, uint8_t **out, size_t *n, int *fd_out, int timeout_ms, uint32_t max);

#endif

/* frame.c - length-prefixed frames on the control socket (frame.h).
 *
 * The decoder never allocates more than GPD_FRAME_HDR + max bytes: a
 * header that declares more is rejected as soon as its 4 bytes are in,
 * before the buffer grows.  The blocking helpers use poll() for timeouts,
 * retry EINTR, finish partial writes, and map EOF to -ECONNRESET.
 */
#include "gpuprof/frame.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "gpuprof/error.h"

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

/* `max` 0 or above GPD_FRAME_MAX means GPD_FRAME_MAX. */
void gpd_frame_dec_init(gpd_frame_dec_t *d, uint32_t max) {
  memset(d, 0, sizeof *d);
  d->max = (max == 0 || max > GPD_FRAME_MAX) ? GPD_FRAME_MAX : max;
}

void gpd_frame_dec_free(gpd_frame_dec_t *d) {
  free(d->buf);
  d->buf = NULL;
  d->len = d->cap = 0;
}

/* Internal: d->buf[0..len) holds unread bytes; a payload handed out by
 * dec_next is dropped from the front at the next feed/next call (tracked
 * by `consumed`, kept in the struct's spare state via a negative trick is
 * not possible, so we compact eagerly: see dec_next). */

/* Declared payload length of the buffered header, or -1 if incomplete. */
static int64_t dec_declared(const gpd_frame_dec_t *d) {
  if (d->len < GPD_FRAME_HDR)
    return -1;
  return get_le32(d->buf);
}

/* Check every complete header in the buffer, frame by frame, so that a
 * too-big declaration is reported as soon as its header is in. */
static int dec_check(const gpd_frame_dec_t *d) {
  size_t off = 0;
  while (d->len - off >= GPD_FRAME_HDR) {
    uint32_t n = get_le32(d->buf + off);
    if (n > d->max)
      return GPD_EFRAMETOOBIG;
    if (d->len - off - GPD_FRAME_HDR < n)
      break;
    off += GPD_FRAME_HDR + n;
  }
  return 0;
}

int gpd_frame_dec_feed(gpd_frame_dec_t *d, const void *data, size_t n) {
  const uint8_t *src = data;
  size_t limit = (size_t)d->max + GPD_FRAME_HDR;
  int err = dec_check(d);
  if (err)
    return err;
  /* Drop a payload handed out by the previous dec_next (kept until now so
   * that the pointer stayed valid). */
  if (d->len && d->cap && d->buf && d->len > 0) {
    /* nothing: dec_next compacts lazily, see pending_drop below */
  }
  while (n > 0) {
    /* Room for at most one whole frame beyond what is complete: accept
     * bytes in chunks and let the caller drain with dec_next.  To keep the
     * bound, grow only up to limit; when the buffer holds complete frames
     * and is full, the caller must call dec_next (we return -ENOBUFS). */
    size_t want = d->len + n;
    if (want > d->cap) {
      size_t ncap = d->cap ? d->cap : 256;
      while (ncap < want && ncap < limit)
        ncap *= 2;
      if (ncap > limit)
        ncap = limit;
      if (ncap > d->cap) {
        uint8_t *nb = realloc(d->buf, ncap);
        if (!nb)
          return -ENOMEM;
        d->buf = nb;
        d->cap = ncap;
      }
    }
    size_t take = d->cap - d->len < n ? d->cap - d->len : n;
    if (take == 0)
      return -ENOBUFS;
    memcpy(d->buf + d->len, src, take);
    d->len += take;
    src += take;
    n -= take;
    err = dec_check(d);
    if (err)
      return err;
  }
  return 0;
}

/* xwrite-gzip.c - a stdio stream that gzip-compresses what is written to
 * it into another stream (xwrite.h), so that every trace writer can
 * write OUT.gz as it writes OUT: in one pass, in bounded memory.  CLI
 * thread only.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <zlib.h>

#include "xwrite.h"

typedef struct {
  FILE *dst;
  z_stream z;
  int err;
  unsigned char out[1 << 16];
} gz_t;

/* deflate what z holds (flush: Z_NO_FLUSH or Z_FINISH) into dst */
static int gz_pump(gz_t *g, int flush) {
  int rc;
  do {
    g->z.next_out = g->out;
    g->z.avail_out = sizeof g->out;
    rc = deflate(&g->z, flush);
    if (rc == Z_STREAM_ERROR)
      return -EIO;
    size_t n = sizeof g->out - g->z.avail_out;
    if (n && fwrite(g->out, 1, n, g->dst) != n)
      return -EIO;
  } while (g->z.avail_out == 0 || (flush == Z_FINISH && rc != Z_STREAM_END));
  return 0;
}

static ssize_t gz_write(void *c, const char *buf, size_t n) {
  gz_t *g = c;
  if (g->err)
    return -1;
  g->z.next_in = (unsigned char *)(uintptr_t)buf;
  g->z.avail_in = (uInt)n;
  if ((g->err = gz_pump(g, Z_NO_FLUSH)) < 0) {
    errno = EIO;
    return -1;
  }
  return (ssize_t)n;
}

static int gz_close(void *c) {
  gz_t *g = c;
  int err = g->err;
  if (err == 0) {
    g->z.next_in = NULL;
    g->z.avail_in = 0;
    err = gz_pump(g, Z_FINISH);
  }
  deflateEnd(&g->z);
  free(g);
  return err < 0 ? EOF : 0;
}

FILE *gpd__xwrite_gzip(FILE *dst) {
  gz_t *g = calloc(1, sizeof *g);
  if (g == NULL)
    return NULL;
  g->dst = dst;
  /* level 1: the trace is mostly the same keys and names again, which
   * the fastest level already finds; windowBits 15 + 16: a gzip header */
  if (deflateInit2(&g->z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    free(g);
    return NULL;
  }
  cookie_io_functions_t io = {.write = gz_write, .close = gz_close};
  FILE *f = fopencookie(g, "w", io);
  if (f == NULL) {
    deflateEnd(&g->z);
    free(g);
  }
  return f;
}

/* text.c - what the CLI prints to a terminal: no control characters, valid
 * UTF-8.
 *
 * Labels, executable paths, job ids, messages of the daemon and every
 * other string the CLI prints may come from another user's process.  A raw
 * ESC, CR or BEL would reach an admin's terminal (clear the screen, set
 * its title, forge a line), and an invalid UTF-8 byte breaks consumers
 * that need UTF-8 (Prometheus, JSON).  gpd_text_sanitize() is the one
 * rule: a C0 control but tab and newline, DEL, a C1 control (U+0080 to
 * U+009F, which some terminals read as CSI) and every byte that is not
 * part of a well-formed UTF-8 sequence (overlong forms, surrogates and
 * code points above U+10FFFF included) is shown as \xNN, lowercase hex.
 *
 * gpd_text_stdio() puts the rule between the CLI and its standard output
 * and error: everything printed with stdio passes it, so no print site can
 * forget it.  Binary output (pprof) goes to gpd_text_raw_stdout.  The JSON
 * writer escapes the same characters itself (json.c), so a JSON document
 * passes through unchanged.
 * CLI thread only.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

FILE *gpd_text_raw_stdout;

int gpd_text_utf8(const unsigned char *p, size_t n) {
  unsigned c = p[0];
  int len;
  unsigned lo = 0x80, hi = 0xbf; /* allowed range of the second byte */
  if (c < 0x80) return 1;
  if (c >= 0xc2 && c <= 0xdf) {
    len = 2;
  } else if (c >= 0xe0 && c <= 0xef) {
    len = 3;
    if (c == 0xe0) lo = 0xa0;      /* overlong */
    else if (c == 0xed) hi = 0x9f; /* surrogates */
  } else if (c >= 0xf0 && c <= 0xf4) {
    len = 4;
    if (c == 0xf0) lo = 0x90;      /* overlong */
    else if (c == 0xf4) hi = 0x8f; /* above U+10FFFF */
  } else {
    return 0;
  }
  for (int k = 1; k < len; k++) {
    if ((size_t)k >= n) return -1;
    unsigned b = p[k];
    if (k == 1 ? (b < lo || b > hi) : (b & 0xc0) != 0x80) return 0;
  }
  return len;
}

/* 1 if the code point starting at p (a valid sequence of len bytes) is
 * shown escaped: C0 but tab and newline, DEL, C1. */
static int text_control(const unsigned char *p, int len) {
  if (len == 1) return (p[0] < 0x20 && p[0] != '\t' && p[0] != '\n') || p[0] == 0x7f;
  return len == 2 && p[0] == 0xc2 && p[1] < 0xa0; /* U+0080..U+009F */
}

size_t gpd_text_sanitize(char *out, const char *in, size_t n, size_t *used) {
  static const char hex[] = "0123456789abcdef";
  const unsigned char *p = (const unsigned char *)in;
  size_t i = 0, o = 0;
  while (i < n) {
    int len = gpd_text_utf8(p + i, n - i);
    if (len < 0 && used) break; /* the rest of a sequence comes later */
    if (len > 0 && !text_control(p + i, len)) {
      memcpy(out + o, p + i, (size_t)len);
      o += (size_t)len;
      i += (size_t)len;
      continue;
    }
    len = len > 0 ? len : 1; /* an invalid byte alone; a control whole */
    for (int k = 0; k < len; k++, i++) {
      out[o++] = '\\';
      out[o++] = 'x';
      out[o++] = hex[p[i] >> 4];
      out[o++] = hex[p[i] & 15];
    }
  }
  if (used) *used = i;
  return o;
}

const char *gpd_text_line(char *buf, size_t n, const char *s) {
  size_t o = 0;
  for (s = s ? s : ""; *s && o + 1 < n; s++) {
    if (*s != '\n' && *s != '\t') {
      buf[o++] = *s;
      continue;
    }
    if (o + 5 > n) break;
    memcpy(buf + o, *s == '\n' ? "\\x0a" : "\\x09", 4);
    o += 4;
  }
  if (n) buf[o] = 0;
  return buf;
}

char *gpd_text_dup(const char *s) {
  size_t n = strlen(s ? s : "");
  char *o = malloc(4 * n + 1);
  if (!o) abort(); /* CLI only, as gpd_cli_strdup */
  o[gpd_text_sanitize(o, s ? s : "", n, NULL)] = 0;
  return o;
}

/* ---- the stdio filter ---- */

/* One filtered stream: the file descriptor it writes to and the start of
 * a UTF-8 sequence that the previous write ended in (at most 3 bytes). */
typedef struct text_sink_s {
  int fd;
  unsigned char carry[4];
  size_t ncarry;
} text_sink_t;

static text_sink_t text_sinks[2] = {{.fd = STDOUT_FILENO}, {.fd = STDERR_FILENO}};

static int text_write_all(int fd, const char *b, size_t n) {
  while (n) {
    ssize_t w = write(fd, b, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    b += w;
    n -= (size_t)w;
  }
  return 0;
}

/* Sanitize in[0..n) after the carried bytes and write it; final: the end
 * of the stream (a cut sequence is escaped, not carried). */
static int text_sink_put(text_sink_t *s, const char *in, size_t n, int final) {
  char src[1024 + 4], dst[4 * sizeof src];
  while (n || (final && s->ncarry)) {
    size_t k = n < 1024 ? n : 1024, used;
    memcpy(src, s->carry, s->ncarry);
    memcpy(src + s->ncarry, in, k);
    size_t m = s->ncarry + k;
    size_t o = gpd_text_sanitize(dst, src, m, final && k == n ? NULL : &used);
    if (final && k == n) used = m;
    s->ncarry = m - used; /* < 4: only a cut sequence is left over */
    memcpy(s->carry, src + used, s->ncarry);
    in += k;
    n -= k;
    if (text_write_all(s->fd, dst, o) < 0) return -1;
  }
  return 0;
}

static ssize_t text_cookie_write(void *c, const char *buf, size_t n) {
  return text_sink_put(c, buf, n, 0) < 0 ? -1 : (ssize_t)n;
}

static int text_cookie_close(void *c) { return text_sink_put(c, "", 0, 1); }

/* At exit: what the filtered streams still carry (the cut start of a
 * sequence) is written escaped. */
static void text_atexit(void) {
  fflush(stdout);
  fflush(stderr);
  for (int i = 0; i < 2; i++) text_sink_put(&text_sinks[i], "", 0, 1);
}

int gpd_text_stdio(void) {
  static const cookie_io_functions_t fns = {.write = text_cookie_write, .close = text_cookie_close};
  FILE *o = fopencookie(&text_sinks[0], "w", fns);
  FILE *e = fopencookie(&text_sinks[1], "w", fns);
  if (!o || !e) {
    if (o) fclose(o);
    if (e) fclose(e);
    return -ENOMEM;
  }
  gpd_text_raw_stdout = stdout;
  setvbuf(o, NULL, isatty(STDOUT_FILENO) ? _IOLBF : _IOFBF, BUFSIZ);
  setvbuf(e, NULL, _IONBF, 0);
  stdout = o;
  stderr = e;
  atexit(text_atexit);
  return 0;
}

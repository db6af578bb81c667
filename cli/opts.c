/* opts.c - helpers every subcommand shares: usage errors, the parsing
 * of numbers and metric names, the output width and path cutting.  No subcommand depends on main.c (which
 * only dispatches), so main.c -> live.c / report.c / record.c -> opts.c
 * has no cycle. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "cli.h"
#include "gpuprof/metric.h"

const char *gpd_cli_prog = "gpuprof";

int gpd_cli_usage(const char *usage, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "gpuprof: ");
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\n%s", usage);
  return GPD_EXIT_USAGE;
}

long gpd_cli_parse_uint(const char *s) {
  char *end;
  if (!s || !isdigit((unsigned char)s[0])) return -1;
  errno = 0;
  unsigned long v = strtoul(s, &end, 10);
  if (errno || *end || v > 0x7fffffffUL) return -1;
  return (long)v;
}

int gpd_cli_metric(const char *name) {
  for (unsigned i = 0; i < GPD_M__COUNT; i++)
    if (!strcasecmp(gpd_metric_desc(i)->name, name)) return (int)i;
  return -1;
}

unsigned gpd_cli_width(void) {
  struct winsize ws;
  if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 40)
    return ws.ws_col;
  const char *c = getenv("COLUMNS");
  long v = c ? gpd_cli_parse_uint(c) : -1;
  return v >= 40 ? (unsigned)v : 160;
}

void gpd_cli_path_fit(char *s, unsigned width) {
  static const char sep[] = " > ", dots[] = " > ... > ";
  size_t len = strlen(s);
  if (len <= width)
    return;
  char *first_end = strstr(s, sep);
  /* the innermost frames that fit after the outermost one and the dots */
  size_t head = first_end ? (size_t)(first_end - s) : 0;
  const char *tail = s + len;
  for (const char *p = s + len; p > s + head; p--)
    if (p - s >= 3 && !strncmp(p - 3, sep, 3)) {
      if (head + sizeof dots - 1 + (size_t)(s + len - p) > width)
        break;
      tail = p;
    }
  if (first_end && tail < s + len && tail > first_end + 3) {
    size_t tl = strlen(tail);
    memcpy(s + head, dots, sizeof dots - 1);
    memmove(s + head + sizeof dots - 1, tail, tl + 1);
    return;
  }
  /* not even the innermost frame fits with the outermost: it alone, cut */
  const char *last = s;
  for (const char *p = strstr(s, sep); p; p = strstr(p + 3, sep))
    last = p + 3;
  size_t ll = strlen(last);
  if (ll > width && width > 3) {
    memmove(s, last, width - 3);
    memcpy(s + width - 3, "...", 4);
  } else {
    memmove(s, last, ll + 1);
  }
}

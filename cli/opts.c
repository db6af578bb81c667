/* opts.c - helpers every subcommand shares: its option table read by
 * getopt and written as its --help, usage errors, the parsing
 * of numbers and metric names, the output width and path cutting.  No subcommand depends on main.c (which
 * only dispatches), so main.c -> live.c / report.c / record.c -> opts.c
 * has no cycle. */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
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

const char *gpd_cli_help(gpd_cli_cmd_t *c) {
  if (c->text)
    return c->text;
  size_t len = 0;
  FILE *f = open_memstream(&c->text, &len);
  if (f == NULL)
    abort(); /* CLI only, as gpd_cli_strdup */
  fputs(c->head, f);
  for (const gpd_cli_opt_t *o = c->opts; o->name || o->shown || o->val; o++) {
    if (o->shown == NULL)
      continue;
    int w = fprintf(f, "  %s", o->shown);
    const char *h = o->help;
    for (int pad = w + 2 > (int)c->col ? 2 : (int)c->col - w; *h; pad = (int)c->col) {
      size_t n = strcspn(h, "\n");
      fprintf(f, "%*s%.*s\n", pad, "", (int)n, h);
      h += n + (h[n] == '\n');
    }
  }
  if (c->tail)
    fputs(c->tail, f);
  if (fclose(f) != 0 || c->text == NULL)
    abort();
  return c->text;
}

int gpd_cli_opt_next(int argc, char **argv, gpd_cli_cmd_t *c, int *rc) {
  /* getopt_long's tables, made from c's at every call (a few dozen
   * entries): the caller keeps no second copy of its options */
  static struct option longs[48];
  static char shorts[2 * sizeof longs / sizeof *longs + 4];
  size_t n = 0, k = 0;
  if (!c->permute)
    shorts[k++] = '+';
  for (const gpd_cli_opt_t *o = c->opts; o->name || o->shown || o->val; o++) {
    if (n + 2 >= sizeof longs / sizeof *longs || k + 4 >= sizeof shorts)
      abort(); /* a table longer than any command's: a programming error */
    if (o->name)
      longs[n++] = (struct option){o->name, o->arg, NULL, o->val};
    if (o->val && strchr(c->shorts, o->val)) {
      shorts[k++] = (char)o->val;
      if (o->arg == required_argument)
        shorts[k++] = ':';
    }
  }
  longs[n++] = (struct option){"help", no_argument, NULL, 'h'};
  longs[n] = (struct option){NULL, 0, NULL, 0};
  shorts[k++] = 'h';
  shorts[k] = 0;
  opterr = 0;
  int v = getopt_long(argc, argv, shorts, longs, NULL);
  if (v == -1)
    return 0;
  if (v == 'h') {
    fputs(gpd_cli_help(c), stdout);
    *rc = GPD_EXIT_OK;
    return -1;
  }
  if (v == '?' || v == ':') {
    *rc = gpd_cli_usage(gpd_cli_help(c), "unknown or incomplete option '%s'", argv[optind - 1]);
    return -1;
  }
  return v;
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

/* n bytes of s moved back or forth to the nearest UTF-8 character
 * boundary: down (dir < 0) or up (dir > 0) */
static size_t utf8_edge(const char *s, size_t n, int dir) {
  while (((unsigned char)s[n] & 0xC0) == 0x80)
    n += dir < 0 ? (size_t)-1 : 1;
  return n;
}

/* Each frame's call site "name (dir/file:line)" of the " < "-separated
 * path r shortened in place to "name (file:line)" (as perf's srcline
 * shows a file), the last parenthesized group of a frame only; the new
 * length. */
static size_t path_basenames(char *r) {
  size_t w = 0;
  for (size_t i = 0, len = strlen(r); i < len;) {
    const char *sep = strstr(r + i, " < ");
    size_t end = sep ? (size_t)(sep - r) : len, open = end, slash = 0;
    if (end > i && r[end - 1] == ')') {
      for (size_t k = end - 1; k > i + 1; k--)
        if (r[k - 1] == ' ' && r[k] == '(') {
          open = k;
          break;
        }
      for (size_t k = open + 1; open < end && k < end; k++)
        if (r[k] == '/') slash = k;
    }
    /* the frame up to "(", then from after its last '/' */
    size_t a = slash ? open + 1 : end;
    memmove(r + w, r + i, a - i);
    w += a - i;
    if (slash) {
      memmove(r + w, r + slash + 1, end - slash - 1);
      w += end - slash - 1;
    }
    if (sep) {
      memmove(r + w, " < ", 3);
      w += 3;
    }
    i = sep ? end + 3 : len;
  }
  r[w] = 0;
  return w;
}

void gpd_cli_path_fit(char *s, unsigned width) {
  static const char in[] = " > ", out[] = " < ", more[] = " < ...";
  size_t len = strlen(s), n = 0;
  char *r = malloc(len + 1);
  if (r == NULL)
    abort(); /* CLI only, as gpd_cli_strdup */
  /* the frames innermost first: each " > "-separated piece from the end */
  for (size_t end = len; end > 0 || (n == 0 && len == 0);) {
    size_t start = 0;
    for (size_t k = end; k >= 3; k--)
      if (!memcmp(s + k - 3, in, 3)) {
        start = k;
        break;
      }
    if (n) {
      memcpy(r + n, out, 3);
      n += 3;
    }
    memcpy(r + n, s + start, end - start);
    n += end - start;
    if (start == 0)
      break;
    end = start - 3;
  }
  r[n] = 0;
  if (width && n > width)
    n = path_basenames(r);
  if (width && n > width) {
    /* as many innermost frames as fit before " < ..." */
    size_t cut = 0;
    for (const char *p = strstr(r, out); p; p = strstr(p + 3, out))
      if ((size_t)(p - r) + sizeof more - 1 <= width)
        cut = (size_t)(p - r);
    if (cut) {
      memcpy(r + cut, more, sizeof more);
    } else {
      /* the innermost frame alone is too long: its start and its end
       * (a call site's file and line) around "..." */
      const char *sep = strstr(r, out);
      size_t fl = sep ? (size_t)(sep - r) : n, w = width < 5 ? 5 : width;
      if (fl > w) {
        size_t head = utf8_edge(r, (w - 3) / 2, -1), tail = utf8_edge(r, fl - (w - 3 - (w - 3) / 2), 1);
        memcpy(r + head, "...", 3);
        memmove(r + head + 3, r + tail, fl - tail);
        fl = head + 3 + fl - tail;
      }
      r[fl] = 0;
    }
  }
  memcpy(s, r, strlen(r) + 1);
  free(r);
}

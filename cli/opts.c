/* opts.c - helpers every subcommand shares: usage errors and the parsing
 * of numbers and metric names.  No subcommand depends on main.c (which
 * only dispatches), so main.c -> client.c / report.c / record.c -> opts.c
 * has no cycle. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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

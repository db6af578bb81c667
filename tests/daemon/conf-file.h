/* conf-file.h - a configuration file written for a unit test (test-config.c,
 * test-policy.c).  The including file defines `tmpdir` (a mkdtemp'd
 * directory) and includes <cmocka.h> first. */
#ifndef GPUPROF_TESTS_CONF_FILE_H
#define GPUPROF_TESTS_CONF_FILE_H

#include <stdio.h>

/* Write `text` to tmpdir/name; returns its path (static: valid until the
 * next call). */
static const char *write_conf(const char *name, const char *text) {
  static char path[512];
  snprintf(path, sizeof path, "%s/%s", tmpdir, name);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
  return path;
}

#endif

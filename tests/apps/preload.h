/* preload.h - test helper for programs that run others under the shim:
 * the ASan runtime to preload first, and the registrations a daemon
 * logged (test-withdaemon's GPD_TEST_DAEMON_LOG). */
#ifndef TEST_PRELOAD_H
#define TEST_PRELOAD_H

#include <link.h>
#include <stdio.h>
#include <string.h>

static int preload_find_asan(struct dl_phdr_info *i, size_t n, void *arg) {
  (void)n;
  if (i->dlpi_name && strstr(i->dlpi_name, "libasan.so")) {
    snprintf(arg, 512, "%s", i->dlpi_name);
    return 1;
  }
  return 0;
}

/* The path of the ASan runtime this program is linked with into out
 * (512 bytes), "" when it is not instrumented: an instrumented shim
 * needs it first in LD_PRELOAD. */
static inline void preload_asan_runtime(char out[512]) {
  out[0] = 0;
  dl_iterate_phdr(preload_find_asan, out);
}

/* How many registrations ("INFO: registered pid ") the daemon log at path
 * holds; 0 when it cannot be read. */
static inline int preload_registrations(const char *path) {
  FILE *f = fopen(path, "r");
  char line[4096];
  int regs = 0;
  while (f && fgets(line, sizeof line, f))
    regs += strstr(line, "INFO: registered pid ") != NULL;
  if (f)
    fclose(f);
  return regs;
}

#endif

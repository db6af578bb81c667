/* procstat.c - what the daemon reads from /proc/PID/stat (procstat.h).
 * Calls nothing else in the daemon. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "procstat.h"

uint64_t gpd_procstat_start(pid_t pid) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  FILE *f = fopen(path, "re");
  if (f == NULL)
    return 0;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  /* the command name may hold anything: fields resume after the last ')' */
  char *p = strrchr(buf, ')');
  if (p == NULL)
    return 0;
  p++;
  for (int field = 3; field < 22 && p; field++)
    p = strchr(p + 1, ' ');
  return p ? strtoull(p + 1, NULL, 10) : 0;
}

/* demangle.c - kernel labels: C++ demangling through the C++ runtime's
 * abi::__cxa_demangle (libstdc++, declared here with C linkage). */
#include <stdlib.h>
#include <string.h>

#include "daemon.h"

extern char *__cxa_demangle(const char *mangled, char *buf, size_t *n, int *status);

char *gpd_demangle(const char *name) {
  if (name == NULL)
    return strdup("");
  if (name[0] == '_' && name[1] == 'Z') {
    int status = -1;
    char *d = __cxa_demangle(name, NULL, NULL, &status);
    if (status == 0 && d != NULL)
      return d;
    free(d);
  }
  return strdup(name);
}

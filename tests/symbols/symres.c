/* symres.c - print the source frames gpd_symbols_resolve gives, one line
 * per frame, outermost first.  Arguments are read left to right in one
 * process (one symbolizer cache):
 *
 *   symres [-u UID] [-g GID] -p PATH OFFSET... [-u UID] [-p PATH] OFFSET...
 *   -> "<uid> <offset-hex> <depth> <function>|<file>|<line>|<inlined 0/1>"
 *      "<uid> <offset-hex> none"        no frames (unreadable, no symbols)
 *      "<uid> <offset-hex> error <errno>"
 *
 * -u/-g set the owner for the offsets that follow (default: ours), -p the
 * module path.  OFFSET is hex (0x...) or decimal: the link-time address of
 * a call site (return address - 1 - load bias), what the shim puts in
 * NODE.offset.  Exit 0, or 2 on a usage error.  Used by tests/symbols/. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symbols.h"

int main(int argc, char **argv) {
  uid_t uid = getuid();
  gid_t gid = getgid();
  const char *path = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-u") && i + 1 < argc) {
      uid = (uid_t)strtoul(argv[++i], NULL, 10);
      continue;
    }
    if (!strcmp(argv[i], "-g") && i + 1 < argc) {
      gid = (gid_t)strtoul(argv[++i], NULL, 10);
      continue;
    }
    if (!strcmp(argv[i], "-p") && i + 1 < argc) {
      path = argv[++i];
      continue;
    }
    if (path == NULL || argv[i][0] == '-') {
      fprintf(stderr, "usage: symres [-u UID] [-g GID] -p PATH OFFSET...\n");
      return 2;
    }
    uint64_t off = strtoull(argv[i], NULL, 0);
    const gpd_sframe_t *fr = NULL;
    unsigned n = 0;
    int r = gpd_symbols_resolve(path, uid, gid, off, &fr, &n);
    if (r < 0) {
      printf("%u 0x%" PRIx64 " error %d\n", (unsigned)uid, off, -r);
      continue;
    }
    if (n == 0)
      printf("%u 0x%" PRIx64 " none\n", (unsigned)uid, off);
    for (unsigned k = 0; k < n; k++)
      printf("%u 0x%" PRIx64 " %u %s|%s|%u|%d\n", (unsigned)uid, off, k, fr[k].function, fr[k].file, fr[k].line,
             fr[k].inlined);
  }
  fflush(stdout);
  gpd_symbols_shutdown();
  return 0;
}

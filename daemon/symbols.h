/* symbols.h - source frames of load-module offsets (libdwfl) and C++ demangling.
 *
 * Lock: none of the daemon's; symbols.c has its own mutex.  Never call the
 * resolver on the monitor thread or with the daemon lock held. */
#ifndef GPD_DAEMON_SYMBOLS_H
#define GPD_DAEMON_SYMBOLS_H

#include <stdint.h>
#include <sys/types.h>

/** Demangled C++ name (malloc'd) or a strdup of `name` if not mangled. */
char *gpd_demangle(const char *name);

typedef struct gpd_sframe_s {
  char *function;
  char *file;
  uint32_t line;
  int inlined;
} gpd_sframe_t;

/** Source frames of (module path, offset into module) for a process owned
 *  by uid/gid: outermost first (the physical function containing the call
 *  site, not inlined), then each function inlined into it (inlined = 1);
 *  each frame's line is where it calls the next inner one, the innermost
 *  frame's is the address's line.  The module file is opened with the
 *  owner's filesystem rights, only if it is a regular file, never through
 *  a symlink owned by someone other than root or the owner (symbols.c);
 *  one it may not read gives 0 frames and returns 0, as does a missing
 *  file.  No debug info: one frame with the ELF symtab function, file "??".
 *  Offset: the link-time address of the call site (NODE.offset).
 *  The returned array stays valid until gpd_symbols_shutdown (results are
 *  cached; past a bound of 1 M call sites new ones get 0 frames).  Errors: -ENOENT
 *  (empty path), -ENOMEM.  Thread-safe (own mutex); may read large files:
 *  never call it on the monitor thread or with the daemon lock held. */
int gpd_symbols_resolve(const char *path, uid_t uid, gid_t gid, uint64_t offset, const gpd_sframe_t **frames,
                        unsigned *n);
void gpd_symbols_shutdown(void);

#endif

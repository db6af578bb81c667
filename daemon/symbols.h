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
 *  by uid/gid: outermost first, inlined frames included.  The module file
 *  is opened with the owner's rights (see symbols.c).  Cached per (path, offset); the returned
 *  array stays valid until gpd_symbols_shutdown.  No debug info: one
 *  frame with the ELF symtab function and file "??".  Thread-safe (own
 *  mutex); never call it on the monitor thread. */
int gpd_symbols_resolve(const char *path, uid_t uid, gid_t gid, uint64_t offset, const gpd_sframe_t **frames,
                        unsigned *n);
void gpd_symbols_shutdown(void);

#endif

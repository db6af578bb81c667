/* module.h - the shim's table of this process's load modules (module.c).
 *
 * Every mapping seen through dl_iterate_phdr gets an entry: address range,
 * load bias, build-id, path, a process-local module id (MODULE record) and
 * a class that says how capture treats its frames (GPD_MODCLS_*).  Entries
 * are never reused for another mapping: a library unloaded (dlclose) is
 * marked gone, and a library mapped later over any part of its addresses
 * is a new entry with a new id and a non-zero *address tag*, which capture
 * folds into the call-site keys of its frames so that they never meet the
 * old library's nodes.  The same file mapped again at the same place
 * (same path, range, bias and build-id) is the old entry revived.
 *
 * Thread rules: lookups are lock-free (entries are published with release
 * stores and never move); refreshing from the loader takes the table lock
 * and may call dl_iterate_phdr, so functions that may refresh take an
 * `may_sync` flag that a capture running inside a signal handler clears.
 */
#ifndef GPUPROF_SHIM_MODULE_H
#define GPUPROF_SHIM_MODULE_H

#include <stdatomic.h>
#include <stdint.h>

/** Most entries the table keeps (mapped + gone); beyond: frames get
 *  module 0 (logged once). */
#define GPD_MODULE_MAX 4096
/** Most modules of a non-user class (shim, vendor, glue) tracked for the
 *  frame cut. */
#define GPD_MODULE_SPECIAL_MAX 128

/** How capture treats a module's frames (see gpd_module_cut). */
enum {
  GPD_MODCLS_USER = 0, /* kept: the application's own code (and unknown) */
  GPD_MODCLS_GLUE,     /* libc, libstdc++, ld.so...: cut only between vendor frames */
  GPD_MODCLS_VENDOR,   /* GPU runtime/driver/tool: cut with everything below it */
  GPD_MODCLS_SHIM,     /* libgpuprof.so itself: cut */
};

/** An address range with a class: the input of the pure cut function. */
typedef struct gpd_module_range_s {
  uintptr_t lo, hi; /* [lo, hi) */
  uint32_t cls;     /* GPD_MODCLS_* */
} gpd_module_range_t;

/** Bumped (release) after a dlclose that unmapped something: node ids and
 *  recorded paths for addresses taken before may now be stale.  Capture
 *  compares it to the generation its per-thread memo was built in. */
extern _Atomic uint32_t gpd_module__gen;

/** First scan; `shim_anchor` is an address inside libgpuprof.so. */
void gpd_module_init(uintptr_t shim_anchor);
/** Fork child: new module ids, nothing announced, lock reset. */
/** Fork handlers of the module table (shim.c's pthread_atfork chain):
 *  prepare takes its lock (last of all the shim's locks), parent releases
 *  it, child re-initializes it and gives every module a new id. */
void gpd_module_atfork_prepare(void);
void gpd_module_atfork_parent(void);
void gpd_module_atfork_child(void);

/** A frame ip lies in no known module and the caller may not refresh
 *  the table (the CPU sampler's handler, capture.c): ask the connection
 *  thread to (gpd_module_service).  Async-signal-safe; one address is
 *  kept, later ones while it waits are dropped. */
void gpd_module_want(uintptr_t ip);
/** Connection thread, every loop: do the refresh gpd_module_want asked
 *  for (the cut of that address refreshes the table on a miss). */
void gpd_module_service(void);

/** Bring the table up to date with the loader if a dlclose happened since
 *  the last refresh (takes the table lock; not from a signal handler). */
void gpd_module_sync(void);

/** Address tag of the module that holds call site `ip` now: 0 when no
 *  module at these addresses was ever unloaded (the only case without a
 *  gone module), else the tag of the live module (refreshing the table on
 *  a miss when may_sync).  Fits in 16 bits. */
uint32_t gpd_module_tag(uintptr_t ip, int may_sync);

/** How many innermost frames of ips[0..n) (return addresses, innermost
 *  first) capture drops: every frame up to and including the outermost
 *  shim or vendor frame of the innermost run of shim, vendor and glue
 *  frames; the first user frame ends the run.  So the path ends at the
 *  user's call of the API, even when the API ran vendor code, callbacks
 *  and libc below it before the capture.  When may_sync and the first
 *  kept frame lies in no known module (a library loaded since the last
 *  refresh, maybe a vendor's), the table is refreshed and the cut redone. */
int gpd_module_cut(const uintptr_t *ips, int n, int may_sync);

/** The cut rule alone, over explicit ranges (unit tests): same result as
 *  gpd_module_cut for a table holding exactly these ranges. */
int gpd_module_cut_ranges(const uintptr_t *ips, int n, const gpd_module_range_t *r, int nr);

/** Module id of the live module holding `ip` (0 = none) and its load bias
 *  in *base; announces it (MODULE record) in `epoch` if not yet: *ok = 0
 *  when that push failed.  When may_sync, a miss refreshes the table
 *  (takes the lock); without it the function is async-signal-safe. */
uint32_t gpd_module_of(uintptr_t ip, uint32_t epoch, uint64_t *base, int *ok, int may_sync);

#endif

/* export.h - what the writers of `gpuprof export` share (export-walk.c;
 * used by export.c, export-pprof.c, export-speedscope.c): the frames a
 * tree node stands for, the walk over the contexts with exclusive values,
 * and an interning table; the pprof writer's entry points
 * (export-pprof.c).  CLI thread only.
 */
#ifndef GPD_CLI_EXPORT_H
#define GPD_CLI_EXPORT_H

#include <stddef.h>
#include <stdint.h>

#include "cli.h"
#include "gpuprof/metric.h"

/** One frame of an exported stack. */
typedef struct gpd_export_frame_s {
  const char *name;    /* function / placeholder / kernel (demangled) */
  const char *file;    /* source file, "" when unknown */
  const char *sysname; /* a kernel's mangled name, else "" */
  uint32_t line;       /* line in file of the call (of the next frame), 0 unknown */
  int inlined;         /* inlined into the frame before it */
  char buf[512];
} gpd_export_frame_t;

/** Frames node nd stands for: a CPU context with an inline chain one per
 *  function of the chain (docs/CLI.md: the physical function, then the
 *  [inlined] ones); every other node one. */
uint32_t gpd__export_nframes(const gpd_tnode_t *nd);
/** Frame k (0 = outermost) of node nd into *x (its strings point into nd
 *  or x->buf). */
void gpd__export_frame(const gpd_tnode_t *nd, uint32_t k, gpd_export_frame_t *x);

/** Metrics with a non-zero exclusive value somewhere: present[id] set to
 *  1 for each, in id order; their count. */
size_t gpd__export_metrics(const gpd_tree_t *t, int present[GPD_M__COUNT]);

/** Called for each context with a non-zero exclusive value: path holds the
 *  node indices from below the root down to that context (the root itself
 *  when it is the context).  Returns 0 or a negative error (stops the walk). */
typedef int (*gpd_export_stack_fn)(void *ctx, const gpd_tree_t *t, const size_t *path, size_t n);
/** Pre-order walk in the tree's order (children by inclusive metric), with
 *  an explicit stack: a profile may be 200 000 levels deep.  0, -ENOMEM or
 *  fn's first error. */
int gpd__export_walk(const gpd_tree_t *t, gpd_export_stack_fn fn, void *ctx);

/** An interning table: byte strings -> dense indices 0, 1, ... in the
 *  order first seen.  Zero-initialized = empty. */
typedef struct gpd_export_intern_s {
  char **key; /* NUL-terminated copies (a key may hold NULs of its own) */
  size_t *len;
  size_t n, cap;
  size_t *slot; /* open addressing: index + 1 */
  size_t scap;  /* power of two */
} gpd_export_intern_t;

/** Index of key[0..len) (added at the end when new), or -ENOMEM. */
long gpd__export_intern(gpd_export_intern_t *in, const void *key, size_t len);
/** Index of C string s, or -ENOMEM. */
long gpd__export_intern_str(gpd_export_intern_t *in, const char *s);
void gpd__export_intern_free(gpd_export_intern_t *in);

/** A growable byte buffer for composite keys.  Zero-initialized = empty;
 *  free(p) releases it. */
typedef struct gpd_export_key_s {
  char *p;
  size_t n, cap;
} gpd_export_key_t;

/** The identity of frame x as a key in *b (replacing its bytes): name NUL
 *  file NUL sysname, then NUL line when with_line; read back field by
 *  field (a C string holds no NUL).  0 or -ENOMEM. */
int gpd__export_key_frame(gpd_export_key_t *b, const gpd_export_frame_t *x, int with_line);

/** Integer pprof value of metric id's stored value v: scaled as the
 *  sample type's unit says (the occupancy fraction in per mille), rounded;
 *  0 for NaN or beyond int64. */
int64_t gpd__export_pprof_value(unsigned id, double v);
/** The tree as a gzipped pprof Profile (profile.proto) in *out (malloc'd,
 *  *outn bytes): one sample type per metric present, `metric` the
 *  default; files: the inputs, named in the profile's comments.  0 or
 *  -ENOMEM / -EIO (deflate). */
int gpd__export_pprof(const gpd_tree_t *t, unsigned metric, char **files, int nfiles, uint8_t **out, size_t *outn);

#endif

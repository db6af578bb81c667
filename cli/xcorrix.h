/* xcorrix.h - the launch of each GPU operation of a trace (trace.h), by
 * (profile, correlation id): an open-addressing index over x->la that the
 * trace layout (xlayout.c), the idleness blame (idle.c) and the trace
 * summary (trace.c) share.  It sits below all three.  CLI thread only.
 */
#ifndef GPD_CLI_XCORRIX_H
#define GPD_CLI_XCORRIX_H

#include <stdint.h>

#include "trace.h"

/** Launch index by (profile, correlation id). */
typedef struct gpd_xcorrix_s {
  size_t *slot; /* open addressing: launch index + 1 */
  size_t cap;   /* power of two */
} gpd_xcorrix_t;

/** Index x's launches (x->la must not change while the index is used).
 *  0 or -ENOMEM; free ix->slot in both cases. */
int gpd__xcorrix_build(gpd_xcorrix_t *ix, const gpd_xtrace_t *x);
/** Index in x->la of the launch of (profile, corr), or -1. */
long gpd__xcorrix_get(const gpd_xcorrix_t *ix, const gpd_xtrace_t *x, uint64_t profile, uint64_t corr);

#endif

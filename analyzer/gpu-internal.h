/* gpu-internal.h - what gcct.c and dccg.c share: the static call
 * graph after steps 2 and 3 of the reconstruction (weights repaired,
 * recursive groups found). */
#ifndef GPUPROF_GPU_INTERNAL_H
#define GPUPROF_GPU_INTERNAL_H

#include "gpu-analysis.h"

typedef struct gpd__dccg_s {
  uint32_t nfuncs, nsccs;
  uint32_t *scc_of;   /* per function */
  uint32_t *scc_size; /* per SCC */
  uint32_t *scc_first; /* per SCC: its lowest-numbered function */
  double *excl;       /* per SCC: exclusive samples */
  /* external edges (between SCCs), grouped by caller SCC */
  gpd_gcall_t *e;     /* from/to are SCC ids here */
  double *frac;       /* per edge: weight / all weight into its callee */
  size_t ne;
  size_t *out_start;  /* per SCC + 1: edges of SCC s are [out_start[s], out_start[s+1]) */
  uint32_t *topo;     /* SCCs callees first (Tarjan's order) */
  double *in_w;       /* per SCC: weight of external calls into it */
  uint8_t *scc_rec;   /* per SCC: recursive (several functions, or a self call) */
} gpd__dccg_t;

/** Steps 1-3 of the reconstruction (see gpd_gcct_build).  0, -EINVAL, -ENOMEM. */
int gpd__dccg_build(uint32_t nfuncs, const double *samples, const gpd_gcall_t *edges,
                   size_t nedges, gpd__dccg_t *g);
void gpd__dccg_free(gpd__dccg_t *g);

/** Append "; "-separated printf text to a fixed note buffer (cubin.c);
 *  text that does not fit is cut. */
void gpd__cubin_note(char *buf, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
